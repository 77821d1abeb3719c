"""A scene's learner driven by a policy file, tick by tick: what ``ecs-nav view SCENE --policy FILE``
and ``ecs-nav run SCENE --headless --policy FILE`` show and run.

The learner is the one ``NavEnv`` has: an agent named ``learner`` (``LEARNER_NAME``) that
ecs_nav.rl spawns into the scene (its radius and top speed the policy's ``NavSettings``), with its
goal drawn as an entity named ``goal``; the scene's own agents are driven by its systems. A scene
may name its learner: an ``[[entity]]`` named ``learner`` (one, ``count`` 1) is taken out of the
scene, its ``Position`` (if any) becomes the first episode's start and its
``PathRequest = { goal = [x, y] }`` (if any) the first episode's goal, the rest drawn as NavEnv
draws them; its other components are not used (the learner's body is the one the policy was
trained with). It senses, acts and moves through ``NavBatch`` exactly as in
``NavEnv`` with the policy's ``NavSettings``: every ``ticks_per_step`` ticks a system
(``PolicyDriver.update``, run before the PathFollowSystem, so before the learner's aim and the
SteeringSystem) observes, asks the
policy for its deterministic action and sets the learner's preferred velocity. An episode ends as
NavEnv's does (arrival, or ``max_steps`` steps); the learner then gets a new start, heading and
goal from the same random generator, and the next episode begins. The first episode of
``policy_world(policy, seed=s)`` is the episode of ``NavEnv(policy.settings).reset(seed=s)``
under the policy's actions.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from gymnasium.utils import seeding

from ecs_nav.core.system import FunctionSystem
from ecs_nav.rl.batch import LEARNER_NAME, NavBatch
from ecs_nav.rl.nav_env import seed_below
from ecs_nav.rl.policy import NumpyPolicy, load_policy, scene_of_mark

DRIVER = "policy_driver"
"""The World resource holding a policy-driven World's ``PolicyDriver``."""


class PolicyDriver:
    """The system that drives a ``NavBatch``'s single learner with ``policy``.

    ``episodes`` (ended so far), ``arrivals`` (of them, how many arrived) and ``steps`` (of the
    current episode) count what it has done; ``rng`` draws each episode's start and goal."""

    def __init__(self, policy: NumpyPolicy, batch: NavBatch, rng: np.random.Generator,
                 start: tuple[float, float] | None = None, goal: tuple[float, float] | None = None):
        self.policy, self.batch, self.rng = policy, batch, rng
        self.episodes = 0
        self.arrivals = 0
        self.ticks = 0
        batch.place(np.array([0]), rng)
        if start is not None or goal is not None:
            table, row = batch.world.table, batch.rows[0]
            first_start = table.pos[row].copy() if start is None else np.asarray(start, dtype=np.float64)
            first_goal = batch.goal[0].copy() if goal is None else np.asarray(goal, dtype=np.float64)
            angle = np.arctan2(table.heading[row, 1], table.heading[row, 0])
            batch.start_episode(np.array([0]), first_start[None], first_goal[None], np.array([angle]))
        self.obs = batch.sense()[0]

    def update(self, world) -> None:
        """At every ``ticks_per_step``-th tick: end the episode if the learner arrived or ran out
        of steps (and start the next), then act on the latest observation."""
        batch, settings = self.batch, self.batch.settings
        if self.ticks % settings.ticks_per_step == 0:
            if self.ticks:
                obs, clearance, gap = batch.sense()
                _, arrived = batch.reward(clearance, gap)
                if arrived[0] or batch.steps[0] >= settings.max_steps:
                    self.episodes += 1
                    self.arrivals += int(arrived[0])
                    batch.place(np.array([0]), self.rng)
                    obs = batch.sense()[0]
                self.obs = obs
            batch.act(self.policy.act(self.obs[0])[None])
            batch.steps += 1  # (NavBatch.advance counts a step so; here the World is stepped by its runner)
        self.ticks += 1

    def summary(self) -> dict:
        """Episodes ended, of them arrived, and the current episode's steps (for a run's summary)."""
        return {"file": self.policy.source, "episodes": self.episodes, "arrived": self.arrivals,
                "steps": int(self.batch.steps[0])}


def policy_world(policy: NumpyPolicy | str | os.PathLike, scene: str | os.PathLike | None = None,
                 seed: int | None = None):
    """A World of ``scene`` (default: the scene the policy was trained in) with a learner driven
    by ``policy`` (a NumpyPolicy or a policy file; ``scene`` may be a mark of ``ecs_nav.rl.policy``,
    ``ecs_nav.rl:room.toml``); its ``PolicyDriver`` is the World's resource
    ``DRIVER``. ``seed`` (default 0) seeds the scene's crowds and the learner's starts and goals as
    ``NavEnv.reset(seed=seed)`` does."""
    if not isinstance(policy, NumpyPolicy):
        policy = load_policy(policy)
    settings = policy.settings if scene is None else dataclasses.replace(policy.settings, scene=scene_of_mark(scene))
    batch = NavBatch(settings, copies=1, learners=1, goal_markers=True)
    start, goal = take_scene_learner(batch)
    rng, _ = seeding.np_random(0 if seed is None else int(seed))
    batch.build(seed_below(rng))
    driver = PolicyDriver(policy, batch, rng, start, goal)
    world = batch.world
    # (before the learner's aim, which NavBatch placed before the SteeringSystem: no built-in in between moves an agent)
    world.add_system(FunctionSystem(driver.update, name="PolicyDriver"), before="PathFollowSystem")
    world.resources[DRIVER] = driver
    return world


def take_scene_learner(batch: NavBatch) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Take the scene's entity named ``learner`` (if any) out of ``batch.scene`` (before
    ``build``); return its start (its ``Position``) and goal (its ``PathRequest``'s ``goal``), each
    None where not given. ValueError naming the scene for more than one learner or a goal that is
    not a point."""
    scene = batch.scene
    named = [e for e in scene.entities if e.get("name") == LEARNER_NAME]
    if not named:
        return None, None
    if len(named) > 1 or int(named[0].get("count", 1)) != 1:
        raise ValueError(f"{scene.source}: a scene names one learner (an entity named {LEARNER_NAME!r}, count 1); "
                         f"found {sum(int(e.get('count', 1)) for e in named)}")
    components = named[0]["components"]
    start = goal = None
    if "Position" in components:
        position = components["Position"]
        start = (float(position.get("x", 0.0)), float(position.get("y", 0.0)))
    request = components.get("PathRequest", {})
    if set(request) - {"goal", "method"}:
        raise ValueError(f"{scene.source}: entity {LEARNER_NAME!r}: its PathRequest gives the learner's goal as "
                         f"goal = [x, y]; got {sorted(request)}")
    if "goal" in request:
        goal = (float(request["goal"][0]), float(request["goal"][1]))
    batch.scene = dataclasses.replace(scene, entities=[e for e in scene.entities if e is not named[0]])
    return start, goal
