"""ecs_nav: game-AI navigation as an entity-component-system.

    >>> import ecs_nav
    >>> world = ecs_nav.load_scene("chase")
    >>> world.run(600)
"""

import os as _os

from ecs_nav.components import (
    Agent,
    Collider,
    Name,
    NavMap,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    Velocity,
)
from ecs_nav.events import PathChanged, PathFailed, Stuck, TargetReached, WaypointReached
from ecs_nav.version import __version__
from ecs_nav.world import System, World


def load_scene(path_or_name, seed=None):
    """Load a scene file, or a built-in scene by name, into a new World with its systems."""
    from ecs_nav.scene import load_scene as _load

    return _load(path_or_name, seed=seed)


def save_scene(world, path=None):
    """Write ``world`` as a scene file; returns the TOML text."""
    from ecs_nav.scene import save_scene as _save

    return _save(world, path)


__all__ = [
    "Agent", "Collider", "Name", "NavMap", "Path", "PathChanged", "PathFailed", "PathRequest",
    "Player", "Position", "SteeringWeights", "Stuck", "System", "TargetReached", "Velocity",
    "WaypointReached", "World", "__version__", "load_scene", "save_scene",
]

# The systems live in the repository's top-level folder systems/ (the design card's layout) and
# are imported as ecs_nav.systems: a wheel installs the folder there (pyproject's package-dir);
# a source checkout on the path finds it beside this package, through the package's __path__.
_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_here, "systems")):
    _checkout = _os.path.dirname(_here)
    if _os.path.isfile(_os.path.join(_checkout, "systems", "__init__.py")):
        __path__.append(_checkout)  # noqa: F821 (the package's own __path__)
