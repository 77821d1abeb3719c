"""Agent-agent non-penetration: DetourCrowd's Jacobi relaxation passes over grids of agents
binned by size (compiled kernels; ``ecs_nav.motion.physics.relax_agents`` runs them against the
map for the PhysicsSystem, ``relax_overlaps`` on bare positions).

A pass finds, for every movable agent, the agents its disc overlaps, sums a push along each
centre line (its share of the penetration times ``COLLISION_RESOLVE_FACTOR``), averages over
its contacts and moves every agent at once. The work of a pass is bounded whatever the input:

* Agents are binned by size (``bin_by_size``): size class c holds the radii in
  (r_max / 2^(c + 1), r_max / 2^c], each class in a uniform grid of its own whose cells are
  twice its largest radius. A crowd of one size (every built-in scene) is one class in one grid,
  cells of twice its radius: a few large discs among many small ones no longer make cells that
  hold thousands of small ones. An agent looks in each class's grid as far as a disc of that
  class could reach it.
* An agent examines at most ``MAX_PAIR_CHECKS`` other agents a pass: where more lie in its
  reach (only where discs stand far closer than they have room for: a stack on one point), it
  examines an even sample of them.
* Two coincident agents part along the line between where they stood before the step, or,
  coincident then too (a crowd placed on one point), along a direction of their pair's own
  (``pair_direction``): a stack spreads in two dimensions, never along one line.

Shapes: positions (k, 2) float64 (m); radii (k,) (m).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.spatial import as_points, bin_into_grid, cell_range, per_item

COLLISION_RESOLVE_FACTOR = 0.7
"""DetourCrowd's share of a penetration resolved per relaxation pass (dtCrowd::update)."""

COINCIDENT_DISTANCE = 1e-9
"""Two agents closer than this (m) are coincident: their centre line gives no direction."""

MAX_PAIR_CHECKS = 256
"""The most other agents one agent examines in one relaxation pass. Where the cells within its
reach hold more (a crowd stacked on one point, or crammed into far less room than its discs
need), it examines an even sample of them: every ``stride``-th candidate, ``stride`` the
fewest that keeps the sample within this number, starting at an offset set by its own place.
So a pass costs at most this many pair checks an agent, whatever the input; below it every
candidate is examined (the built-in scenes' agents have at most 37 in reach)."""

SIZE_CLASSES = 16
"""At most this many size classes (``bin_by_size``); the last holds every smaller radius."""


class SizeGrids(NamedTuple):
    """Agents binned by size, one uniform grid a size class (``bin_by_size``). Class c's grid:
    origin (``origin_x[c]``, ``origin_y[c]``), ``cols[c]`` x ``rows[c]`` cells of side
    ``1 / inv_cell[c]``; its cell ``q``'s agents are ``items[cell_start[cell_base[c] + q]:
    cell_start[cell_base[c] + q + 1]]``; ``max_radius[c]`` is its largest radius."""

    origin_x: np.ndarray  # (classes,) float64
    origin_y: np.ndarray  # (classes,) float64
    inv_cell: np.ndarray  # (classes,) float64
    cols: np.ndarray  # (classes,) int64
    rows: np.ndarray  # (classes,) int64
    max_radius: np.ndarray  # (classes,) float64
    cell_base: np.ndarray  # (classes + 1,) int64
    cell_start: np.ndarray  # (cell_base[-1],) int64


