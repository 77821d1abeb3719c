"""Neighbour queries for agents: a uniform grid over the ground plane, rebuilt every tick.

One mechanism serves three jobs:

* agent neighbours (separation, alignment, cohesion): ``build_grid`` over agent positions, then
  ``neighbours_within`` (``ecs_nav.motion.neighbours``) for every agent, CSR output;
* agent-agent non-penetration: ``bin_into_grid`` under ``ecs_nav.motion.relax``'s grids of
  agents by size and its DetourCrowd relaxation passes;
* broadphase over static shapes (circle obstacles, wall segments): ``build_grid`` with a box per
  item (``lo``/``hi`` corners); an item is listed in every cell its box touches.

The grid is a counting sort of items into square cells: the items of cell ``c`` are
``cell_items[cell_start[c]:cell_start[c + 1]]``, in ascending item order (the sort is stable),
so every query result is a function of the positions alone. Building costs O(k + cells); the
number of cells is capped (``MAX_CELLS_PER_ITEM`` per item) by enlarging the cells, which only
changes speed, never results: queries visit every cell their box overlaps.

Agents on different layers (``Collider.layer``) never meet: the passes that pair agents -- the
steering's neighbour sums, the physics' relaxation, a recording's nearest-neighbour tally -- run
once per layer over that layer's agents alone (``layer_runs`` in kernels, ``layer_members`` in
Python), in the order a world holding only them would visit them (group arrival, whose test
compares a goal key anyway, compares the layer beside it: ``arrival.settled_against_arrived``).

Shapes: points/positions are (k, 2) float64 in the ground plane; radii (k,) or a scalar.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_nav.compile.aot import kernel

MAX_CELLS_PER_ITEM = 4
"""The grid never has more than ``max(64, MAX_CELLS_PER_ITEM * items)`` cells."""

SMALL_LAYER = 16
"""A layer of at most this many agents is first tested pair by pair: when no two of them are
close enough to meet, its pass (a grid, sums, relaxation) is skipped, the zeros or unchanged
positions it would give. Many small worlds stepped as layers pay little for those that touch
nothing (``bench/small_worlds.py --layers``)."""

@dataclass(frozen=True)
class UniformGrid:
    """Items binned into square cells (CSR).

    Attributes:
        origin: (2,) float64, the lower-left corner of cell (0, 0).
        cell_size: side of a cell (> 0).
        cols, rows: grid size; cell id = ``row * cols + col``. Coordinates outside the grid
            clamp to its border cells.
        cell_start: (cols * rows + 1,) int64 offsets into ``cell_items``.
        cell_items: (total,) int64 item rows, ascending within a cell. For points ``total == k``.
    """

    origin: np.ndarray
    cell_size: float
    cols: int
    rows: int
    cell_start: np.ndarray
    cell_items: np.ndarray

    def kernel_args(self) -> tuple:
        """The flat arrays and scalars the compiled kernels take, in their order."""
        return (self.origin[0], self.origin[1], 1.0 / self.cell_size, self.cols, self.rows,
                self.cell_start, self.cell_items)


def as_points(points, name: str = "points") -> np.ndarray:
    """``points`` as a contiguous (k, 2) float64 array; raises ValueError on NaN or infinity."""
    p = np.ascontiguousarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"{name} must have shape (k, 2), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return p


def per_item(value, k: int, name: str) -> np.ndarray:
    """A scalar or (k,) value as a contiguous (k,) float64 column of finite values >= 0."""
    v = np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=np.float64), (k,)))
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"{name} must be finite and >= 0")
    return v


@kernel
def _clamp_cell(v, n):
    """A float cell coordinate as a cell index in [0, n - 1] (NaN goes to 0): clamped as a float
    first, so no value, however large, reaches the integer conversion."""
    if not v >= 0.0:
        return 0
    if v >= n - 1.0:
        return n - 1
    return int(v)


@kernel
def cell_range(lo, hi, origin, inv_cell, n):
    """Clamped cell indices [c0, c1] covering the interval [lo, hi] on one axis."""
    return _clamp_cell(np.floor((lo - origin) * inv_cell), n), _clamp_cell(np.floor((hi - origin) * inv_cell), n)


@kernel
def _bin_boxes(lo, hi, ox, oy, inv_cell, cols, rows):
    """Counting sort of boxes into every cell they touch: (cell_start, cell_items)."""
    k = lo.shape[0]
    counts = np.zeros(cols * rows + 1, np.int64)
    for i in range(k):
        cx0, cx1 = cell_range(lo[i, 0], hi[i, 0], ox, inv_cell, cols)
        cy0, cy1 = cell_range(lo[i, 1], hi[i, 1], oy, inv_cell, rows)
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                counts[cy * cols + cx + 1] += 1
    for c in range(1, counts.shape[0]):  # their running sum, in place: the cells' starts
        counts[c] += counts[c - 1]
    cell_start = counts
    fill = cell_start[:-1].copy()
    cell_items = np.empty(cell_start[-1], np.int64)
    for i in range(k):
        cx0, cx1 = cell_range(lo[i, 0], hi[i, 0], ox, inv_cell, cols)
        cy0, cy1 = cell_range(lo[i, 1], hi[i, 1], oy, inv_cell, rows)
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * cols + cx
                cell_items[fill[c]] = i
                fill[c] += 1
    return cell_start, cell_items


@kernel
def _bounds(lo, hi):
    """(min x, min y of lo, max x, max y of hi); zeros for no items. Scalars, not arrays: a
    small world's neighbour pass pays for every array it makes (numpy's axis=0 min is slower
    still)."""
    if lo.shape[0] == 0:
        return 0.0, 0.0, 0.0, 0.0
    x0, y0, x1, y1 = lo[0, 0], lo[0, 1], hi[0, 0], hi[0, 1]
    for i in range(lo.shape[0]):
        x0, y0 = min(x0, lo[i, 0]), min(y0, lo[i, 1])
        x1, y1 = max(x1, hi[i, 0]), max(y1, hi[i, 1])
    return x0, y0, x1, y1


@kernel
def single_layer(layer):
    """Whether every item of ``layer`` (k,) is on one layer (the usual world; true for none)."""
    for i in range(1, layer.shape[0]):
        if layer[i] != layer[0]:
            return False
    return True


@kernel
def layer_runs(layer):
    """The items of ``layer`` (k,) grouped by layer: (order, starts). ``order`` lists the
    indices sorted by layer, each layer's in ascending index order (a stable sort: a layer's
    items keep the order they have in a world of their own); run r is ``order[starts[r]:
    starts[r + 1]]``."""
    k = layer.shape[0]
    order = np.argsort(layer, kind="mergesort")
    starts = np.empty(k + 1, np.int64)
    runs = 0
    for p in range(k):
        if p == 0 or layer[order[p]] != layer[order[p - 1]]:
            starts[runs] = p
            runs += 1
    starts[runs] = k
    return order, starts[:runs + 1]


def layer_members(layer: np.ndarray) -> list:
    """``layer_runs`` as index arrays, one a layer in ascending layer order (each ascending);
    ``[slice(None)]`` when every item is on one layer (index with it to keep views)."""
    layer = np.ascontiguousarray(layer, dtype=np.int64)
    if single_layer(layer):
        return [slice(None)]
    order, starts = layer_runs(layer)
    return [order[a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]


@kernel
def bin_into_grid(lo, hi, cell_size):
    """Bin boxes (lo, hi) into cells of at least ``cell_size``, doubled until the cell cap
    holds: (origin x, origin y, cell size, cols, rows, cell_start, cell_items). ``build_grid``'s
    compiled core, for other kernels to call: it trusts its input, finite (k, 2) corners with
    hi >= lo and a finite cell_size > 0 (``build_grid`` checks them)."""
    ox, oy, top_x, top_y = _bounds(lo, hi)
    cap = max(64, MAX_CELLS_PER_ITEM * lo.shape[0])
    # counted in floats, halved so that no span of finite points overflows: items far apart
    # (1e10 m, 1e300 m) give large cells, never a negative or overflowing cell count
    span_x = top_x * 0.5 - ox * 0.5
    span_y = top_y * 0.5 - oy * 0.5
    while True:
        cols_f = np.floor(span_x / (cell_size * 0.5)) + 1.0
        rows_f = np.floor(span_y / (cell_size * 0.5)) + 1.0
        if cols_f * rows_f <= cap:
            break
        cell_size *= 2.0
    cols = int(cols_f)
    rows = int(rows_f)
    cell_start, cell_items = _bin_boxes(lo, hi, ox, oy, 1.0 / cell_size, cols, rows)
    return ox, oy, cell_size, cols, rows, cell_start, cell_items


@kernel
def nearest_distances(points, out):
    """``out`` (n,) receives the centre distance from each of ``points`` ((n, 2), finite, n >= 2)
    to its nearest other point. A grid of about two points a cell, searched ring by ring round
    each point's cell until the next ring lies further than the nearest point found: every
    point outside rings 0..r of its cell is more than ``r`` cells away. O(n) for points spread
    over their bounding box."""
    n = points.shape[0]
    ox, oy, top_x, top_y = _bounds(points, points)
    cell = np.sqrt(2.0 * max((top_x - ox) * (top_y - oy), 1e-300) / n)
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(points, points, max(cell, 1e-150))
    inv = 1.0 / cell
    widest = max(cols, rows)
    for i in range(n):
        px, py = points[i, 0], points[i, 1]
        cx = _clamp_cell(np.floor((px - ox) * inv), cols)
        cy = _clamp_cell(np.floor((py - oy) * inv), rows)
        best = np.inf
        r = 0
        while True:
            for yy in range(max(cy - r, 0), min(cy + r, rows - 1) + 1):
                edge_row = yy == cy - r or yy == cy + r
                xx = max(cx - r, 0)
                while xx <= min(cx + r, cols - 1):
                    c = yy * cols + xx
                    for q in range(cell_start[c], cell_start[c + 1]):
                        j = cell_items[q]
                        if j != i:
                            dx, dy = points[j, 0] - px, points[j, 1] - py
                            d2 = dx * dx + dy * dy
                            if d2 < best:
                                best = d2
                    if edge_row or xx >= cx + r:
                        xx += 1
                    else:
                        xx = cx + r  # a middle row of the ring: its two end cells only
            reach = r * cell
            if best <= reach * reach or r > widest:
                break
            r += 1
        out[i] = np.sqrt(best)


def build_grid(lo, cell_size: float, hi=None) -> UniformGrid:
    """Bin items into a uniform grid in O(items + cells).

    Args:
        lo: (k, 2) points, or the lower corners of item boxes.
        cell_size: wanted side of a cell (> 0); enlarged when the cell cap would be exceeded.
        hi: (k, 2) upper corners of item boxes; None for points.
    """
    lo = as_points(lo, "lo")
    hi = lo if hi is None else as_points(hi, "hi")
    if hi.shape != lo.shape or np.any(hi < lo):
        raise ValueError("hi must have the shape of lo and hi >= lo")
    cell_size = float(cell_size)
    if not (np.isfinite(cell_size) and cell_size > 0):
        raise ValueError(f"cell_size must be finite and > 0, got {cell_size}")
    ox, oy, cell_size, cols, rows, cell_start, cell_items = bin_into_grid(lo, hi, cell_size)
    return UniformGrid(np.array([ox, oy]), cell_size, cols, rows, cell_start, cell_items)


MOVED_TO_NEIGHBOURS = ("neighbours_within", "neighbour_lists", "brute_force_neighbours")
"""The neighbour queries that ``ecs_nav.motion.neighbours`` holds now; this module (and the
previous release's ``ecs_nav.spatial``) still answers their names."""


def __getattr__(name: str):
    if name in MOVED_TO_NEIGHBOURS:
        from ecs_nav.motion import neighbours

        return getattr(neighbours, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
