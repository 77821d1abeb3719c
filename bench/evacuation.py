"""Evacuation benchmark: the 10,000 people of ``scenes/evacuation.toml`` leave the building in
ecs_nav and in JuPedSim, side by side in one run.

    .venv/bin/python bench/evacuation.py [--quick] [--max-seconds S]

ecs_nav: ``load_scene("evacuation")`` (one shared flow field toward the four exits, agents
removed on arrival), stepped until the table is empty or ``--max-seconds`` of simulated time.
Reported: ms per tick of each system (``world.timings_ms``) and of the whole ``World.step()``,
wall seconds per simulated second, evacuation time, the time until 50% and 90% are out, and the
per-exit counts of the shared field (``SharedField.arrivals`` at ``goal_points``).

JuPedSim: the same floor as a walkable polygon (the map's bounds minus the scene's boxes, with
shapely), one exit stage per exit (a disc of the agents' stopping distance, 1.5 m, round each of
the scene's goal points: where ecs_nav removes an agent), the same start positions, desired
speed (``Agent.max_speed``, 1.4 m/s) and radius (``Collider.radius``, 0.25 m), and its
Collision Free Speed Model (the fastest of its models by its documentation's model comparison)
with the default parameters and dt (0.01 s). Each agent's journey is the single exit nearest
by walking distance on ecs_nav's nav graph: one exact flow field per exit
(``ecs_nav.nav.flow_field``) sampled at the agent's start.

Start positions: the scene's seeded crowd placement lets discs overlap (physics pushes them
apart in the first ticks); JuPedSim refuses an agent that touches another or a wall. So the
spawn positions are first pushed apart (overlapping pairs separated, each kept inside its
room's spawn area, which lies at least 0.75 m from every wall) and written into ecs_nav's table
before its first tick: both sides start from the same points. The displacement is printed.

``--quick``: 100 people a room (1,000), a smoke run. ``--jupedsim-max-seconds S`` stops the
JuPedSim side after S simulated seconds (its 10,000-agent evacuation costs about an hour of CPU
on this machine); the table then compares how many are out at S on both sides.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # its sibling scripts, also when imported as bench.evacuation

from system_cpu import cpu_per_system  # noqa: E402

from ecs_nav.nav import flow_field  # noqa: E402
from ecs_nav.scene.files import build_world, parse_scene  # noqa: E402

SCENE = "evacuation"
SEPARATION_MARGIN = 0.01  # metres kept between discs after separation (JuPedSim needs > r1 + r2)
STEADY_SECONDS = 10.0  # the "full crowd" window: the first simulated seconds (after the first tick)
PROGRESS_SECONDS = 30.0  # a progress line every this many simulated seconds


def load_average() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# --- the scene ----------------------------------------------------------------------------------

def evacuation_scene(per_room: int | None):
    scene = parse_scene(SCENE)
    if per_room is not None:
        for entry in scene.entities:
            entry["count"] = per_room
    return scene


def crowd_parameters(scene) -> tuple[float, float, float, np.ndarray]:
    """(max_speed, radius, stopping_distance, (k, 2) goal points) of the scene's one crowd prefab."""
    components = scene.entities[0]["components"]
    assert all(e["components"] == components for e in scene.entities), "one prefab is expected for every crowd"
    agent, request = components["Agent"], components["PathRequest"]
    return (float(agent["max_speed"]), float(components["Collider"]["radius"]), float(agent["stopping_distance"]),
            np.array(request["goals"], dtype=np.float64).reshape(-1, 2))


def separate(points: np.ndarray, areas: np.ndarray, distance: float, rounds: int = 500) -> np.ndarray:
    """``points`` pushed apart until no two are closer than ``distance``, each kept inside its
    (xmin, ymin, xmax, ymax) row of ``areas``: every close pair moves apart by half the missing
    distance each, repeated."""
    from scipy.spatial import cKDTree

    p = points.copy()
    for _ in range(rounds):
        pairs = cKDTree(p).query_pairs(distance, output_type="ndarray")
        if pairs.shape[0] == 0:
            return p
        a, b = pairs[:, 0], pairs[:, 1]
        d = p[a] - p[b]
        length = np.hypot(d[:, 0], d[:, 1])
        flat = length < 1e-9
        d[flat] = (1.0, 0.0)
        length[flat] = 1.0
        push = (d / length[:, None]) * ((distance - length) * 0.5 + 1e-4)[:, None]
        np.add.at(p, a, push)
        np.add.at(p, b, -push)
        np.clip(p, areas[:, :2], areas[:, 2:], out=p)
    raise RuntimeError(f"could not separate {len(points)} discs in {rounds} rounds")


