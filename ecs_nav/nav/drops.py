"""Drops off ledges: the one-way links the heightfield scan adds (``ecs_nav.nav.build``).

Seed 000 stores links both ways and leaves room for one-way ones, "dropping off a ledge that
can't be climbed back". From each valid node a, along each of its 8 grid directions, the first
valid slot b within ``reach`` (m, horizontally; the scan uses ``2 * (r + spacing)``, past the
clearance ``r`` both ledge and wall keep, whatever the grid's phase) gets a one-way
``EDGE_DROP`` a → b when b lies lower than a by more than ``max_climb`` and at most
``max_drop``, the ground under every slot passed over (the highest surface under the head,
``h_a + agent_height``: a deck overhead is walked under) lies between ``h_b - max_climb`` and
``h_a + max_climb`` (no gap is jumped, no wall climbed), and the path walked off and fallen,
segments at ``h_a + lift`` and at head height (``h_a + agent_height - lift``) to above b, then
straight down to ``h_b + lift``, passes through no solid. On a graph of several floors b is the
highest node of its grid point within a climb of ``h_a`` or lower (a drop off a deck lands on
the road under it). A drop costs its horizontal length plus its height (m): at least the ground distance,
so the A* heuristics stay admissible.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.geometry.kernels import segment_blocked_by, top_at
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.nav.graph import EDGE_DROP, GridIndex, NavGraph

CLIMB_TOL = 1e-9
"""Rounding allowance on ``max_climb`` and ``max_drop`` (as ``ecs_nav.nav.build.CLIMB_TOL``)."""

# (d_col, d_row) of the 8 neighbours, in the scan's order
NEIGHBOURS = np.array([(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)], dtype=np.int64)


@kernel
def _drop_nodes(G, xs, ys, hs, todo, cols, rows, levels, agent_height, max_climb, max_drop, lift,
                spacing, reach, nbrs):
    """One-way drop links from the node slots in ``todo`` (see the module docstring). ``xs``,
    ``ys``: each grid point's; ``hs``: each node slot's, on every level."""
    slots = rows * cols
    cap = todo.shape[0] * 8
    src = np.empty(cap, dtype=np.int64)
    dst = np.empty(cap, dtype=np.int64)
    cost = np.empty(cap, dtype=np.float64)
    m = 0
    for k in range(todo.shape[0]):
        a = todo[k]
        ha = hs[a]
        if ha != ha:
            continue
        pa = a % slots
        row, col = pa // cols, pa % cols
        # the ground passed over: the highest surface under a's head (a deck overhead is walked
        # under, not over; what rises past the head is found by the segments below)
        over = ha + agent_height
        head = ha + agent_height - lift
        for d in range(8):
            step = math.sqrt(2.0) * spacing if nbrs[d, 0] != 0 and nbrs[d, 1] != 0 else spacing
            steps = int(math.floor(reach / step + 1e-9))
            for i in range(1, steps + 1):
                c2, r2 = col + i * nbrs[d, 0], row + i * nbrs[d, 1]
                if c2 < 0 or c2 >= cols or r2 < 0 or r2 >= rows:
                    break
                pb = r2 * cols + c2
                b, higher = -1, False
                for level in range(levels):  # the highest valid slot there not above a's reach
                    hb = hs[level * slots + pb]
                    if hb == hb:
                        if hb <= ha + max_climb + CLIMB_TOL:
                            b = level * slots + pb
                            break
                        higher = True
                if b < 0:
                    if higher:
                        break  # higher ground only: no drop this way
                    continue
                hb = hs[b]
                # the first valid slot: a drop only when it lies lower than a climb reaches
                fall = ha - hb
                if fall <= max_climb + CLIMB_TOL or fall > max_drop + CLIMB_TOL:
                    break
                ok = True
                for j in range(1, i):  # the ground passed over: no gap, no wall
                    cj, rj = col + j * nbrs[d, 0], row + j * nbrs[d, 1]
                    g = top_at(G, xs[rj * cols + cj], ys[rj * cols + cj], over)
                    if not (hb - max_climb - CLIMB_TOL <= g <= ha + max_climb + CLIMB_TOL):
                        ok = False
                        break
                if ok and not segment_blocked_by(G, xs[pa], ys[pa], ha + lift, xs[pb], ys[pb], ha + lift) \
                        and not segment_blocked_by(G, xs[pa], ys[pa], head, xs[pb], ys[pb], head) \
                        and not segment_blocked_by(G, xs[pb], ys[pb], ha + lift, xs[pb], ys[pb], hb + lift):
                    src[m], dst[m], cost[m] = a, b, i * step + fall
                    m += 1
                break
    return src[:m], dst[:m], cost[:m]


def find_drops(geometry: MapGeometry, grid: GridIndex, hs: np.ndarray, sources: np.ndarray, *, max_climb: float,
               max_drop: float, lift: float, reach: float,
               agent_height: float = 2.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The drops (module docstring) from the node slots ``sources`` of ``grid``, whose elevations
    are ``hs`` ((grid.node_count,), NaN: no node): (src, dst, cost) arrays, cost in m.
    ``agent_height``: the body height the ground and head-height tests use (see the module
    docstring); all lengths in m, >= 0."""
    centres = grid.cell_centres()[: grid.slots]
    xs, ys = np.ascontiguousarray(centres[:, 0]), np.ascontiguousarray(centres[:, 1])
    return _drop_nodes(geometry.kernel_data(), xs, ys, np.asarray(hs, np.float64),
                       np.asarray(sources, np.int64), grid.cols, grid.rows, grid.levels,
                       float(agent_height), float(max_climb), float(max_drop), float(lift), grid.spacing,
                       float(reach), NEIGHBOURS)


