"""Scene files: the schema that checks them, their values, maps (pieces, tiles, images, Tiled, WKT) and
side-view levels, loading into a World and saving back, and the checks a scene gets before it runs."""


def __getattr__(name):
    """The names of the previous release's module ``ecs_nav.scene`` (now ``ecs_nav.scene.files``), with a
    DeprecationWarning."""
    from ecs_nav.moved import old_name

    return old_name(__name__, "ecs_nav.scene.files", name)
