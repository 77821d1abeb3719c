"""Four streams crossing at right angles: ecs_nav's ORCA with lanes (``Avoidance.side =
"right"``) and without, and RVO2 (``pyrvo``), from the same start points.

The ``crossing`` scene: two corridors ``--width`` m wide crossing at the origin (the four corners
are walls), an arm reaching ``--arm`` m from the centre; ``--agents`` walkers in a block at the
far end of each arm (rows ``--spacing`` m apart, jittered up to 0.1 m), each walking straight
across to the far end of the opposite arm and leaving there (a 2 m goal zone, a shared flow
field a stream). Radius 0.3 m, 1.4 m/s, one-tick mass, RVO2's avoidance parameters. What is
measured, and RVO2's loop: as in ``bench/orca_corridor.py`` (its preferred velocity points
along its arm toward the far end; the walls are RVO2 obstacles).

    python bench/orca_crossing.py [--agents 100] [--width 10] [--arm 30] [--seconds 200]
    python bench/orca_crossing.py --write-scene scenes/crossing.toml   (the scene file, from the defaults)
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts

from orca_circle import machine, row  # noqa: E402
from orca_corridor import RADIUS, SPEED, ZONE, run_ecs_nav, run_rvo2_streams, world_of  # noqa: E402

HEADINGS = {"eastbound": (1.0, 0.0), "northbound": (0.0, 1.0), "westbound": (-1.0, 0.0), "southbound": (0.0, -1.0)}
"""Each stream's direction, in the order the scene lists them."""


def layout(agents: int, width: float, arm: float, spacing: float, jitter: float = 0.1, seed: int = 0) -> dict:
    """Each stream's start points (k, 2): a block across its arm (0.5 m off the walls), its rear
    1 m from the arm's end."""
    rows = int(math.floor((width - 1.0) / spacing + 1e-9)) + 1
    cols = int(math.ceil(agents / rows))
    across = -width / 2 + 0.5 + np.arange(rows) * ((width - 1.0) / max(rows - 1, 1))
    rng = np.random.default_rng(seed)
    out = {}
    for name, (hx, hy) in HEADINGS.items():
        along = np.array([-arm + 1.0 + (cols - 1 - c) * spacing for c in range(cols) for _ in range(rows)])[:agents]
        side = np.tile(across, cols)[:agents]
        # along the heading and across it (the heading's left: (-hy, hx))
        points = along[:, None] * np.array([hx, hy]) + side[:, None] * np.array([-hy, hx])
        out[name] = np.round(points + rng.uniform(-jitter, jitter, points.shape), 4)
    return out


def zone_of(name: str, width: float, arm: float) -> list[float]:
    """The goal zone of a stream: the last ``ZONE`` m of the opposite arm."""
    hx, hy = HEADINGS[name]
    hw = width / 2
    if hx:
        return [arm - ZONE, -hw, arm, hw] if hx > 0 else [-arm, -hw, -arm + ZONE, hw]
    return [-hw, arm - ZONE, hw, arm] if hy > 0 else [-hw, -arm, hw, -arm + ZONE]


def corner_boxes(width: float, arm: float) -> list[tuple[float, float, float]]:
    """The four solid corners as (centre x, centre y, side): squares from the arms' walls to the bounds."""
    side = arm - width / 2
    c = width / 2 + side / 2
    return [(sx * c, sy * c, side) for sx in (-1, 1) for sy in (-1, 1)]