def drop_sources(grid: GridIndex, reach: float, in_region: np.ndarray) -> np.ndarray:
    """The slots whose drops may pass over or land in the slots ``in_region`` ((n,) bool): those
    within ``reach`` (m; in grid steps, rounded up) of one, on every level."""
    steps = int(math.ceil(reach / grid.spacing - 1e-9))
    mask = in_region.reshape(grid.levels, grid.rows, grid.cols).any(axis=0)
    grown = mask.copy()
    for dr in range(-steps, steps + 1):
        for dc in range(-steps, steps + 1):
            src = mask[max(0, -dr): grid.rows - max(0, dr), max(0, -dc): grid.cols - max(0, dc)]
            grown[max(0, dr): grid.rows - max(0, -dr), max(0, dc): grid.cols - max(0, -dc)] |= src
    points = np.flatnonzero(grown.reshape(-1)).astype(np.int64)
    return (np.arange(grid.levels, dtype=np.int64)[:, None] * grid.slots + points[None, :]).reshape(-1)


def scan_drops(graph: NavGraph, reach: float) -> np.ndarray:
    """(m,) bool: the EDGE_DROP edges of ``graph`` that have the shape of the scan's drops (along
    one of the 8 grid directions, within ``reach`` (m), costing their horizontal length
    plus their fall); a region rebuild re-derives these, and keeps other drops added by hand."""
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    cols, slots = graph.grid.cols, graph.grid.slots
    dc, dr = dst % cols - src % cols, dst % slots // cols - src % slots // cols
    steps = np.maximum(np.abs(dc), np.abs(dr))
    straight = (dc == 0) | (dr == 0)
    along = straight | (np.abs(dc) == np.abs(dr))
    length = steps * np.where(straight, 1.0, math.sqrt(2.0)) * graph.grid.spacing
    fall = graph.positions[src, 2] - graph.positions[dst, 2]
    with np.errstate(invalid="ignore"):
        shaped = np.isclose(graph.costs, length + fall, rtol=0, atol=1e-9)
    return (graph.kinds == EDGE_DROP) & along & (length <= reach + 1e-9) & shaped
