"""Per-tick cost of moving agents: PathFollowSystem + SteeringSystem + PhysicsSystem against the
same behaviours written as a plain esper per-entity loop, measured in the same run.

Scene: a 200 x 200 m floor with thin walls (boxes 2 m high) and round pillars (circles). Each
agent follows its own looping path of four waypoints (path radius 1), with separation
(neighbour radius 1.5), obstacle avoidance (pillars), map collisions and agent-agent
relaxation (PhysicsSystem: up to 16 passes, stopping once a pass moves no agent farther than
its tolerance). The esper side does the same per entity with Python objects: radius test and
advance, seek, separation and Buckland's obstacle avoidance over spatial-hash cells, weighted
truncated sum, the seed-004 pipeline, integration, circle-vs-box push-out and one agent-agent
push pass (lighter than ours: no sweep, one pass).

Per-system columns are wall-clock ms per tick from ``world.timings_ms``; the tick columns give
the median wall-clock and the median process CPU time per tick.

    .venv/bin/python bench/motion.py [--agents 1000 10000] [--ticks 60]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import esper
import numpy as np
from ecs_nav.systems.path_follow import PathFollowSystem
from ecs_nav.systems.physics import PhysicsSystem
from ecs_nav.systems.steering import SteeringSystem

from ecs_nav import Agent, Collider, Path, Position, SteeringWeights, Velocity, World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle

SIZE = 200.0
AGENT_RADIUS = 0.4
NEIGHBOUR_RADIUS = 1.5
PATH_RADIUS = 1.0
DT = 1.0 / 60.0


def make_map(rng) -> MapGeometry:
    boxes = []
    for _ in range(40):
        cx, cy = rng.uniform(10, SIZE - 10, 2)
        long, thick = rng.uniform(6, 16), 0.6
        size = (long, thick) if rng.random() < 0.5 else (thick, long)
        boxes.append(Box((cx, cy), size, 2.0))
    circles = [Circle(tuple(rng.uniform(5, SIZE - 5, 2)), float(rng.uniform(0.8, 2.5)), 2.0) for _ in range(80)]
    return MapGeometry((0, 0, SIZE, SIZE), boxes=boxes, circles=circles)


def make_agents(rng, gmap: MapGeometry, n: int):
    pos = np.zeros((0, 2))
    while len(pos) < n:
        cand = rng.uniform(1, SIZE - 1, (2 * n, 2))
        free = gmap.penetration(cand, AGENT_RADIUS + 0.1, 0.0, 0.5) <= 0
        pos = np.vstack([pos, cand[free]])
    pos = pos[:n]
    offsets = rng.uniform(-15, 15, (n, 3, 2))
    wps = np.concatenate([pos[:, None, :], np.clip(pos[:, None, :] + offsets, 1, SIZE - 1)], axis=1)
    return pos, wps


# --- ecs_nav ------------------------------------------------------------------------------------

def build_world(gmap, pos, wps, seed=0):
    world = World(seed=seed, dt=DT)
    world.map = gmap
    for p, w in zip(pos, wps):
        e = world.spawn(Position(*p), Velocity(), Agent(max_speed=3.0, max_force=10.0),
                        Collider(AGENT_RADIUS),
                        SteeringWeights({"follow_path": 1.0, "separation": 1.0, "obstacle_avoidance": 1.0},
                                        neighbour_radius=NEIGHBOUR_RADIUS))
        world.add_component(e, Path(waypoints=w, radius=PATH_RADIUS, status="complete", mode="loop"))
    world.add_systems(PathFollowSystem(), SteeringSystem(), PhysicsSystem())
    return world


def time_ticks(step, ticks: int) -> tuple[list[float], list[float]]:
    """Wall-clock and process CPU milliseconds of each call (CPU time is what a contended
    machine does not inflate)."""
    wall, cpu = [], []
    for _ in range(ticks):
        start, start_cpu = time.perf_counter(), time.process_time()
        step()
        cpu.append((time.process_time() - start_cpu) * 1000.0)
        wall.append((time.perf_counter() - start) * 1000.0)
    return wall, cpu


def bench_ours(gmap, pos, wps, ticks):
    world = build_world(gmap, pos, wps)
    world.run(3)  # numba cache loads, first caches
    for name in world.timings_ms:
        world.timings_ms[name] = 0.0
    wall, cpu = time_ticks(world.step, ticks)
    per_system = {name: world.timings_ms[name] / ticks for name in world.timings_ms}
    counts = dict(world.event_counts)
    world.close()
    return (statistics.median(wall), statistics.median(cpu)), per_system, counts


# --- the same behaviours as a per-entity esper loop -------------------------------------------------

class EPos:
    __slots__ = ("x", "y", "px", "py")

    def __init__(self, x, y):
        self.x, self.y, self.px, self.py = x, y, x, y


class EVel:
    __slots__ = ("x", "y", "hx", "hy")

    def __init__(self):
        self.x = self.y = 0.0
        self.hx, self.hy = 1.0, 0.0


class EAgent:
    __slots__ = ("max_speed", "max_force", "mass", "radius")

    def __init__(self):
        self.max_speed, self.max_force, self.mass, self.radius = 3.0, 10.0, 1.0, AGENT_RADIUS


class EPath:
    __slots__ = ("wps", "index", "radius")

    def __init__(self, wps):
        self.wps, self.index, self.radius = [tuple(map(float, w)) for w in wps], 0, PATH_RADIUS


class ESteer:
    __slots__ = ("w_follow", "w_sep", "w_obs", "neighbour_radius", "box")

    def __init__(self):
        self.w_follow, self.w_sep, self.w_obs = 1.0, 1.0, 1.0
        self.neighbour_radius, self.box = NEIGHBOUR_RADIUS, 4.0


def _truncate(x, y, m):
    n = math.hypot(x, y)
    if n > m:
        return x * m / n, y * m / n
    return x, y


class EsperMotion(esper.Processor):
    """Path following, steering and physics, one entity at a time."""

    def __init__(self, gmap: MapGeometry):
        self.circles = [(c.center[0], c.center[1], c.radius) for c in gmap.circles]
        self.boxes = [b.aabb() for b in gmap.boxes]
        self.ccell = {}
        for j, (x, y, r) in enumerate(self.circles):
            for cx in range(int((x - r) // 4), int((x + r) // 4) + 1):
                for cy in range(int((y - r) // 4), int((y + r) // 4) + 1):
                    self.ccell.setdefault((cx, cy), []).append(j)
        self.bcell = {}
        for j, (x0, y0, x1, y1) in enumerate(self.boxes):
            for cx in range(int(x0 // 4), int(x1 // 4) + 1):
                for cy in range(int(y0 // 4), int(y1 // 4) + 1):
                    self.bcell.setdefault((cx, cy), []).append(j)

    def process(self):
        items = esper.get_components(EPos, EVel, EAgent, EPath, ESteer)
        cs = NEIGHBOUR_RADIUS
        grid = {}
        for _, (p, *_rest) in items:
            grid.setdefault((int(p.x // cs), int(p.y // cs)), []).append(p)
        for _, (p, v, a, path, s) in items:
            # path following (seed 004): radius test, advance with wrap
            wx, wy = path.wps[path.index]
            if math.hypot(p.x - wx, p.y - wy) <= path.radius:
                path.index = (path.index + 1) % len(path.wps)
                wx, wy = path.wps[path.index]
            # seek
            dx, dy = wx - p.x, wy - p.y
            d = math.hypot(dx, dy)
            fx = fy = 0.0
            if d > 0:
                fx += s.w_follow * (dx / d * a.max_speed - v.x)
                fy += s.w_follow * (dy / d * a.max_speed - v.y)
            # separation
            gx, gy = int(p.x // cs), int(p.y // cs)
            r2 = s.neighbour_radius * s.neighbour_radius
            sx = sy = 0.0
            for cx in (gx - 1, gx, gx + 1):
                for cy in (gy - 1, gy, gy + 1):
                    for q in grid.get((cx, cy), ()):
                        if q is p:
                            continue
                        ox, oy = p.x - q.x, p.y - q.y
                        dd = ox * ox + oy * oy
                        if 0 < dd < r2:
                            sx += ox / dd
                            sy += oy / dd
            fx += s.w_sep * sx
            fy += s.w_sep * sy
            # obstacle avoidance (Buckland)
            speed = math.hypot(v.x, v.y)
            box = s.box * (1 + speed / a.max_speed)
            best, bx, by, br = math.inf, 0.0, 0.0, 0.0
            seen = set()
            for cx in range(int((p.x - box) // 4), int((p.x + box) // 4) + 1):
                for cy in range(int((p.y - box) // 4), int((p.y + box) // 4) + 1):
                    for j in self.ccell.get((cx, cy), ()):
                        if j in seen:
                            continue
                        seen.add(j)
                        ox, oy, orad = self.circles[j]
                        ox, oy = ox - p.x, oy - p.y
                        if ox * ox + oy * oy >= (box + orad) ** 2:
                            continue
                        lx = ox * v.hx + oy * v.hy
                        ly = -ox * v.hy + oy * v.hx
                        er = orad + a.radius
                        if lx < 0 or abs(ly) >= er:
                            continue
                        sq = math.sqrt(er * er - ly * ly)
                        ip = lx - sq if lx - sq > 0 else lx + sq
                        if ip < best:
                            best, bx, by, br = ip, lx, ly, orad
            if best < math.inf:
                lat = (br - by) * (1 + (box - bx) / box)
                brake = (br - bx) * 0.2
                fx += s.w_obs * (brake * v.hx - lat * v.hy)
                fy += s.w_obs * (brake * v.hy + lat * v.hx)
            # pipeline (seed 004)
            fx, fy = _truncate(fx, fy, a.max_force)
            v.x, v.y = _truncate(v.x + fx / a.mass * DT, v.y + fy / a.mass * DT, a.max_speed)
            # integrate, walls (circle vs box push-out), bounds
            p.px, p.py = p.x, p.y
            p.x += v.x * DT
            p.y += v.y * DT
            for j in self.bcell.get((int(p.x // 4), int(p.y // 4)), ()):
                x0, y0, x1, y1 = self.boxes[j]
                nx, ny = min(max(p.x, x0), x1), min(max(p.y, y0), y1)
                ox, oy = p.x - nx, p.y - ny
                dd = math.hypot(ox, oy)
                if dd < a.radius and dd > 0:
                    p.x, p.y = nx + ox / dd * a.radius, ny + oy / dd * a.radius
            p.x = min(max(p.x, a.radius), SIZE - a.radius)
            p.y = min(max(p.y, a.radius), SIZE - a.radius)
            sp = math.hypot(v.x, v.y)
            if sp > 1e-3:
                v.hx, v.hy = v.x / sp, v.y / sp
        # one agent-agent push pass
        grid = {}
        for _, (p, *_rest) in items:
            grid.setdefault((int(p.x // cs), int(p.y // cs)), []).append(p)
        for _, (p, *_rest) in items:
            gx, gy = int(p.x // cs), int(p.y // cs)
            for cx in (gx - 1, gx, gx + 1):
                for cy in (gy - 1, gy, gy + 1):
                    for q in grid.get((cx, cy), ()):
                        if q is p:
                            continue
                        ox, oy = p.x - q.x, p.y - q.y
                        dd = math.hypot(ox, oy)
                        contact = 2 * AGENT_RADIUS
                        if 0 < dd < contact:
                            push = (contact - dd) / dd * 0.5 * 0.7
                            p.x += ox * push
                            p.y += oy * push


def bench_esper(gmap, pos, wps, ticks):
    esper.switch_world("bench-motion")
    for p, w in zip(pos, wps):
        esper.create_entity(EPos(*map(float, p)), EVel(), EAgent(), EPath(w), ESteer())
    esper.add_processor(EsperMotion(gmap))
    esper.process()
    wall, cpu = time_ticks(esper.process, ticks)
    esper.switch_world("default")
    esper.delete_world("bench-motion")
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[1_000, 10_000],
                        help="crowd sizes, each measured for both (default: 1000 10000)")
    parser.add_argument("--ticks", type=int, default=60, help="timed ticks of ecs_nav (esper: a quarter, >= 5)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    gmap = make_map(rng)
    sizes = sorted(set(args.agents))
    pos, wps = make_agents(rng, gmap, sizes[-1])
    print(f"map: {len(gmap.boxes)} walls, {len(gmap.circles)} pillars")
    rows = []
    for n in sizes:
        ours, per_system, counts = bench_ours(gmap, pos[:n], wps[:n], args.ticks)
        theirs = bench_esper(gmap, pos[:n], wps[:n], max(5, args.ticks // 4))
        rows.append((n, ours, per_system, theirs))
        print(f"  n={n}: events over the timed ticks and warm-up {counts}")
    print()
    print("| agents | PathFollow | Steering | Physics | ecs_nav tick wall / CPU (ms) "
          "| esper per-entity loop wall / CPU (ms) | ratio (CPU) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, ours, ps, theirs in rows:
        print(f"| {n:,} | {ps.get('PathFollowSystem', 0):.2f} | {ps.get('SteeringSystem', 0):.2f} | "
              f"{ps.get('PhysicsSystem', 0):.2f} | {ours[0]:.2f} / {ours[1]:.2f} | "
              f"{theirs[0]:.1f} / {theirs[1]:.1f} | {theirs[1] / ours[1]:.1f}x |")


if __name__ == "__main__":
    main()