def crossing_scene_text(agents: int = 100, width: float = 10.0, arm: float = 30.0, spacing: float = 1.0,
                        jitter: float = 0.1, seed: int = 0, variant: str = "lanes") -> str:
    """The crossing as a scene file; ``variant`` "lanes" (side right) or "no-lanes" (side none)."""
    starts = layout(agents, width, arm, spacing, jitter, seed)
    side = "right" if variant == "lanes" else "none"
    text = f"""# Four streams crossing at right angles: 4 x {agents} walkers where two {width:g} m corridors meet.
# Each arm reaches {arm:g} m from the centre; the walkers wait at the far end of each arm and walk
# straight across to the far end of the opposite arm, where they leave (a {ZONE:g} m goal zone,
# one shared flow field a stream).
# Each keeps to the right (Avoidance.side = "right"), as traffic does: the streams coming
# head on sort into lanes, and those crossing pass through each other's gaps.
# Written by bench/orca_crossing.py --write-scene, which also runs it beside RVO2.
[world]
seed = {seed}

[view]
layers = ["map", "agents", "hud"]

[map]
bounds = [{-arm!r}, {-arm!r}, {arm!r}, {arm!r}]
"""
    for x, y, size in corner_boxes(width, arm):
        text += f"\n[[map.box]]\ncenter = [{x!r}, {y!r}]\nsize = [{size!r}, {size!r}]\nheight = 2.0\n"
    text += f"""
# a 1 m graph kept 0.4 m off the walls, so that the goal zones hold nodes
[navmap]
scan_range = [{arm!r}, 10, {arm!r}]
spacing = 1.0
clearance = 0.4
"""
    avoidance = ("Avoidance = { neighbour_dist = 5.0, max_neighbours = 10, time_horizon = 2.0, "
                 f'time_horizon_obst = 1.0, side = "{side}" }}')
    for name in HEADINGS:
        text += f"""
[prefab.{name}]
Agent = {{ max_speed = {SPEED}, max_force = 20.0, mass = 0.0167, stopping_distance = 0.5 }}
Collider = {{ radius = {RADIUS} }}
Velocity = {{}}
SteeringWeights = {{ weights = {{ follow_path = 1.0 }} }}
{avoidance}
PathRequest = {{ zone = {zone_of(name, width, arm)!r}, method = "flow_field", despawn_on_arrival = true }}
"""
    for name, points in starts.items():
        for x, y in points.tolist():
            text += (f'\n[[entity]]\nname = "{name}"\nprefab = "{name}"\n'
                     f'Position = {{ x = {x + 0.0!r}, y = {y + 0.0!r} }}\n')
    return text


def run_rvo2(starts: dict, width: float, arm: float, dt: float, seconds: float) -> dict:
    import pyrvo

    start = np.concatenate(list(starts.values()))
    heading = np.concatenate([np.tile(HEADINGS[name], (len(points), 1)) for name, points in starts.items()])
    sim = pyrvo.RVOSimulator(dt, 5.0, 10, 2.0, 1.0, RADIUS, SPEED)
    sim.add_obstacle([(-arm, -arm), (-arm, arm), (arm, arm), (arm, -arm)])  # clockwise: the agents inside
    for x, y, size in corner_boxes(width, arm):
        h = size / 2
        sim.add_obstacle([(x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h)])
    return run_rvo2_streams(sim, start, SPEED * heading,
                            lambda pos: np.einsum("ij,ij->i", pos, heading) >= arm - ZONE, dt, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100, help="walkers a stream")
    parser.add_argument("--width", type=float, default=10.0, help="the corridors' width, m")
    parser.add_argument("--arm", type=float, default=30.0, help="from the centre to an arm's end, m")
    parser.add_argument("--spacing", type=float, default=1.0, help="rows and columns of a block this far apart, m")
    parser.add_argument("--seed", type=int, default=0, help="the jitter's seed")
    parser.add_argument("--seconds", type=float, default=200.0, help="simulated seconds at most")
    parser.add_argument("--write-scene", default=None, help="write the lanes scene here and stop")
    args = parser.parse_args()
    shape = dict(agents=args.agents, width=args.width, arm=args.arm, spacing=args.spacing, seed=args.seed)
    if args.write_scene:
        Path(args.write_scene).write_text(crossing_scene_text(**shape), encoding="utf-8")
        return
    starts = layout(args.agents, args.width, args.arm, args.spacing, seed=args.seed)
    rear = min(float(p @ np.array(HEADINGS[name])) for name, points in starts.items() for p in points)
    free = (args.arm - ZONE - rear) / SPEED
    print(f"Command: python bench/orca_crossing.py {' '.join(sys.argv[1:])}".strip() +
          f"; {datetime.date.today().isoformat()}; {machine()}, Python {platform.python_version()}")
    print(f"Crossing: 4 x {args.agents} walkers, arms {args.width:g} m wide reaching {args.arm:g} m from the centre, "
          f"rows {args.spacing:g} m apart (seed {args.seed}); a free walk takes {free:.1f} s")
    print("| engine | arrived | last arrival (s) | 50% arrived (s) | closest approach (m) | Stuck | ms/tick |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for variant in ("lanes", "no-lanes"):
        result = run_ecs_nav(world_of(crossing_scene_text(**shape, variant=variant)), args.seconds)
        print(row(f"ecs_nav ORCA, {'lanes (side right)' if variant == 'lanes' else 'no lanes'}", result), flush=True)
    print(row("RVO2 (pyrvo)", run_rvo2(starts, args.width, args.arm, 1.0 / 60.0, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
