"""Area costs benchmark: our A* on a graph weighted by areas against libtcod's weighted A*.

    .venv/bin/python bench/area_costs.py [--quick] [--maps DIR] [--seed N]

Each Moving AI map (``../shared/maps`` or $ECS_NAV_MAPS) gets random rectangular areas
(``NavArea`` boxes aligned to the cells, integer cost multipliers 1 to 5, the last listed winning
where they overlap) and answers the ``.scen`` queries (8-connected, no corner cutting) under two
cost models, each solved by both libraries on the same per-cell multipliers ``m``:

* **mean** (ecs_nav's model, ``ecs_nav.nav.areas.weighted_graph``): a step a → b costs its
  length times ``(m[a] + m[b]) / 2``. Ours: ``NavAreas.graph_for``. libtcod's cost arrays price
  the cell entered, so each of its eight edge rules gets its own array holding ``m[b] + m[a]``
  for the cell a it comes from, with an edge cost of half the step length.
* **enter** (libtcod's own model, ``SimpleGraph`` and ``CustomGraph``'s cost array): a step
  a → b costs its length times ``m[b]``. libtcod: one cost array ``m``. Ours: the plain grid
  graph with each edge's cost times ``m`` of its target (``NavGraph.from_edges``).

libtcod's costs are integers: straight steps cost ``TCOD_SCALE`` (10,000), diagonals
``round(TCOD_SCALE * sqrt 2)``, so its paths are optimal to about 1e-5. Every answer's cost,
recomputed in floating point under the model from the cells of the path it returned, must equal
ours to 1e-4 relative, and ours must equal scipy's Dijkstra on the same weighted graph on every
``--check-every``-th query. Both heuristics are octile at the cheapest multiplier (1), so both
are admissible. Queries are timed interleaved, each as the best of ``--repeats`` runs; libtcod per
query as the better of a new ``Pathfinder`` and ``clear()`` on a reused one.
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

from ecs_nav.nav.areas import NavArea, NavAreas  # noqa: E402
from ecs_nav.nav.graph import NavGraph  # noqa: E402
from ecs_nav.nav.grid import load_movingai, read_movingai_map, read_scenarios  # noqa: E402
from ecs_nav.nav.search import admissibility_factor, astar  # noqa: E402

SQRT2 = math.sqrt(2.0)
REL_TOL = 1e-4
TCOD_SCALE = 10_000
DIRS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dx or dy]  # text order: dy = +1 is a row down
MAPS = ("room-100-10.map", "arena.map", "lak507d.map", "AcrosstheCape.map", "maze512-32-9.map")


def maps_dir(arg: str | None) -> Path | None:
    path = Path(arg or os.environ.get("ECS_NAV_MAPS", ROOT.parent / "shared" / "maps"))
    return path if path.is_dir() else None


def random_areas(shape: tuple[int, int], count: int, rng: np.random.Generator) -> list[NavArea]:
    """``count`` boxes aligned to cell edges (cell size 1 m, origin at the map's bottom-left
    corner), sides 5 % to 25 % of the map's, integer costs 1 to 5."""
    rows, cols = shape
    out = []
    for i in range(count):
        w = int(rng.integers(max(1, cols // 20), max(2, cols // 4)))
        d = int(rng.integers(max(1, rows // 20), max(2, rows // 4)))
        x0, y0 = int(rng.integers(0, cols - w + 1)), int(rng.integers(0, rows - d + 1))
        out.append(NavArea(f"area{i}", float(rng.integers(1, 6)), center=(x0 + w / 2, y0 + d / 2), size=(w, d)))
    return out


def path_cost(cells: np.ndarray, m_text: np.ndarray, model: str) -> float:
    """Cost of a path given as (k, 2) (row, col) cells in text order under ``model``."""
    cells = np.asarray(cells)
    if len(cells) < 2:
        return 0.0
    step = np.where(np.abs(np.diff(cells, axis=0)).sum(axis=1) == 2, SQRT2, 1.0)
    ma, mb = m_text[cells[:-1, 0], cells[:-1, 1]], m_text[cells[1:, 0], cells[1:, 1]]
    return float((step * (mb if model == "enter" else (ma + mb) / 2)).sum())


def enter_graph(graph: NavGraph, m: np.ndarray) -> NavGraph:
    """``graph`` with each edge a → b costing its length times ``m[b]``."""
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    return NavGraph.from_edges(graph.positions, graph.walkable, src, dst, graph.costs * m[dst], graph.grid,
                               kinds=graph.kinds, max_climb=graph.max_climb, version=graph.version)


class Tcod:
    """libtcod's Pathfinder on a CustomGraph, A* heuristic, no corner cutting (each diagonal
    rule's ``condition`` is nonzero only where both cardinal cells on its side are open)."""

    def __init__(self, blocked: np.ndarray, m_text: np.ndarray, model: str):
        import tcod.path

        self.tcod = tcod.path
        open_ = ~blocked
        h, w = open_.shape
        pad = np.zeros((h + 2, w + 2), bool)
        pad[1:-1, 1:-1] = open_
        mpad = np.zeros((h + 2, w + 2), np.int32)
        mpad[1:-1, 1:-1] = m_text.astype(np.int32)
        m_open = np.where(open_, m_text, 0).astype(np.int32)
        self.graph = tcod.path.CustomGraph(open_.shape)
        for dy, dx in DIRS:
            # the rule's cost array is indexed by the cell entered; the cell left is (y - dy, x - dx)
            came = mpad[1 - dy: 1 - dy + h, 1 - dx: 1 - dx + w]
            cost = m_open if model == "enter" else np.where(open_, m_open + came, 0).astype(np.int32)
            half = 1 if model == "enter" else 2
            edge = round(TCOD_SCALE * (SQRT2 if dx and dy else 1.0) / half)
            condition = None
            if dx and dy:  # indexed by the cell left (y, x): its sides (y + dy, x) and (y, x + dx) both open
                condition = (pad[1 + dy: 1 + dy + h, 1: 1 + w] & pad[1: 1 + h, 1 + dx: 1 + dx + w]).astype(np.int8)
            self.graph.add_edge((dy, dx), edge, cost=cost, condition=condition)
        self.graph.set_heuristic(cardinal=TCOD_SCALE, diagonal=round(TCOD_SCALE * SQRT2))
        self.reused = tcod.path.Pathfinder(self.graph)

    def query(self, s, g):
        pf = self.tcod.Pathfinder(self.graph)
        pf.add_root(s)
        return pf.path_to(g)

    def query_reused(self, s, g):
        pf = self.reused
        pf.clear()
        pf.add_root(s)
        return pf.path_to(g)


def best_of(fn, repeats: int):
    best, out = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def bench_map(path: Path, args, rng: np.random.Generator) -> list[dict]:
    from scipy.sparse.csgraph import dijkstra

    blocked = read_movingai_map(path)
    rows, cols = blocked.shape
    plain = load_movingai(path)
    areas = NavAreas(random_areas(blocked.shape, args.areas, rng))
    m_node = areas.multipliers()[areas.node_areas(plain)]
    m_text = m_node.reshape(rows, cols)[::-1]
    scen = read_scenarios(Path(f"{path}.scen"))
    scen = scen[scen["optimal_length"] > 0]
    scen = scen[np.unique(np.linspace(0, len(scen) - 1, min(args.queries, len(scen))).round().astype(int))]
    out = []
    for model in ("mean", "enter"):
        graph = areas.graph_for(plain) if model == "mean" else enter_graph(plain, m_node)
        node = int(np.flatnonzero(graph.walkable)[0])
        astar(graph, node, node)  # per-graph setup (scratch, heuristic factor), not timed
        admissibility_factor(graph)
        tc = Tcod(blocked, m_text, model)
        matrix = graph.to_scipy()
        ours_t, tcod_t = [], []
        for k, s in enumerate(scen):
            sx, sy, gx, gy = (int(s[f]) for f in ("start_x", "start_y", "goal_x", "goal_y"))
            a, b = graph.node_at_cell(sx, sy), graph.node_at_cell(gx, gy)
            s_, g_ = (sy, sx), (gy, gx)
            t_ours, res = best_of(lambda g=graph, a=a, b=b: astar(g, a, b), args.repeats)
            t_new, cells = best_of(lambda t=tc, s_=s_, g_=g_: t.query(s_, g_), args.repeats)
            t_reused, cells_r = best_of(lambda t=tc, s_=s_, g_=g_: t.query_reused(s_, g_), args.repeats)
            for c in (cells, cells_r):
                theirs = path_cost(c, m_text, model)
                if not math.isclose(theirs, res.cost, rel_tol=REL_TOL):
                    raise AssertionError(f"{path.name} {model} {(sx, sy, gx, gy)}: ours {res.cost}, tcod {theirs}")
            if k % args.check_every == 0:
                ref = float(dijkstra(matrix, indices=a)[b])
                if not math.isclose(ref, res.cost, rel_tol=1e-9):
                    raise AssertionError(f"{path.name} {model} {(sx, sy, gx, gy)}: ours {res.cost}, scipy {ref}")
            ours_t.append(t_ours)
            tcod_t.append(min(t_new, t_reused))
        out.append({"map": path.name, "shape": f"{cols}x{rows}", "model": model, "queries": len(scen),
                    "ours": float(np.median(ours_t)) * 1e3, "tcod": float(np.median(tcod_t)) * 1e3,
                    "ratio": float(np.median(np.array(tcod_t) / np.array(ours_t)))})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and repeats (a smoke run)")
    parser.add_argument("--maps", help="the Moving AI maps folder (default ../shared/maps or $ECS_NAV_MAPS)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random areas")
    parser.add_argument("--areas", type=int, default=40, help="random areas per map")
    args = parser.parse_args(argv)
    args.queries = 6 if args.quick else 24
    args.repeats = 1 if args.quick else 3
    args.check_every = 1 if args.quick else 4
    maps = maps_dir(args.maps)
    if maps is None:
        print("Moving AI maps not found (set ECS_NAV_MAPS or --maps, or put them in ../shared/maps)")
        return 0
    import tcod

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, tcod {tcod.__version__}")
    rng = np.random.default_rng(args.seed)
    rows = []
    for name in MAPS:
        if (maps / name).is_file():
            rows += bench_map(maps / name, args, rng)
    print(f"\nPer query, median ms; ratio = median of tcod / ours per query; {args.areas} areas, "
          f"costs 1-5, seed {args.seed}; every cost checked between the two\n")
    print("| map | size | model | queries | ecs_nav A* ms | tcod ms | tcod / ours |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['map']} | {r['shape']} | {r['model']} | {r['queries']} | {r['ours']:.3f} | {r['tcod']:.3f} "
              f"| {r['ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
