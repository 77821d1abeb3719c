"""Line of sight over a nav graph's node slots: can a walker go straight from here to there?

The rule is the graph's own: the straight segment is walked cell by cell over the grid (a
supercover walk: every cell the segment touches), and every step from one cell to the next
must be an edge of the graph *in the walking direction*, so walkability, ``max_climb``,
clearance and one-way drops are exactly what the graph says. Where the segment passes exactly
through a cell corner the step is diagonal: it needs the diagonal edge and both cells beside
it walkable (no corner cutting, as the graph's own diagonals).

The kernels read a ``SightGrid`` cached on the graph until its ``cache_key`` changes: the
graph's ``step_mask`` (bit ``(d_row + 1) * 3 + (d_col + 1)`` for the edge to the slot ``d_row``
rows and ``d_col`` columns away), so a step test is one bit, and
each node's *clearance*: k when every slot within Chebyshev distance k - 1 has all eight steps
(a chessboard distance transform of the slots that do not). Between two node centres the walk
is exact integer arithmetic and jumps through open ground: from a slot of clearance k >= 3 it
skips k - 2 crossings of its main axis at once, since every step it skips starts on a slot
with all eight steps. Toward an arbitrary point (a goal point) it walks cell by cell in floats.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ecs_nav.nav.graph import NavGraph

_CORNER_EPS = 1e-9  # a float walk this close to a cell corner passes through it


_ALL_STEPS = 0b111101111  # the eight step bits (bit 4, the slot itself, is never set)


class SightGrid(NamedTuple):
    """What the sight kernels read of a graph (see the module doc)."""

    mask: np.ndarray  # (n,) uint16 step bits
    clearance: np.ndarray  # (n,) int32 Chebyshev clearance in slots (0: not all eight steps)
    walkable: np.ndarray  # (n,) bool
    cols: int


class GridShape(NamedTuple):
    """The node grid as the kernels read it: slot (col, row) at origin + (col, row) * spacing."""

    origin_x: float
    origin_y: float
    spacing: float
    rows: int
    cols: int


def grid_shape(graph: NavGraph) -> GridShape:
    """The graph's grid as a GridShape (floats and ints, for the kernels)."""
    g = graph.grid
    return GridShape(float(g.origin[0]), float(g.origin[1]), float(g.spacing), int(g.rows), int(g.cols))


@numba.njit(cache=True)
def _fill_clearance(mask, rows, cols, clearance):
    """Chessboard distance transform (two passes) to the nearest slot without all eight steps;
    slots outside the grid count as such."""
    for r in range(rows):
        for c in range(cols):
            u = r * cols + c
            if mask[u] != _ALL_STEPS:
                clearance[u] = 0
                continue
            k = 1 << 30
            for dr, dc in ((-1, -1), (-1, 0), (-1, 1), (0, -1)):
                rr, cc = r + dr, c + dc
                k = min(k, clearance[rr * cols + cc] if 0 <= rr < rows and 0 <= cc < cols else 0)
            clearance[u] = k + 1
    for r in range(rows - 1, -1, -1):
        for c in range(cols - 1, -1, -1):
            u = r * cols + c
            k = clearance[u]
            for dr, dc in ((1, 1), (1, 0), (1, -1), (0, 1)):
                rr, cc = r + dr, c + dc
                k = min(k, (clearance[rr * cols + cc] if 0 <= rr < rows and 0 <= cc < cols else 0) + 1)
            clearance[u] = k


def sight_grid(graph: NavGraph) -> SightGrid:
    """The graph's SightGrid (see the module doc), cached on the graph until
    ``graph.cache_key()`` changes; O(m) to build."""
    key = graph.cache_key()
    cached = graph.__dict__.get("_sight_grid")
    if cached is None or cached[0] != key:
        mask, _ = graph.step_mask()
        clearance = np.empty(graph.node_count, dtype=np.int32)
        _fill_clearance(mask, graph.grid.rows, graph.grid.cols, clearance)
        cached = (key, SightGrid(mask, clearance, graph.walkable, int(graph.grid.cols)))
        graph.__dict__["_sight_grid"] = cached
    return cached[1]


@numba.njit(cache=True, inline="always")
def _can_step(mask, u, d_row, d_col):
    return (mask[u] >> ((d_row + 1) * 3 + d_col + 1)) & 1 == 1


