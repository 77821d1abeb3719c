"""Map geometry: the static shapes of a map (boxes, ramps, circles), the packed map with its compiled
queries (heights, walls, collisions), and the walkable area as a polygon."""


def __getattr__(name):
    """The names of the previous release's module ``ecs_nav.geometry`` (now ``ecs_nav.geometry.map``), with a
    DeprecationWarning."""
    from ecs_nav.moved import old_name

    return old_name(__name__, "ecs_nav.geometry.map", name)
