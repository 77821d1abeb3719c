"""ORCA at scale: copies of the circle swap side by side, ecs_nav's ``Avoidance`` against RVO2
(``pyrvo``) from the same start points: milliseconds a tick and the outcome.

Each copy is the ``circle`` scene's kind of circle: ``--per-circle`` agents (radius 0.3 m,
1.4 m/s) on a circle of ``--circle`` m, start points jittered up to 0.1 m (seeded by the copy's
number), each walking to the antipode of its start through the middle; ``--copies`` of them
on a square grid, far enough apart that no two meet (1,000 agents: 10 copies of 100; 10,000:
100). RVO2's avoidance parameters (neighbour_dist 5 m, max_neighbours 10, time_horizon 2 s,
time_horizon_obst 1 s), no walls.

ecs_nav: a World with the SteeringSystem (arrive at the antipode, then ORCA) and the
PhysicsSystem, agents of one tick's mass (the velocity follows arrive at once, as RVO2's
preferred velocity does), avoiding as RVO2 does (``Avoidance.side`` "none") and passing on the
right ("right"). RVO2: its usual loop, a preferred velocity toward the goal at full speed
(slower within a second of it) set from Python, then ``do_step()``.

Per engine: how many arrived (within 0.5 m of the goal, by position), when half and the last
did, the closest approach (the smallest centre distance minus the sum of radii, every
``--closest-every`` ticks) and the milliseconds a tick took: ecs_nav's whole ``World.step()``
and its ORCA kernel alone (``orca_velocities``: neighbours, half-planes and linear programs of
every agent); RVO2's ``do_step()`` alone (its kd-tree build, neighbours, half-planes, linear
programs and the position update) and its whole loop with the Python that reads positions and
sets preferred velocities. Both use one core.

    python bench/orca_scale.py [--copies 10] [--per-circle 100] [--circle 20] [--seconds 90]
    python bench/orca_scale.py --copies 100 --seconds 20     (10,000 agents, the first 20 s)
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts

import ecs_nav.systems.avoidance as avoidance_stage  # noqa: E402
from ecs_nav.systems.physics import PhysicsSystem  # noqa: E402
from ecs_nav.systems.steering import SteeringSystem  # noqa: E402
from orca_circle import closest_approach, machine  # noqa: E402

from ecs_nav import Agent, Avoidance, Collider, Position, SteeringWeights, Velocity, World  # noqa: E402

SPEED, RADIUS, ARRIVED, DT = 1.4, 0.3, 0.5, 1.0 / 60.0
PARAMETERS = {"neighbour_dist": 5.0, "max_neighbours": 10, "time_horizon": 2.0, "time_horizon_obst": 1.0}


def start_points(copies: int, per_circle: int, circle: float, jitter: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(start (n, 2), goals (n, 2)): ``copies`` jittered circles on a square grid ``2 * circle +
    10`` m apart, each goal the antipode of its start round its circle's centre."""
    side = int(math.ceil(math.sqrt(copies)))
    spacing = 2.0 * circle + 10.0
    angles = 2.0 * np.pi * np.arange(per_circle) / per_circle
    ring = np.stack([circle * np.cos(angles), circle * np.sin(angles)], axis=1)
    starts, goals = [], []
    for k in range(copies):
        centre = spacing * np.array([k % side, k // side], dtype=np.float64)
        offset = np.round(ring + np.random.default_rng(k).uniform(-jitter, jitter, ring.shape), 4)
        starts.append(centre + offset)
        goals.append(centre - offset)
    return np.concatenate(starts), np.concatenate(goals)


class KernelClock:
    """Wraps the avoidance stage's ``orca_velocities`` and adds up the seconds its calls take."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0
        self.kernel = avoidance_stage.orca_velocities

    def __call__(self, *args):
        begin = time.perf_counter()
        self.kernel(*args)
        self.seconds += time.perf_counter() - begin
        self.calls += 1


def outcome(first: np.ndarray, n: int, closest: float) -> dict:
    ticks = np.sort(first[first >= 0])
    return {"arrived": int(ticks.size), "agents": n, "closest": closest,
            "last": ticks[-1] * DT if ticks.size == n else None,
            "half": ticks[(n - 1) // 2] * DT if ticks.size > (n - 1) // 2 else None}


def run_ecs_nav(start, goals, ticks: int, closest_every: int, side: str = "none") -> dict:
    world = World(seed=0)
    for p, g in zip(start, goals):
        world.spawn(Position(*p), Velocity(), Agent(max_speed=SPEED, max_force=20.0, mass=DT), Collider(radius=RADIUS),
                    SteeringWeights({"arrive": 1.0}, target=tuple(g)), Avoidance(**PARAMETERS, side=side))
    world.add_systems(SteeringSystem(), PhysicsSystem())
    t = world.table
    n = t.n
    first = np.full(n, -1)
    closest = math.inf
    clock = avoidance_stage.orca_velocities = KernelClock()
    try:
        world.step()  # compiles what is not compiled yet: not timed
        clock.seconds, clock.calls = 0.0, 0
        spent = 0.0
        for tick in range(2, ticks + 1):
            begin = time.perf_counter()
            world.step()
            spent += time.perf_counter() - begin
            pos = t.pos[:n]
            first[(first < 0) & (np.hypot(*(pos - goals).T) <= ARRIVED)] = tick
            if tick % closest_every == 0:
                closest = min(closest, closest_approach(pos, t.radius[:n]))
            if (first >= 0).all():
                break
    finally:
        avoidance_stage.orca_velocities = clock.kernel
    timed = tick - 1
    return {**outcome(first, n, closest), "step ms": spent / timed * 1e3, "kernel ms": clock.seconds / timed * 1e3}


def run_rvo2(start, goals, ticks: int, closest_every: int) -> dict:
    import pyrvo

    n = start.shape[0]
    sim = pyrvo.RVOSimulator(DT, PARAMETERS["neighbour_dist"], PARAMETERS["max_neighbours"],
                             PARAMETERS["time_horizon"], PARAMETERS["time_horizon_obst"], RADIUS, SPEED)
    for p in start:
        sim.add_agent((float(p[0]), float(p[1])))
    first = np.full(n, -1)
    closest = math.inf
    radii = np.full(n, RADIUS)
    in_step = in_loop = 0.0
    pos = start.copy()
    for tick in range(1, ticks + 1):
        begin = time.perf_counter()
        to_goal = goals - pos
        distance = np.hypot(to_goal[:, 0], to_goal[:, 1])
        pref = np.where((distance > SPEED)[:, None], to_goal / np.maximum(distance, 1e-300)[:, None] * SPEED, to_goal)
        for i in range(n):
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        stepping = time.perf_counter()
        sim.do_step()
        stepped = time.perf_counter()
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        done = time.perf_counter()
        if tick > 1:  # (the first step allocates)
            in_step += stepped - stepping
            in_loop += done - begin
        first[(first < 0) & (np.hypot(*(pos - goals).T) <= ARRIVED)] = tick
        if tick % closest_every == 0:
            closest = min(closest, closest_approach(pos, radii))
        if (first >= 0).all():
            break
    timed = max(tick - 1, 1)
    return {**outcome(first, n, closest), "step ms": in_loop / timed * 1e3, "kernel ms": in_step / timed * 1e3}


def row(name: str, r: dict) -> str:
    def seconds(v):
        return "never" if v is None else f"{v:.1f}"

    return (f"| {name} | {r['arrived']}/{r['agents']} | {seconds(r['last'])} | {seconds(r['half'])} | "
            f"{r['closest']:.3f} | {r['kernel ms']:.2f} | {r['step ms']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=10, help="circles side by side")
    parser.add_argument("--per-circle", type=int, default=100, help="agents on each circle")
    parser.add_argument("--circle", type=float, default=20.0, help="the circles' radius, m")
    parser.add_argument("--seconds", type=float, default=90.0, help="simulated seconds at most")
    parser.add_argument("--closest-every", type=int, default=6, help="ticks between closest-approach measures")
    parser.add_argument("--engines", default="ecs_nav,ecs_nav_right,rvo2",
                        help="which, comma-separated: ecs_nav, ecs_nav_right (passing on the right), rvo2")
    args = parser.parse_args()
    start, goals = start_points(args.copies, args.per_circle, args.circle)
    ticks = int(round(args.seconds / DT))
    print(f"Command: python bench/orca_scale.py {' '.join(sys.argv[1:])}".strip() +
          f"; {datetime.date.today().isoformat()}; {machine()}, Python {platform.python_version()}")
    print(f"{args.copies} circles of {args.per_circle} agents ({start.shape[0]:,}), radius {args.circle:g} m; "
          f"a free walk takes {2 * args.circle / SPEED:.1f} s; at most {args.seconds:g} s")
    print("| engine | arrived | last arrival (s) | 50% arrived (s) | closest approach (m) | ORCA kernel / "
          "do_step (ms/tick) | whole tick (ms/tick) |\n|---|---:|---:|---:|---:|---:|---:|")
    for engine in args.engines.split(","):
        if engine == "rvo2":
            result, name = run_rvo2(start, goals, ticks, args.closest_every), "RVO2 (do_step; its loop)"
        else:
            side = {"ecs_nav": "none", "ecs_nav_right": "right"}[engine]
            result = run_ecs_nav(start, goals, ticks, args.closest_every, side)
            name = f"ecs_nav, side {side} (ORCA kernel; World.step)"
        print(row(name, result), flush=True)


if __name__ == "__main__":
    main()
