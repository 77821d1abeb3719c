"""Agent neighbour queries over the uniform grid of ``ecs_nav.motion.spatial``: every agent's
neighbours strictly within a radius, closest first, as CSR lists.

``neighbours_within`` answers it from Python (building the grid with cells of the largest radius
unless handed one), ``neighbour_lists`` is its compiled core for other kernels to call, and
``brute_force_neighbours`` the O(k^2) reference the tests compare them with. The answer is a
function of the positions alone: ties in distance go to the lower row.

Shapes: positions are (k, 2) float64 in the ground plane, m; radii (k,) or a scalar, m (>= 0).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.spatial import UniformGrid, as_points, build_grid, cell_range, per_item


@kernel
def _gather(qx, qy, r, sorted_pos, exclude, ox, oy, inv_cell, cols, rows, cell_start, cell_items,
            out_rows, out_d2):
    """Rows (not ``exclude``) strictly within r of (qx, qy), written to out_* unless out_rows is
    empty; returns how many. ``sorted_pos`` is ``pos[cell_items]``: the cells of one grid row
    are one contiguous span of it, read in order."""
    r2 = r * r
    cx0, cx1 = cell_range(qx - r, qx + r, ox, inv_cell, cols)
    cy0, cy1 = cell_range(qy - r, qy + r, oy, inv_cell, rows)
    write = out_rows.shape[0] > 0
    n = 0
    for cy in range(cy0, cy1 + 1):
        for s in range(cell_start[cy * cols + cx0], cell_start[cy * cols + cx1 + 1]):
            dx = sorted_pos[s, 0] - qx
            dy = sorted_pos[s, 1] - qy
            d2 = dx * dx + dy * dy
            if d2 < r2:
                j = cell_items[s]
                if j != exclude:
                    if write:
                        out_rows[n] = j
                        out_d2[n] = d2
                    n += 1
    return n


@kernel
def _take_first(rows, d2, order):
    """rows[:k], d2[:k] = rows[order], d2[order] for k = len(order), element by element (no
    array-to-slice assignment: see ``ecs_nav.compile.options``)."""
    picked_rows, picked_d2 = rows[order], d2[order]
    for t in range(order.shape[0]):
        rows[t] = picked_rows[t]
        d2[t] = picked_d2[t]


@kernel
def _sort_by_distance(rows, d2, n):
    """Sort the first n entries in place by (d2, row): insertion sort for short lists (the usual
    case), else two stable sorts."""
    if n > 64:
        by_row = np.argsort(rows[:n], kind="mergesort")
        _take_first(rows, d2, by_row)
        by_d2 = np.argsort(d2[:n], kind="mergesort")
        _take_first(rows, d2, by_d2)
        return
    for a in range(1, n):
        r = rows[a]
        d = d2[a]
        b = a - 1
        while b >= 0 and (d2[b] > d or (d2[b] == d and rows[b] > r)):
            rows[b + 1] = rows[b]
            d2[b + 1] = d2[b]
            b -= 1
        rows[b + 1] = r
        d2[b + 1] = d


@kernel
def _neighbours(query, radius, exclude_self, max_neighbours, pos, ox, oy, inv_cell, cols, rows,
                cell_start, cell_items):
    k = query.shape[0]
    sorted_pos = np.empty((cell_items.shape[0], 2))
    for s in range(cell_items.shape[0]):
        sorted_pos[s, 0] = pos[cell_items[s], 0]
        sorted_pos[s, 1] = pos[cell_items[s], 1]
    found = np.empty(k, np.int64)
    no_rows = np.empty(0, np.int64)
    no_d2 = np.empty(0, np.float64)
    for i in range(k):
        ex = i if exclude_self else -1
        found[i] = _gather(query[i, 0], query[i, 1], radius[i], sorted_pos, ex, ox, oy, inv_cell,
                           cols, rows, cell_start, cell_items, no_rows, no_d2)
    kept = np.minimum(found, max_neighbours) if max_neighbours >= 0 else found
    offsets = np.zeros(k + 1, np.int64)
    offsets[1:] = np.cumsum(kept)
    out = np.empty(offsets[-1], np.int64)
    longest = found.max() if k > 0 else 0
    cand = np.empty(longest, np.int64)
    d2 = np.empty(longest, np.float64)
    for i in range(k):
        if kept[i] == 0:
            continue
        ex = i if exclude_self else -1
        n = _gather(query[i, 0], query[i, 1], radius[i], sorted_pos, ex, ox, oy, inv_cell, cols,
                    rows, cell_start, cell_items, cand, d2)
        _sort_by_distance(cand, d2, n)
        for m in range(kept[i]):
            out[offsets[i] + m] = cand[m]
    return offsets, out


neighbour_lists = _neighbours
"""``neighbours_within``'s compiled core, for other kernels to call: (query (k, 2), radius (k,),
exclude_self, max_neighbours (-1: all), pos, *grid.kernel_args()) -> (offsets, rows) as
``neighbours_within`` returns them. It trusts its input (finite points, a grid built over
``pos``)."""


def neighbours_within(pos, radius, max_neighbours: int | None = None,
                      grid: UniformGrid | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every agent's neighbours closer than ``radius`` (strictly), excluding itself.

    Args:
        pos: (k, 2) agent positions.
        radius: query radius, scalar or (k,) per agent.
        max_neighbours: keep at most this many per agent (the closest); None keeps all.
        grid: a grid already built over ``pos`` this tick (``build_grid(pos, ...)``); built
            with cells of the largest radius when None.

    Returns:
        (offsets (k + 1,) int64, neighbour_rows (total,) int64): the neighbours of agent i are
        ``neighbour_rows[offsets[i]:offsets[i + 1]]``, closest first, ties by ascending row.
    """
    pos = as_points(pos, "pos")
    k = pos.shape[0]
    radius = per_item(radius, k, "radius")
    if grid is None:
        grid = build_grid(pos, max(float(radius.max(initial=0.0)), 1e-6))
    limit = -1 if max_neighbours is None else int(max_neighbours)
    if max_neighbours is not None and limit < 0:
        raise ValueError("max_neighbours must be >= 0")
    return _neighbours(pos, radius, True, limit, pos, *grid.kernel_args())


def brute_force_neighbours(pos, radius, max_neighbours: int | None = None):
    """O(k^2) reference for ``neighbours_within`` (tests and tiny inputs); same output."""
    pos = as_points(pos, "pos")
    k = pos.shape[0]
    radius = per_item(radius, k, "radius")
    offsets, rows = [0], []
    for i in range(k):
        d = pos - pos[i]
        d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]
        inside = np.flatnonzero((d2 < radius[i] * radius[i]) & (np.arange(k) != i))
        inside = inside[np.argsort(d2[inside], kind="stable")]
        if max_neighbours is not None:
            inside = inside[:max_neighbours]
        rows.extend(inside.tolist())
        offsets.append(len(rows))
    return np.asarray(offsets, np.int64), np.asarray(rows, np.int64)
