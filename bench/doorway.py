"""Gathering behind a doorway: the ``doorway`` scene (300 agents through one 4 m doorway to one
point beside a pillar, each avoiding with ORCA) with goal spreading, with group arrival alone
(``PathFollowSystem.goal_spreading = False``), and under RVO2 (``pyrvo``) from the same start
points.

Per run: how many arrived (ecs_nav: ``TargetReached``, and how many agents got it more than once;
RVO2: agents within the scene's ``Agent.stopping_distance`` of the goal, the only arrival it
knows), when the last did, ``Stuck`` events (all, and the most for one agent), where the crowd
stands at the end (the farthest agent from the goal, against the radius of a disc packing of
that many agents, ``goal_slots.SLOT_GAP`` apart), agents in the doorway at the end (|x| <= 1.5
m, |y| <= 2 m), agents inside a wall at any tick checked, the closest approach (smallest centre
distance minus the sum of radii, over every pair and tick), and the wall-clock milliseconds a tick
took (ecs_nav: ``World.step()``, every system; RVO2: setting the preferred velocities from Python
and ``do_step()``).

RVO2 has no path planning and no arrival: each tick its agents are given a preferred velocity
along ecs_nav's flow field toward the goal (the scene's nav graph), at full speed, slower within
a second of the goal, zero within the stopping distance; its obstacles are the walls' and the
pillar's outlines (the pillar a 24-gon).

    python bench/doorway.py [--agents 300] [--seconds 150] [--no-rvo2]
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import tomllib

import ecs_nav
from ecs_nav.motion.goal_slots import SLOT_GAP
from ecs_nav.scene.files import build_world, scene_from_dict, scenes_dir

sys.path.insert(0, str(Path(__file__).parent))
from orca_circle import closest_approach, machine  # noqa: E402

DOORWAY = (-1.5, -2.0, 1.5, 2.0)
"""The doorway's box, m (xmin, ymin, xmax, ymax): the opening and 1.5 m either side of the wall."""


def scene_dict(agents: int | None) -> dict:
    """The doorway scene as a dict; with ``agents``, that many, in a spawn area scaled to hold
    them at the scene's density."""
    scene = tomllib.loads((scenes_dir() / "doorway.toml").read_text(encoding="utf-8"))
    crowd = scene["entity"][0]
    if agents is not None:
        x0, y0, x1, y1 = crowd["spawn_area"]
        scale = math.sqrt(agents / crowd["count"])
        height = (y1 - y0) * scale
        crowd["spawn_area"] = [x1 - (x1 - x0) * scale, -height / 2, x1, height / 2]
        crowd["count"] = agents
    return scene


def packing_radius(agents: int, radius: float) -> float:
    """m: the radius of a disc holding ``agents`` discs of ``radius`` in a hexagonal packing
    ``SLOT_GAP`` apart."""
    spacing = 2.0 * radius + SLOT_GAP
    return spacing * math.sqrt(agents * math.sqrt(3.0) / (2.0 * math.pi))


def in_doorway(pos: np.ndarray) -> int:
    x0, y0, x1, y1 = DOORWAY
    return int(np.count_nonzero((pos[:, 0] >= x0) & (pos[:, 0] <= x1) & (pos[:, 1] >= y0) & (pos[:, 1] <= y1)))


def run_ecs_nav(scene: dict, seconds: float, spreading: bool) -> dict:
    world = build_world(scene_from_dict(scene))
    world.system("PathFollowSystem").goal_spreading = spreading
    t = world.table
    n = t.n
    goal = np.array(scene["entity"][0]["PathRequest"]["goal"], float)
    arrivals: Counter = Counter()
    last = [0]
    stuck: Counter = Counter()

    def arrived(event):
        arrivals[event.entity] += 1
        last[0] = world.tick

    world.on(ecs_nav.TargetReached, arrived)
    world.on(ecs_nav.Stuck, lambda e: stuck.update([e.entity]))
    closest, in_wall, spent = math.inf, 0, 0.0
    for tick in range(int(round(seconds / world.dt))):
        begin = time.perf_counter()
        world.step()
        spent += time.perf_counter() - begin
        pos = t.pos[:n]
        closest = min(closest, closest_approach(pos, t.radius[:n]))
        if tick % 30 == 0:
            depth = world.map.penetration(pos, t.radius[:n], t.elevation[:n], t.max_climb[:n])
            in_wall = max(in_wall, int(np.count_nonzero(depth > 0.01 * t.radius[:n])))
        if len(arrivals) == n and np.all(np.hypot(*t.vel[:n].T) < 0.05):
            break
    pos = t.pos[:n]
    return {"arrived": len(arrivals), "agents": n, "twice": sum(1 for c in arrivals.values() if c > 1),
            "last": last[0] * world.dt if len(arrivals) == n else None, "stuck": sum(stuck.values()),
            "stuck_most": max(stuck.values(), default=0), "farthest": float(np.hypot(*(pos - goal).T).max()),
            "doorway": in_doorway(pos), "in_wall": in_wall, "closest": closest, "ms": spent / world.tick * 1e3,
            "radius": float(t.radius[0])}


