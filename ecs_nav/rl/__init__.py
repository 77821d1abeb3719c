"""Reinforcement learning on ecs_nav: Gymnasium and PettingZoo environments (the ``rl`` extra).

``NavEnv`` (one learner in a scene), ``NavVectorEnv`` (many copies of a scene stepped as layers of
one World) and ``CrowdEnv`` (every agent a learner, PettingZoo's ParallelEnv). Importing the
package registers them with Gymnasium (``register_environments``). What a learner observes, how
it acts and what it is rewarded for: ``NavSettings``.
"""

from ecs_nav.rl.batch import NavSettings
from ecs_nav.rl.nav_env import NavEnv

__all__ = ["NavEnv", "NavSettings"]
