"""The scene the area and link tests build on, as a scene-file dict: a 40 m square map (bounds
-20..20 m on both axes) whose nav map is scanned at 1 m spacing; and the World built from one."""

import copy

from ecs_nav.scene.files import build_world, scene_from_dict


def square_scene(seed, boxes=(), entities=(), systems=None, **map_tables):
    """A scene dict: World ``seed``, the square map with ``boxes`` and ``map_tables`` (``area=``,
    ``link=``: each a sequence of the map's tables of that name), ``entities``, and the World's
    ``systems`` (scene names; None leaves the scene's default)."""
    data = {"world": {"seed": seed},
            "map": {"bounds": [-20, -20, 20, 20], "box": list(boxes),
                    **{name: list(tables) for name, tables in map_tables.items()}},
            "navmap": {"scan_range": [20, 10, 20], "spacing": 1.0}, "entity": list(entities)}
    if systems is not None:
        data["world"]["systems"] = systems
    return data


def world_of(data):
    """The World built from scene dict ``data`` (a copy: ``data`` is left as it is)."""
    return build_world(scene_from_dict(copy.deepcopy(data)))
