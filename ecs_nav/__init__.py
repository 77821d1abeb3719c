"""ecs_nav: game-AI navigation as an entity-component-system.

    >>> import ecs_nav
    >>> world = ecs_nav.load_scene("chase")
    >>> world.run(600)
"""

import os as _os

from ecs_nav.core.components import (
    Agent,
    Avoidance,
    Collider,
    Name,
    NavFilter,
    NavMap,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    Velocity,
)
from ecs_nav.core.events import LinkReached, PathChanged, PathFailed, Stuck, TargetReached, WaypointReached
from ecs_nav.core.system import FunctionSystem, System
from ecs_nav.core.world import World
from ecs_nav.moved import install as _install_moved_paths
from ecs_nav.version import __version__

_install_moved_paths()  # (the previous release's module paths, with a DeprecationWarning)


def load_scene(path_or_name, seed=None):
    """Load a scene file, or a built-in scene by name, into a new World with its systems."""
    from ecs_nav.scene.files import load_scene as _load

    return _load(path_or_name, seed=seed)


def save_scene(world, path=None):
    """Write ``world`` as a scene file; returns the TOML text."""
    from ecs_nav.scene.files import save_scene as _save

    return _save(world, path)


def record(world, path, every=1, background=True):
    """Record ``world``'s run to ``path`` (.sqlite, .parquet or .csv) every ``every`` ticks;
    close the returned Recording (or use ``with``) to finish the file. See ecs_nav.results.recording."""
    from ecs_nav.results.recording import record as _record

    return _record(world, path, every=every, background=background)


def read_recording(path):
    """A recording read back as DataFrames (trajectories, events, agents) and the run summary."""
    from ecs_nav.results.read import read_recording as _read

    return _read(path)


def sweep(scene, params, ticks=600, out="sweep.parquet", engine="local", workers=None, scheduler=None,
          address=None, progress=True):
    """Run every combination of ``params`` on ``scene``, each as its own World; returns the
    table (a DataFrame, also written to ``out`` as Parquet). See ecs_nav.results.sweeps."""
    from ecs_nav.results.sweeps import sweep as _sweep

    return _sweep(scene, params, ticks=ticks, out=out, engine=engine, workers=workers, scheduler=scheduler,
                  address=address, progress=progress)


def __getattr__(name):
    """``ecs_nav.SceneError`` (the error of a bad scene file), imported when first asked for: the
    scene modules are not loaded by ``import ecs_nav``."""
    if name == "SceneError":
        from ecs_nav.scene.schema import SceneError

        return SceneError
    raise AttributeError(f"module 'ecs_nav' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), "SceneError"})


__all__ = [
    "Agent", "Avoidance", "Collider", "FunctionSystem", "LinkReached", "Name", "NavFilter", "NavMap", "Path",
    "PathChanged", "PathFailed", "PathRequest", "Player", "Position", "SceneError", "SteeringWeights", "Stuck",
    "System", "TargetReached",
    "Velocity", "WaypointReached", "World", "__version__", "load_scene", "read_recording", "record", "save_scene",
    "sweep",
]

# The systems live in the repository's top-level folder systems/ (the design card's layout) and
# are imported as ecs_nav.systems: a wheel installs the folder there (pyproject's package-dir);
# a source checkout on the path finds it beside this package, through the package's __path__.
_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_here, "systems")):
    _checkout = _os.path.dirname(_here)
    if _os.path.isfile(_os.path.join(_checkout, "systems", "__init__.py")):
        __path__.append(_checkout)  # noqa: F821 (the package's own __path__)
