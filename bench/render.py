"""Frames per second drawing N moving agents plus a nav graph, headless at 1280x720:
ecs_nav's RenderSystem (every agent in one draw call from the table's columns, a point sprite each)
against the naive way (one ``pyglet.shapes.Circle`` per agent, positions set from Python).

Both sides draw the same map and nav graph (from vertex arrays) into the same offscreen
framebuffer, move the same agents the same way each frame (numpy, outside the timing), and
end each frame with ``glFinish`` so the GPU (here: Mesa llvmpipe on the CPU) work is counted.
A frame = update what is drawn + draw + glFinish; no read-back, no HUD text.

    .venv/bin/python bench/render.py [--agents 1000 10000 50000] [--seconds 2] [--size 1280 720]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from ecs_nav.systems import render

from ecs_nav import Agent, Collider, Position, Velocity, World, draw
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle
from ecs_nav.nav.build import ScanParams, scan_heightfield

BOUNDS = (-100.0, -60.0, 100.0, 60.0)


def make_world(agents: int, seed: int = 0) -> World:
    rng = np.random.default_rng(seed)
    world = World(seed)
    boxes = [Box(tuple(c), tuple(s), float(h)) for c, s, h in
             zip(rng.uniform((-90, -50), (90, 50), (40, 2)), rng.uniform(2, 12, (40, 2)), rng.uniform(0.5, 4, 40))]
    circles = [Circle(tuple(c), float(r), 2.0) for c, r in zip(rng.uniform((-90, -50), (90, 50), (10, 2)),
                                                                 rng.uniform(1, 4, 10))]
    world.map = MapGeometry(BOUNDS, boxes=boxes, circles=circles)
    world.nav_graph = scan_heightfield(world.map, ScanParams(scan_range=(100, 10, 60), spacing=2.0))
    for x, y in rng.uniform(BOUNDS[:2], BOUNDS[2:], (agents, 2)):
        world.spawn(Position(x, y), Velocity(*rng.normal(0, 3, 2)), Agent(), Collider(radius=0.4))
    t = world.table
    t.live("heading")[:] = t.live("vel") / np.linalg.norm(t.live("vel"), axis=1, keepdims=True)
    return world


def move(world: World) -> None:
    """Straight lines, bouncing off the bounds (the same work for both sides, not timed)."""
    t = world.table
    pos, vel = t.live("pos"), t.live("vel")
    pos += vel * world.dt
    lo, hi = np.array(BOUNDS[:2]), np.array(BOUNDS[2:])
    out = (pos < lo) | (pos > hi)
    vel[out] *= -1.0
    np.clip(pos, lo, hi, out=pos)
    t.live("heading")[:] = vel / np.linalg.norm(vel, axis=1, keepdims=True)


def measure(world: World, frame, seconds: float, min_frames: int = 5, warmup: int = 2) -> tuple[float, float, float]:
    """Run frames for at least ``seconds`` and ``min_frames``; returns (fps from the median
    wall time of a frame, fps from the mean, median CPU ms of a frame). The CPU time counts
    every thread of the process (llvmpipe rasterises on worker threads), so on a shared
    machine it shows the cost of a frame without the other processes' interference."""
    for _ in range(warmup):
        move(world)
        frame()
    wall: list[float] = []
    cpu: list[float] = []
    while sum(wall) < seconds or len(wall) < min_frames:
        move(world)
        start, start_cpu = time.perf_counter(), time.process_time()
        frame()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return 1.0 / statistics.median(wall), len(wall) / sum(wall), statistics.median(cpu) * 1000.0


def bench(agents: int, seconds: float, size: tuple[int, int], naive_limit: int) -> dict:
    window = render.offscreen_window()
    gl, pyglet = render.gl, render.pyglet
    world = make_world(agents)
    camera = draw.Camera(width=size[0], height=size[1])
    camera.fit(draw.map_bounds(world))
    system = render.RenderSystem(size=size)
    renderer = system.renderer()
    target = render.Target(*size)
    layers = {"map", "graph_edges", "graph_nodes", "agents"}

    def ours():
        target.bind()
        renderer.draw(world, camera, layers)
        gl.glFinish()

    result = {"agents": agents, "nodes": int(world.nav_graph.walkable.sum()),
              "edges": int(world.nav_graph.indices.size)}
    result["fps_ours"], result["mean_fps_ours"], result["cpu_ms_ours"] = measure(world, ours, seconds)
    moving = draw.Camera(width=size[0], height=size[1])
    moving.fit(draw.map_bounds(world))

    def ours_moving_camera():  # every frame a new view: the cached background is redrawn too
        moving.pan(1.0, 0.0)
        target.bind()
        renderer.draw(world, moving, layers)
        gl.glFinish()

    result["fps_ours_moving"], _, _ = measure(world, ours_moving_camera, seconds)
    if agents > naive_limit:
        result["fps_naive"] = None
        return result
    batch = pyglet.graphics.Batch()
    start = time.perf_counter()
    pos, radius = world.table.live("pos"), world.table.live("radius")
    colour = tuple(int(c * 255) for c in draw.PALETTE["agent"][:3])
    circles = [pyglet.shapes.Circle(float(x), float(y), float(r), segments=16, color=colour, batch=batch)
               for (x, y), r in zip(pos, radius)]
    result["naive_setup_s"] = time.perf_counter() - start
    saved = window.projection
    world_projection = pyglet.math.Mat4(*(float(v) for v in camera.matrix()))

    def naive():
        target.bind()
        renderer.draw(world, camera, {"map", "graph_edges", "graph_nodes"})
        for circle, (x, y) in zip(circles, pos.tolist()):
            circle.position = (x, y)
        window.projection = world_projection
        batch.draw()
        window.projection = saved
        gl.glFinish()

    result["fps_naive"], result["mean_fps_naive"], result["cpu_ms_naive"] = measure(world, naive, seconds)
    for circle in circles:
        circle.delete()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--seconds", type=float, default=2.0, help="time each side for at least this long")
    parser.add_argument("--size", type=int, nargs=2, default=[1280, 720])
    parser.add_argument("--naive-limit", type=int, default=50000, help="skip the naive side above this many agents")
    args = parser.parse_args()
    render.offscreen_window()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"renderer: {render.gl.gl_info.get_renderer()}  size {args.size[0]}x{args.size[1]}  "
          f"cpus {os.cpu_count()}  load average at start {load:.2f}")
    print("fps from the median frame time (mean in brackets); cpu: median CPU ms per frame, all threads;")
    print("a frame = upload + draw + glFinish")
    print(f"{'agents':>7} {'nodes/edges':>12} {'ours fps':>16} {'cpu ms':>7} {'camera moving':>14} "
          f"{'naive fps':>16} {'cpu ms':>8} {'speed-up':>9} {'naive setup':>11}")
    for n in args.agents:
        r = bench(n, args.seconds, tuple(args.size), args.naive_limit)
        ours = f"{r['fps_ours']:7.1f} ({r['mean_fps_ours']:6.1f})"
        naive = (f"{r['fps_naive']:7.2f} ({r['mean_fps_naive']:6.2f}) {r['cpu_ms_naive']:8.1f} "
                 f"{r['fps_ours'] / r['fps_naive']:8.1f}x {r['naive_setup_s']:10.1f}s" if r["fps_naive"] else
                 f"{'skipped':>16}")
        print(f"{n:>7} {r['nodes']:>5}/{r['edges']:<6} {ours:>16} {r['cpu_ms_ours']:>7.1f} "
              f"{r['fps_ours_moving']:>14.1f} {naive}", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "")


if __name__ == "__main__":
    main()
