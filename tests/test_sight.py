"""Line of sight between node slots: the bit-range walk of ``sees_node`` gives exactly the answer
of the cell-by-cell walk it replaced, on random directed step masks (one-way drops, climbs)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from ecs_nav.nav import GridIndex, NavGraph
from ecs_nav.nav.graph import EDGE_DROP
from ecs_nav.nav.sight import sees_node, sight_grid


@numba.njit
def cell_walk_sees(mask, walkable, cols, a, b):
    """The rule of sight.py's module doc walked one cell at a time (the walk sees_node made
    before its bit ranges, less the clearance jumps): the next boundary after i column and j row
    crossings by comparing (2i + 1) ny with (2j + 1) nx."""
    c, r = a % cols, a // cols
    nx, ny = b % cols - c, b // cols - r
    sx = 1 if nx > 0 else -1
    sy = 1 if ny > 0 else -1
    nx, ny = abs(nx), abs(ny)
    i = j = 0
    u = a
    while i < nx or j < ny:
        decision = (2 * i + 1) * ny - (2 * j + 1) * nx
        if decision == 0:
            bit = (sy + 1) * 3 + sx + 1
            if not ((mask[u] >> bit) & 1 == 1 and walkable[u + sx] and walkable[u + sy * cols]):
                return False
            u += sy * cols + sx
            i += 1
            j += 1
        elif decision < 0:
            if (mask[u] >> (4 + sx)) & 1 == 0:
                return False
            u += sx
            i += 1
        else:
            if (mask[u] >> ((sy + 1) * 3 + 1)) & 1 == 0:
                return False
            u += sy * cols
            j += 1
    return True


@numba.njit
def mismatches(sight, a_ids, b_ids):
    """Pairs (index into a_ids/b_ids) where sees_node and the cell walk disagree, and how many
    pairs each says are visible."""
    bad = []
    seen = 0
    for k in range(a_ids.shape[0]):
        got = sees_node(sight, a_ids[k], b_ids[k])
        seen += got
        if got != cell_walk_sees(sight.mask, sight.walkable, sight.cols, a_ids[k], b_ids[k]):
            bad.append(k)
    return bad, seen


def random_step_graph(rng, rows: int, cols: int, blocked: float, open_edge: float, climb: bool) -> NavGraph:
    """Random walkable slots and directed step edges among the eight neighbours. ``climb``: random
    elevations and a ``max_climb`` of 1 (a step up more than 1 is missing one way: a drop);
    otherwise each step edge kept with probability ``open_edge`` on its own."""
    walkable = rng.random(rows * cols) >= blocked
    elev = rng.integers(0, 3, rows * cols).astype(np.float64) if climb else np.zeros(rows * cols)
    r, c = np.divmod(np.arange(rows * cols), cols)
    src, dst, kinds = [], [], []
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr == dc == 0:
                continue
            rr, cc = r + dr, c + dc
            ok = (rr >= 0) & (rr < rows) & (cc >= 0) & (cc < cols) & walkable
            v = np.where(ok, rr * cols + cc, 0)
            ok &= walkable[v]
            if climb:
                ok &= elev[v] - elev <= 1.0
            else:
                ok &= rng.random(rows * cols) < open_edge
            src.append(np.flatnonzero(ok))
            dst.append(v[ok])
            kinds.append(np.where(elev[v[ok]] < elev[ok] - 1.0, EDGE_DROP, 0))
    src, dst = np.concatenate(src), np.concatenate(dst)
    positions = np.column_stack([c, r, elev]).astype(np.float64)
    return NavGraph.from_edges(positions, walkable, src, dst, np.ones(src.size), GridIndex((0.0, 0.0), 1.0, rows, cols),
                               kinds=np.concatenate(kinds), max_climb=1.0 if climb else float("inf"))  # fmt: skip


def special_pairs(rng, rows: int, cols: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs the walk treats apart: axis-aligned, exact diagonals, offsets with a common factor
    (the segment through cell corners), ends on the map's edges, a == b, in all eight octants."""
    ca, ra = rng.integers(0, cols, count), rng.integers(0, rows, count)
    kind = rng.integers(0, 5, count)
    unit = rng.integers(-4, 5, (count, 2))
    scale = rng.integers(1, max(2, max(rows, cols) // 2), count)
    cb = np.where(kind == 0, rng.integers(0, cols, count), ca + unit[:, 0] * scale)  # 0: same row
    rb = np.where(kind == 0, ra, ra + unit[:, 1] * scale)
    cb = np.where(kind == 1, ca, cb)  # 1: same column
    rb = np.where(kind == 1, rng.integers(0, rows, count), rb)
    d = rng.integers(-min(rows, cols), min(rows, cols), count)  # 2: exact diagonals
    cb = np.where(kind == 2, ca + d, cb)
    rb = np.where(kind == 2, ra + d * rng.choice([-1, 1], count), rb)
    edge = kind == 3  # 3: both ends on the map's border
    ca = np.where(edge, rng.choice([0, cols - 1], count), ca)
    rb = np.where(edge, rng.choice([0, rows - 1], count), rb)
    cb = np.where(kind == 4, ca, cb)  # 4: a == b
    rb = np.where(kind == 4, ra, rb)
    inside = (cb >= 0) & (cb < cols) & (rb >= 0) & (rb < rows)
    return (ra * cols + ca)[inside], (rb * cols + cb)[inside]


CASES = [  # rows, cols, blocked, open_edge, climb
    (24, 24, 0.25, 0.9, False),
    (40, 31, 0.02, 0.995, False),
    (150, 140, 0.0005, 0.9995, False),  # long clear runs across several 64-bit words
    (130, 70, 0.01, 1.0, True),
    (1, 200, 0.0, 0.99, False),
    (200, 1, 0.0, 0.99, False),
    (67, 129, 0.0, 1.0, False),  # everything open: every pair visible
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", CASES)
def test_sees_node_equals_the_cell_by_cell_walk(case, seed):
    rows, cols, blocked, open_edge, climb = case
    rng = np.random.default_rng(seed)
    g = random_step_graph(rng, rows, cols, blocked, open_edge, climb)
    sight = sight_grid(g)
    n = rows * cols
    a = rng.integers(0, n, 40_000)
    b = rng.integers(0, n, 40_000)
    sa, sb = special_pairs(rng, rows, cols, 40_000)
    a, b = np.concatenate([a, sa]), np.concatenate([b, sb])
    near = rng.integers(-6, 7, (a.size, 2))  # short walks too
    nc, nr = np.clip(a % cols + near[:, 0], 0, cols - 1), np.clip(a // cols + near[:, 1], 0, rows - 1)
    a, b = np.concatenate([a, a]), np.concatenate([b, nr * cols + nc])
    bad, seen = mismatches(sight, a, b)
    assert not bad, [(int(a[k]), int(b[k])) for k in bad[:5]]
    assert 0 < seen < a.size or (blocked == 0.0 and open_edge == 1.0 and seen == a.size)


def test_sees_node_on_a_drop_goes_down_but_not_up():
    positions = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, -1]])
    g = NavGraph.from_edges(positions, np.ones(3, bool), [0, 1, 1], [1, 0, 2], [1.0, 1.0, 1.0],
                            GridIndex((0.0, 0.0), 1.0, 1, 3), kinds=[0, 0, EDGE_DROP])  # fmt: skip
    sight = sight_grid(g)
    assert sees_node(sight, 0, 2) and sees_node(sight, 1, 0) and sees_node(sight, 2, 2)
    assert not sees_node(sight, 2, 0) and not sees_node(sight, 2, 1)
