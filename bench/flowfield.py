"""Flow-field benchmark: field builds against scipy and libtcod, and a crowd sampling one field.

    .venv/bin/python bench/flowfield.py [--quick] [--maps DIR] [--repeats N]

Field build, one goal (the walkable node nearest the map's centre, in its largest region), every
library measured in the same run, interleaved per repeat (best of ``--repeats``); each answer is
checked against ours before it counts. Ratio = their time / ours (above 1: we are faster).

- exact (octile, straight 1, diagonal sqrt 2, no corner cutting): ours
  ``distance_field(graph, goal, out=...)`` (the flow field's kernel); scipy
  ``csgraph.dijkstra(reverse, indices=[goal], min_only=True)``; libtcod ``CustomGraph`` (the
  same rules: diagonal edges conditioned on both cardinal cells open, integer costs 100000 and
  141421) + ``Pathfinder.resolve()``; libtcod ``dijkstra2d(cost, 100000, 141421)``, which cuts
  corners (other rules: shown for scale, its distances are not compared).
- seed BFS (4-neighbour steps): ours ``heat_map``; scipy ``dijkstra(unweighted=True)`` over the
  reversed orthogonal edges; libtcod ``dijkstra2d(cost, 1, None)``.

Maps: random (25% blocked cells) and open halls with walls (1-cell walls every 32 cells, doors
of 3 cells), 256x256 and 1024x1024; then the Moving AI maps (``../shared/maps`` or
``$ECS_NAV_MAPS``, found as ``bench/pathfinding.py`` finds them; skipped with a message when
absent). Last, 10,000 agents sharing one goal on a 256x256 map: field build (the goal moving
between two nodes 10 m apart, so that every rebuild does its work) + every agent's sampled
direction.

``--crowd`` runs only that last table, timed in CPU seconds (``time.process_time``).
``ECS_NAV_TREE=DIR`` imports ecs_nav from another checkout (a before/after run: alternate the
two in one shell loop).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("ECS_NAV_TREE", str(ROOT)))

from ecs_nav.nav import FlowField, distance_field, grid_graph, heat_map, read_movingai_map  # noqa: E402

TCOD_SCALE = 100_000
TCOD_DIAGONAL = round(TCOD_SCALE * math.sqrt(2.0))


def maps_dir(arg: str | None) -> Path | None:
    """bench/pathfinding.py's helper (that file is loaded by path: it is named like the package
    python-pathfinding)."""
    spec = importlib.util.spec_from_file_location("bench_pathfinding", ROOT / "bench" / "pathfinding.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.maps_dir(arg)


def random_blocked(size: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((size, size)) < 0.25


def walled_hall(size: int) -> np.ndarray:
    """Open floor cut by 1-cell walls every 32 cells both ways, each wall segment with a 3-cell door."""
    blocked = np.zeros((size, size), bool)
    for k in range(31, size - 1, 32):
        blocked[k, :] = True
        blocked[:, k] = True
    for k in range(31, size - 1, 32):
        for start in range(0, size, 32):
            blocked[k, start + 12 : start + 15] = False
            blocked[start + 20 : start + 23, k] = False
    return blocked


def central_goal(graph) -> int:
    """The walkable node nearest the centre among those in the largest strongly connected region."""
    from scipy.sparse.csgraph import connected_components

    _, labels = connected_components(graph.to_scipy(), directed=True, connection="strong")
    labels[~graph.walkable] = -1
    region = np.flatnonzero(labels == np.bincount(labels[labels >= 0]).argmax())
    centre = graph.positions[:, :2].mean(axis=0)
    return int(region[np.argmin(np.sum((graph.positions[region, :2] - centre) ** 2, axis=1))])


def best_of(repeats: int, runs: dict, clock=time.perf_counter) -> dict:
    """Each run timed ``repeats`` times, interleaved; best time (s) and last result per name."""
    best = {name: math.inf for name in runs}
    result = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            t = clock()
            result[name] = fn()
            best[name] = min(best[name], clock() - t)
    return {name: (best[name], result[name]) for name in runs}


def bench_builds(blocked: np.ndarray, repeats: int) -> dict:
    import tcod.path
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import dijkstra

    graph = grid_graph(blocked)
    goal = central_goal(graph)
    rows, cols = blocked.shape
    text_cell = (rows - 1 - goal // cols, goal % cols)  # tcod indexes (text row, column)
    n = graph.node_count
    out = (np.empty(n), np.empty(n, dtype=np.int64))
    reverse = graph.reverse().to_scipy()
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    step = np.abs(dst - src)
    ortho = (step == cols) | ((step == 1) & (src // cols == dst // cols))
    reverse_ortho = csr_array((np.ones(ortho.sum()), (dst[ortho], src[ortho])), shape=(n, n))
    open_ = (~blocked).astype(np.int8)
    pad = np.zeros((rows + 2, cols + 2), bool)
    pad[1:-1, 1:-1] = ~blocked
    custom = tcod.path.CustomGraph(blocked.shape)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dx and dy:
                sides = pad[1 + dy : 1 + dy + rows, 1 : 1 + cols] & pad[1 : 1 + rows, 1 + dx : 1 + dx + cols]
                custom.add_edge((dy, dx), TCOD_DIAGONAL, cost=open_, condition=sides.astype(np.int8))
            elif dx or dy:
                custom.add_edge((dy, dx), TCOD_SCALE, cost=open_)

    def tcod_custom():
        pf = tcod.path.Pathfinder(custom)
        pf.add_root(text_cell)
        pf.resolve()
        return pf.distance

    def tcod_2d(cardinal, diagonal):
        dist = tcod.path.maxarray(blocked.shape, dtype=np.int32)  # int64: libtcod left every cell at max
        dist[text_cell] = 0
        return tcod.path.dijkstra2d(dist, open_, cardinal, diagonal, out=dist)

    distance_field(graph, goal, out=out)
    heat_map(graph, goal)  # compile / load the kernels and the per-graph caches before timing
    exact = best_of(repeats, {
        "ours": lambda: distance_field(graph, goal, out=out)[0],
        "scipy": lambda: dijkstra(reverse, indices=[goal], min_only=True),
        "tcod same rules": tcod_custom,
        "tcod dijkstra2d": lambda: tcod_2d(TCOD_SCALE, TCOD_DIAGONAL),
    })  # fmt: skip
    ours = exact["ours"][1]
    np.testing.assert_allclose(ours, exact["scipy"][1], rtol=1e-9)
    theirs = exact["tcod same rules"][1][::-1].reshape(-1).astype(np.float64) / TCOD_SCALE
    reached = np.isfinite(ours)
    np.testing.assert_allclose(theirs[reached], ours[reached], rtol=1e-5)
    cutting = exact["tcod dijkstra2d"][1][::-1].reshape(-1).astype(np.float64) / TCOD_SCALE
    assert np.all(cutting[reached] <= ours[reached] * (1 + 1e-5))  # cutting corners only shortens
    bfs = best_of(repeats, {
        "ours": lambda: heat_map(graph, goal),
        "scipy": lambda: dijkstra(reverse_ortho, indices=[goal], min_only=True, unweighted=True),
        "tcod dijkstra2d": lambda: tcod_2d(1, None),
    })  # fmt: skip
    steps = bfs["ours"][1]
    ref = bfs["scipy"][1]
    np.testing.assert_array_equal(steps, np.where(np.isinf(ref), -1, ref))
    tcod_steps = bfs["tcod dijkstra2d"][1][::-1].reshape(-1)
    np.testing.assert_array_equal(tcod_steps[steps >= 0], steps[steps >= 0])
    return {"exact": {k: v[0] for k, v in exact.items()}, "bfs": {k: v[0] for k, v in bfs.items()}}


def ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def print_builds(rows: list[tuple[str, dict]]):
    print("| map | exact: ours ms | scipy ms (ratio) | tcod same rules ms (ratio) | tcod dijkstra2d, cuts corners "
          "ms (ratio) | seed BFS: ours ms | scipy ms (ratio) | tcod dijkstra2d ms (ratio) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, res in rows:
        cells = [name]
        for kind, others in (("exact", ("scipy", "tcod same rules", "tcod dijkstra2d")),
                             ("bfs", ("scipy", "tcod dijkstra2d"))):  # fmt: skip
            ours = res[kind]["ours"]
            cells.append(ms(ours))
            cells += [f"{ms(res[kind][o])} ({res[kind][o] / ours:.1f}x)" for o in others]
        print("| " + " | ".join(cells) + " |")


def bench_crowd(blocked: np.ndarray, repeats: int, agents: int = 10_000, clock=time.perf_counter) -> dict:
    graph = grid_graph(blocked)
    goal = central_goal(graph)
    field = FlowField(graph, goal)
    rng = np.random.default_rng(1)
    region = np.flatnonzero(np.isfinite(field.distance))
    points = graph.positions[rng.choice(region, agents), :2] + rng.uniform(-0.45, 0.45, (agents, 2))
    # the goal moves between two nodes on every rebuild: a rebuild with nothing changed is free
    goals = [goal, int(region[np.argsort(np.abs(field.distance[region] - 10.0))[0]])]
    field.sample(points)

    def build(then_sample: bool):
        goals.reverse()
        field.rebuild(graph, goals[0])
        return field.sample(points) if then_sample else None

    def build_next_steps():
        goals.reverse()
        field.rebuild(graph, goals[0])
        nodes = graph.nearest_nodes(points)
        return field.next_hop[nodes]  # every agent's next node: the discrete next step

    res = best_of(repeats, {
        "rebuild": lambda: build(False),
        "rebuild + next node": build_next_steps,
        "rebuild + sample": lambda: build(True),
        "sample (anchors memoised)": lambda: field.sample(points),
    }, clock)  # fmt: skip
    directions = res["rebuild + sample"][1][0]
    assert np.all(np.abs(np.hypot(*directions.T) - 1) < 1e-9)
    return {k: v[0] for k, v in res.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="256x256 only, 2 repeats")
    parser.add_argument("--maps", help="Moving AI maps folder (default ../shared/maps or $ECS_NAV_MAPS)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--crowd", action="store_true", help="only the 10,000-agent table, in CPU time")
    args = parser.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 5)
    if args.crowd:
        print_crowd(repeats, time.process_time, "CPU")
        return 0
    sizes = (256,) if args.quick else (256, 1024)

    rows = []
    for size in sizes:
        r = repeats if size <= 256 else max(2, repeats // 2)
        rows.append((f"random 25% blocked {size}x{size}", bench_builds(random_blocked(size), r)))
        rows.append((f"walled hall {size}x{size}", bench_builds(walled_hall(size), r)))
        print(f"  {size}x{size} done", file=sys.stderr)
    maps = maps_dir(args.maps)
    if maps is None:
        print("Moving AI maps not found (set ECS_NAV_MAPS or --maps, or put them in ../shared/maps): "
              "skipping them", file=sys.stderr)  # fmt: skip
    else:
        for path in sorted(maps.glob("*.map"), key=lambda p: p.stat().st_size):
            if args.quick and path.stat().st_size > 100_000:
                continue
            blocked = read_movingai_map(path)
            shape = f"{blocked.shape[1]}x{blocked.shape[0]}"
            rows.append((f"{path.name} {shape}", bench_builds(blocked, repeats if blocked.size < 300_000 else 3)))
            print(f"  {path.name} done", file=sys.stderr)
    print("\nField build, one goal: best of the repeats, ms (ratio = theirs / ours)\n")
    print_builds(rows)

    print_crowd(repeats, time.perf_counter, "wall")
    return 0


def print_crowd(repeats: int, clock, clock_name: str):
    print(f"\n{10_000:,} agents sharing one goal on a 256x256 map (best of {repeats}, {clock_name} ms)\n")
    print("| map | field rebuild | rebuild + every agent's next node | rebuild + sample every agent "
          "(line-of-sight anchors) | sample only, anchors memoised |")
    print("|---|---:|---:|---:|---:|")
    for name, blocked in (("random 25% blocked", random_blocked(256)), ("walled hall", walled_hall(256))):
        res = bench_crowd(blocked, repeats, clock=clock)
        print(f"| {name} | {ms(res['rebuild'])} | {ms(res['rebuild + next node'])} | {ms(res['rebuild + sample'])} | "
              f"{ms(res['sample (anchors memoised)'])} |")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
