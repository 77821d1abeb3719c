"""What the viewer's search trace costs: A* with ``trace=True`` beside the same A* without.

    .venv/bin/python bench/search_trace.py [--size 512] [--queries 300] [--repeats 3]

On a SIZE x SIZE octile grid with 30% random blocked cells (seeded), the same random
start/goal pairs are searched with and without ``trace`` (the expanded nodes read back from the
kernel's scratch: one pass over the node count), interleaved query by query and each timed as
the best of ``--repeats`` runs in CPU time (``time.process_time``), so machine load hits both
alike. Only the traced entity's searches pay the difference; every other search runs the
``trace=False`` line. Prints the median per query and the median of the differences.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ecs_nav.nav.grid import grid_graph  # noqa: E402
from ecs_nav.nav.search import astar  # noqa: E402


def best_cpu(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    blocked = rng.random((args.size, args.size)) < 0.3
    graph = grid_graph(blocked)
    walkable = np.flatnonzero(np.diff(graph.indptr) > 0)
    pairs = rng.choice(walkable, (args.queries, 2))
    astar(graph, int(pairs[0, 0]), int(pairs[0, 1]), trace=True)  # compile / load the kernel
    plain, traced, expanded = [], [], []
    for start, goal in pairs:
        start, goal = int(start), int(goal)
        plain.append(best_cpu(lambda s=start, g=goal: astar(graph, s, g), args.repeats))
        traced.append(best_cpu(lambda s=start, g=goal: astar(graph, s, g, trace=True), args.repeats))
        expanded.append(astar(graph, start, goal).expanded)
    diff = [t - p for t, p in zip(traced, plain)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"grid {args.size}x{args.size} ({graph.node_count} node slots, {walkable.size} walkable), "
          f"{args.queries} queries, best of {args.repeats}, CPU time, load average {load:.2f}")
    print(f"  nodes expanded per query: median {statistics.median(expanded):.0f}")
    print(f"  astar             median {statistics.median(plain) * 1e3:8.3f} ms")
    print(f"  astar trace=True  median {statistics.median(traced) * 1e3:8.3f} ms")
    print(f"  difference        median {statistics.median(diff) * 1e3:8.3f} ms per traced search")


if __name__ == "__main__":
    main()
