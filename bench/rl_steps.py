"""Environment steps per second for reinforcement learning: ``NavVectorEnv`` (every copy of the
room a layer of one World, stepped in one call) against Gymnasium's ``SyncVectorEnv`` over single
``NavEnv``s (a World each) and against a minimal RVO2-backed environment (``pyrvo``) written the
way CrowdNav-style code steps it, in a ``SyncVectorEnv`` too.

All three run the same task: one learner in a 12 x 8 m room with four round pillars and a square
column (ecs_nav.rl's default scene) among three other walkers, ticks of 0.1 s, one tick a step,
random actions, episodes truncated after ``--max-steps`` steps (so every copy resets at least once
in the timed steps; the resets are timed too). The RVO2 environment is one simulator per copy with
the walls, the pillars as octagons and the column as a square: each step a Python loop sets every
agent's preferred velocity (the learner's from its action, each walker's towards a random goal,
drawn again when it gets there) and calls ``do_step()``; it then reads the positions back and
computes the observation (goal and velocity in the learner's frame, the K nearest walkers) and the
reward in numpy. It casts no rays (RVO2 has no ray query): it does less per step than the ecs_nav
environments, which cast 16.

    python bench/rl_steps.py [--copies 1 64 1024 8192] [--steps 100] [--sync-max 8192]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import gymnasium
import numpy as np
from gymnasium.vector import SyncVectorEnv

from ecs_nav.rl import NavEnv, NavVectorEnv
from ecs_nav.scene.files import parse_scene

NEIGHBOURS = 4
WALKERS = 3
RADIUS = 0.3
SPEED = 1.0
DT = 0.1


class Rvo2RoomEnv(gymnasium.Env):
    """The room task on RVO2 (pyrvo), CrowdNav-style: a simulator of the learner (agent 0) and
    the walkers; Python sets each preferred velocity and calls ``do_step()``."""

    metadata = {"render_modes": []}

    def __init__(self, max_steps: int = 50):
        room = parse_scene(NavEnv().settings.scene)
        self.bounds = room.map["bounds"]
        self.pillars = [(c.center, c.radius) for c in room.map["circle"]]
        self.columns = [(b.center, b.size) for b in room.map["box"]]
        self.max_steps = max_steps
        size = 4 + 5 * NEIGHBOURS
        self.observation_space = gymnasium.spaces.Box(-20.0, 20.0, (size,), np.float32)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def free_point(self) -> np.ndarray:
        xmin, ymin, xmax, ymax = self.bounds
        while True:
            p = self.np_random.uniform((xmin + 0.5, ymin + 0.5), (xmax - 0.5, ymax - 0.5))
            clear = all(abs(p[0] - c[0]) > w / 2 + 0.5 or abs(p[1] - c[1]) > d / 2 + 0.5 for c, (w, d) in self.columns)
            if clear and all(math.dist(p, c) > r + 0.5 for c, r in self.pillars):
                return p

    def reset(self, *, seed=None, options=None):
        import pyrvo

        super().reset(seed=seed)
        sim = pyrvo.RVOSimulator(DT, 3.0, 10, 2.0, 1.0, RADIUS, SPEED, pyrvo.Vector2(0.0, 0.0))
        xmin, ymin, xmax, ymax = self.bounds
        sim.add_obstacle([(xmin, ymin), (xmin, ymax), (xmax, ymax), (xmax, ymin)])  # clockwise: the agents inside
        for (cx, cy), r in self.pillars:  # anticlockwise: solid
            sim.add_obstacle([(cx + r * math.cos(a), cy + r * math.sin(a)) for a in np.arange(8) * math.pi / 4])
        for (cx, cy), (w, d) in self.columns:
            sim.add_obstacle([(cx - w / 2, cy - d / 2), (cx + w / 2, cy - d / 2), (cx + w / 2, cy + d / 2),
                              (cx - w / 2, cy + d / 2)])
        sim.process_obstacles()
        for _ in range(1 + WALKERS):
            p = self.free_point()
            sim.add_agent((float(p[0]), float(p[1])))
        self.sim = sim
        self.goals = [self.free_point() for _ in range(1 + WALKERS)]
        self.heading = np.array([1.0, 0.0])
        self.steps = 0
        self.distance = self.goal_distance()
        return self.observe(), {}

    def goal_distance(self) -> float:
        p = self.sim.get_agent_position(0)
        return math.hypot(self.goals[0][0] - p.x, self.goals[0][1] - p.y)

    def observe(self) -> np.ndarray:
        sim = self.sim
        pos = np.array([[sim.get_agent_position(i).x, sim.get_agent_position(i).y] for i in range(1 + WALKERS)])
        vel = np.array([[sim.get_agent_velocity(i).x, sim.get_agent_velocity(i).y] for i in range(1 + WALKERS)])
        f = self.heading
        frame = np.array([f, [-f[1], f[0]]])  # rows: forward, left
        obs = np.zeros(4 + 5 * NEIGHBOURS, np.float32)
        obs[0:2] = frame @ (self.goals[0] - pos[0])
        obs[2:4] = frame @ vel[0]
        rel = pos[1:] - pos[0]
        order = np.argsort(np.hypot(rel[:, 0], rel[:, 1]))[:NEIGHBOURS]
        for slot, j in enumerate(order):
            obs[4 + 5 * slot:9 + 5 * slot] = [*(frame @ rel[j]), *(frame @ (vel[1 + j] - vel[0])), 1.0]
        self.gap = float(np.min(np.hypot(rel[:, 0], rel[:, 1]))) - 2 * RADIUS
        return np.clip(obs, -20.0, 20.0)

    def step(self, action):
        sim = self.sim
        local = np.clip(action, -1.0, 1.0)
        local = local / max(1.0, float(np.hypot(*local))) * SPEED
        f = self.heading
        sim.set_agent_pref_velocity(0, (float(local[0] * f[0] - local[1] * f[1]),
                                        float(local[0] * f[1] + local[1] * f[0])))
        for i in range(1, 1 + WALKERS):  # the walkers: towards their goals, a new one on arrival
            p = sim.get_agent_position(i)
            dx, dy = self.goals[i][0] - p.x, self.goals[i][1] - p.y
            d = math.hypot(dx, dy)
            if d < 0.3:
                self.goals[i] = self.free_point()
                dx, dy = self.goals[i][0] - p.x, self.goals[i][1] - p.y
                d = math.hypot(dx, dy)
            s = SPEED / d if d > SPEED else 1.0
            sim.set_agent_pref_velocity(i, (dx * s, dy * s))
        sim.do_step()
        v = sim.get_agent_velocity(0)
        if math.hypot(v.x, v.y) > 1e-9:
            self.heading = np.array([v.x, v.y]) / math.hypot(v.x, v.y)
        self.steps += 1
        obs = self.observe()
        distance = self.goal_distance()
        arrived = distance <= RADIUS
        reward = (self.distance - distance) - 0.25 * (self.gap < 0.02) - 0.01 + 5.0 * arrived
        self.distance = distance
        return obs, float(reward), bool(arrived), bool(not arrived and self.steps >= self.max_steps), {}


def steps_per_second(envs, steps: int, seed: int = 0) -> float:
    """Copies x steps / wall-clock seconds of ``steps`` steps of random actions, after a reset and
    three untimed steps."""
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (steps + 3, envs.num_envs, 2)).astype(np.float32)
    for a in actions[:3]:
        envs.step(a)
    start = time.perf_counter()
    for a in actions[3:]:
        envs.step(a)
    return envs.num_envs * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 64, 1024, 8192])
    parser.add_argument("--steps", type=int, default=100, help="timed steps (at least --max-steps + 1 at each size)")
    parser.add_argument("--max-steps", type=int, default=50, help="steps before an episode is truncated")
    parser.add_argument("--sync-max", type=int, default=8192, help="largest size the SyncVectorEnvs are run at")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| copies | NavVectorEnv steps/s | SyncVectorEnv of NavEnv steps/s | RVO2 env (SyncVectorEnv) steps/s "
          "| NavVectorEnv / RVO2 |\n|---:|---:|---:|---:|---:|")
    m = args.max_steps
    for n in args.copies:
        steps = args.steps if n <= 1024 else max(m + 1, args.steps // 2)
        ours = NavVectorEnv(n, max_steps=m)
        layered = steps_per_second(ours, steps)
        ours.close()
        sync = rvo2 = math.nan
        if n <= args.sync_max:
            few = max(m + 1, steps // 2) if n > 64 else steps
            envs = SyncVectorEnv([lambda: NavEnv(max_steps=m) for _ in range(n)])
            sync = steps_per_second(envs, few)
            envs.close()
            envs = SyncVectorEnv([lambda: Rvo2RoomEnv(max_steps=m) for _ in range(n)])
            rvo2 = steps_per_second(envs, few)
            envs.close()
        print(f"| {n:,} | {layered:,.0f} | {sync:,.0f} | {rvo2:,.0f} | {layered / rvo2:,.1f}x |", flush=True)
    print(f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
