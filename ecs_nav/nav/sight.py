"""Line of sight over a nav graph's node slots: can a walker go straight from here to there?

The rule is the graph's own: the straight segment is walked cell by cell over the grid (a
supercover walk: every cell the segment touches), and every step from one cell to the next
must be an edge of the graph *in the walking direction*, so walkability, ``max_climb``,
clearance and one-way drops are exactly what the graph says. Where the segment passes exactly
through a cell corner the step is diagonal: it needs the diagonal edge and both cells beside
it walkable (no corner cutting, as the graph's own diagonals).

Between two node centres (``sees_node``) the walk is exact integer arithmetic: after i column
and j row crossings of a segment (nx, ny) slots long, the next boundary crossed is a column when
``(2 i + 1) |ny| < (2 j + 1) |nx|``, a row when greater, the corner when equal. A walk toward
(sx, sy), the signs of (nx, ny), takes only three kinds of step: sx along a row, sy along a
column, and the corner step (sy, sx). So a shallow walk (|nx| >= |ny|) visits on each row j a
run of cells, columns s_j to e_j from its start: a horizontal step from each but the last, then
(j < |ny|) one vertical step from e_j, or a corner step where the decision is 0 there. e_j grows
by ``|nx| // |ny|`` or one more from row to row (the decision carried from row to row: at most
two divisions a walk). A row's horizontal steps are one test of a range of bits, "no slot in
the run but its last lacks the step sx", on a row-major bitset of the slots lacking that step,
and its end step one bit; a steep walk is the same by columns (column-major bitsets of the
slots lacking a vertical step). A walk costs min(|nx|, |ny|) + 1 range tests (one 64-bit word
each for runs within a word) and as many single bits, instead of one test per cell. Near the
diagonal (|ny| < |nx| < 2 |ny|, or steep alike) each row's run is one or two cells, so the walk
goes by diagonal lines instead: every vertical or corner step follows a horizontal one, so it is
|ny| diagonal units (a horizontal step and the vertical one after it, or a corner step) on
|nx| - |ny| diagonal lines joined by single horizontal steps: one range of diagonal-major bits
per line (``_pairs_clear``). An exact diagonal (|nx| = |ny|: corner steps only) is one range.

The kernels read a ``SightGrid`` cached on the graph until its ``cache_key`` changes: the
graph's ``step_mask`` (bit ``(d_row + 1) * 3 + (d_col + 1)`` for the edge to the slot ``d_row``
rows and ``d_col`` columns away) and ``walkable``, read by the float walk, and ``lacks``, the
bitsets of the slots lacking each step (``_lacking_steps``; a corner step counts as lacking
unless both cells beside it are walkable), all that ``sees_node`` reads. Toward an arbitrary
point (a goal point) ``sees_point`` walks cell by cell in floats, reading the step mask.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.graph import NavGraph

SHORT_WALK = 16
_CORNER_EPS = 1e-9  # a float walk this close to a cell corner passes through it


class SightGrid(NamedTuple):
    """What the sight kernels read of a graph (see the module doc)."""

    mask: np.ndarray  # (n,) uint16 step bits
    walkable: np.ndarray  # (n,) bool
    lacks: np.ndarray  # int64 words (bit t & 63 of word t >> 6): the step bitsets of _lacking_steps
    rows: int
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


def _lacking_steps(mask: np.ndarray, walkable: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """SightGrid.lacks: bitsets of the slots lacking a step, one after another (part k from
    bit k * n), packed into int64 words (bit t & 63 of word t >> 6): the steps to column + 1 and
    column - 1 by rows (bit ``row * cols + col``: parts 0, 1), to row + 1 and row - 1 by columns
    (bit ``col * rows + row``: 2, 3) and by rows (4, 5), and the corner steps (row - 1, col - 1),
    (row - 1, col + 1), (row + 1, col - 1), (row + 1, col + 1) with both cells beside them
    walkable, by rows (6-9), and the same four by diagonals, each from bit ``10 n + k * (rows +
    cols - 1) * min(rows, cols)`` (k = 0-3), at ``_diagonal_bit`` (by line, then by row along
    the line: an exact diagonal's steps are one range); then, by diagonals too (k = 4-11), the
    slots lacking a pair, the step to column + d_col followed by the step to row + d_row from
    the slot it reaches (k = 4-7, for (d_row, d_col) in the corner steps' order), and the same
    with rows first (k = 8-11). 22 parts of at most n bits or 2 n: at most 34 n bits."""
    diagonals = (rows + cols - 1) * min(rows, cols)
    words = np.zeros(-(-(10 * rows * cols + 12 * diagonals) // 64), dtype=np.int64)
    _fill_lacks(mask, walkable, rows, cols, words)
    return words


@kernel
def _put_bit(words, t, lacking):
    words[t >> 6] |= np.int64(lacking) << (t & 63)


@kernel
def _diagonal_bit(col, row, same, rows, cols):
    """Where slot (col, row) sits in a diagonal-major part: its line (``col - row + rows - 1``
    when the quadrant's two signs are the ``same``, else ``col + row``) times min(rows, cols),
    plus its row less the line's first row. A line holds at most min(rows, cols) slots, so a
    part is (rows + cols - 1) * min(rows, cols) <= 2 n bits, and a slot's neighbour along the
    line (row + 1) is the next bit."""
    if same:
        line = col - row + rows - 1
        first = max(0, rows - 1 - line)
    else:
        line = col + row
        first = max(0, line - cols + 1)
    return line * min(rows, cols) + row - first


@kernel
def _fill_lacks(mask, walkable, rows, cols, words):
    """Set the bits of ``_lacking_steps`` in ``words`` (zeros; bits no walk reads stay 0)."""
    n = rows * cols
    diagonals = (rows + cols - 1) * min(rows, cols)
    for r in range(rows):
        for c in range(cols):
            u = r * cols + c
            bits = np.int64(mask[u])
            for part, bit in ((0, 5), (1, 3), (4, 7), (5, 1)):
                _put_bit(words, part * n + u, 1 - ((bits >> bit) & 1))
            _put_bit(words, 2 * n + c * rows + r, 1 - ((bits >> 7) & 1))
            _put_bit(words, 3 * n + c * rows + r, 1 - ((bits >> 1) & 1))
            for quadrant in range(4):
                d_row, d_col = (quadrant >> 1) * 2 - 1, (quadrant & 1) * 2 - 1
                diagonal = 10 * n + _diagonal_bit(c, r, d_row == d_col, rows, cols)
                corner = pair_row = pair_col = 0
                if (bits >> ((d_row + 1) * 3 + d_col + 1)) & 1 == 1:  # the slots beside it are in the grid
                    corner = walkable[u + d_col] & walkable[u + d_row * cols]
                if (bits >> (4 + d_col)) & 1 == 1:  # a pair: along the row, then along the column
                    pair_row = (mask[u + d_col] >> ((d_row + 1) * 3 + 1)) & 1
                if (bits >> ((d_row + 1) * 3 + 1)) & 1 == 1:  # along the column first
                    pair_col = (mask[u + d_row * cols] >> (4 + d_col)) & 1
                _put_bit(words, (6 + quadrant) * n + u, 1 - corner)
                _put_bit(words, diagonal + quadrant * diagonals, 1 - corner)
                _put_bit(words, diagonal + (4 + quadrant) * diagonals, 1 - pair_row)
                _put_bit(words, diagonal + (8 + quadrant) * diagonals, 1 - pair_col)


def sight_grid(graph: NavGraph) -> SightGrid:
    """The graph's SightGrid (see the module doc), cached on the graph until
    ``graph.cache_key()`` changes; O(n) to build. On a graph weighted by area costs
    (``graph.node_multiplier`` set) a step between nodes of different multipliers counts as
    missing, so a line of sight stays within cells of one multiplier and is never dearer than
    the walk it replaces when the cells it replaces cost at least as much a metre. On a graph
    of several levels (floors) it is the highest level's grid, steps to other levels left out."""
    key = graph.cache_key()
    cached = graph.__dict__.get("_sight_grid")
    if cached is None or cached[0] != key:
        mask, _ = graph.step_mask()
        rows, cols = int(graph.grid.rows), int(graph.grid.cols)
        slots, walkable = rows * cols, graph.walkable
        if graph.grid.levels > 1:  # the highest level's grid
            mask, walkable = mask[:slots], walkable[:slots]
        if graph.node_multiplier is not None:
            mask = same_multiplier_steps(mask, graph.node_multiplier[:slots], cols)
        cached = (key, SightGrid(mask, walkable, _lacking_steps(mask, walkable, rows, cols), rows, cols))
        graph.__dict__["_sight_grid"] = cached
    return cached[1]


def same_multiplier_steps(mask: np.ndarray, multiplier: np.ndarray, cols: int) -> np.ndarray:
    """A copy of the step ``mask`` ((n,) uint16, ``NavGraph.step_mask``) keeping only the steps
    between slots of equal ``multiplier`` ((n,) float64, a node's area cost multiplier); a grid
    ``cols`` wide."""
    out = mask.copy()
    n = mask.shape[0]
    m = np.asarray(multiplier, np.float64)
    u = np.arange(n)
    for d_row in (-1, 0, 1):
        for d_col in (-1, 0, 1):
            bit = (d_row + 1) * 3 + d_col + 1
            has = ((mask >> bit) & 1).astype(bool)
            v = np.clip(u + d_row * cols + d_col, 0, n - 1)
            cross = has & (m[v] != m)
            out[cross] &= np.uint16(~(1 << bit) & 0xFFFF)
    return out


@kernel
def _can_step(mask, u, d_row, d_col):
    return (mask[u] >> ((d_row + 1) * 3 + d_col + 1)) & 1 == 1


@kernel
def _none_set(bits, lo, hi):
    """No bit of ``bits`` (int64 words) set from bit ``lo`` to bit ``hi`` (lo <= hi)."""
    first, last = lo >> 6, hi >> 6
    head = bits[first] >> (lo & 63)  # int64 words: the sign bits shifted in are shifted out below
    if first == last:
        return head << (63 - (hi - lo)) == 0
    if head != 0:
        return False
    for w in range(first + 1, last):
        if bits[w] != 0:
            return False
    return bits[last] << (63 - (hi & 63)) == 0


@kernel
def _lacks(bits, t):
    return (bits[t >> 6] >> (t & 63)) & 1 == 1


@kernel
def _runs_clear(bits, off, stride, u, p0, q0, sp, sq, n, m, du_main, du_minor, minor_off, corner_off):
    """The walk of ``sees_node`` in its own axes: n crossings of the main axis (slot
    coordinate p0, direction sp, ``du_main`` in slot ids) and m of the minor one (q0, sq,
    ``du_minor``) from slot ``u``. ``bits``: SightGrid.lacks; the main-axis steps from part
    ``off`` (bit ``off + q * stride + p`` for main coordinate p on minor line q), the minor and
    corner steps from the parts at ``minor_off`` and ``corner_off`` (slot order). ``sees_node``
    sends it n >= 2 m or m = 0 (nearer the diagonal goes to ``_pairs_clear``), but the walk
    holds for any n >= m."""
    s = 0  # main-axis crossings before the current minor line's run
    if m > 0:
        step = n // m  # each line's run ends step or step + 1 crossings after the last one's
        e = (n + m - 1) // (2 * m)  # crossings before the first minor crossing
        spare = n - step * m
        d = (2 * e + 1) * m - n  # the walk's decision there, in [0, 2m)
        base = off + q0 * stride + p0
        v = u + e * du_main
        for _ in range(m):
            if e > s:
                if sp > 0:
                    if not _none_set(bits, base + s, base + e - 1):
                        return False
                elif not _none_set(bits, base - e + 1, base - s):
                    return False
            if d == 0:  # through the corner
                if _lacks(bits, corner_off + v):
                    return False
                s = e + 1
            else:
                if _lacks(bits, minor_off + v):
                    return False
                s = e
            d -= 2 * spare
            carry = d < 0
            e += step + carry
            d += 2 * m * carry
            v += (step + carry) * du_main + du_minor
            base += sq * stride
    if n > s:
        base = off + (q0 + sq * m) * stride + p0
        if sp > 0:
            return _none_set(bits, base + s, base + n - 1)
        return _none_set(bits, base - n + 1, base - s)
    return True


@kernel
def _pairs_clear(bits, u, c, r, sx, sy, steep, n, m, rows, cols, du_main, du_minor, main_off, corner_off, pair_off):
    """The walk of ``sees_node`` for m < n < 2 m (n main-axis crossings, m minor ones; ``steep``:
    the main axis is the rows'), by diagonal lines. Every minor or corner step is preceded by a
    main step, so the walk is m diagonal units (a main step then a minor one, "a pair", or a
    corner step) and n - m single main steps. With k = n - m,
    diagonal unit j lies on diagonal line x (x single main steps before it) from the first j with
    ``(2 j + 1) k >= 2 x m`` (J_x; a corner step when equal) to J_(x+1) - 1, and each line is
    followed by one single main step: k range tests of ``pair_off``'s diagonal-major bits (the
    slots lacking the quadrant's pair) and k single bits, instead of m + 1 rows."""
    k = n - m
    step = m // k  # J grows by step or step + 1 from line to line
    spare = m - step * k
    j = 0
    d = k  # (2 J_x + 1) k - 2 x m, in [0, 2k)
    for x in range(k):
        j_next = j + step
        d_next = d - 2 * spare
        if d_next < 0:
            j_next += 1
            d_next += 2 * k
        lo = j
        if d == 0:  # the line starts with a corner step
            if _lacks(bits, corner_off + u + (x + j) * du_main + j * du_minor):
                return False
            lo += 1
        if j_next > lo:
            if steep:
                col, row = c + sx * lo, r + sy * (x + lo)
            else:
                col, row = c + sx * (x + lo), r + sy * lo
            t = pair_off + _diagonal_bit(col, row, sx == sy, rows, cols)
            if sy > 0:
                if not _none_set(bits, t, t + j_next - lo - 1):
                    return False
            elif not _none_set(bits, t - (j_next - lo - 1), t):
                return False
        if _lacks(bits, main_off + u + (x + j_next) * du_main + j_next * du_minor):  # the single main step
            return False
        j, d = j_next, d_next
    return True


@kernel
def sees_node(sight, a, b):
    """Line of sight from node slot ``a`` to node slot ``b`` (centre to centre), exactly: the
    walk of the module doc, one range of bits per row, column or diagonal line. ``sight``:
    SightGrid."""
    rows, cols = sight.rows, sight.cols
    n = rows * cols
    c, r = a % cols, a // cols
    nx, ny = b % cols - c, b // cols - r
    sx = 1 if nx > 0 else -1
    sy = 1 if ny > 0 else -1
    nx, ny = abs(nx), abs(ny)
    quadrant = (sy > 0) * 2 + (sx > 0)
    if nx == ny:  # corner steps only: one range of the quadrant's diagonal-major bits
        if nx == 0:
            return True
        base = 10 * n + quadrant * (rows + cols - 1) * min(rows, cols) + _diagonal_bit(c, r, sx == sy, rows, cols)
        if sy > 0:
            return _none_set(sight.lacks, base, base + ny - 1)
        return _none_set(sight.lacks, base - ny + 1, base)
    corner_off = (6 + quadrant) * n
    diagonals = (rows + cols - 1) * min(rows, cols)
    if nx > ny and nx < 2 * ny:
        return _pairs_clear(sight.lacks, a, c, r, sx, sy, False, nx, ny, rows, cols, sx, sy * cols,
                            (0 if sx > 0 else 1) * n, corner_off, 10 * n + (4 + quadrant) * diagonals)  # fmt: skip
    if ny > nx and ny < 2 * nx:
        return _pairs_clear(sight.lacks, a, c, r, sx, sy, True, ny, nx, rows, cols, sy * cols, sx,
                            (4 if sy > 0 else 5) * n, corner_off, 10 * n + (8 + quadrant) * diagonals)  # fmt: skip
    if nx >= ny:  # rows of horizontal steps, then a vertical one
        return _runs_clear(sight.lacks, (0 if sx > 0 else 1) * n, cols, a, c, r, sx, sy, nx, ny, sx, sy * cols,
                           (4 if sy > 0 else 5) * n, corner_off)  # fmt: skip
    return _runs_clear(sight.lacks, (2 if sy > 0 else 3) * n, rows, a, r, c, sy, sx, ny, nx, sy * cols, sx,
                       (0 if sx > 0 else 1) * n, corner_off)  # fmt: skip


@kernel
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