@kernel
def bin_by_size(pos, radius):
    """``pos`` (k, 2) and ``radius`` (k,) (> 0) binned by size class: (items (k,), SizeGrids).
    ``items`` lists the agents class by class, each class cell by cell, each cell by row: one
    size is one class, binned exactly as ``spatial.bin_into_grid(pos, pos, 2 * max radius)``."""
    k = pos.shape[0]
    top = 0.0
    for i in range(k):
        top = max(top, radius[i])
    size_class = np.zeros(k, np.int64)
    present = np.zeros(SIZE_CLASSES, np.bool_)
    for i in range(k):
        c = 0
        bound = top * 0.5
        while radius[i] <= bound and c < SIZE_CLASSES - 1:
            c += 1
            bound *= 0.5
        size_class[i] = c
        present[c] = True
    renumber = np.zeros(SIZE_CLASSES, np.int64)
    classes = 0
    for c in range(SIZE_CLASSES):
        if present[c]:
            renumber[c] = classes
            classes += 1
    for i in range(k):
        size_class[i] = renumber[size_class[i]]
    members = np.argsort(size_class, kind="mergesort")  # class by class, each by row
    origin_x, origin_y, inv_cell = np.empty(classes), np.empty(classes), np.empty(classes)
    cols, rows, max_radius = np.empty(classes, np.int64), np.empty(classes, np.int64), np.zeros(classes)
    for i in range(k):
        max_radius[size_class[i]] = max(max_radius[size_class[i]], radius[i])
    cell_base = np.zeros(classes + 1, np.int64)
    cell_start = np.empty(classes * 65 + 4 * k, np.int64)  # (bin_into_grid's cap: max(64, 4 m) cells, + 1)
    items = np.empty(k, np.int64)
    first = 0
    for c in range(classes):
        last = first
        while last < k and size_class[members[last]] == c:
            last += 1
        m = last - first
        points = np.empty((m, 2))
        for p in range(m):
            points[p, 0], points[p, 1] = pos[members[first + p], 0], pos[members[first + p], 1]
        # (cells of at least twice the class's smallest possible radius: a class of zero radii has cells too)
        least = top * 0.5 ** (SIZE_CLASSES if c == classes - 1 else 1)
        ox, oy, cell, n_cols, n_rows, starts, order = bin_into_grid(points, points, 2.0 * max(max_radius[c], least))
        origin_x[c], origin_y[c], inv_cell[c], cols[c], rows[c] = ox, oy, 1.0 / cell, n_cols, n_rows
        cells = n_cols * n_rows + 1
        for q in range(cells):
            cell_start[cell_base[c] + q] = first + starts[q]
        cell_base[c + 1] = cell_base[c] + cells
        for p in range(m):
            items[first + p] = members[first + order[p]]
        first = last
    return items, SizeGrids(origin_x, origin_y, inv_cell, cols, rows, max_radius, cell_base,
                            cell_start[:cell_base[classes]].copy())


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TURN_PER_UNIT = 2.0 * np.pi / 2.0**53


@kernel(inline="always")
def pair_direction(a, b):
    """A unit vector (ux, uy) of the unordered pair of ids {a, b} (>= 0): splitmix64 of the pair,
    as an angle. The pair's two coincident agents part along it, the lower id toward -u: a
    direction of their own for every pair, so a stack of agents on one point spreads in 2-D."""
    lo, hi = min(a, b), max(a, b)
    z = np.uint64(lo) * _GOLDEN + np.uint64(hi)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    angle = float(z >> np.uint64(11)) * _TURN_PER_UNIT
    return np.cos(angle), np.sin(angle)


@kernel(inline="always")
def reach_cells(grids, c, x, y, reach):
    """The cells (cx0, cx1, cy0, cy1) of size class ``c``'s grid within ``reach`` of (x, y)."""
    cx0, cx1 = cell_range(x - reach, x + reach, grids.origin_x[c], grids.inv_cell[c], grids.cols[c])
    cy0, cy1 = cell_range(y - reach, y + reach, grids.origin_y[c], grids.inv_cell[c], grids.rows[c])
    return cx0, cx1, cy0, cy1


