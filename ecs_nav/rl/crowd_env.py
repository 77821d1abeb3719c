"""``CrowdEnv``: every agent of a scene a learner, a PettingZoo parallel environment.

The scene gives the map and, unless ``n_agents`` is given, the number of learners (its agents,
which are left out: the learners take their place). Each learner has its own start, heading and
goal, drawn at ``reset`` from the seed, and the observation and action spaces of ``NavEnv``
(``NavSettings``); the other learners are the agents it sees. A learner that has arrived leaves
``agents`` and stands still where it arrived, an obstacle to the others.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from ecs_nav.rl.batch import NavBatch, NavSettings, settings_from
from ecs_nav.rl.nav_env import TERMS, seed_below
from ecs_nav.rl.spaces import BatchRendering, HumanWindow, action_space, observation_space


def scene_agent_count(batch: NavBatch) -> int:
    """How many agents (entities with an Agent component) the batch's scene spawns."""
    return sum(int(entry.get("count", 1)) for entry in batch.scene.entities if "Agent" in entry["components"])


class CrowdEnv(BatchRendering, ParallelEnv):
    """``n_agents`` learners (default: as many as the scene has agents) in ``settings.scene``,
    named ``learner_0``, ``learner_1``, ...; keyword arguments override ``NavSettings`` fields.
    ``infos`` of a step hold each learner's reward terms, ``distance`` and ``is_success``."""

    metadata = {"name": "ecs_nav_crowd_v0", "render_modes": ["human", "rgb_array"], "render_fps": 10,
                "is_parallelizable": True}

    def __init__(self, n_agents: int | None = None, settings: NavSettings | None = None,
                 render_mode: str | None = None, **overrides: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"CrowdEnv: render_mode must be one of {self.metadata['render_modes']} or None, "
                             f"got {render_mode!r}")
        self.settings = settings_from(settings, overrides)
        probe = NavBatch(self.settings)
        count = scene_agent_count(probe) if n_agents is None else n_agents
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"CrowdEnv.n_agents: must be an integer >= 1 (the scene {self.settings.scene} has "
                             f"{scene_agent_count(probe)} agents), got {count!r}")
        self.render_mode = render_mode
        self.batch = NavBatch(self.settings, copies=1, learners=int(count), scene_agents=False, goal_markers=True)
        self.batch.build(0)
        self.possible_agents = [f"learner_{i}" for i in range(int(count))]
        self.agents: list[str] = []
        self.index = {name: i for i, name in enumerate(self.possible_agents)}
        self.observation_spaces = {name: observation_space(self.batch) for name in self.possible_agents}
        self.action_spaces = {name: action_space(self.settings) for name in self.possible_agents}
        self.window: HumanWindow | None = None
        self.np_random, _ = seeding.np_random(None)

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        batch = self.batch
        batch.build(seed_below(self.np_random))
        batch.place(np.arange(batch.count), self.np_random)
        obs, _, _ = batch.sense()
        self.agents = list(self.possible_agents)
        if self.render_mode == "human":
            self.render()
        return ({name: obs[i] for i, name in enumerate(self.agents)},
                {name: {"distance": float(batch.distance[i])} for i, name in enumerate(self.agents)})

    def step(self, actions: dict[str, Any]):
        batch = self.batch
        continuous = self.settings.action == "continuous"
        chosen = np.zeros((batch.count, 2)) if continuous else np.zeros(batch.count, dtype=np.int64)
        for name, action in actions.items():
            if name not in self.index:
                raise KeyError(f"CrowdEnv.step: no agent {name!r} (agents: {', '.join(self.agents)})")
            chosen[self.index[name]] = action
        batch.act(chosen)
        batch.advance()
        obs, clearance, gap = batch.sense()
        terms, arrived = batch.reward(clearance, gap)
        live = self.agents
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        out_of_time = int(batch.steps[0]) >= self.settings.max_steps
        for name in live:
            i = self.index[name]
            info = {term: float(terms[term][i]) for term in TERMS}
            observations[name] = obs[i]
            rewards[name] = float(sum(info.values()))
            terminations[name] = bool(arrived[i])
            truncations[name] = bool(out_of_time and not arrived[i])
            infos[name] = {**info, "distance": float(batch.distance[i]), "is_success": bool(arrived[i])}
        self.agents = [name for name in live if not (terminations[name] or truncations[name])]
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos
