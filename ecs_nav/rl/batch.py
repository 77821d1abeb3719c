"""The learners of ``ecs_nav.rl``'s environments, in one World: the engine under ``NavEnv`` (one
copy of a scene, one learner), ``NavVectorEnv`` (many copies, one learner each) and ``CrowdEnv``
(one copy, every agent a learner).

A scene's copies share its map; copy k's agents are on ``Collider.layer`` k, so they meet only
each other (``ecs_nav.core.components.Collider``), and one ``World.step`` moves every copy. The
scene's own agents are driven by its systems as usual. A learner is an agent whose steering is
``arrive`` at a point 1 s ahead along its preferred velocity, re-aimed every tick by a system of
this module placed before the SteeringSystem: with ``deceleration = 1 / DECELERATION_TWEAKER``
arrive's desired velocity is then the preferred velocity itself, and with a mass of one tick
(``mass = dt``) the steering reaches it within a tick; the PhysicsSystem then moves the learner
against the walls and the other agents of its layer like any agent.

The observation, the actions and the reward are documented on :class:`NavSettings` and in the
user guide's Reinforcement learning page.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import numpy as np

from ecs_nav.core.components import Agent, Collider, Name, Position, SteeringWeights, Velocity
from ecs_nav.core.system import FunctionSystem
from ecs_nav.motion.steering import DECELERATION_TWEAKER
from ecs_nav.rl.sensing import nearest_agents_into, ray_distances_into, wall_clearance_into
from ecs_nav.scene.files import build_world, parse_scene

AIM_SECONDS = 1.0
"""How far ahead (s) along the preferred velocity a learner's arrive target lies: arrive's desired
speed is ``distance / (deceleration * DECELERATION_TWEAKER)``, the preferred speed for a
deceleration of ``AIM_SECONDS / DECELERATION_TWEAKER``."""
STILL_SPEED = 1e-6
"""A preferred speed below this (m/s) aims at a point this far ahead along the heading instead:
arrive gives no force at its target, so a target on the agent would leave its velocity as it was."""
PLACEMENT_TRIES = 64
"""Candidate points drawn at once for a learner's start or goal (and again, up to 50 times)."""
ROOM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "room.toml")
"""The default scene: a 12 x 8 m room with pillars and three wandering walkers (ticks of 0.1 s)."""
LEARNER_NAME = "learner"
"""The ``Name`` of every learner (the viewer's legend shows them under it)."""
GOAL_NAME = "goal"
"""The ``Name`` of the entities that mark the learners' goals where they are drawn."""
BODY_HEIGHT = 2.0
"""Height (m) of a learner's body for its rays and wall clearance when the World has no PhysicsSystem
(else the PhysicsSystem's ``body_height``)."""


@dataclass(frozen=True)
class NavSettings:
    """What a learner senses, how it acts and what it is rewarded for.

    Observation (float32, ``observation_size`` elements, in this order; "forward" is along the
    learner's heading, "left" 90 degrees anticlockwise of it; each clipped to its bounds):

    - ``[0:2]`` the goal in the learner's frame (forward, left), m, within +-(map diagonal);
    - ``[2:4]`` the learner's velocity in its frame (forward, left), m/s, within +-2 max_speed;
    - ``[4:4+n_rays]`` ray distances to walls, m, in [0, ray_range]; ray r points
      ``360 r / n_rays`` degrees anticlockwise of the heading (ray 0 straight ahead);
    - then ``neighbours`` blocks of 5: the k-th nearest agent of the learner's copy within
      ``neighbour_range`` (centre distance): its centre (forward, left), m, within
      +-neighbour_range; its velocity relative to the learner's (forward, left), m/s, within
      +-2 (fastest agent's max_speed); a mask, 1.0 for an agent, 0.0 for padding (all five 0).

    Action: ``action="continuous"``: a Box [-1, 1]^2, the preferred velocity in the learner's frame
    (forward, left) as a fraction of ``max_speed``, its length clipped to 1. ``"discrete"``:
    Discrete(headings + 1); 0 stands still, a > 0 walks at ``max_speed`` at ``360 (a - 1) / headings``
    degrees anticlockwise of the heading. The action holds for ``ticks_per_step`` ticks.

    Reward per step, the sum of four terms (each in ``info`` under its name):
    ``progress = progress_weight * (distance to goal before - after)`` (distance in m);
    ``collision = -collision_weight`` if at the end of the step the learner touches a wall
    (clearance below ``collision_margin``) or another agent's disc (gap below it), else 0;
    ``time = -time_weight``; ``arrival = arrival_weight`` on the step it arrives (centre within
    ``goal_radius`` of the goal), which ends its episode (terminated); an episode that has not
    arrived after ``max_steps`` steps is truncated.

    Fields (units; valid range):
        scene: a scene file or built-in scene name (default ``ROOM``, the room with pillars): the map
            and the other agents.
        n_rays: rays (>= 0). ray_range: their reach, m (> 0).
        neighbours: K, agents observed (>= 0). neighbour_range: how near they must be, m (> 0).
        max_speed: the learner's top speed, m/s (> 0). radius: its disc, m (> 0).
        goal_radius: arrival distance, m (> 0). min_goal_distance: least start-goal distance, m (>= 0).
        ticks_per_step: World ticks per step (>= 1). max_steps: steps before truncation (>= 1).
        action: "continuous" or "discrete". headings: directions of the discrete action (>= 1).
        progress_weight, collision_weight, time_weight, arrival_weight: the reward's weights (>= 0).
        collision_margin: m (>= 0).
    """

    scene: str | os.PathLike = ROOM
    n_rays: int = 16
    ray_range: float = 4.0
    neighbours: int = 4
    neighbour_range: float = 4.0
    max_speed: float = 1.0
    radius: float = 0.3
    goal_radius: float = 0.3
    min_goal_distance: float = 3.0
    ticks_per_step: int = 1
    max_steps: int = 200
    action: str = "continuous"
    headings: int = 8
    progress_weight: float = 1.0
    collision_weight: float = 0.25
    time_weight: float = 0.01
    arrival_weight: float = 5.0
    collision_margin: float = 0.02

    def __post_init__(self):
        counts = {"n_rays": 0, "neighbours": 0, "ticks_per_step": 1, "max_steps": 1, "headings": 1}
        for name, least in counts.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"NavSettings.{name}: must be an integer >= {least}, got {value!r}")
        positive = ("ray_range", "neighbour_range", "max_speed", "radius", "goal_radius")
        for name in (*positive, "min_goal_distance", "progress_weight", "collision_weight", "time_weight",
                     "arrival_weight", "collision_margin"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not math.isfinite(value) \
                    or value < 0 or (name in positive and value == 0):
                bound = "> 0" if name in positive else ">= 0"
                raise ValueError(f"NavSettings.{name}: must be a finite number {bound}, got {value!r}")
        if self.action not in ("continuous", "discrete"):
            raise ValueError(f"NavSettings.action: must be 'continuous' or 'discrete', got {self.action!r}")

    @property
    def observation_size(self) -> int:
        """Elements of an observation: 4 + n_rays + 5 neighbours."""
        return 4 + self.n_rays + 5 * self.neighbours


def settings_from(settings: NavSettings | None, overrides: dict) -> NavSettings:
    """``settings`` (default ``NavSettings()``) with the fields in ``overrides`` replaced;
    TypeError names an unknown one."""
    known = {f.name for f in dataclasses.fields(NavSettings)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise TypeError(f"unknown setting {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return dataclasses.replace(settings or NavSettings(), **overrides)


class NavBatch:
    """``copies`` copies of ``settings.scene`` in one World, each with ``learners`` learners
    (learner i is in copy ``i // learners``), its own agents kept when ``scene_agents``.

    Arrays per learner (L = copies * learners): ``goal`` (L, 2) m, ``steps`` (L,), ``preferred``
    (L, 2) m/s, world frame. ``build(seed)`` makes the World, ``place(which, rng)`` gives learners
    new starts and goals, ``act``, ``advance``, ``sense`` and ``reward`` run a step. With
    ``goal_markers`` each learner's goal is an entity of its own (a ``Position`` and a ``Name``,
    ``GOAL_NAME``: no Agent, Collider or Velocity, so nothing meets it) that the viewer draws."""

    def __init__(self, settings: NavSettings, copies: int = 1, learners: int = 1, scene_agents: bool = True,
                 goal_markers: bool = False):
        if copies < 1 or learners < 1:
            raise ValueError(f"NavBatch: copies and learners must be >= 1, got {copies} and {learners}")
        self.settings, self.copies, self.learners = settings, int(copies), int(learners)
        self.scene_agents = scene_agents
        self.goal_markers = goal_markers
        self.scene = parse_scene(settings.scene)
        self.count = self.copies * self.learners
        self.copy_of = np.repeat(np.arange(self.copies), self.learners)
        self.world = None

    # --- the World ------------------------------------------------------------------------------

    def build(self, seed: int) -> None:
        """A new World of the copies (the scene's crowds placed from ``seed``), learners spawned at
        a placeholder and standing still: ``place`` them before a step."""
        if self.world is not None:
            self.world.close()
        entries = []
        if self.scene_agents:
            for k in range(self.copies):
                for entry in self.scene.entities:
                    copy = {**entry, "components": {name: dict(fields) for name, fields in entry["components"].items()}}
                    if k and "Collider" in copy["components"]:  # (an agent without one is on layer 0)
                        copy["components"]["Collider"]["layer"] = k
                    entries.append(copy)
        world = build_world(dataclasses.replace(self.scene, entities=entries), seed=int(seed))
        if world.map is None:
            raise ValueError(f"{self.scene.source}: ecs_nav.rl needs a scene with a [map]")
        self.world = world
        s = self.settings
        xmin, ymin, xmax, ymax = world.map.bounds
        self.diagonal = math.hypot(xmax - xmin, ymax - ymin)
        corner = (xmin + s.radius, ymin + s.radius)
        spread = np.stack([np.linspace(0, 1e-3, self.count), np.zeros(self.count)], axis=1) + corner
        learner = [Position(*corner), Velocity(),
                   Agent(max_speed=s.max_speed, max_force=2.0 * s.max_speed, mass=world.dt, turn_speed=1.0 / world.dt),
                   Collider(s.radius),
                   SteeringWeights({"arrive": 1.0}, deceleration=AIM_SECONDS / DECELERATION_TWEAKER, target=corner)]
        entities = world.spawn_many(self.count, learner, positions=spread, tags=lambda i: [Name(LEARNER_NAME)])
        table = world.table
        self.rows = table.rows_of(entities)
        self.markers = (world.spawn_many(self.count, [Position(*corner)], positions=spread,
                                         tags=lambda i: [Name(GOAL_NAME)]) if self.goal_markers else None)
        table.layer[self.rows] = self.copy_of
        live = len(table)
        agents = np.flatnonzero(table.is_agent[:live] & table.has_collider[:live])
        layer = table.layer[agents]
        order = np.argsort(layer, kind="stable")
        self.layer_rows = np.ascontiguousarray(agents[order], dtype=np.int64)
        self.layer_start = np.searchsorted(layer[order], np.arange(self.copies + 1)).astype(np.int64)
        self.fastest = float(max(s.max_speed, table.max_speed[agents].max()))
        physics = world.system("PhysicsSystem")
        self.body_height = float(physics.body_height) if physics is not None else BODY_HEIGHT
        self.goal = np.zeros((self.count, 2))
        self.distance = np.zeros(self.count)
        self.steps = np.zeros(self.count, dtype=np.int64)
        self.preferred = np.zeros((self.count, 2))
        world.add_system(FunctionSystem(self.aim, name="LearnerAim"), before="SteeringSystem")

    def close(self) -> None:
        if self.world is not None:
            self.world.close()
            self.world = None

    def aim(self, world) -> None:
        """The system that re-aims each learner's arrive target 1 s ahead along its preferred
        velocity (or a hair ahead along its heading when it stands still), every tick."""
        table, rows = world.table, self.rows
        ahead = self.preferred * AIM_SECONDS
        still = np.hypot(ahead[:, 0], ahead[:, 1]) < STILL_SPEED * AIM_SECONDS
        if still.any():
            ahead[still] = table.heading[rows[still]] * (STILL_SPEED * AIM_SECONDS)
        table.steer_target[rows] = table.pos[rows] + ahead
        table.has_steer_target[rows] = True

    # --- placing learners -----------------------------------------------------------------------

    def free_points(self, rng: np.random.Generator, count: int, clearance: float) -> np.ndarray:
        """(count, PLACEMENT_TRIES, 2) candidate points on the floor whose discs of ``clearance``
        stay inside the bounds and off every wall; NaN where a candidate failed."""
        gmap = self.world.map
        xmin, ymin, xmax, ymax = gmap.bounds
        lo = np.array([xmin + clearance, ymin + clearance])
        hi = np.array([xmax - clearance, ymax - clearance])
        points = lo + rng.random((count * PLACEMENT_TRIES, 2)) * (hi - lo)
        climb = float(self.world.table.max_climb[self.rows[0]])
        free = gmap.penetration(points, clearance, gmap.floor, climb) <= 0
        free &= gmap.surface_height(points) <= gmap.floor + climb
        points[~free] = np.nan
        return points.reshape(count, PLACEMENT_TRIES, 2)

    def place(self, which: np.ndarray, rng: np.random.Generator) -> None:
        """New starts and goals for the learners ``which`` (indices), drawn from ``rng``: a start
        on free floor whose disc keeps ``radius`` off every wall and every agent of its copy, a
        random heading, a goal on free floor at least ``min_goal_distance`` away; standing still."""
        which = np.asarray(which, dtype=np.int64).reshape(-1)
        if which.size == 0:
            return
        s, table = self.settings, self.world.table
        starts = np.empty((which.size, 2))
        for attempt in range(50):
            left = np.flatnonzero(np.isnan(starts[:, 0])) if attempt else np.arange(which.size)
            if left.size == 0:
                break
            starts[left] = np.nan
            cand = self.free_points(rng, left.size, 2.0 * s.radius)
            for n, i in enumerate(left):
                learner = which[i]
                layer = self.copy_of[learner]
                others = self.layer_rows[self.layer_start[layer]:self.layer_start[layer + 1]]
                others = others[others != self.rows[learner]]
                ok = ~np.isnan(cand[n, :, 0])
                if others.size:
                    gap = np.hypot(*(cand[n, :, None, :] - table.pos[others][None]).transpose(2, 0, 1))
                    ok &= np.all(gap > table.radius[others][None] + 2.0 * s.radius, axis=1)
                hits = np.flatnonzero(ok)
                if hits.size:
                    starts[i] = cand[n, hits[0]]
                    table.pos[self.rows[learner]] = starts[i]  # (the next learner of the copy keeps off it)
        if np.isnan(starts).any():
            raise RuntimeError(f"{self.scene.source}: found no free start for a learner of radius {s.radius} m")
        goals = np.full((which.size, 2), np.nan)
        for _ in range(50):
            left = np.flatnonzero(np.isnan(goals[:, 0]))
            if left.size == 0:
                break
            cand = self.free_points(rng, left.size, s.radius + 0.05)
            far = np.hypot(*(cand - starts[left][:, None, :]).transpose(2, 0, 1)) >= s.min_goal_distance
            pick = np.argmax(far, axis=1)
            found = far[np.arange(left.size), pick]
            goals[left[found]] = cand[found, pick[found]]
        if np.isnan(goals).any():
            raise RuntimeError(f"{self.scene.source}: found no free goal {s.min_goal_distance} m or more from a start")
        self.start_episode(which, starts, goals, rng.random(which.size) * 2.0 * math.pi)

    def start_episode(self, which: np.ndarray, starts: np.ndarray, goals: np.ndarray, angle: np.ndarray) -> None:
        """Put the learners ``which`` at ``starts`` ((n, 2) m), standing still, heading ``angle``
        ((n,) radians anticlockwise of +x), with ``goals`` ((n, 2) m) and no steps yet (what
        ``place`` does with the points it draws)."""
        which = np.asarray(which, dtype=np.int64).reshape(-1)
        table = self.world.table
        rows = self.rows[which]
        table.pos[rows] = starts
        table.prev_pos[rows] = starts
        table.vel[rows] = 0.0
        table.heading[rows] = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        table.steer_target[rows] = starts
        gmap = self.world.map
        table.elevation[rows] = gmap.surface_height(starts, gmap.floor + table.max_climb[rows])
        self.goal[which] = goals
        if self.markers is not None:
            table.pos[table.rows_of(self.markers[which])] = goals
        self.distance[which] = np.hypot(*(goals - starts).T)
        self.steps[which] = 0
        self.preferred[which] = 0.0

    # --- a step -----------------------------------------------------------------------------------

    def act(self, actions, which: np.ndarray | None = None) -> None:
        """Set the preferred velocity of the learners ``which`` (default all, in order) from
        ``actions`` ((n, 2) continuous or (n,) discrete; see NavSettings)."""
        which = np.arange(self.count) if which is None else np.asarray(which, dtype=np.int64)
        s = self.settings
        heading = self.world.table.heading[self.rows[which]]
        if s.action == "continuous":
            local = np.clip(np.asarray(actions, dtype=np.float64).reshape(which.size, 2), -1.0, 1.0)
            norm = np.hypot(local[:, 0], local[:, 1])
            local = local / np.maximum(norm, 1.0)[:, None] * s.max_speed
        else:
            chosen = np.asarray(actions, dtype=np.int64).reshape(which.size)
            if np.any((chosen < 0) | (chosen > s.headings)):
                raise ValueError(f"NavEnv: a discrete action is in [0, {s.headings}], got {chosen.tolist()}")
            angle = 2.0 * math.pi * (chosen - 1) / s.headings
            local = np.stack([np.cos(angle), np.sin(angle)], axis=1) * np.where(chosen > 0, s.max_speed, 0.0)[:, None]
        if not np.all(np.isfinite(local)):
            raise ValueError("NavEnv: actions must be finite")
        fx, fy = heading[:, 0], heading[:, 1]
        self.preferred[which, 0] = local[:, 0] * fx - local[:, 1] * fy
        self.preferred[which, 1] = local[:, 0] * fy + local[:, 1] * fx

    def advance(self) -> None:
        """Run ``ticks_per_step`` ticks of the World; count a step for every learner."""
        for _ in range(self.settings.ticks_per_step):
            self.world.step()
        self.steps += 1

    def sense(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(observations (L, observation_size) float32, wall clearance (L,) m, least gap to
        another agent (L,) m)."""
        s, table, rows = self.settings, self.world.table, self.rows
        pos, vel = table.pos[rows], table.vel[rows]
        heading = table.heading[rows]
        heading = heading / np.maximum(np.hypot(heading[:, 0], heading[:, 1]), 1e-12)[:, None]
        fx, fy = np.ascontiguousarray(heading[:, 0]), np.ascontiguousarray(heading[:, 1])
        obs = np.empty((self.count, s.observation_size))
        to_goal = self.goal - pos
        lim = self.diagonal
        obs[:, 0] = np.clip(to_goal[:, 0] * fx + to_goal[:, 1] * fy, -lim, lim)
        obs[:, 1] = np.clip(-to_goal[:, 0] * fy + to_goal[:, 1] * fx, -lim, lim)
        vlim = 2.0 * s.max_speed
        obs[:, 2] = np.clip(vel[:, 0] * fx + vel[:, 1] * fy, -vlim, vlim)
        obs[:, 3] = np.clip(-vel[:, 0] * fy + vel[:, 1] * fx, -vlim, vlim)
        elevation = table.elevation[rows]
        zlo = np.ascontiguousarray(elevation + table.max_climb[rows])
        zhi = np.ascontiguousarray(elevation + self.body_height)
        G = self.world.map.kernel_data()
        px, py = np.ascontiguousarray(pos[:, 0]), np.ascontiguousarray(pos[:, 1])
        if s.n_rays:
            rays = np.empty((self.count, s.n_rays))
            ray_distances_into(G, px, py, fx, fy, zlo, zhi, float(s.ray_range), rays)
            obs[:, 4:4 + s.n_rays] = rays
        clearance = np.empty(self.count)
        wall_clearance_into(G, px, py, zlo, zhi, float(s.radius + s.collision_margin + 1.0), clearance)
        near = np.zeros((self.count, max(s.neighbours, 1), 5))
        gap = np.empty(self.count)
        live = len(table)
        nearest_agents_into(table.pos[:live], table.vel[:live], table.radius[:live], self.layer_start,
                            self.layer_rows, self.rows.astype(np.int64), self.copy_of, fx, fy,
                            float(s.neighbour_range), near, gap)
        if s.neighbours:
            near = near[:, :s.neighbours]
            r, v = s.neighbour_range, 2.0 * self.fastest
            np.clip(near[:, :, 0:2], -r, r, out=near[:, :, 0:2])
            np.clip(near[:, :, 2:4], -v, v, out=near[:, :, 2:4])
            obs[:, 4 + s.n_rays:] = near.reshape(self.count, -1)
        return obs.astype(np.float32), clearance, gap

    def reward(self, clearance: np.ndarray, gap: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The reward's terms ((L,) each: progress, collision, time, arrival) since the last call
        (or ``place``), and whether each learner has arrived."""
        s, table = self.settings, self.world.table
        distance = np.hypot(*(self.goal - table.pos[self.rows]).T)
        arrived = distance <= s.goal_radius
        touching = (clearance - s.radius < s.collision_margin) | (gap < s.collision_margin)
        terms = {"progress": s.progress_weight * (self.distance - distance),
                 "collision": np.where(touching, -s.collision_weight, 0.0),
                 "time": np.full(self.count, -s.time_weight),
                 "arrival": np.where(arrived, s.arrival_weight, 0.0)}
        self.distance = distance
        return terms, arrived
