"""Swapping places on a circle: ecs_nav's ORCA (``Avoidance``) against RVO2 (``pyrvo``) from the
same start points, to the same goals, with the same avoidance parameters.

ecs_nav runs the ``circle`` scene (or, with ``--agents``, the same kind of circle built here) as
a user would: ``World.step()`` with its systems (a smoothed path to the antipode, steering's
path following, ORCA, the physics). RVO2 runs its usual loop: each tick a preferred velocity
toward the goal at full speed (slower within a second of it) set from Python, then
``do_step()``. Per engine: when the last agent and half of them arrived (within the scene's
``Agent.stopping_distance`` of the goal: ecs_nav's ``TargetReached``), the closest approach
(the smallest centre distance minus the sum of radii, over every pair and tick; below 0 the
agents overlapped), ecs_nav's ``Stuck`` events, and the wall-clock milliseconds a tick took
(ecs_nav: ``World.step()``, every system; RVO2: reading the positions and setting the preferred
velocities from Python, and ``do_step()``; at this size neither is a measure of the kernels).

    python bench/orca_circle.py [--agents 100] [--circle 20] [--jitter 0.1] [--seconds 150]
    python bench/orca_circle.py --seeds 12     (12 circles of the scene's kind, start points
                                                jittered with seeds 0 to 11: one row each)

A circle of agents in perfect symmetry jams ORCA, RVO2's too: the agents meet in a ring round
the centre, each pushing inward against its neighbours, and nobody arrives. So the start points
are moved by up to ``--jitter`` metres on each axis (deterministic), and each goal is the exact
antipode of its agent's start point.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time

import numpy as np

import ecs_nav
from ecs_nav import load_scene
from ecs_nav.motion.neighbours import neighbours_within


def closest_approach(pos: np.ndarray, radius: np.ndarray) -> float:
    """The smallest centre distance minus the sum of the two radii over every pair (inf for a
    single agent or none within reach)."""
    reach = 2.0 * float(radius.max()) + 1.0
    offsets, rows = neighbours_within(pos, reach, max_neighbours=1)
    has = np.diff(offsets) > 0
    if not has.any():
        return math.inf
    i = np.flatnonzero(has)
    j = rows[offsets[:-1][has]]
    gap = np.hypot(*(pos[i] - pos[j]).T) - radius[i] - radius[j]
    return float(gap.min())


def circle_scene_text(agents: int, circle: float, jitter: float, seed: int = 0) -> str:
    """A scene like ``scenes/circle.toml`` with ``agents`` walkers on a circle of ``circle`` m."""
    rng = np.random.default_rng(seed)
    angles = 2.0 * np.pi * np.arange(agents) / agents
    start = np.stack([circle * np.cos(angles), circle * np.sin(angles)], axis=1)
    start = np.round(start + rng.uniform(-jitter, jitter, start.shape), 4)
    bound = circle + 5.0
    head = f"""[world]
seed = {seed}

[map]
bounds = [{-bound}, {-bound}, {bound}, {bound}]

[prefab.walker]
Agent = {{ max_speed = 1.4, max_force = 20.0, mass = 0.0167, stopping_distance = 0.5 }}
Collider = {{ radius = 0.3 }}
Velocity = {{}}
SteeringWeights = {{ weights = {{ follow_path = 1.0 }} }}
Avoidance = {{ neighbour_dist = 5.0, max_neighbours = 10, time_horizon = 2.0, time_horizon_obst = 1.0 }}
"""
    entities = [f"""[[entity]]
prefab = "walker"
Position = {{ x = {x + 0.0!r}, y = {y + 0.0!r} }}
PathRequest = {{ goal = [{-x + 0.0!r}, {-y + 0.0!r}], smooth = true }}
""" for x, y in start.tolist()]
    return "\n".join([head, *entities])


def scene_world(args, seed: int | None = None):
    """The World to run: the built-in circle scene, or one built from the arguments (start
    points jittered with ``seed``)."""
    if args.agents is None and seed is None:
        return load_scene("circle"), "scenes/circle.toml"
    import tempfile
    from pathlib import Path

    agents = 100 if args.agents is None else args.agents
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "circle.toml"
        path.write_text(circle_scene_text(agents, args.circle, args.jitter, seed or 0), encoding="utf-8")
        return load_scene(path), f"{agents} agents on a {args.circle:g} m circle, start points jittered by " \
            f"{args.jitter:g} m"


def machine() -> str:
    """The CPU's model name (Linux), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compare(args, seed: int | None = None):
    """Both engines on one circle: (what was run, the avoidance parameters, ecs_nav's summary,
    RVO2's, a free walk's seconds)."""
    world, what = scene_world(args, seed)
    t = world.table
    n = t.n
    start = t.pos[:n].copy()
    goals = np.array([world.get(int(t.entity[r]), ecs_nav.PathRequest).goal for r in range(n)])
    avoidance = world.get(int(t.entity[0]), ecs_nav.Avoidance)
    params = {k: getattr(avoidance, k) for k in ("neighbour_dist", "max_neighbours", "time_horizon",
                                                    "time_horizon_obst")}
    radius, speed, stopping = float(t.radius[0]), float(t.max_speed[0]), float(t.stopping_distance[0])
    ticks = int(round(args.seconds / world.dt))
    ours = run_ecs_nav(world, ticks)
    theirs = run_rvo2(start, goals, radius, speed, stopping, params, world.dt, ticks)
    free = float(np.median(np.hypot(*(goals - start).T))) / speed
    head = (f"{what}; radius {radius:g} m, max speed {speed:g} m/s, arrival within {stopping:g} m; avoidance "
            f"{params}; a free walk takes {free:.1f} s")
    return head, ours, theirs