@kernel
def relax_displacements(pos, previous, radius, movable, active, ids, elevation, body_height, resolve_factor, slack,
                        grids, items, disp, touching):
    """The displacements of one Jacobi pass (DetourCrowd), written to ``disp`` (k, 2) for the
    movable, ``active`` agents (others get 0); ``touching[i]`` says whether agent i overlaps
    another. ``grids`` and ``items``: ``bin_by_size``'s, possibly of earlier positions:
    ``slack`` is the farthest any agent moved since, added to the query reach, so no overlap is
    missed. An agent examines at most ``MAX_PAIR_CHECKS`` others (an even sample where its reach
    holds more). Two coincident agents part along the line between their ``previous``
    positions (where they stood before this step: each back to its own side), or where those
    coincide too along their pair's own direction (``pair_direction``).

    Returns (pair checks made, the most candidates any agent's reach held): the pass's work,
    and whether it sampled (the second above ``MAX_PAIR_CHECKS``)."""
    k = pos.shape[0]
    checks = 0
    widest = 0
    cols, base, cell_start = grids.cols, grids.cell_base, grids.cell_start
    for i in range(k):
        disp[i, 0] = 0.0
        disp[i, 1] = 0.0
        touching[i] = False
        if not (movable[i] and active[i]):
            continue
        held = 0
        for c in range(cols.shape[0]):
            cx0, cx1, cy0, cy1 = reach_cells(grids, c, pos[i, 0], pos[i, 1], radius[i] + grids.max_radius[c] + slack)
            for cy in range(cy0, cy1 + 1):
                row = base[c] + cy * cols[c]
                held += cell_start[row + cx1 + 1] - cell_start[row + cx0]
        widest = max(widest, held)
        stride = 1 if held <= MAX_PAIR_CHECKS else (held + MAX_PAIR_CHECKS - 1) // MAX_PAIR_CHECKS
        phase = i % stride
        sx = 0.0
        sy = 0.0
        contacts = 0
        before = 0  # candidates in the cell rows already scanned
        for c in range(cols.shape[0]):
            cx0, cx1, cy0, cy1 = reach_cells(grids, c, pos[i, 0], pos[i, 1], radius[i] + grids.max_radius[c] + slack)
            for cy in range(cy0, cy1 + 1):
                row = base[c] + cy * cols[c]
                first, end = cell_start[row + cx0], cell_start[row + cx1 + 1]
                # the sample: candidates whose place g in the reach has g % stride == phase
                for s in range(first + (phase - before) % stride, end, stride):
                    j = items[s]
                    if j == i:
                        continue
                    checks += 1
                    if abs(elevation[i] - elevation[j]) >= body_height:
                        continue
                    contact = radius[i] + radius[j]
                    dx = pos[i, 0] - pos[j, 0]
                    dy = pos[i, 1] - pos[j, 1]
                    d2 = dx * dx + dy * dy
                    if d2 >= contact * contact:
                        continue
                    # both movable: each takes half the penetration; against a fixed one, all
                    share = 0.5 if movable[j] else 1.0
                    d = np.sqrt(d2)
                    if d < COINCIDENT_DISTANCE:
                        push = contact * share * resolve_factor
                        px, py = previous[i, 0] - previous[j, 0], previous[i, 1] - previous[j, 1]
                        apart = np.sqrt(px * px + py * py)
                        if apart >= COINCIDENT_DISTANCE:
                            sx += px / apart * push
                            sy += py / apart * push
                        else:
                            ux, uy = pair_direction(ids[i], ids[j]) if ids[i] != ids[j] else pair_direction(i, j)
                            first_of_pair = ids[i] < ids[j] or (ids[i] == ids[j] and i < j)
                            sx += (-ux if first_of_pair else ux) * push
                            sy += (-uy if first_of_pair else uy) * push
                    else:
                        scale = (contact - d) / d * share * resolve_factor
                        sx += dx * scale
                        sy += dy * scale
                    contacts += 1
                before += end - first
        if contacts > 0:
            touching[i] = True
            disp[i, 0] = sx / contacts
            disp[i, 1] = sy / contacts
    return checks, widest


