"""``NavVectorEnv``: ``num_envs`` copies of a scene as layers of one World, a Gymnasium vector
environment stepped in one call.

Copy k's agents, the scene's and its learner, are on ``Collider.layer`` k: they meet only each
other, and one ``World.step`` moves every copy (``ecs_nav.rl.batch``). Each copy's learner senses,
acts and is rewarded as ``NavSettings`` documents, exactly as ``NavEnv``'s.

Autoreset is Gymnasium 1.x's default, next-step (``metadata["autoreset_mode"]``): the step on which
a copy's episode ends returns its last observation with ``terminated`` or ``truncated`` set; the
next ``step`` ignores that copy's action, draws it a new start, heading and goal, and returns the
new episode's first observation with reward 0 and neither flag set (the learner stands still
through that step's ticks while the scene's agents of its copy walk on). With
``autoreset_mode=AutoresetMode.SAME_STEP`` (what stable-baselines3's VecEnv expects) the copy is
placed again at the end of the step on which its episode ends: that step returns the new
episode's first observation, the last one in ``info["final_obs"]`` and the step's ``info`` in
``info["final_info"]`` (each with its mask, as Gymnasium's SyncVectorEnv gives them). Only the
learner is placed again; the scene's agents of the copy carry on where they are.
``reset(seed=...)`` builds the World again: the same seed and actions give the same steps,
autoresets included.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ecs_nav.rl.batch import NavBatch, NavSettings, settings_from
from ecs_nav.rl.nav_env import TERMS, seed_below
from ecs_nav.rl.spaces import action_space, observation_space

INFO_KEYS = (*TERMS, "distance", "is_success")
"""What ``info`` holds for each copy after a step (each with its ``_key`` mask, all True)."""


class NavVectorEnv(VectorEnv):
    """``num_envs`` learners, one in each copy of ``settings.scene`` (keyword arguments override
    ``NavSettings`` fields). Observations (num_envs, observation_size) float32; actions
    (num_envs, 2) in [-1, 1] or (num_envs,) integers; ``info`` holds the arrays of
    ``INFO_KEYS``."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, settings: NavSettings | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **overrides: Any):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"NavVectorEnv.num_envs: must be an integer >= 1, got {num_envs!r}")
        modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
        mode = AutoresetMode(autoreset_mode) if isinstance(autoreset_mode, str) else autoreset_mode
        if mode not in modes:
            raise ValueError(f"NavVectorEnv.autoreset_mode: must be one of {[m.value for m in modes]}, "
                             f"got {autoreset_mode!r}")
        self.autoreset_mode = mode
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        overrides.pop("render_mode", None)  # (gymnasium.make_vec passes it; nothing is rendered)
        self.settings = settings_from(settings, overrides)
        self.num_envs = int(num_envs)
        self.batch = NavBatch(self.settings, copies=self.num_envs, learners=1)
        self.batch.build(0)
        self.single_observation_space = observation_space(self.batch)
        self.single_action_space = action_space(self.settings)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.ending = np.zeros(self.num_envs, dtype=bool)
        self.placed = False

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """Build the World again (its crowds placed from the seed) and give every learner a new
        start and goal. ``seed``: an integer, or a list whose first element is used (None: fresh
        entropy)."""
        if isinstance(seed, (list, tuple)):
            seed = seed[0] if seed else None
        if seed is not None or not hasattr(self, "_np_random"):
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        batch = self.batch
        batch.build(seed_below(self.np_random))
        batch.place(np.arange(self.num_envs), self.np_random)
        obs, _, _ = batch.sense()
        self.ending[:] = False
        self.placed = True
        return obs, {"distance": batch.distance.copy(), "_distance": np.ones(self.num_envs, dtype=bool)}

    def step(self, actions):
        if not self.placed:
            raise RuntimeError("NavVectorEnv.step: call reset() first")
        batch = self.batch
        restarting = np.flatnonzero(self.ending)
        batch.act(actions)
        if restarting.size:
            batch.place(restarting, self.np_random)
        batch.advance()
        obs, clearance, gap = batch.sense()
        terms, arrived = batch.reward(clearance, gap)
        rewards = terms["progress"] + terms["collision"] + terms["time"] + terms["arrival"]
        terminated = arrived.copy()
        truncated = ~terminated & (batch.steps >= self.settings.max_steps)
        if restarting.size:  # the first observation of a new episode: no reward, no end
            batch.steps[restarting] = 0
            for name in TERMS:
                terms[name][restarting] = 0.0
            rewards[restarting] = 0.0
            terminated[restarting] = False
            truncated[restarting] = False
        ended = terminated | truncated
        infos: dict[str, Any] = {**terms, "distance": batch.distance.copy(), "is_success": terminated.copy()}
        for key in INFO_KEYS:
            infos[f"_{key}"] = np.ones(self.num_envs, dtype=bool)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self.ending = ended
        elif ended.any():
            obs = self.restart_now(ended, obs, infos)
        return obs, rewards, terminated, truncated, infos

    def restart_now(self, ended: np.ndarray, obs: np.ndarray, infos: dict[str, Any]) -> np.ndarray:
        """Same-step autoreset: place the copies ``ended`` (a mask) again, move their last
        observation and the step's info to ``final_obs`` and ``final_info``, and return the
        observations with theirs replaced by the new episodes' first."""
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(ended):
            final_obs[i] = obs[i]
        final_info = {key: infos[key].copy() for key in INFO_KEYS}
        final_info.update({f"_{key}": ended.copy() for key in INFO_KEYS})
        infos.update({"final_obs": final_obs, "_final_obs": ended.copy(), "final_info": final_info,
                      "_final_info": ended.copy()})
        which = np.flatnonzero(ended)
        self.batch.place(which, self.np_random)
        fresh, _, _ = self.batch.sense()
        obs = obs.copy()
        obs[which] = fresh[which]
        infos["distance"][which] = self.batch.distance[which]
        return obs

    def close_extras(self, **kwargs: Any) -> None:
        self.batch.close()
