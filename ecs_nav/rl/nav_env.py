"""``NavEnv``: one learning agent in a scene, a Gymnasium environment.

The scene's own agents are driven by its systems (the default scene, ``ROOM``: three walkers
wandering a room with pillars); the learner senses, acts and is rewarded as ``NavSettings``
documents. ``reset(seed=...)`` builds the World again (the scene's crowds placed from the seed) and
draws the learner's start, heading and goal: the same seed and actions give the same episode.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from ecs_nav.rl.batch import NavBatch, NavSettings, settings_from
from ecs_nav.rl.spaces import BatchRendering, HumanWindow, action_space, observation_space

TERMS = ("progress", "collision", "time", "arrival")
"""The reward's terms, in ``info`` under these names; the reward is their sum."""


def seed_below(rng: np.random.Generator) -> int:
    """A World seed drawn from ``rng`` (the World takes seeds up to 2**31 - 1 and more; this keeps
    them small enough for every use)."""
    return int(rng.integers(0, 2**31 - 1))


class NavEnv(BatchRendering, gymnasium.Env):
    """One learner in ``settings.scene`` (keyword arguments override ``NavSettings`` fields:
    ``NavEnv(scene="corridor", n_rays=32, arrival_weight=10.0)``).

    ``info`` of ``step``: the reward's terms (``progress``, ``collision``, ``time``, ``arrival``),
    ``distance`` to the goal (m) and ``is_success`` (arrived). ``render_mode="rgb_array"``:
    ``render()`` returns the viewer's frame, drawn offscreen; ``"human"`` shows it in a window."""

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 10}

    def __init__(self, settings: NavSettings | None = None, render_mode: str | None = None, **overrides: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"NavEnv: render_mode must be one of {self.metadata['render_modes']} or None, "
                             f"got {render_mode!r}")
        self.settings = settings_from(settings, overrides)
        self.render_mode = render_mode
        self.batch = NavBatch(self.settings, copies=1, learners=1, goal_markers=True)
        self.batch.build(0)
        self.metadata = {**self.metadata, "render_fps": max(1, round(1.0 / (self.batch.world.dt
                                                                               * self.settings.ticks_per_step)))}
        self.observation_space = observation_space(self.batch)
        self.action_space = action_space(self.settings)
        self.window: HumanWindow | None = None
        self.placed = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.batch.build(seed_below(self.np_random))
        self.batch.place(np.array([0]), self.np_random)
        obs, _, _ = self.batch.sense()
        self.placed = True
        if self.render_mode == "human":
            self.render()
        return obs[0], {"distance": float(self.batch.distance[0])}

    def step(self, action):
        if not self.placed:
            raise RuntimeError("NavEnv.step: call reset() first")
        batch = self.batch
        batch.act(np.asarray(action)[None])
        batch.advance()
        obs, clearance, gap = batch.sense()
        terms, arrived = batch.reward(clearance, gap)
        info: dict[str, Any] = {name: float(terms[name][0]) for name in TERMS}
        reward = float(sum(info[name] for name in TERMS))
        terminated = bool(arrived[0])
        truncated = bool(not terminated and batch.steps[0] >= self.settings.max_steps)
        info["distance"] = float(batch.distance[0])
        info["is_success"] = terminated
        if self.render_mode == "human":
            self.render()
        return obs[0], reward, terminated, truncated, info

    @property
    def goal(self) -> np.ndarray:
        """The learner's goal (x, y), m."""
        return self.batch.goal[0].copy()

    @property
    def world(self):
        """The World the learner is in (a new one after each reset)."""
        return self.batch.world
