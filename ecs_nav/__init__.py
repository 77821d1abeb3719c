"""ecs_nav: game-AI navigation as an entity-component-system.

    >>> import ecs_nav
    >>> world = ecs_nav.load_scene("chase")
    >>> world.run(600)
"""

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
