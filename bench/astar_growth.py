"""How A*'s query time grows with path length on one Moving AI map, against the nodes it expands.

    .venv/bin/python bench/astar_growth.py [--map AcrosstheCape.map] [--per-bucket 12] [--maps DIR]

Takes ``--per-bucket`` scenarios (evenly spaced) from each length bucket of the map's ``.scen``
file (the file's buckets are 4 cells of optimal length wide; here they are grouped in
``--group`` of them), runs ``astar`` on each (best of ``--repeats``), and prints per group:
the median path length, nodes expanded, query time, time per expanded node and the largest
open list; then the log-log slopes of time and of expansions against length over all queries.
If the time per expanded node stays flat, the time's growth is the expansions' growth: the
open list and the closed set add nothing super-linear. Jump point search's times (``find_path``)
on the same queries are given beside. Then searches cut by ``max_expanded`` budgets, A* and
Dijkstra: time per expanded node and the open list's size against the number expanded.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ecs_nav.nav.grid import load_movingai, read_scenarios  # noqa: E402
from ecs_nav.nav.jump import find_path  # noqa: E402
from ecs_nav.nav.search import astar  # noqa: E402


def maps_dir(arg: str | None) -> Path | None:
    path = Path(arg or os.environ.get("ECS_NAV_MAPS", ROOT.parent / "shared" / "maps"))
    return path if path.is_dir() else None


def best_of(repeats: int, fn):
    best, out = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--map", default="AcrosstheCape.map")
    parser.add_argument("--maps", help="the Moving AI maps folder (default ../shared/maps or $ECS_NAV_MAPS)")
    parser.add_argument("--per-bucket", type=int, default=6, help="scenarios per .scen bucket")
    parser.add_argument("--group", type=int, default=25, help=".scen buckets per row of the table")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    maps = maps_dir(args.maps)
    if maps is None or not (maps / args.map).exists():
        print(f"{args.map} not found (set ECS_NAV_MAPS or --maps, or put it in ../shared/maps): nothing to run")
        return 0
    graph = load_movingai(maps / args.map)
    scenarios = read_scenarios(maps / f"{args.map}.scen")
    scenarios = scenarios[scenarios["optimal_length"] > 0]
    picked = []
    for bucket in np.unique(scenarios["bucket"]):
        rows = scenarios[scenarios["bucket"] == bucket]
        picked.extend(rows[np.unique(np.linspace(0, len(rows) - 1, args.per_bucket).round().astype(int))])
    walk = np.flatnonzero(graph.walkable)
    astar(graph, int(walk[0]), int(walk[-1]))  # compile or load, size the buffers: not timed
    find_path(graph, int(walk[0]), int(walk[-1]))
    records = []  # (bucket, length, expanded, astar s, jps s)
    for s in picked:
        start, goal = graph.node_at_cell(s["start_x"], s["start_y"]), graph.node_at_cell(s["goal_x"], s["goal_y"])
        t_astar, res = best_of(args.repeats, lambda start=start, goal=goal: astar(graph, start, goal))
        t_jps, jumped = best_of(args.repeats, lambda start=start, goal=goal: find_path(graph, start, goal))
        assert math.isclose(res.cost, s["optimal_length"], rel_tol=1e-4), (s, res.cost)
        assert math.isclose(jumped.cost, res.cost, rel_tol=1e-12), (s, jumped.cost, res.cost)
        records.append((int(s["bucket"]), float(s["optimal_length"]), res.expanded, t_astar, t_jps))
    rec = np.array(records)
    print(f"{args.map}: {len(rec)} queries, {args.per_bucket} per .scen bucket, best of {args.repeats}\n")
    print("| path length | queries | A* expanded (median) | A* ms (median) | A* ns per expanded node | "
          "JPS ms (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    group = rec[:, 0] // args.group
    for g in np.unique(group):
        r = rec[group == g]
        lo, hi = r[:, 1].min(), r[:, 1].max()
        per_node = np.median(r[:, 3] / r[:, 2]) * 1e9
        print(f"| {lo:.0f}-{hi:.0f} | {len(r)} | {np.median(r[:, 2]):,.0f} | {np.median(r[:, 3]) * 1e3:.3f} | "
              f"{per_node:.0f} | {np.median(r[:, 4]) * 1e3:.4f} |")
    length, expanded, t_astar = rec[:, 1], rec[:, 2], rec[:, 3]
    print(f"\nlog-log slope against path length: A* time {slope(length, t_astar):.2f}, "
          f"expanded nodes {slope(length, expanded):.2f}, time per expanded node "
          f"{slope(length, t_astar / expanded):.2f}; JPS time {slope(length, rec[:, 4]):.2f}")
    far = length >= np.median(length)
    print(f"over the longer half only: A* time {slope(length[far], t_astar[far]):.2f}, "
          f"expanded {slope(length[far], expanded[far]):.2f}")
    print_budgets(graph, scenarios[-5:], args.repeats)
    return 0


def open_list_size(graph, expanded_nodes: np.ndarray) -> int:
    """Nodes a search left on its open list: the neighbours of its expanded nodes it did not expand."""
    closed = np.zeros(graph.node_count, dtype=bool)
    closed[expanded_nodes] = True
    lo, hi = graph.indptr[expanded_nodes], graph.indptr[expanded_nodes + 1]
    edges = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)])
    reached = np.unique(graph.indices[edges])
    return int((~closed[reached]).sum())


def print_budgets(graph, scenarios, repeats: int):
    """Time per expanded node against the number expanded, the searches cut by ``max_expanded``
    toward the file's 5 farthest goals: A* and Dijkstra (whose open list is a thin ring)."""
    print("\n| search | expanded (budget) | ns per expanded node (median) | open list at the end (median) |")
    print("|---|---:|---:|---:|")
    for heuristic, name in (("octile", "A*"), ("zero", "Dijkstra")):
        for budget in (2_000, 8_000, 16_000, 32_000, 64_000, 128_000):
            per_node, open_sizes = [], []
            for s in scenarios:
                start = graph.node_at_cell(s["start_x"], s["start_y"])
                goal = graph.node_at_cell(s["goal_x"], s["goal_y"])
                t, res = best_of(repeats, lambda start=start, goal=goal, h=heuristic, b=budget: astar(
                    graph, start, goal, heuristic=h, max_expanded=b))
                per_node.append(t / res.expanded * 1e9)
                traced = astar(graph, start, goal, heuristic=heuristic, max_expanded=budget, trace=True)
                open_sizes.append(open_list_size(graph, traced.expanded_nodes))
            print(f"| {name} | {budget:,} | {np.median(per_node):.0f} | {np.median(open_sizes):.0f} |")


if __name__ == "__main__":
    raise SystemExit(main())
