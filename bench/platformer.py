"""Platformer timings: the jump-value A* per query, and 1,000 bots stepping (bot + physics).

    python bench/platformer.py

Levels are the tests' random levels (solid floor, ~22% solid tiles, ~6% one-way tiles). Times are
the median (and min) after a warm-up call, which loads the numba kernels from their on-disk cache.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from platformer_levels import random_level, standing_cells  # noqa: E402

from ecs_nav.platformer.bots import PlatformerBots  # noqa: E402
from ecs_nav.platformer.planner import build_masks, find_path  # noqa: E402


def planner(width: int, height: int, queries: int = 40) -> None:
    level = random_level(7, width, height)
    masks = build_masks(level, 1, 1)
    cells = standing_cells(masks.fits, masks.on_ground, level.tiles)
    rng = np.random.default_rng(1)
    pairs = [(tuple(cells[rng.integers(len(cells))]), tuple(cells[rng.integers(len(cells))])) for _ in range(queries)]
    find_path(level, pairs[0][0], pairs[0][1], masks=masks)
    samples, found, expanded = [], 0, []
    for start, goal in pairs:
        t = time.perf_counter()
        path = find_path(level, start, goal, 1, 1, 5, masks=masks)
        samples.append((time.perf_counter() - t) * 1e3)
        found += path.found
        expanded.append(path.expanded)
    print(f"| planner {width}x{height}, {queries} random queries ({found} reachable) | "
          f"{statistics.median(samples):.2f} | {min(samples):.2f} | {max(samples):.2f} | "
          f"{int(statistics.median(expanded))} |")


def bots_stepping(count: int = 1000, ticks: int = 200) -> None:
    level = random_level(11, 256, 64)
    bots = PlatformerBots(level)
    masks = bots.masks(1, 1)
    cells = standing_cells(masks.fits, masks.on_ground, level.tiles)
    rng = np.random.default_rng(2)
    while bots.count < count:
        start = cells[rng.integers(len(cells))]
        i = bots.add(float(start[0]), float(start[1]))
        # a destination 5-30 tiles away, so paths are real but bots keep moving through the run
        near = cells[np.abs(cells - start).sum(axis=1) < 30]
        goal = near[rng.integers(len(near))]
        bots.move_to(i, (int(goal[0]), int(goal[1])))
    moving = int((bots.state == 1).sum())
    bots.step()
    think, move = [], []
    for _ in range(ticks):
        t0 = time.perf_counter()
        bots.think()
        t1 = time.perf_counter()
        if bots.replan.any():
            bots.serve_plans()
        t2 = time.perf_counter()
        bots.move()
        t3 = time.perf_counter()
        think.append((t1 - t0) * 1e3)
        move.append((t3 - t2) * 1e3)
    total = [a + b for a, b in zip(think, move)]
    print(f"| {count} characters ({moving} bots with a path at the start), bot update | "
          f"{statistics.median(think):.3f} | {min(think):.3f} | {max(think):.3f} | |")
    print(f"| the same, physics | {statistics.median(move):.3f} | {min(move):.3f} | {max(move):.3f} | |")
    print(f"| the same, bot + physics per tick (re-plans excluded) | {statistics.median(total):.3f} | "
          f"{min(total):.3f} | {max(total):.3f} | |")


if __name__ == "__main__":
    print(f"python {platform.python_version()}, {platform.machine()}")
    print("| what | median ms | min ms | max ms | median states expanded |")
    print("|---|---:|---:|---:|---:|")
    planner(128, 64)
    planner(512, 128)
    bots_stepping()