def rvo2_obstacles(scene: dict) -> list[list[tuple[float, float]]]:
    """The scene's boxes and circles as counter-clockwise polygons (circles as 24-gons)."""
    out = []
    for box in scene["map"].get("box", []):
        (cx, cy), (sx, sy) = box["center"], box["size"]
        out.append([(cx - sx / 2, cy - sy / 2), (cx + sx / 2, cy - sy / 2), (cx + sx / 2, cy + sy / 2),
                    (cx - sx / 2, cy + sy / 2)])
    for circle in scene["map"].get("circle", []):
        (cx, cy), r = circle["center"], circle["radius"] / math.cos(math.pi / 24)  # (the 24-gon holds the circle)
        angles = np.linspace(0, 2 * math.pi, 24, endpoint=False)
        out.append([(cx + r * math.cos(a), cy + r * math.sin(a)) for a in angles])
    return out


def run_rvo2(scene: dict, seconds: float) -> dict:
    import pyrvo

    from ecs_nav.nav import flow_field

    world = build_world(scene_from_dict(scene))
    world.step()  # (the nav graph: RVO2's agents follow its flow field)
    t = world.table
    n = t.n
    start = t.pos[:n].copy()
    crowd = scene["entity"][0]
    goal = np.array(crowd["PathRequest"]["goal"], float)
    a = crowd["Avoidance"]
    radius, speed = float(t.radius[0]), float(t.max_speed[0])
    stopping = float(t.stopping_distance[0])
    graph = world.nav_graph
    field = flow_field(graph, [graph.nearest_nodes(goal[None, :])[0]], goal[None, :])
    sim = pyrvo.RVOSimulator(world.dt, a["neighbour_dist"], a["max_neighbours"], a["time_horizon"],
                             a["time_horizon_obst"], radius, speed)
    for polygon in rvo2_obstacles(scene):
        sim.add_obstacle(polygon)
    sim.process_obstacles()
    for p in start:
        sim.add_agent((float(p[0]), float(p[1])))
    arrived: dict[int, int] = {}
    closest, spent, ticks = math.inf, 0.0, int(round(seconds / world.dt))
    pos = start
    for tick in range(1, ticks + 1):
        begin = time.perf_counter()
        direction, distance = field.sample(pos)
        distance = np.where(np.isfinite(distance), distance, 0.0)
        pref = direction * np.minimum(speed, distance)[:, None]
        pref[distance <= stopping] = 0.0
        for i in range(n):
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        sim.do_step()
        spent += time.perf_counter() - begin
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        closest = min(closest, closest_approach(pos, np.full(n, radius)))
        for i in np.flatnonzero(np.hypot(*(pos - goal).T) <= stopping).tolist():
            arrived.setdefault(i, tick)
    world.close()
    return {"arrived": len(arrived), "agents": n, "twice": None,
            "last": max(arrived.values()) * world.dt if len(arrived) == n else None, "stuck": None,
            "stuck_most": None, "farthest": float(np.hypot(*(pos - goal).T).max()), "doorway": in_doorway(pos),
            "in_wall": None, "closest": closest, "ms": spent / ticks * 1e3, "radius": radius}


def row(name: str, r: dict, disc: float) -> str:
    def opt(v, fmt="{}"):
        return "n/a" if v is None else fmt.format(v)

    last = "never" if r["last"] is None else f"{r['last']:.1f}"
    stuck = "n/a" if r["stuck"] is None else f"{r['stuck']} ({r['stuck_most']})"
    return (f"| {name} | {r['arrived']}/{r['agents']} | {opt(r['twice'])} | {last} | {stuck} | "
            f"{r['farthest']:.1f} ({r['farthest'] / disc:.2f}) | {r['doorway']} | {opt(r['in_wall'])} | "
            f"{r['closest']:.3f} | {r['ms']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=None, help="this many agents (default: the scene's 300)")
    parser.add_argument("--seconds", type=float, default=150.0, help="simulated seconds at most")
    parser.add_argument("--no-rvo2", action="store_true", help="leave RVO2 out")
    args = parser.parse_args()
    command = "python bench/doorway.py " + " ".join(sys.argv[1:])
    print(f"Command: {command.strip()}; {datetime.date.today().isoformat()}; {machine()}, "
          f"Python {platform.python_version()}")
    scene = scene_dict(args.agents)
    spread = run_ecs_nav(scene, args.seconds, spreading=True)
    disc = packing_radius(spread["agents"], spread["radius"])
    print(f"{spread['agents']} agents of radius {spread['radius']:g} m; a disc packing of them (spacing "
          f"{2 * spread['radius'] + SLOT_GAP:g} m) has a radius of {disc:.2f} m; at most {args.seconds:g} s")
    print("| run | arrived | arrived twice | last arrival (s) | Stuck (most by one) | farthest from the goal, m "
          "(/ disc radius) | in the doorway at the end | in a wall | closest approach (m) | ms/tick |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(row("ecs_nav, goal spreading", spread, disc))
    print(row("ecs_nav, group arrival alone", run_ecs_nav(scene, args.seconds, spreading=False), disc))
    if not args.no_rvo2:
        print(row("RVO2 (pyrvo), along the flow field", run_rvo2(scene, args.seconds), disc))


if __name__ == "__main__":
    main()