def shared_start(world, scene, radius: float) -> tuple[np.ndarray, dict]:
    """The spawn positions separated (see the module doc), written into the World's table."""
    table = world.table
    start = table.pos[: table.n].copy()
    areas = np.array([e["spawn_area"] for e in scene.entities], dtype=np.float64)
    inside = ((start[:, None, 0] >= areas[None, :, 0]) & (start[:, None, 0] <= areas[None, :, 2])
              & (start[:, None, 1] >= areas[None, :, 1]) & (start[:, None, 1] <= areas[None, :, 3]))
    assert inside.any(axis=1).all(), "every agent is expected to spawn inside a spawn area"
    own_area = areas[np.argmax(inside, axis=1)]
    from scipy.spatial import cKDTree

    overlapping = cKDTree(start).query_pairs(2 * radius, output_type="ndarray").shape[0]
    moved = separate(start, own_area, 2 * radius + SEPARATION_MARGIN)
    shift = np.hypot(*(moved - start).T)
    table.pos[: table.n] = moved
    return moved, {"overlapping pairs at spawn": overlapping, "moved": int(np.count_nonzero(shift > 1e-9)),
                   "mean shift (m)": float(shift.mean()), "max shift (m)": float(shift.max())}


# --- ecs_nav ------------------------------------------------------------------------------------

def run_ecs_nav(world, max_seconds: float) -> dict:
    total = world.table.n
    half, ninety = None, None
    wall, cpu, inside = [], [], []
    first_timings, steady_timings = None, None
    steady_ticks = round(STEADY_SECONDS / world.dt) + 1
    for name in world.timings_ms:
        world.timings_ms[name] = 0.0
    system_cpu = cpu_per_system(world)
    first_cpu, steady_cpu = None, None
    max_ticks = round(max_seconds / world.dt)
    run_start = time.perf_counter()
    while world.table.n > 0 and world.tick < max_ticks:
        start, start_cpu = time.perf_counter(), time.process_time()
        world.step()
        cpu.append((time.process_time() - start_cpu) * 1000.0)
        wall.append((time.perf_counter() - start) * 1000.0)
        inside.append(world.table.n)
        out = total - world.table.n
        if half is None and out >= 0.5 * total:
            half = world.time
        if ninety is None and out >= 0.9 * total:
            ninety = world.time
        if world.tick == 1:
            first_timings, first_cpu = dict(world.timings_ms), dict(system_cpu)
        if world.tick == steady_ticks:
            steady_timings, steady_cpu = dict(world.timings_ms), dict(system_cpu)
        if world.tick % round(PROGRESS_SECONDS / world.dt) == 0:
            print(f"  ecs_nav t={world.time:.0f} s: {world.table.n:,} inside", flush=True)
    run_wall = time.perf_counter() - run_start
    ticks = len(wall)
    fields = world.resources["flow_fields"]
    shared = next(iter(fields.fields.values()))
    window = slice(1, min(steady_ticks, ticks))
    return {
        "ticks": ticks, "left inside": world.table.n, "evacuation time (s)": world.time if world.table.n == 0 else None,
        "simulated (s)": world.time, "50% out (s)": half, "90% out (s)": ninety,
        "wall (s)": run_wall, "wall s per simulated s": run_wall / world.time,
        "first tick (ms)": wall[0],
        "tick ms, full crowd (mean wall / CPU)": (statistics.fmean(wall[window]), statistics.fmean(cpu[window])),
        "tick ms, whole run (mean wall / CPU)": (statistics.fmean(wall), statistics.fmean(cpu)),
        "systems ms, first tick": first_timings,
        "systems ms per tick, full crowd": {k: (v - first_timings[k]) / (window.stop - 1)
                                             for k, v in (steady_timings or world.timings_ms).items()},
        "systems ms per tick, whole run": {k: v / ticks for k, v in world.timings_ms.items()},
        "systems CPU ms per tick, full crowd": {k: (v - first_cpu[k]) / (window.stop - 1)
                                                 for k, v in (steady_cpu or system_cpu).items()},
        "by exit": {tuple(p): int(a) for p, a in zip(shared.goal_points.tolist(), shared.arrivals)},
        "field builds": fields.builds,
        "inside after each tick": np.array(inside),
        "wall ms of each tick": np.array(wall),
        "goal nodes": (shared.goal_nodes.copy(), shared.goal_points.copy()),
    }