def run_ecs_nav(world, ticks: int) -> dict:
    """Step until every agent has arrived (its TargetReached) or ``ticks``; the closest approach
    over every tick, Stuck counted."""
    t = world.table
    n = t.n
    arrived: dict[int, int] = {}
    stuck = [0]
    world.on(ecs_nav.TargetReached, lambda e: arrived.setdefault(e.entity, world.tick))
    world.on(ecs_nav.Stuck, lambda e: stuck.__setitem__(0, stuck[0] + 1))
    closest = math.inf
    spent = 0.0
    for _ in range(ticks):
        start = time.perf_counter()
        world.step()
        spent += time.perf_counter() - start
        if t.n > 1:  # (agents leaving on arrival are removed)
            closest = min(closest, closest_approach(t.pos[:t.n], t.radius[:t.n]))
        if len(arrived) == n:
            break
    return summary(sorted(arrived.values()), n, world.dt, closest, stuck[0], spent / world.tick)


def run_rvo2(start, goals, radius, speed, stopping, params, dt, ticks: int) -> dict:
    import pyrvo

    n = start.shape[0]
    sim = pyrvo.RVOSimulator(dt, params["neighbour_dist"], params["max_neighbours"], params["time_horizon"],
                             params["time_horizon_obst"], radius, speed)
    for p in start:
        sim.add_agent((float(p[0]), float(p[1])))
    arrived: dict[int, int] = {}
    closest = math.inf
    radii = np.full(n, radius)
    spent = 0.0
    for tick in range(1, ticks + 1):
        begin = time.perf_counter()
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        to_goal = goals - pos
        distance = np.hypot(to_goal[:, 0], to_goal[:, 1])
        pref = np.where((distance > speed)[:, None], to_goal / np.maximum(distance, 1e-300)[:, None] * speed, to_goal)
        for i in range(n):
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        sim.do_step()
        spent += time.perf_counter() - begin
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        closest = min(closest, closest_approach(pos, radii))
        for i in np.flatnonzero(np.hypot(*(goals - pos).T) <= stopping).tolist():
            arrived.setdefault(i, tick)
        if len(arrived) == n:
            break
    return summary(sorted(arrived.values()), n, dt, closest, None, spent / tick)


def summary(ticks: list[int], n: int, dt: float, closest: float, stuck, per_tick: float) -> dict:
    return {"arrived": len(ticks), "agents": n,
            "last": ticks[-1] * dt if len(ticks) == n else None,
            "half": ticks[(n - 1) // 2] * dt if len(ticks) > (n - 1) // 2 else None,
            "closest": closest, "stuck": stuck, "ms": per_tick * 1e3}


def row(name: str, r: dict) -> str:
    def seconds(v):
        return "never" if v is None else f"{v:.1f}"

    stuck = "n/a" if r["stuck"] is None else str(r["stuck"])
    return (f"| {name} | {r['arrived']}/{r['agents']} | {seconds(r['last'])} | {seconds(r['half'])} | "
            f"{r['closest']:.3f} | {stuck} | {r['ms']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=None, help="build a circle of this many (default: the scene)")
    parser.add_argument("--circle", type=float, default=20.0, help="radius of the circle, m (with --agents)")
    parser.add_argument("--jitter", type=float, default=0.1, help="start points moved up to this, m (with --agents)")
    parser.add_argument("--seconds", type=float, default=150.0, help="simulated seconds at most")
    parser.add_argument("--seeds", type=int, default=0, help="run this many jittered circles, one row each")
    args = parser.parse_args()
    command = "python bench/orca_circle.py " + " ".join(sys.argv[1:])
    print(f"Command: {command.strip()}; {datetime.date.today().isoformat()}; {machine()}, "
          f"Python {platform.python_version()}")
    header = ("| engine | arrived | last arrival (s) | 50% arrived (s) | closest approach (m) | Stuck | ms/tick |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
    if not args.seeds:
        head, ours, theirs = compare(args)
        print(f"Circle swap: {head}")
        print(header)
        print(row("ecs_nav (ORCA, systems)", ours))
        print(row("RVO2 (pyrvo)", theirs))
        return
    print(header.replace("| engine |", "| seed: engine |", 1))
    lasts = {"ecs_nav": [], "RVO2": []}
    for seed in range(args.seeds):
        head, ours, theirs = compare(args, seed)
        if seed == 0:
            print(f"(each: {head})")
        print(row(f"{seed}: ecs_nav", ours))
        print(row(f"{seed}: RVO2", theirs))
        lasts["ecs_nav"].append(ours["last"])
        lasts["RVO2"].append(theirs["last"])
    for name, values in lasts.items():
        done = [v for v in values if v is not None]
        print(f"{name}: last arrival over {len(values)} circles: mean {np.mean(done):.1f} s, worst {max(done):.1f} s, "
              f"{len(values) - len(done)} never finished")


if __name__ == "__main__":
    main()
