"""Graph build with two floors against the build of the highest surface only.

    python bench/floors_build.py [--size 512] [--repeat 5]

A two-storey map of ``size`` x ``size`` m scanned at 1 m (``size``² grid points): square tiles of
8 m, a fifth of them solid blocks 6 m high (walls through both storeys), and two fifths of the
others roofed by an upper floor, a slab from 3.0 to 3.5 m. The same map is built with
``floors = 1`` (the scan of the highest surface: the slabs' tops and the open ground) and with
``floors = 2`` (the rooms under the slabs too), in alternation, each timed after a warm-up build;
and, for scale, a one-storey map (the blocks alone) with ``floors = 1``. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.build import ScanParams, scan_heightfield

TILE = 8.0


def two_storey(size: float, seed: int = 1, storeys: bool = True) -> MapGeometry:
    """The map of the module docstring (``storeys`` False: the blocks alone)."""
    n = int(size // TILE)
    rng = np.random.default_rng(seed)
    kind = rng.random((n, n))
    half = size / 2.0
    boxes = []
    for r in range(n):
        for c in range(n):
            centre = (-half + (c + 0.5) * TILE, -half + (r + 0.5) * TILE)
            if kind[r, c] < 0.2:
                boxes.append(Box(centre, (TILE, TILE), 6.0))
            elif storeys and kind[r, c] < 0.2 + 0.8 * 0.4:
                boxes.append(Box(centre, (TILE, TILE), 0.5, base=3.0))
    return MapGeometry((-half, -half, half, half), boxes=boxes)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=512.0, help="map side, m (default 512)")
    ap.add_argument("--repeat", type=int, default=5, help="timed builds of each (default 5)")
    args = ap.parse_args()
    half = args.size / 2.0
    geometry, flat = two_storey(args.size), two_storey(args.size, storeys=False)
    one = ScanParams(scan_range=(half, 10.0, half), spacing=1.0, clearance=0.5)
    two = ScanParams(scan_range=(half, 10.0, half), spacing=1.0, clearance=0.5, floors=2)
    graphs = {k: scan_heightfield(g, p) for k, (g, p) in
              {"one": (geometry, one), "two": (geometry, two), "flat": (flat, one)}.items()}  # warm-up
    times = {"one": [], "two": [], "flat": []}
    for _ in range(args.repeat):  # in alternation, so a change of load falls on all three
        times["one"] += timed(lambda: scan_heightfield(geometry, one), 1)
        times["two"] += timed(lambda: scan_heightfield(geometry, two), 1)
        times["flat"] += timed(lambda: scan_heightfield(flat, one), 1)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}; {len(geometry.shapes):,} shapes")
    print("| build | node slots | walkable | edges | median ms | / floors = 1 |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = [("one-storey map, floors = 1", "flat"), ("two-storey map, floors = 1", "one"),
            ("two-storey map, floors = 2", "two")]
    for label, key in rows:
        g = graphs[key]
        print(f"| {label} | {g.node_count:,} | {int(g.walkable.sum()):,} | {g.edge_count:,} | {med[key]:.0f} | "
              f"{med[key] / med['one']:.2f} |")


if __name__ == "__main__":
    main()