def nearest_exit(graph, goal_nodes: np.ndarray, goal_points: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(k,) index of the exit nearest each point by walking distance: one exact field per exit."""
    distance = np.empty((len(goal_nodes), len(points)))
    for i, (node, point) in enumerate(zip(goal_nodes, goal_points)):
        distance[i] = flow_field(graph, [int(node)], point[None, :]).sample(points)[1]
    assert np.isfinite(distance.min(axis=0)).all(), "an agent no exit can be reached from"
    return np.argmin(distance, axis=0)


# --- JuPedSim -----------------------------------------------------------------------------------

def walkable_area(scene):
    import shapely

    area = shapely.box(*scene.map["bounds"])
    walls = [shapely.box(b.center[0] - b.size[0] / 2, b.center[1] - b.size[1] / 2,
                         b.center[0] + b.size[0] / 2, b.center[1] + b.size[1] / 2) for b in scene.map["box"]]
    return area.difference(shapely.union_all(walls))


def run_jupedsim(scene, start: np.ndarray, exits: np.ndarray, goal_points: np.ndarray, speed: float, radius: float,
                 exit_radius: float, max_seconds: float) -> dict:
    import jupedsim as jps
    import shapely

    build_start = time.perf_counter()
    sim = jps.Simulation(model=jps.CollisionFreeSpeedModel(), geometry=walkable_area(scene))
    routes = []
    for point in goal_points:
        stage = sim.add_exit_stage(shapely.Point(point).buffer(exit_radius))
        routes.append((sim.add_journey(jps.JourneyDescription([stage])), stage))
    for p, e in zip(start, exits):
        journey, stage = routes[e]
        sim.add_agent(jps.CollisionFreeSpeedModelAgentParameters(
            position=(float(p[0]), float(p[1])), desired_speed=speed, radius=radius,
            journey_id=journey, stage_id=stage))
    build = time.perf_counter() - build_start
    total = sim.agent_count()
    half, ninety = None, None
    steady_iterations = round(STEADY_SECONDS / sim.delta_time())
    steady = None
    max_iterations = round(max_seconds / sim.delta_time())
    wall_start, cpu_start = time.perf_counter(), time.process_time()
    while sim.agent_count() > 0 and sim.iteration_count() < max_iterations:
        sim.iterate()
        out = total - sim.agent_count()
        if half is None and out >= 0.5 * total:
            half = sim.elapsed_time()
        if ninety is None and out >= 0.9 * total:
            ninety = sim.elapsed_time()
        if sim.iteration_count() == steady_iterations:
            steady = (time.perf_counter() - wall_start, time.process_time() - cpu_start)
        if sim.iteration_count() % round(PROGRESS_SECONDS / sim.delta_time()) == 0:
            print(f"  JuPedSim t={sim.elapsed_time():.0f} s: {sim.agent_count():,} inside", flush=True)
    run_wall, run_cpu = time.perf_counter() - wall_start, time.process_time() - cpu_start
    iterations = sim.iteration_count()
    steady = steady or (run_wall, run_cpu)
    window = min(steady_iterations, iterations)
    return {
        "iterations": iterations, "dt": sim.delta_time(), "left inside": sim.agent_count(),
        "evacuation time (s)": sim.elapsed_time() if sim.agent_count() == 0 else None,
        "simulated (s)": sim.elapsed_time(), "50% out (s)": half, "90% out (s)": ninety,
        "build (s)": build, "wall (s)": run_wall, "wall s per simulated s": run_wall / sim.elapsed_time(),
        "iteration ms, full crowd (mean wall / CPU)": (steady[0] * 1000 / window, steady[1] * 1000 / window),
        "iteration ms, whole run (mean wall / CPU)": (run_wall * 1000 / iterations, run_cpu * 1000 / iterations),
        "by journey": {tuple(p): int(np.count_nonzero(exits == i)) for i, p in enumerate(goal_points.tolist())},
    }


# --- the run ------------------------------------------------------------------------------------

def seconds(value) -> str:
    return "--" if value is None else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 people a room (1,000 in all)")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="simulated-time cap of each side")
    parser.add_argument("--jupedsim-max-seconds", type=float, default=None,
                        help="a lower simulated-time cap for the JuPedSim side (default: --max-seconds)")
    args = parser.parse_args()
    import jupedsim
    import numba

    print(f"{platform.python_version()} numpy {np.__version__} numba {numba.__version__} "
          f"jupedsim {jupedsim.__version__}; load average at start: {load_average()}")
    scene = evacuation_scene(100 if args.quick else None)
    speed, radius, stopping, goal_points = crowd_parameters(scene)
    world = build_world(scene)
    start, moved = shared_start(world, scene, radius)
    print(f"{len(start):,} agents, speed {speed} m/s, radius {radius} m; start positions: {moved}", flush=True)

    ours = run_ecs_nav(world, args.max_seconds)
    print(f"ecs_nav done ({ours['wall (s)']:.0f} s wall); load average {load_average()}")
    goal_nodes, field_points = ours.pop("goal nodes")
    inside = ours.pop("inside after each tick")
    tick_wall = ours.pop("wall ms of each tick")
    assert np.allclose(np.sort(field_points, axis=0), np.sort(goal_points, axis=0)), "the field's goals are the exits"
    goal_points = field_points  # the field's order, so that exit i is arrivals[i] on both sides
    exits = nearest_exit(world.nav_graph, goal_nodes, goal_points, start)
    world.close()

    theirs = run_jupedsim(scene, start, exits, goal_points, speed, radius, stopping,
                          args.jupedsim_max_seconds or args.max_seconds)
    print(f"JuPedSim done ({theirs['wall (s)']:.0f} s wall); load average at end: {load_average()}")

    print()
    for name, figures in (("ecs_nav", ours), ("JuPedSim", theirs)):
        print(f"{name}:")
        for key, value in figures.items():
            if isinstance(value, dict):
                value = {k: round(v, 3) if isinstance(v, float) else v for k, v in value.items()}
            elif isinstance(value, tuple):
                value = " / ".join(f"{v:.3f}" for v in value)
            elif isinstance(value, float):
                value = f"{value:.3f}"
            print(f"  {key}: {value}")
    print()
    o_tick, t_tick = ours["tick ms, full crowd (mean wall / CPU)"], theirs["iteration ms, full crowd (mean wall / CPU)"]
    print("| | ecs_nav | JuPedSim (CollisionFreeSpeedModel) | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| step | {world.dt * 1000:.2f} ms (1/60 s) | {theirs['dt'] * 1000:.0f} ms | |")
    print(f"| ms per step, first {STEADY_SECONDS:.0f} s (wall / CPU) | {o_tick[0]:.2f} / {o_tick[1]:.2f} "
          f"| {t_tick[0]:.2f} / {t_tick[1]:.2f} | |")
    o_rate = o_tick[1] / (world.dt * 1000)
    t_rate = t_tick[1] / (theirs["dt"] * 1000)
    print(f"| CPU s per simulated s, first {STEADY_SECONDS:.0f} s | {o_rate:.3f} | {t_rate:.3f} "
          f"| {t_rate / o_rate:.1f}x |")
    if theirs["left inside"]:  # JuPedSim stopped at its cap: ecs_nav over the same simulated seconds
        span = f"first {theirs['simulated (s)']:.0f} s"
        ours_rate = tick_wall[: round(theirs["simulated (s)"] / world.dt)].sum() / 1000.0 / theirs["simulated (s)"]
    else:
        span, ours_rate = "whole run of each", ours["wall s per simulated s"]
    print(f"| wall s per simulated s, {span} | {ours_rate:.3f} | {theirs['wall s per simulated s']:.3f} "
          f"| {theirs['wall s per simulated s'] / ours_rate:.1f}x |")
    print(f"| wall s, whole run | {ours['wall (s)']:.1f} | {theirs['wall (s)']:.1f} | |")
    for key in ("50% out (s)", "90% out (s)", "evacuation time (s)"):
        print(f"| {key.replace(' (s)', '')} (simulated s) | {seconds(ours[key])} | {seconds(theirs[key])} | |")
    print(f"| left inside at the end | {ours['left inside']} | {theirs['left inside']} | |")
    if theirs["left inside"]:  # JuPedSim stopped at its cap: both sides at that time
        cap = theirs["simulated (s)"]
        tick = min(round(cap / world.dt), len(inside)) - 1
        print(f"| out after {cap:.0f} simulated s | {len(start) - inside[tick]:,} | "
              f"{len(start) - theirs['left inside']:,} | |")
    for (point, ours_n), theirs_n in zip(ours["by exit"].items(), theirs["by journey"].values()):
        print(f"| exit at {point}: left by (ecs_nav) / assigned (JuPedSim) | {ours_n:,} | {theirs_n:,} | |")


if __name__ == "__main__":
    main()
