"""Module paths of the previous release, kept working for one release with a DeprecationWarning.

The package's modules moved into packages by concern (``ecs_nav.recording`` is now
``ecs_nav.results.recording``, ``ecs_nav.steering`` is ``ecs_nav.motion.steering``; ``MOVED``
lists them all). Importing an old path gives the module at its new path, the same module object,
and warns once with the new path. ``ecs_nav.scene`` and ``ecs_nav.geometry`` are packages now;
the names their old modules held are answered by the packages (``old_name``), with the same
warning. A module some of whose names moved out to new modules answers them the same way
(``MOVED_NAMES``, ``moved_attribute``: ``ecs_nav.motion.steering``'s obstacle, wall and group
behaviours, ``ecs_nav.render.viewer``'s captures).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings

MOVED = {
    "world": "core.world",
    "table": "core.table",
    "table_columns": "core.table_columns",
    "components": "core.components",
    "events": "core.events",
    "limits": "core.limits",
    "behaviours": "core.behaviours",
    "resource_names": "core.resource_names",
    "finite": "core.finite",
    "aot": "compile.aot",
    "aot_build": "compile.aot_build",
    "kernel_manifest": "compile.manifest",
    "kernel_options": "compile.options",
    "kernel_recorder": "compile.recorder",
    "precompile": "compile.precompile",
    "compile_split": "compile.split",
    "compile_watch": "compile.watch",
    "geometry": "geometry.map",
    "map_kernels": "geometry.kernels",
    "shapes": "geometry.shapes",
    "walkable": "geometry.walkable",
    "steering": "motion.steering",
    "steering_rows": "motion.steering_rows",
    "physics": "motion.physics",
    "physics_rows": "motion.physics_rows",
    "follow_rows": "motion.follow_rows",
    "arrival": "motion.arrival",
    "spatial": "motion.spatial",
    "platformer_bot": "platformer.bot",
    "platformer_bots": "platformer.bots",
    "platformer_physics": "platformer.physics",
    "platformer_world": "platformer.world",
    "nav.platformer": "platformer.planner",
    "nav.platformer_level": "platformer.level",
    "scene": "scene.files",
    "scene_schema": "scene.schema",
    "scene_values": "scene.values",
    "scene_map": "scene.map",
    "scene_level": "scene.level",
    "maps_in": "scene.maps_in",
    "reachability": "scene.reachability",
    "unserved": "scene.unserved",
    "draw": "render.draw",
    "draw_colours": "render.colours",
    "draw_labels": "render.labels",
    "draw_panel": "render.panel",
    "draw_paths": "render.paths",
    "draw_platformer": "render.platformer",
    "draw_side_labels": "render.side_labels",
    "side_view_controls": "render.side_view_controls",
    "viewer": "render.viewer",
    "search_trace": "nav.search_trace",
    "recording": "results.recording",
    "recording_formats": "results.formats",
    "recording_read": "results.read",
    "plots": "results.plots",
    "sweeps": "results.sweeps",
    "sweep_engines": "results.engines",
    "sweep_params": "results.params",
}
"""Old module path (below ``ecs_nav.``) → new one. ``scene`` and ``geometry`` are packages now:
their old modules' names are answered by ``old_name``."""

MOVED_NAMES = {
    "motion.steering": {
        **dict.fromkeys(("BRAKING_WEIGHT", "WALL_FEELER_ANGLE", "MIN_WALL_LENGTH", "obstacle_force", "obstacle_grid",
                         "obstacle_avoidance", "wall_force", "wall_grid", "wall_avoidance"),
                        "motion.steering_obstacles"),
        **dict.fromkeys(("separation", "alignment", "cohesion", "flock_sums", "neighbour_sums", "flock"),
                        "motion.steering_group"),
    },
    "render.viewer": dict.fromkeys(("render_frame", "screenshot", "record", "MediaUnavailable", "IMAGE_EXTENSIONS",
                                    "VIDEO_EXTENSIONS", "check_screenshot_path", "check_record_path", "check_media",
                                    "check_writable"), "render.capture"),
}
"""Names that moved out of a module that is still there (paths below ``ecs_nav.``): module →
{name: the module that holds it now}. The old module answers them (its ``__getattr__`` calls
``moved_attribute``)."""

_PACKAGE = __name__.rpartition(".")[0]


def _caller_level() -> int:
    """The ``stacklevel`` (as ``warnings`` counts it: the import machinery's frames are skipped)
    of the first frame outside this module and the packages' ``__getattr__``: the user's import."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        frame = frame.f_back
        while frame is not None and "importlib._bootstrap" in frame.f_code.co_filename:
            frame = frame.f_back
        level += 1
        if frame is None or (frame.f_code.co_filename != __file__ and frame.f_code.co_name != "__getattr__"):
            return level
    return level


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path will be removed in the next release", DeprecationWarning,
                  stacklevel=_caller_level())


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``ecs_nav.<old path>`` and loads it as the module at its new path."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname, path=None, target=None):
        old = fullname.removeprefix(_PACKAGE + ".")
        if old == fullname or old not in MOVED or old in ("scene", "geometry"):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        new = f"{_PACKAGE}.{MOVED[spec.name.removeprefix(_PACKAGE + '.')]}"
        _warn(spec.name, new)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__  # (the import machinery sets the old path's spec on it)
        return module

    def exec_module(self, module) -> None:
        for old, spec in list(self._specs.items()):
            if spec.name == module.__name__:
                module.__spec__ = self._specs.pop(old)


def old_name(package: str, module: str, name: str):
    """``name`` as ``package``'s old module held it, now in ``module``, with the warning; raises
    AttributeError where the old module had no such public name (``module.__getattr__``'s contract)."""
    if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is None:
        moved_to = importlib.import_module(module)
        if hasattr(moved_to, name):
            _warn(f"{package}.{name}", f"{module}.{name}")
            return getattr(moved_to, name)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def moved_attribute(module: str, name: str):
    """``name`` as the module ``module`` held it in the previous release, now in the module
    ``MOVED_NAMES`` gives it, with the warning; raises AttributeError for any other name (the
    module's ``__getattr__`` contract)."""
    new = MOVED_NAMES.get(module.removeprefix(_PACKAGE + "."), {}).get(name)
    if new is not None:
        _warn(f"{module}.{name}", f"{_PACKAGE}.{new}.{name}")
        return getattr(importlib.import_module(f"{_PACKAGE}.{new}"), name)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