@kernel
def relax_pass(pos, previous, radius, movable, ids, elevation, body_height, resolve_factor):
    """One Jacobi pass of ``relax_overlaps`` (compiled; arrays trusted): every movable agent's
    displacement from the same positions, then all applied (``previous``: see
    ``relax_displacements``). Returns the new (k, 2) positions.

    Two agents push only where their bodies overlap in height too: ``|elevation_i -
    elevation_j| < body_height`` (an agent on a wall top does not push one at its foot)."""
    k = pos.shape[0]
    max_radius = 0.0
    for i in range(k):
        max_radius = max(max_radius, radius[i])
    if k < 2 or max_radius == 0.0:
        return pos.copy()
    items, grids = bin_by_size(pos, radius)
    disp = np.empty((k, 2))
    touching = np.empty(k, np.bool_)
    relax_displacements(pos, previous, radius, movable, np.ones(k, np.bool_), ids, elevation, body_height,
                        resolve_factor, 0.0, grids, items, disp, touching)
    return pos + disp


def relax_overlaps(pos, radius, iterations: int = 4, movable=None, *, entity_ids=None,
                   elevation=None, body_height: float = np.inf,
                   resolve_factor: float = COLLISION_RESOLVE_FACTOR) -> np.ndarray:
    """Push overlapping agents (circles) apart, as DetourCrowd's collision passes do.

    Each pass finds, for every movable agent, the agents it overlaps (grid rebuilt from the
    current positions), sums a push along the centre line of each overlap -- its share of the
    penetration (half, or all of it against an agent that is not movable) times
    ``resolve_factor`` -- averages over its contacts, then moves all agents at once (Jacobi),
    so the result does not depend on row order (except where an agent's reach holds more than
    ``MAX_PAIR_CHECKS`` others: it then examines a sample of them, set by its row). Agents
    that come to coincide part along the line between their input positions; agents that
    coincide in the input part along a direction of their pair's own (``pair_direction``), the
    one with the lower entity id toward -u.

    Averaging over contacts (DetourCrowd's ``disp /= w``) is what keeps the passes stable in a
    packed crowd: a plain sum over six contacts overshoots and oscillates. The price is slower
    convergence where an agent has several contacts; what a tick leaves is resolved over the
    following ticks, or ask for more ``iterations``.

    Args:
        pos: (k, 2) positions. radius: (k,) or scalar agent radii.
        iterations: number of passes (DetourCrowd: 4).
        movable: (k,) bool, None = all; agents that are not movable never move but still push.
        entity_ids: (k,) int ids breaking ties between coincident agents; None = rows.
        elevation, body_height: (k,) heights the agents stand at (None: all 0) and their body
            height; agents whose bodies do not overlap in height (``|e_i - e_j| >=
            body_height``) do not push each other.

    Returns:
        (k, 2) new positions (``pos`` is not modified).
    """
    pos = as_points(pos, "pos").copy()
    given = pos.copy()
    k = pos.shape[0]
    radius = per_item(radius, k, "radius")
    movable = np.ones(k, bool) if movable is None else np.ascontiguousarray(
        np.broadcast_to(np.asarray(movable, dtype=bool), (k,)))
    ids = np.arange(k, dtype=np.int64) if entity_ids is None else np.ascontiguousarray(
        entity_ids, dtype=np.int64)
    if ids.shape != (k,):
        raise ValueError(f"entity_ids must have shape ({k},)")
    elevation = np.zeros(k) if elevation is None else np.ascontiguousarray(
        np.broadcast_to(np.asarray(elevation, dtype=np.float64), (k,)))
    if not np.all(np.isfinite(elevation)):
        raise ValueError("elevation must be finite")
    if not body_height > 0:
        raise ValueError(f"body_height must be > 0, got {body_height}")
    for _ in range(int(iterations)):
        pos = relax_pass(pos, given, radius, movable, ids, elevation, float(body_height), float(resolve_factor))
    return pos

