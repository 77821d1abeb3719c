"""Jump point search against A*, pyastar2d and libtcod on the Moving AI maps: query time and optimality.

    .venv/bin/python bench/jump.py [--quick] [--maps DIR] [--queries N] [--landmarks K]

Every map of ``../shared/maps`` (or $ECS_NAV_MAPS, or --maps; skipped with a message when
absent) answers ``--queries`` ``.scen`` queries evenly spaced over its file (the buckets grow
along it; the last, longest one always in). Each query runs in turn on every library, each
timed as the best of ``--repeats`` runs, so machine noise hits them alike. Per map: the median
query time of each, and the median of the per-query ratios peer / ecs_nav JPS (above 1: JPS is
faster). The reference is ``find_path`` on the graph with ``--landmarks`` landmarks prepared
(``ecs_nav.nav.landmarks``, default: ``prepare_landmarks``'s own, 32 up to 512 x 512 cells; set
up before the queries and timed apart, 0: none);
"ecs_nav JPS" is ``find_path`` on a copy without them, and the column "pyastar2d / JPS" gives
pyastar2d's ratio to it.

Exactness: ecs_nav's answers (``find_path``, which picks jump point search on these grids, and
``astar``) and tcod's must equal the file's optimum (1e-4 relative) or the run stops.
pyastar2d (``allow_diagonal=True``) answers under its own rules, diagonal steps cost 1 like
straight ones and may cut corners: its column "optimal" counts the paths that are valid under
the Moving AI rules (no corner cut) and as short as the optimum, measured in octile steps.
pyastar2d is timed through its compiled entry point on a weight array flattened once per map
(``astar_path`` copies the array and checks its minimum on every call: slower). Only each
library's search call is timed: not the conversion of the query's cells to its arguments, nor
the cost of the path it returns.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pathfinding import maps_dir, pick, tcod_octile_graph  # noqa: E402  (bench/, the script's folder)
from pathfinding import step_cost as octile_cost  # noqa: E402

from ecs_nav.nav.grid import load_movingai, read_movingai_map, read_scenarios  # noqa: E402
from ecs_nav.nav.jump import find_path  # noqa: E402
from ecs_nav.nav.landmarks import prepare_landmarks  # noqa: E402
from ecs_nav.nav.octile import is_uniform_octile  # noqa: E402
from ecs_nav.nav.search import astar  # noqa: E402

REL_TOL = 1e-4


def cuts_a_corner(cells: np.ndarray, blocked: np.ndarray) -> bool:
    """Whether a diagonal step of the path ((k, 2) (row, col) cells) passes a blocked cardinal cell."""
    c = np.asarray(cells)
    a, b = c[:-1], c[1:]
    diagonal = (a[:, 0] != b[:, 0]) & (a[:, 1] != b[:, 1])
    return bool(np.any(diagonal & (blocked[a[:, 0], b[:, 1]] | blocked[b[:, 0], a[:, 1]])))


def warm_up(graph, search):
    """One real query (compiles or loads the kernels, sizes the buffers): setup, not timed."""
    walkable = np.flatnonzero(graph.walkable)
    search(graph, int(walkable[0]), int(walkable[-1]))


class Landmarked:
    """find_path (jump point search) with ``LANDMARKS`` landmarks prepared on the graph."""

    name = "ecs_nav JPS + landmarks"

    def __init__(self, blocked, graph):
        self.graph = graph
        assert is_uniform_octile(graph)
        t = time.perf_counter()
        marks = prepare_landmarks(graph, LANDMARKS)
        self.setup = time.perf_counter() - t
        self.count = 0 if marks is None else marks.nodes.size
        warm_up(graph, find_path)

    def prepare(self, sx, sy, gx, gy):
        g = self.graph
        return g, g.node_at_cell(sx, sy), g.node_at_cell(gx, gy)

    query = staticmethod(find_path)

    def cost(self, result):
        return result.cost


class JPS(Landmarked):
    """Jump point search alone: ``find_path`` on a graph of its own without landmarks (see bench_map)."""

    name = "ecs_nav JPS"

    def __init__(self, blocked, graph):
        self.graph = graph
        assert is_uniform_octile(graph)
        warm_up(graph, find_path)


class AStar:
    name = "ecs_nav A*"

    def __init__(self, blocked, graph):
        self.graph = graph
        warm_up(graph, astar)

    def prepare(self, sx, sy, gx, gy):
        g = self.graph
        return g, g.node_at_cell(sx, sy), g.node_at_cell(gx, gy)

    query = staticmethod(astar)

    def cost(self, result):
        return result.cost


class PyAstar2d:
    """pyastar2d with diagonals (its only 8-connected mode): Chebyshev costs, corners cut."""

    name = "pyastar2d"

    def __init__(self, blocked, graph):
        import pyastar2d

        self.lib = pyastar2d.astar  # the compiled module astar_path calls
        weights = np.where(blocked, np.inf, 1.0).astype(np.float32)
        self.flat = np.ascontiguousarray(weights.reshape(-1))
        self.height, self.width = blocked.shape
        self.query = self.lib.astar

    def prepare(self, sx, sy, gx, gy):
        return self.flat, self.height, self.width, sy * self.width + sx, gy * self.width + gx, True, 0

    def cost(self, path):
        return octile_cost(path)


class Tcod:
    """libtcod's Pathfinder on a CustomGraph with its A* heuristic; each diagonal edge
    conditioned on both cardinal cells being open (no corner cutting); a reused Pathfinder."""

    name = "tcod.path"

    def __init__(self, blocked, graph):
        import tcod.path

        self.graph = tcod_octile_graph(blocked)
        self.pathfinder = tcod.path.Pathfinder(self.graph)

    def prepare(self, sx, sy, gx, gy):
        return self.pathfinder, (sy, sx), (gy, gx)

    @staticmethod
    def query(pathfinder, root, goal):
        pathfinder.clear()
        pathfinder.add_root(root)
        return pathfinder.path_to(goal)

    def cost(self, path):
        return octile_cost(path)


LIBRARIES = [Landmarked, JPS, AStar, PyAstar2d, Tcod]
LANDMARKS = None


def available() -> list[type]:
    out = []
    for cls in LIBRARIES:
        module = {PyAstar2d: "pyastar2d", Tcod: "tcod"}.get(cls)
        if module is not None:
            try:
                __import__(module)
            except ImportError:
                print(f"{module} is not installed (the bench extra): its column is left out", file=sys.stderr)
                continue
        out.append(cls)
    return out


def bench_map(path: Path, libraries: list[type], args) -> dict:
    blocked = read_movingai_map(path)
    graph = load_movingai(path)
    scenarios = pick(read_scenarios(Path(f"{path}.scen")), args.queries)
    libs = {cls: cls(blocked, load_movingai(path) if cls is JPS else graph) for cls in libraries}
    times = {cls: [] for cls in libraries}
    optimal = 0
    for s in scenarios:
        q = (int(s["start_x"]), int(s["start_y"]), int(s["goal_x"]), int(s["goal_y"]))
        expected = float(s["optimal_length"])
        for cls, lib in libs.items():
            best = math.inf
            call, arguments = lib.query, lib.prepare(*q)  # (only the call is timed)
            for _ in range(args.repeats):
                t = time.perf_counter()
                answer = call(*arguments)
                best = min(best, time.perf_counter() - t)
            cost = lib.cost(answer)
            if cls is PyAstar2d:
                valid = not cuts_a_corner(answer, blocked)
                optimal += valid and math.isclose(cost, expected, rel_tol=REL_TOL)
            elif not math.isclose(cost, expected, rel_tol=REL_TOL):
                raise AssertionError(f"{cls.name} on {path.name} {q}: cost {cost}, the file says {expected}")
            times[cls].append(best)
    return {"map": path.name, "shape": blocked.shape, "times": times, "queries": len(scenarios),
            "pyastar2d_optimal": optimal, "setup": libs[Landmarked].setup, "count": libs[Landmarked].count}


def fmt_ms(ms: float) -> str:
    return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and repeats (a smoke run)")
    parser.add_argument("--maps", help="the Moving AI maps folder (default ../shared/maps or $ECS_NAV_MAPS)")
    parser.add_argument("--queries", type=int, help="queries per map (default 48, --quick 8)")
    parser.add_argument("--repeats", type=int, help="runs per query, the best counts (default 5, --quick 1)")
    parser.add_argument("--landmarks", type=int, help="landmarks of the reference column (default: the library's)")
    args = parser.parse_args(argv)
    global LANDMARKS
    LANDMARKS = args.landmarks
    args.queries = args.queries or (8 if args.quick else 48)
    args.repeats = args.repeats or (1 if args.quick else 5)
    maps = maps_dir(args.maps)
    if maps is None:
        print("Moving AI maps not found (set ECS_NAV_MAPS or --maps, or put them in ../shared/maps): nothing to run")
        return 0
    libraries = available()
    peers = [cls for cls in libraries if cls is not Landmarked]
    pyastar = PyAstar2d in peers
    print(f"| map | size | queries | landmarks (setup ms) | {Landmarked.name} ms | "
          + " | ".join(f"{c.name} ms (ratio)" for c in peers)
          + (" | pyastar2d / JPS | pyastar2d optimal |" if pyastar else " |"))
    print("|---|---|---:|---:|---:|" + "---:|" * len(peers) + ("---:|---:|" if pyastar else ""))
    ratios = {cls: [] for cls in peers}
    plain_ratios = []
    total_optimal = total = 0
    for path in sorted(maps.glob("*.map"), key=lambda p: p.stat().st_size):
        res = bench_map(path, libraries, args)
        ours = np.array(res["times"][Landmarked])
        cells = [res["map"], f"{res['shape'][1]}x{res['shape'][0]}", str(res["queries"]),
                 f"{res['count']} ({fmt_ms(res['setup'] * 1e3)})", fmt_ms(np.median(ours) * 1e3)]
        for cls in peers:
            theirs = np.array(res["times"][cls])
            ratios[cls].extend(theirs / ours)
            digits = 2 if cls is PyAstar2d else 1
            cells.append(f"{fmt_ms(np.median(theirs) * 1e3)} ({np.median(theirs / ours):.{digits}f}x)")
        if pyastar:
            plain = np.array(res["times"][PyAstar2d]) / np.array(res["times"][JPS])
            plain_ratios.extend(plain)
            cells.append(f"{np.median(plain):.2f}x")
            cells.append(f"{res['pyastar2d_optimal']} / {res['queries']}")
            total_optimal += res["pyastar2d_optimal"]
        total += res["queries"]
        print("| " + " | ".join(cells) + " |", flush=True)
    cells = ["**all maps**", "", str(total), "", "median of per-query ratios:"]
    for cls in peers:
        r = np.array(ratios[cls])
        cells.append(f"**{np.median(r):.1f}x** (min {r.min():.1f}x)")
    if pyastar:
        r = np.array(plain_ratios)
        cells.append(f"**{np.median(r):.1f}x** (min {r.min():.1f}x)")
        cells.append(f"{total_optimal} / {total}")
    print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
