"""Pathfinding benchmark: our A* against libtcod, python-pathfinding, networkx and scipy.

    .venv/bin/python bench/pathfinding.py [--quick] [--maps DIR]

On the Moving AI maps (``../shared/maps`` or $ECS_NAV_MAPS; skipped with a message when absent)
every library answers the same ``.scen`` queries under the same rules (8-connected, straight 1,
diagonal sqrt 2, no corner cutting) and each answer's cost is checked against the file's
optimal length (1e-4 relative). Queries are interleaved across libraries, each timed as the best
of ``--repeats`` runs, so machine noise hits every library alike. A ratio is
median(library) / median(ours) over the same queries. Only each library's search call is timed:
not the conversion of the query's cells to its arguments, nor the costing of the answer it
returns (a path for tcod and python-pathfinding) for the check.

Then: one goal shared by 10,000 agents on a 256x256 map (distance field + next hops, and + full
paths), the graph build of a 1024x1024 grid, and the kernels' first-call compile time with an
empty and with a warm numba cache.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# This file is named like the python-pathfinding package it compares against: take the script's
# own folder off the import path so that ``import pathfinding`` finds the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from ecs_nav.nav.grid import grid_graph, load_movingai, read_movingai_map, read_scenarios  # noqa: E402
from ecs_nav.nav.search import admissibility_factor, astar, distance_field, paths_from_field  # noqa: E402

SQRT2 = math.sqrt(2.0)
REL_TOL = 1e-4
SMALL_MAP_CELLS = 20_000  # the slow pure-Python libraries answer every query only on maps this small
TCOD_SCALE = 100_000  # libtcod's costs are integers: straight 100000, diagonal round(100000 sqrt 2)


def maps_dir(arg: str | None) -> Path | None:
    path = Path(arg or os.environ.get("ECS_NAV_MAPS", ROOT.parent / "shared" / "maps"))
    return path if path.is_dir() else None


def step_cost(cells: np.ndarray) -> float:
    """Octile cost of a path given as (k, 2) integer cells."""
    if len(cells) < 2:
        return 0.0
    d = np.abs(np.diff(np.asarray(cells), axis=0)).sum(axis=1)
    return float(np.where(d == 2, SQRT2, 1.0).sum())


def tcod_octile_graph(blocked: np.ndarray):
    """libtcod's ``CustomGraph`` of a (h, w) blocked grid under the Moving AI rules: straight steps
    ``TCOD_SCALE``, diagonals ``round(TCOD_SCALE * sqrt 2)`` only where both cells beside them are
    open (no corner cutting), with the matching octile heuristic."""
    import tcod.path

    open_ = ~blocked
    h, w = open_.shape
    pad = np.zeros((h + 2, w + 2), bool)
    pad[1:-1, 1:-1] = open_
    cost = open_.astype(np.int8)
    diagonal = round(TCOD_SCALE * SQRT2)
    graph = tcod.path.CustomGraph(open_.shape)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dx and dy:
                both_sides = pad[1 + dy : 1 + dy + h, 1 : 1 + w] & pad[1 : 1 + h, 1 + dx : 1 + dx + w]
                graph.add_edge((dy, dx), diagonal, cost=cost, condition=both_sides.astype(np.int8))
            elif dx or dy:
                graph.add_edge((dy, dx), TCOD_SCALE, cost=cost)
    graph.set_heuristic(cardinal=TCOD_SCALE, diagonal=diagonal)
    return graph


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


# --- the libraries, each set up once per map (setup is not timed) ------------------------------
# Each has ``prepare(sx, sy, gx, gy)`` -> the arguments of ``query`` (untimed), ``query`` (the
# timed search call alone, its raw answer) and ``cost(answer, gx, gy)`` -> the answer's cost (untimed).


class Ours:
    name = "ecs_nav A*"

    def __init__(self, blocked, graph):
        self.graph = graph
        # per-graph setup, cached until the graph changes: scratch buffers and the heuristic's
        # admissibility factor (one pass over the edges)
        node = int(np.flatnonzero(graph.walkable)[0])
        astar(graph, node, node)
        admissibility_factor(graph)

    def prepare(self, sx, sy, gx, gy):
        g = self.graph
        return g, g.node_at_cell(sx, sy), g.node_at_cell(gx, gy)

    query = staticmethod(astar)

    def cost(self, result, gx, gy):
        return result.cost


class Tcod:
    """libtcod's Pathfinder on a CustomGraph with A* heuristic. No corner cutting: each diagonal
    edge rule carries a ``condition`` array that is nonzero only on cells whose two cardinal
    neighbours on that side are both open (the target cell itself is checked by ``cost``).
    Per query the better of a new Pathfinder and ``clear()`` on a reused one."""

    name = "tcod.path"

    def __init__(self, blocked, graph):
        import tcod.path

        self.tcod = tcod.path
        self.graph = tcod_octile_graph(blocked)
        self.reused = tcod.path.Pathfinder(self.graph)

    def prepare(self, sx, sy, gx, gy):
        return (sy, sx), (gy, gx)

    def query(self, root, goal):
        pf = self.tcod.Pathfinder(self.graph)
        pf.add_root(root)
        return pf.path_to(goal)

    def query_reused(self, root, goal):
        pf = self.reused
        pf.clear()
        pf.add_root(root)
        return pf.path_to(goal)

    def cost(self, path, gx, gy):
        return step_cost(path)


class PythonPathfinding:
    """python-pathfinding's AStarFinder, DiagonalMovement.only_when_no_obstacle (no corner
    cutting), its default octile heuristic; ``find_path`` cleans the grid itself."""

    name = "python-pathfinding"

    def __init__(self, blocked, graph):
        from pathfinding.core.diagonal_movement import DiagonalMovement
        from pathfinding.core.grid import Grid
        from pathfinding.finder.a_star import AStarFinder

        self.grid = Grid(matrix=(~blocked).astype(np.int8))
        self.finder = AStarFinder(diagonal_movement=DiagonalMovement.only_when_no_obstacle)

    def prepare(self, sx, sy, gx, gy):
        return self.grid.node(sx, sy), self.grid.node(gx, gy), self.grid

    def query(self, start, end, grid):
        return self.finder.find_path(start, end, grid)

    def cost(self, answer, gx, gy):
        path, _ = answer
        return step_cost(np.array([(n.x, n.y) for n in path]))


class NetworkX:
    """networkx.astar_path on a DiGraph of the same edges, octile heuristic."""

    name = "networkx"

    def __init__(self, blocked, graph):
        import networkx as nx

        self.nx = nx
        self.g = nx.DiGraph()
        self.g.add_weighted_edges_from(
            zip(graph.edge_sources().tolist(), graph.indices.tolist(), graph.costs.tolist(), strict=True)
        )
        self.xy = graph.positions[:, :2].tolist()
        self.graph = graph

    def heuristic(self, a, b):
        (ax, ay), (bx, by) = self.xy[a], self.xy[b]
        dx, dy = abs(ax - bx), abs(ay - by)
        return max(dx, dy) + (SQRT2 - 1) * min(dx, dy)

    def prepare(self, sx, sy, gx, gy):
        g = self.graph
        return g.node_at_cell(sx, sy), g.node_at_cell(gx, gy)

    def query(self, source, target):
        return self.nx.astar_path_length(self.g, source, target, heuristic=self.heuristic, weight="weight")

    def cost(self, length, gx, gy):
        return float(length)


class Scipy:
    """scipy.sparse.csgraph.dijkstra from the start (its API has no single-target early exit)."""

    name = "scipy dijkstra"

    def __init__(self, blocked, graph):
        from scipy.sparse.csgraph import dijkstra

        self.dijkstra = dijkstra
        self.matrix = graph.to_scipy()
        self.graph = graph

    def prepare(self, sx, sy, gx, gy):
        return self.matrix, self.graph.node_at_cell(sx, sy)

    def query(self, matrix, source):
        return self.dijkstra(matrix, indices=source)

    def cost(self, dist, gx, gy):
        return float(dist[self.graph.node_at_cell(gx, gy)])


LIBRARIES = [Ours, Tcod, PythonPathfinding, NetworkX, Scipy]
SLOW = {PythonPathfinding, NetworkX}


def pick(scenarios: np.ndarray, count: int) -> np.ndarray:
    """``count`` scenarios with a path, evenly spaced over the file (its buckets grow along
    it), always including the last, longest one."""
    with_path = scenarios[scenarios["optimal_length"] > 0]
    idx = np.unique(np.linspace(0, len(with_path) - 1, min(count, len(with_path))).round().astype(int))
    return with_path[idx]


def bench_map(path: Path, args) -> dict:
    blocked = read_movingai_map(path)
    graph = load_movingai(path)
    scenarios = pick(read_scenarios(Path(f"{path}.scen")), args.queries)
    big = blocked.size > SMALL_MAP_CELLS
    libs = {}
    for cls in LIBRARIES:
        t, lib = timed(lambda cls=cls: cls(blocked, graph))
        libs[cls] = lib
    times = {cls: [] for cls in LIBRARIES}
    # the pure-Python libraries answer only a few mid-file queries on big maps
    slow_picks = set(np.linspace(0, len(scenarios) - 1, args.slow_queries + 2)[1:-1].round().astype(int).tolist())
    # The setup left millions of Python objects (networkx, python-pathfinding grids): freeze them
    # so that a cyclic-GC pass triggered inside some library's timed query does not walk them.
    gc.collect()
    gc.freeze()
    for k, s in enumerate(scenarios):
        q = (int(s["start_x"]), int(s["start_y"]), int(s["goal_x"]), int(s["goal_y"]))
        expected = float(s["optimal_length"])
        for cls, lib in libs.items():
            if cls in SLOW and big and k not in slow_picks:
                continue
            runs = [lib.query] + ([lib.query_reused] if cls is Tcod else [])
            arguments = lib.prepare(*q)
            best = math.inf
            for _ in range(1 if cls in SLOW else args.repeats):
                for run in runs:
                    t = time.perf_counter()
                    answer = run(*arguments)  # only the search call is timed
                    t = time.perf_counter() - t
                    cost = lib.cost(answer, q[2], q[3])
                    if not math.isclose(cost, expected, rel_tol=REL_TOL):
                        raise AssertionError(f"{cls.name} on {path.name} {q}: cost {cost}, file says {expected}")
                    best = min(best, t)
            times[cls].append((k, best))
    gc.unfreeze()
    return {"map": path.name, "shape": blocked.shape, "times": times}


def ratio_rows(results: list[dict]) -> list[tuple]:
    rows = []
    all_pairs = {cls: [] for cls in LIBRARIES}
    for res in results:
        ours = dict(res["times"][Ours])
        row = [res["map"], f"{res['shape'][1]}x{res['shape'][0]}", len(ours), np.median(list(ours.values())) * 1e3]
        for cls in LIBRARIES[1:]:
            pairs = [(t, ours[k]) for k, t in res["times"][cls]]
            all_pairs[cls] += pairs
            theirs, mine = (np.array(x) for x in zip(*pairs, strict=True))
            row.append((np.median(theirs) * 1e3, np.median(theirs) / np.median(mine), len(pairs)))
        rows.append(row)
    return rows, all_pairs


def fmt_ms(ms: float) -> str:
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def print_query_table(rows, all_pairs):
    head = (
        "| map | size | queries | ecs_nav A* ms | " + " | ".join(f"{c.name} ms (ratio)" for c in LIBRARIES[1:]) + " |"
    )
    print(head)
    print("|" + "---|" * (4 + len(LIBRARIES) - 1))
    for row in rows:
        cells = [row[0], row[1], str(row[2]), fmt_ms(row[3])]
        for ms, ratio, n in row[4:]:
            cells.append(f"{fmt_ms(ms)} ({ratio:.1f}x{'' if n == row[2] else f', {n} q'})")
        print("| " + " | ".join(cells) + " |")
    cells = ["**all maps**", "", "", "median of per-query ratios:"]
    for cls in LIBRARIES[1:]:
        theirs, mine = (np.array(x) for x in zip(*all_pairs[cls], strict=True))
        per_query = theirs / mine
        cells.append(f"**{np.median(per_query):.1f}x** (min {per_query.min():.1f}x)")
    print("| " + " | ".join(cells) + " |")


# --- shared goal, build, compile -----------------------------------------------------------------


def bench_shared_goal(repeats: int) -> list[tuple[str, float]]:
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(0)
    blocked = rng.random((256, 256)) < 0.25
    graph = grid_graph(blocked)
    # agents and goal in the largest connected region
    _, labels = connected_components(graph.to_scipy(), directed=True, connection="strong")
    labels[~graph.walkable] = -1
    region = np.flatnonzero(labels == np.bincount(labels[labels >= 0]).argmax())
    goal = int(region[len(region) // 2])
    agents = rng.choice(region, 10_000)
    t_reverse, _ = timed(graph.reverse)
    field_t, hop_t, path_t = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dist, next_hop = distance_field(graph, goal)
        t1 = time.perf_counter()
        hops = next_hop[agents]
        t2 = time.perf_counter()
        offsets, nodes = paths_from_field(next_hop, agents)
        t3 = time.perf_counter()
        field_t.append(t1 - t0)
        hop_t.append(t1 - t0 + t2 - t1)
        path_t.append(t1 - t0 + t3 - t2)
    assert np.all(hops[agents != goal] >= 0) and len(offsets) == 10_001
    mean_len = float(np.diff(offsets).mean())
    one = [timed(lambda a=a: astar(graph, int(a), goal))[0] for a in agents[:200]]
    return [
        ("distance field alone (65,536 slots, 1 goal)", np.median(field_t) * 1e3),
        ("field + next hop of 10,000 agents", np.median(hop_t) * 1e3),
        (f"field + full paths of 10,000 agents (mean {mean_len:.0f} nodes)", np.median(path_t) * 1e3),
        ("for scale: 10,000 separate A* queries (200 timed, x50)", np.sum(one) * 50 * 1e3),
        ("graph.reverse(), once per graph version (cached)", t_reverse * 1e3),
    ]


def bench_build(maps: Path | None, repeats: int) -> list[tuple[str, float]]:
    out = []
    blocked = np.random.default_rng(1).random((1024, 1024)) < 0.25
    grid_graph(blocked)
    out.append(
        (
            "grid_graph 1024x1024, 25% blocked",
            np.median([timed(lambda: grid_graph(blocked))[0] for _ in range(repeats)]) * 1e3,
        )
    )
    open_ = np.zeros((1024, 1024), bool)
    out.append(
        (
            "grid_graph 1024x1024, all open (8.4M edges)",
            np.median([timed(lambda: grid_graph(open_))[0] for _ in range(repeats)]) * 1e3,
        )
    )
    if maps is not None and (maps / "ost100d.map").exists():
        out.append(
            (
                "load_movingai ost100d (1024x1025, parse + build)",
                np.median([timed(lambda: load_movingai(maps / "ost100d.map"))[0] for _ in range(repeats)]) * 1e3,
            )
        )
    return out


COMPILE_SNIPPET = """
import time
w0, c0 = time.perf_counter(), time.process_time()
import numpy as np
from ecs_nav.nav.grid import grid_graph
from ecs_nav.nav.search import astar, dijkstra, distance_field, paths_from_field
w1, c1 = time.perf_counter(), time.process_time()
g = grid_graph(np.zeros((8, 8), bool))
astar(g, 0, 63); dijkstra(g, 0); _, hop = distance_field(g, 63); paths_from_field(hop, [0])
print(w1 - w0, c1 - c0, time.perf_counter() - w1, time.process_time() - c1)
"""


def bench_compile() -> list[tuple[str, float]]:
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        for label in ("empty numba cache (compile)", "warm numba cache (load)"):
            res = subprocess.run(
                [sys.executable, "-c", COMPILE_SNIPPET], env=env, capture_output=True, text=True, check=True
            )
            imp_wall, imp_cpu, wall, cpu = (float(x) for x in res.stdout.split())
            out.append((f"first astar + dijkstra + distance_field calls, {label}", wall * 1e3, cpu * 1e3))
        out.append(("import of ecs_nav.nav.search (numpy, numba, ecs_nav)", imp_wall * 1e3, imp_cpu * 1e3))
    return out


def print_pairs(title: str, rows, columns=("ms",)):
    print(f"\n| {title} | " + " | ".join(columns) + " |\n|---|" + "---:|" * len(columns))
    for label, *values in rows:
        print(f"| {label} | " + " | ".join(fmt_ms(v) for v in values) + " |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and repeats (a smoke run)")
    parser.add_argument("--maps", help="the Moving AI maps folder (default ../shared/maps or $ECS_NAV_MAPS)")
    args = parser.parse_args(argv)
    args.queries = 6 if args.quick else 24
    args.slow_queries = 1 if args.quick else 3  # python-pathfinding / networkx queries on big maps
    args.repeats = 1 if args.quick else 3

    import numba
    import scipy

    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, numba {numba.__version__}, scipy {scipy.__version__}"
    )
    maps = maps_dir(args.maps)
    # the light parts first: the per-map runs leave millions of Python objects to collect
    print_pairs("numba compile (fresh process)", bench_compile(), ("wall ms", "CPU ms"))
    print_pairs("graph build (median)", bench_build(maps, 3 if args.quick else 7))
    print_pairs("one goal, 10,000 agents, 256x256 map (25% blocked)", bench_shared_goal(5 if args.quick else 20))
    if maps is None:
        print(
            "\nMoving AI maps not found (set ECS_NAV_MAPS or --maps, or put them in ../shared/maps): "
            "skipping the per-query comparison"
        )
        return 0
    results = []
    for path in sorted(maps.glob("*.map"), key=lambda p: p.stat().st_size):
        t, res = timed(lambda path=path: bench_map(path, args))
        gc.collect()
        print(f"  {path.name}: {t:.1f} s", file=sys.stderr)
        results.append(res)
    print(
        f"\nPer query: median ms (ratio = library / ecs_nav A*, same queries); every answer's cost "
        f"checked against the .scen optimum. Big maps (> {SMALL_MAP_CELLS} cells): "
        f"python-pathfinding and networkx answer only the queries counted.\n"
    )
    print_query_table(*ratio_rows(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
