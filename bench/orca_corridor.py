"""Two streams head on in a corridor: ecs_nav's ORCA with lanes (``Avoidance.side = "right"``) and
without (RVO2's agents), separation alone (no Avoidance), RVO2 (``pyrvo``) and JuPedSim's
collision-free speed and anticipation velocity models, from the same start points.

The ``corridor`` scene: a corridor of ``--width`` m; ``--agents`` walkers at each end in a block
(rows across the corridor ``--spacing`` m apart, jittered up to ``--jitter`` m), ``--gap`` m
between the blocks; each walks to the far end and leaves there (a 2 m goal zone across the
corridor's end: ``PathRequest.zone`` with a shared flow field, ``despawn_on_arrival``).
Radius 0.3 m, 1.4 m/s, ``Agent.mass`` one tick (ORCA starts from the velocity the field asks
for, as RVO2's agents do), ORCA with RVO2's parameters (neighbour_dist 5 m, max_neighbours 10,
time_horizon 2 s, time_horizon_obst 1 s).

Per engine: how many arrived (entered their goal zone), when half and when the last did, the
closest approach (the smallest centre distance minus the sum of radii over every pair and tick,
below 0 an overlap), ecs_nav's ``Stuck`` events and the wall-clock milliseconds a tick took
(ecs_nav: ``World.step()``, every system; RVO2: setting preferred velocities from Python and
``do_step()``; JuPedSim: ``iterate()``, 100 iterations a simulated second). A free walk is the
rear walker's: its distance to its goal zone at 1.4 m/s.

ecs_nav's variants run the scene's systems (shared flow fields, path following, ORCA,
physics); "separation alone" replaces Avoidance by steering's separation (weight 1). RVO2 runs
its usual loop: each tick a preferred velocity straight along the corridor toward the far end
at full speed, then ``do_step()``, the corridor's walls an RVO2 obstacle; an agent that enters
its zone is moved far away (RVO2 has no removal). JuPedSim: the corridor as its walkable
polygon, one exit stage per zone, its default parameters but the desired speed and radius.

    python bench/orca_corridor.py [--agents 500] [--width 10] [--spacing 1.0] [--gap 20]
                                  [--seconds 300] [--engines lanes,no-lanes,separation,rvo2,cfsm,avm]
    python bench/orca_corridor.py --write-scene scenes/corridor.toml   (the scene file, from the defaults)
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts

from orca_circle import closest_approach, machine, row, summary  # noqa: E402
from orca_circle import run_ecs_nav as run_circle  # noqa: E402

from ecs_nav import load_scene  # noqa: E402

SPEED, RADIUS, ZONE = 1.4, 0.3, 2.0
ENGINES = ("lanes", "no-lanes", "separation", "rvo2", "cfsm", "avm")
NAMES = {"lanes": "ecs_nav ORCA, lanes (side right)", "no-lanes": "ecs_nav ORCA, no lanes (RVO2's agents)",
         "separation": "ecs_nav separation alone", "rvo2": "RVO2 (pyrvo)", "cfsm": "JuPedSim collision-free speed",
         "avm": "JuPedSim anticipation velocity"}


def layout(agents: int, width: float, spacing: float, gap: float, jitter: float, seed: int):
    """(eastbound start points (k, 2), westbound ones, the corridor's half length m): each block
    fills the corridor's width in columns of rows ``spacing`` apart, 0.5 m off the walls, the
    eastbound block's front ``gap`` m from the westbound one's, each block's rear 1 m from its
    end wall. The corridor lies along x, centred on the origin."""
    rows = int(math.floor((width - 1.0) / spacing + 1e-9)) + 1
    cols = int(math.ceil(agents / rows))
    block = (cols - 1) * spacing
    half = round(block + 1.0 + gap / 2.0, 4)
    ys = -width / 2 + 0.5 + np.arange(rows) * ((width - 1.0) / max(rows - 1, 1))
    rng = np.random.default_rng(seed)
    blocks = []
    for sign in (1.0, -1.0):
        points = [(sign * (-half + 1.0 + block - c * spacing), ys[r]) for c in range(cols) for r in range(rows)]
        points = np.array(points[:agents]) + rng.uniform(-jitter, jitter, (agents, 2))
        blocks.append(np.round(points, 4))
    return blocks[0], blocks[1], half


def corridor_scene_text(agents: int = 500, width: float = 10.0, spacing: float = 1.0, gap: float = 20.0,
                        jitter: float = 0.1, seed: int = 0, variant: str = "lanes") -> str:
    """The corridor as a scene file; ``variant`` "lanes" (side right), "no-lanes" (side none) or
    "separation" (no Avoidance: steering's separation)."""
    east, west, half = layout(agents, width, spacing, gap, jitter, seed)
    hw = width / 2
    side = "right" if variant == "lanes" else "none"
    avoidance = ("" if variant == "separation" else
                 "Avoidance = { neighbour_dist = 5.0, max_neighbours = 10, time_horizon = 2.0, "
                 f'time_horizon_obst = 1.0, side = "{side}" }}\n')
    weights = "follow_path = 1.0, separation = 1.0" if variant == "separation" else "follow_path = 1.0"
    size = f"{width:g} m x {2 * half:g} m"
    text = f"""# Two streams head on: 2 x {agents} walkers cross a {size} corridor, keeping to the right.
# Each walks to the far end and leaves there (a {ZONE:g} m goal zone across each end, one shared
# flow field a stream). Each keeps to the right (Avoidance.side = "right"): while people come
# against it in its way it drifts to its right, and it passes them on its right, so the streams
# sort into two lanes before they meet. Without a side (RVO2's agents) they meet as two walls and
# jam. The blocks: rows {spacing:g} m apart, jittered up to {jitter:g} m, {gap:g} m between them.
# Written by bench/orca_corridor.py --write-scene, which also runs it beside RVO2 and JuPedSim.
[world]
seed = {seed}

[view]
layers = ["map", "agents", "hud"]

[map]
bounds = [{-half!r}, {-hw!r}, {half!r}, {hw!r}]

# a 1 m graph kept 0.4 m off the walls, so that the goal zones hold nodes
[navmap]
scan_range = [{half!r}, 10, {hw!r}]
spacing = 1.0
clearance = 0.4
"""
    for name, zone in (("eastbound", [half - ZONE, -hw, half, hw]), ("westbound", [-half, -hw, -half + ZONE, hw])):
        text += f"""
[prefab.{name}]
Agent = {{ max_speed = {SPEED}, max_force = 20.0, mass = 0.0167, stopping_distance = 0.5 }}
Collider = {{ radius = {RADIUS} }}
Velocity = {{}}
SteeringWeights = {{ weights = {{ {weights} }} }}
{avoidance}PathRequest = {{ zone = {zone!r}, method = "flow_field", despawn_on_arrival = true }}
"""
    for name, points in (("eastbound", east), ("westbound", west)):
        for x, y in points.tolist():
            text += (f'\n[[entity]]\nname = "{name}"\nprefab = "{name}"\n'
                     f'Position = {{ x = {x + 0.0!r}, y = {y + 0.0!r} }}\n')
    return text


def world_of(text: str):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corridor.toml"
        path.write_text(text, encoding="utf-8")
        return load_scene(path)


def run_ecs_nav(world, seconds: float) -> dict:
    """Step until every walker left or ``seconds``; arrivals are the TargetReached events."""
    return run_circle(world, int(round(seconds / world.dt)))


def run_rvo2(east, west, half, width, dt, seconds) -> dict:
    import pyrvo

    start = np.concatenate([east, west])
    heading = np.concatenate([np.ones(len(east)), -np.ones(len(west))])
    sim = pyrvo.RVOSimulator(dt, 5.0, 10, 2.0, 1.0, RADIUS, SPEED)
    hw = width / 2
    sim.add_obstacle([(-half, -hw), (-half, hw), (half, hw), (half, -hw)])  # clockwise: the agents inside
    preferred = np.stack([SPEED * heading, np.zeros_like(heading)], axis=1)
    return run_rvo2_streams(sim, start, preferred, lambda pos: heading * pos[:, 0] >= half - ZONE, dt, seconds)


def run_rvo2_streams(sim, start: np.ndarray, preferred: np.ndarray, through, dt: float, seconds: float) -> dict:
    """RVO2's loop for streams of walkers: ``sim`` (a pyrvo simulator with its obstacles added)
    gets an agent at each of ``start`` (n, 2); each tick every walker still inside is given its
    ``preferred`` velocity (n, 2) and the simulator steps; a walker for which ``through(pos)``
    ((n, 2) positions -> (n,) bool) holds has arrived and is parked far from everyone."""
    n = start.shape[0]
    for p in start:
        sim.add_agent((float(p[0]), float(p[1])))
    sim.process_obstacles()
    arrived: dict[int, int] = {}
    closest = math.inf
    radii = np.full(n, RADIUS)
    spent = 0.0
    tick = 0
    inside = np.ones(n, bool)
    for tick in range(1, int(round(seconds / dt)) + 1):
        begin = time.perf_counter()
        for i in np.flatnonzero(inside).tolist():
            sim.set_agent_pref_velocity(i, (float(preferred[i, 0]), float(preferred[i, 1])))
        sim.do_step()
        spent += time.perf_counter() - begin
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        rows = np.flatnonzero(inside)
        if rows.size > 1:
            closest = min(closest, closest_approach(pos[rows], radii[rows]))
        done = rows[through(pos)[rows]]
        for i in done.tolist():
            arrived[i] = tick
            inside[i] = False
            sim.set_agent_pref_velocity(i, (0.0, 0.0))
            sim.set_agent_velocity(i, (0.0, 0.0))
            sim.set_agent_position(i, (1e5 + 10.0 * i, 1e5))  # parked far apart: it meets nobody
        if not inside.any():
            break
    return summary(sorted(arrived.values()), n, dt, closest, None, spent / max(tick, 1))


def run_jupedsim(model: str, east, west, half, width, seconds) -> dict:
    import jupedsim as jps
    import shapely

    hw = width / 2
    if model == "cfsm":
        sim = jps.Simulation(model=jps.CollisionFreeSpeedModel(), geometry=shapely.box(-half, -hw, half, hw))
        parameters = jps.CollisionFreeSpeedModelAgentParameters
    else:
        sim = jps.Simulation(model=jps.AnticipationVelocityModel(), geometry=shapely.box(-half, -hw, half, hw))
        parameters = jps.AnticipationVelocityModelAgentParameters
    routes = []
    for zone in (shapely.box(half - ZONE, -hw, half, hw), shapely.box(-half, -hw, -half + ZONE, hw)):
        stage = sim.add_exit_stage(zone)
        routes.append((sim.add_journey(jps.JourneyDescription([stage])), stage))
    for points, (journey, stage) in zip((east, west), routes):
        for p in points:
            sim.add_agent(parameters(position=(float(p[0]), float(p[1])), desired_speed=SPEED, radius=RADIUS,
                                     journey_id=journey, stage_id=stage))
    n = sim.agent_count()
    arrived = []
    closest = math.inf
    spent = 0.0
    every = max(1, round((1.0 / 60.0) / sim.delta_time()))  # the closest approach at about 60 Hz
    while sim.agent_count() > 0 and sim.elapsed_time() < seconds:
        before = sim.agent_count()
        begin = time.perf_counter()
        sim.iterate()
        spent += time.perf_counter() - begin
        arrived += [sim.iteration_count()] * (before - sim.agent_count())
        if sim.iteration_count() % every == 0 and sim.agent_count() > 1:
            pos = np.array([a.position for a in sim.agents()])
            closest = min(closest, closest_approach(pos, np.full(len(pos), RADIUS)))
    return summary(arrived, n, sim.delta_time(), closest, None, spent / max(sim.iteration_count(), 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=500, help="walkers at each end")
    parser.add_argument("--width", type=float, default=10.0, help="the corridor's width, m")
    parser.add_argument("--spacing", type=float, default=1.0, help="rows and columns of a block this far apart, m")
    parser.add_argument("--gap", type=float, default=20.0, help="between the two blocks, m")
    parser.add_argument("--jitter", type=float, default=0.1, help="start points moved up to this, m")
    parser.add_argument("--seed", type=int, default=0, help="the jitter's seed")
    parser.add_argument("--seconds", type=float, default=300.0, help="simulated seconds at most")
    parser.add_argument("--engines", default=",".join(ENGINES), help="which, comma-separated: " + ", ".join(ENGINES))
    parser.add_argument("--write-scene", default=None, help="write the lanes scene here and stop")
    args = parser.parse_args()
    shape = dict(agents=args.agents, width=args.width, spacing=args.spacing, gap=args.gap, jitter=args.jitter,
                 seed=args.seed)
    if args.write_scene:
        Path(args.write_scene).write_text(corridor_scene_text(**shape), encoding="utf-8")
        return
    east, west, half = layout(**shape)
    free = (2 * half - 1.0 - ZONE) / SPEED
    print(f"Command: python bench/orca_corridor.py {' '.join(sys.argv[1:])}".strip() +
          f"; {datetime.date.today().isoformat()}; {machine()}, Python {platform.python_version()}")
    print(f"Corridor: 2 x {args.agents} walkers, {args.width:g} m x {2 * half:g} m, rows {args.spacing:g} m apart, "
          f"gap {args.gap:g} m, jitter {args.jitter:g} m (seed {args.seed}); a free walk takes {free:.1f} s")
    print("| engine | arrived | last arrival (s) | 50% arrived (s) | closest approach (m) | Stuck | ms/tick |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for engine in args.engines.split(","):
        if engine in ("lanes", "no-lanes", "separation"):
            result = run_ecs_nav(world_of(corridor_scene_text(**shape, variant=engine)), args.seconds)
        elif engine == "rvo2":
            result = run_rvo2(east, west, half, args.width, 1.0 / 60.0, args.seconds)
        elif engine in ("cfsm", "avm"):
            result = run_jupedsim(engine, east, west, half, args.width, args.seconds)
        else:
            raise SystemExit(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        print(row(NAMES[engine], result), flush=True)


if __name__ == "__main__":
    main()
