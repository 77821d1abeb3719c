"""Reinforcement learning on ecs_nav: Gymnasium and PettingZoo environments (the ``rl`` extra).

``NavEnv`` (one learner in a scene), ``NavVectorEnv`` (many copies of a scene stepped as layers of
one World) and ``CrowdEnv`` (every agent a learner, PettingZoo's ParallelEnv). What a learner
observes, how it acts and what it is rewarded for: ``NavSettings``. Importing the package registers
the Gymnasium environments (``register_environments``)::

    import gymnasium
    import ecs_nav.rl

    env = gymnasium.make("ecs_nav/Nav-v0")
    envs = gymnasium.make_vec("ecs_nav/Nav-v0", num_envs=1024, vectorization_mode="vector_entry_point")
"""

import os as _os

try:
    import gymnasium as _gymnasium  # noqa: F401
except ModuleNotFoundError as _missing:
    raise ModuleNotFoundError("ecs_nav.rl needs gymnasium: pip install 'ecs-nav[rl]'", name="gymnasium") from _missing

from ecs_nav.rl.batch import ROOM, NavSettings
from ecs_nav.rl.nav_env import NavEnv
from ecs_nav.rl.vector_env import NavVectorEnv

CROWD_ROOM = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "crowd_room.toml")
"""A 14 x 10 m hall with twelve wandering walkers (ticks of 0.1 s): the scene of ``ecs_nav/Crowd-v0``."""

ENVIRONMENTS = {
    "ecs_nav/Nav-v0": {"scene": ROOM},
    "ecs_nav/NavDiscrete-v0": {"scene": ROOM, "action": "discrete"},
    "ecs_nav/Crowd-v0": {"scene": CROWD_ROOM},
}
"""The registered ids and the ``NavSettings`` fields each sets (any field can be overridden as a
keyword argument of ``gymnasium.make`` or ``gymnasium.make_vec``): the room with pillars, with a
continuous or a discrete action, and one learner crossing a crowded hall."""


def register_environments() -> None:
    """Register ``ENVIRONMENTS`` with Gymnasium, each with an ``entry_point`` (NavEnv) and a
    ``vector_entry_point`` (NavVectorEnv); ids already registered are left as they are."""
    from gymnasium.envs.registration import register, registry

    for env_id, kwargs in ENVIRONMENTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point="ecs_nav.rl.nav_env:NavEnv",
                     vector_entry_point="ecs_nav.rl.vector_env:NavVectorEnv", kwargs=dict(kwargs))


register_environments()


def __getattr__(name):
    """``ecs_nav.rl.CrowdEnv``, imported when first asked for: it needs PettingZoo, which the
    Gymnasium environments do not."""
    if name == "CrowdEnv":
        from ecs_nav.rl.crowd_env import CrowdEnv

        return CrowdEnv
    raise AttributeError(f"module 'ecs_nav.rl' has no attribute {name!r}")

__all__ = ["CROWD_ROOM", "ENVIRONMENTS", "ROOM", "CrowdEnv", "NavEnv", "NavSettings", "NavVectorEnv",
           "register_environments"]
