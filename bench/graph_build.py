"""Graph build timings: the seed's heightfield scan, regional rebuilds, and the geometry kernels.

    python bench/graph_build.py

Times are the median (and min) of repeated calls after a warm-up call, which loads the numba
kernels from their on-disk cache (compiled on the very first run on a machine).
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_build import chase_geometry  # noqa: E402

from ecs_nav.geometry.map import MapGeometry  # noqa: E402
from ecs_nav.geometry.shapes import Box  # noqa: E402
from ecs_nav.nav.build import ScanParams, rebuild_region, scan_heightfield  # noqa: E402
from ecs_nav.nav.smooth import smooth_path  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3, min(samples) * 1e3


def main() -> None:
    rows = []
    t0 = time.perf_counter()
    geometry = chase_geometry()
    params = ScanParams()
    graph = scan_heightfield(geometry, params)
    first = (time.perf_counter() - t0) * 1e3
    rows.append(("chase scan, first call (numba cache load or compile)", first, first))
    rows.append(("chase scan 80x80 m at 2 m (1,600 slots)", *timed(lambda: scan_heightfield(geometry, params), 200)))

    def rebuild():
        aabb = geometry.move(2, (12.0 + rng.uniform(-1, 1), -14.0 + rng.uniform(-1, 1)))
        return rebuild_region(graph, geometry, params, aabb)

    rng = np.random.default_rng(0)
    rows.append(("chase rebuild_region after moving a 4x4 box", *timed(rebuild, 200)))

    # a bigger heightfield: 256 x 256 m of random tile boxes scanned at 1 m (65,536 slots)
    tiles = np.random.default_rng(1).random((64, 64)) < 0.2
    big = MapGeometry.from_grid(tiles, cell_size=4.0, origin=(-128.0, -128.0), height=2.0)
    big.add(Box((0.0, 0.0), (30.0, 30.0), 0.4))
    big_params = ScanParams(scan_range=(128.0, 10.0, 128.0), spacing=1.0)
    scan_heightfield(big, big_params)
    rows.append((f"tile map 256x256 m at 1 m (65,536 slots, {len(big.boxes)} boxes)",
                 *timed(lambda: scan_heightfield(big, big_params), 10)))

    # geometry kernels used every tick by the motion systems
    k = 10_000
    pts = rng.uniform(-39, 39, (k, 2))
    elev = geometry.surface_height(pts, 0.0)
    ok = geometry.penetration(pts, 0.4, elev, 0.5) <= 0
    pts, elev = pts[ok], elev[ok]
    step = rng.normal(0, 1, pts.shape) * (5.0 / 60.0)
    geometry.resolve_circles(pts, pts + step, 0.4, elev, 0.5)
    rows.append((f"resolve_circles, {len(pts):,} agents, one tick at 5 m/s",
                 *timed(lambda: geometry.resolve_circles(pts, pts + step, 0.4, elev, 0.5), 20)))
    a = np.column_stack([pts, elev + 0.2])
    b = a + np.column_stack([rng.normal(0, 2, pts.shape), np.zeros(len(pts))])
    seg_time = timed(lambda: geometry.segment_blocked(a, b), 20)
    rows.append((f"segment_blocked, {len(pts):,} segments of ~2.5 m", *seg_time))

    from scipy.sparse.csgraph import dijkstra

    start, goal = graph.nearest_node((-30, -30), 0.0), graph.nearest_node((30, 30), 0.0)
    _, pred = dijkstra(graph.to_scipy(), indices=start, return_predecessors=True)
    nodes = [goal]
    while nodes[-1] != start:
        nodes.append(int(pred[nodes[-1]]))
    waypoints = graph.positions[nodes[::-1]]
    smooth_path(waypoints, geometry, radius=0.4)
    rows.append((f"smooth_path, chase path of {len(waypoints)} waypoints, radius 0.4",
                 *timed(lambda: smooth_path(waypoints, geometry, radius=0.4), 20)))

    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print("| what | median ms | min ms |")
    print("|---|---:|---:|")
    for name, med, best in rows:
        print(f"| {name} | {med:.2f} | {best:.2f} |")


if __name__ == "__main__":
    main()