@numba.njit(cache=True)
def sees_node(sight, a, b):
    """Line of sight from node slot ``a`` to node slot ``b`` (centre to centre), exactly: the
    next boundary the segment crosses is found by comparing ``(2 i + 1) * ny`` with
    ``(2 j + 1) * nx`` after i column and j row crossings. ``sight``: SightGrid."""
    mask, clearance, walkable, cols = sight.mask, sight.clearance, sight.walkable, sight.cols
    c, r = a % cols, a // cols
    nx, ny = b % cols - c, b // cols - r
    sx = 1 if nx > 0 else -1
    sy = 1 if ny > 0 else -1
    nx, ny = abs(nx), abs(ny)
    i = j = 0
    u = a
    while i < nx or j < ny:
        k = clearance[u]
        if k >= 3:  # open ground: skip k - 2 crossings of the main axis (each skipped step starts open)
            if nx >= ny:
                i = min(i + k - 2, nx)
                j = ((2 * i - 1) * ny + nx) // (2 * nx)  # row crossings up to the i-th column crossing
            else:
                j = min(j + k - 2, ny)
                i = ((2 * j - 1) * nx + ny) // (2 * ny)
            u = a + sy * j * cols + sx * i
            continue
        decision = (2 * i + 1) * ny - (2 * j + 1) * nx
        if decision == 0:  # through the corner
            if not (_can_step(mask, u, sy, sx) and walkable[u + sx] and walkable[u + sy * cols]):
                return False
            u += sy * cols + sx
            i += 1
            j += 1
        elif decision < 0:
            if not _can_step(mask, u, 0, sx):
                return False
            u += sx
            i += 1
        else:
            if not _can_step(mask, u, sy, 0):
                return False
            u += sy * cols
            j += 1
    return True


@numba.njit(cache=True)
def sees_point(sight, grid, ax, ay, bx, by):
    """Line of sight from world point a to world point b (floats; False when either point's
    cell is outside the grid or a's cell is not walkable). ``sight``: SightGrid; ``grid``:
    GridShape."""
    mask, walkable = sight.mask, sight.walkable
    rows, cols = grid.rows, grid.cols
    x0 = (ax - grid.origin_x) / grid.spacing + 0.5  # cell (c, r) covers [c, c + 1) x [r, r + 1) here
    y0 = (ay - grid.origin_y) / grid.spacing + 0.5
    x1 = (bx - grid.origin_x) / grid.spacing + 0.5
    y1 = (by - grid.origin_y) / grid.spacing + 0.5
    if not (abs(x0) < 4.0e9 and abs(y0) < 4.0e9 and abs(x1) < 4.0e9 and abs(y1) < 4.0e9):
        return False  # also NaN
    c, r = int(math.floor(x0)), int(math.floor(y0))
    ec, er = int(math.floor(x1)), int(math.floor(y1))
    if not (0 <= c < cols and 0 <= r < rows and 0 <= ec < cols and 0 <= er < rows and walkable[r * cols + c]):
        return False
    dx, dy = x1 - x0, y1 - y0
    sx = 1 if dx > 0 else -1
    sy = 1 if dy > 0 else -1
    t_dx = abs(1.0 / dx) if dx != 0 else np.inf
    t_dy = abs(1.0 / dy) if dy != 0 else np.inf
    t_x = ((c + 1 - x0) if dx > 0 else (x0 - c)) * t_dx if dx != 0 else np.inf
    t_y = ((r + 1 - y0) if dy > 0 else (y0 - r)) * t_dy if dy != 0 else np.inf
    u = r * cols + c
    for _ in range(abs(ec - c) + abs(er - r)):
        if c == ec and r == er:
            return True
        if abs(t_x - t_y) <= _CORNER_EPS:  # through a corner: a diagonal step
            if not (0 <= c + sx < cols and 0 <= r + sy < rows):
                return False
            if not (_can_step(mask, u, sy, sx) and walkable[u + sx] and walkable[u + sy * cols]):
                return False
            c += sx
            r += sy
            u += sy * cols + sx
            t_x += t_dx
            t_y += t_dy
        elif t_x < t_y:
            if not (0 <= c + sx < cols and _can_step(mask, u, 0, sx)):
                return False
            c += sx
            u += sx
            t_x += t_dx
        else:
            if not (0 <= r + sy < rows and _can_step(mask, u, sy, 0)):
                return False
            r += sy
            u += sy * cols
            t_y += t_dy
    return c == ec and r == er


def line_of_sight(graph: NavGraph, a, b) -> bool:
    """Whether a walker can go straight from world point ``a`` to world point ``b`` ((x, y)
    each) by the rule of the module doc. False when either point is outside the grid or a's
    cell is not walkable.

    Raises:
        ValueError: ``a`` or ``b`` is not a finite (x, y)."""
    p = np.asarray(a, dtype=np.float64).reshape(-1)
    q = np.asarray(b, dtype=np.float64).reshape(-1)
    if p.shape != (2,) or q.shape != (2,) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
        raise ValueError(f"a and b must be finite (x, y) points, got {a!r} and {b!r}")
    return bool(sees_point(sight_grid(graph), grid_shape(graph), p[0], p[1], q[0], q[1]))
