"""Jump point search's precomputed scans (JPS+, Harabor and Grastien, ICAPS 2014): from every cell
of a padded grid, how far a straight or diagonal scan runs before it stops.

The grid is padded: a ring of blocked cells round the map, cell ids ``row * width + col``, so no
scan leaves the array. Both tables are int32 (cells, 4): ``k > 0`` when the first jump point of the
scan lies k steps away, ``-k <= 0`` when the scan meets a wall (or a corner it may not cut) after k
open cells and no jump point. Built once per graph version (``ecs_nav.nav.jump``), O(cells).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel

STRAIGHT_STEPS = ((0, 1), (0, -1), (1, 0), (-1, 0))
"""(row step, col step) of the straight tables' columns: east, west, north (+width), south."""
DIAGONAL_STEPS = ((1, 1), (1, -1), (-1, 1), (-1, -1))
"""(row step, col step) of the diagonal tables' columns."""


@kernel
def straight_jumps(free, width):
    """Where a straight scan from each cell stops.

    Args:
        free: (h * width,) uint8 padded grid, nonzero where a cell is walkable.
        width: its row length (cells).

    Returns:
        (h * width, 4) int32, columns as ``STRAIGHT_STEPS``: ``k > 0`` when the first jump point
        (a cell with a forced neighbour: an open cell beside it whose counterpart one step back
        is blocked) lies k steps away, ``-k <= 0`` when the scan meets a wall after k open cells.
        Filled for the cells inside the border ring, 0 on it.
    """
    size = free.shape[0]
    rows = size // width
    jumps = np.zeros((size, 4), dtype=np.int32)
    for k in range(4):
        d = 1 if k == 0 else -1 if k == 1 else width if k == 2 else -width
        side = width if k < 2 else 1
        # visit each cell after the one it steps to (against the direction), rows in memory order
        for a in range(1, rows - 1):
            row = rows - 1 - a if k == 2 else a
            for b in range(1, width - 1):
                col = width - 1 - b if k == 0 else b
                n = row * width + col
                m = n + d
                if not free[m]:
                    jumps[n, k] = 0
                elif (free[m + side] and not free[n + side]) or (free[m - side] and not free[n - side]):
                    jumps[n, k] = 1
                else:
                    v = jumps[m, k]
                    jumps[n, k] = v + 1 if v > 0 else v - 1
    return jumps


@kernel
def diagonal_jumps(free, width, jumps):
    """Where a diagonal scan from each cell stops.

    A diagonal step needs the cell it enters and both cells beside it open (no corner cutting);
    the scan stops at the first cell from which a straight scan along either of its two parts
    finds a jump point (``jumps[., k] > 0``).

    Args:
        free: (h * width,) uint8 padded grid, as ``straight_jumps``.
        width: its row length (cells).
        jumps: ``straight_jumps(free, width)``.

    Returns:
        (h * width, 4) int32, columns as ``DIAGONAL_STEPS``: ``k > 0`` when that cell lies k
        steps away, ``-k <= 0`` when the scan can make k steps and finds none. 0 on blocked cells
        and the border ring.
    """
    size = free.shape[0]
    rows = size // width
    diag = np.zeros((size, 4), dtype=np.int32)
    for k in range(4):
        sr = 1 if k < 2 else -1
        sc = 1 if k % 2 == 0 else -1
        kh = 0 if sc > 0 else 1
        kv = 2 if sr > 0 else 3
        dh, dv = sc, sr * width
        for a in range(1, rows - 1):  # the rows the scan enters first
            row = rows - 1 - a if sr > 0 else a
            for col in range(1, width - 1):
                n = row * width + col
                if not free[n] or not (free[n + dh] and free[n + dv] and free[n + dh + dv]):
                    continue
                m = n + dh + dv
                if jumps[m, kh] > 0 or jumps[m, kv] > 0:
                    diag[n, k] = 1
                else:
                    v = diag[m, k]
                    diag[n, k] = v + 1 if v > 0 else v - 1
    return diag
