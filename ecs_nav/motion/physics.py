"""Compiled kernels of the PhysicsSystem: integration, the velocity left after a collision,
agent-agent relaxation against the map, and the heading's yaw lerp.

Arrays in, arrays out (or updated in place where the docstring says so); shapes are (k, 2)
float64 for positions and velocities, (k,) for per-agent scalars. The kernels trust their
input: ``systems/physics.py`` validates and refuses non-finite values. ``G`` is a map's packed
``MapGeometry.kernel_data()``; without a map pass ``NO_MAP`` and ``use_map=False``. ``F`` is
that map's ``OpenCells`` (``open_cells(G)``, built once per packed map), which lets a disc
clear of every shape skip ``resolve_disc`` with the same result; ``NO_OPEN_CELLS`` lets none.
The kernels read ``F`` by position: ``tuple(F)`` does as well and is cheaper to pass (the
PhysicsSystem passes that, see ``_OX`` below).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.compile.options import NO_REFCOUNT
from ecs_nav.geometry.kernels import MIN_COLLISION_RADIUS, resolve_disc
from ecs_nav.motion.relax import COLLISION_RESOLVE_FACTOR, bin_by_size, reach_cells, relax_displacements
from ecs_nav.motion.spatial import SMALL_LAYER, layer_runs, single_layer

NO_MAP = (np.zeros((0, 9)), np.zeros((0, 5)), np.zeros(8), np.zeros(3, np.int64), np.zeros(1, np.int64),
          np.zeros(0, np.int64), np.zeros((0, 4)))
"""A packed map of the right types for kernels called with ``use_map=False``."""


class OpenCells(NamedTuple):
    """A raster of the map's bounds: ``free[row * cols + col]`` is 1 where the cell, and every
    cell beside it, touches no shape's footprint box (``open_cells``)."""

    origin_x: float
    origin_y: float
    inv_cell: float
    cols: int
    rows: int
    free: np.ndarray  # (rows * cols,) uint8


# The kernels read an OpenCells by position, so that they also take it as a plain tuple
# (``tuple(F)``): numba types a NamedTuple argument through Python on every call (~0.6 µs a
# call here), a plain tuple of floats, ints and an array in its compiled fast path (~0.1 µs).
_OX, _OY, _INV_CELL, _COLS, _ROWS, _FREE = range(6)


OPEN_CELL_SIZE = 0.5
"""Side (m) of an ``open_cells`` cell, enlarged on big maps to keep the raster under 2**20 cells."""

_OPEN_REACH = 1e-6 + 1e-8
"""Added to a disc's radius round its swept box: at least what ``resolve_disc``'s open-floor
test adds (1e-6 + its 1e-9 touching tolerance), so a box clear here is clear there."""


@kernel
def _mark_shapes(aabbs, ox, oy, inv_cell, cols, rows, free):
    for b in range(aabbs.shape[0]):
        # the cells the box touches, and one more each side: a box is then at least a cell
        # away from every free cell, whatever the rounding of the cell indices
        c0 = int(min(max(math.floor((aabbs[b, 0] - ox) * inv_cell) - 1.0, 0.0), cols - 1.0))
        c1 = int(min(max(math.floor((aabbs[b, 2] - ox) * inv_cell) + 1.0, 0.0), cols - 1.0))
        r0 = int(min(max(math.floor((aabbs[b, 1] - oy) * inv_cell) - 1.0, 0.0), rows - 1.0))
        r1 = int(min(max(math.floor((aabbs[b, 3] - oy) * inv_cell) + 1.0, 0.0), rows - 1.0))
        for r in range(r0, r1 + 1):
            for c in range(c0, c1 + 1):
                free[r * cols + c] = 0


def open_cells(G) -> OpenCells:
    """The ``OpenCells`` of a packed map ``G`` (``MapGeometry.kernel_data()``): O(cells + shapes).
    A disc whose swept box lies inside the bounds, on free cells only, touches no shape."""
    xmin, ymin, xmax, ymax = (float(v) for v in G[2][:4])
    width, depth = max(xmax - xmin, 1e-9), max(ymax - ymin, 1e-9)
    cell = max(OPEN_CELL_SIZE, math.sqrt(width * depth / 2.0**20))
    cols, rows = int(math.ceil(width / cell)) + 1, int(math.ceil(depth / cell)) + 1
    free = np.ones(rows * cols, np.uint8)
    _mark_shapes(np.ascontiguousarray(G[6]), xmin, ymin, 1.0 / cell, cols, rows, free)
    return OpenCells(xmin, ymin, 1.0 / cell, cols, rows, free)


NO_OPEN_CELLS = OpenCells(0.0, 0.0, 1.0, 1, 1, np.zeros(1, np.uint8))
"""An ``OpenCells`` with no free cell (every disc takes ``resolve_disc``'s own test)."""


@kernel(**NO_REFCOUNT)
def moves_freely(meta, F, x, y, nx, ny, radius, e):
    """True when a disc on the floor (``e`` is the floor height ``meta[4]`` of a packed map's
    ``G[2]``) swept from (x, y) to (nx, ny) keeps its swept box inside the bounds and on free
    cells of ``F`` (that map's ``OpenCells``): it touches no shape, and ``resolve_disc``
    would return (nx, ny, e). ``resolve_disc``'s own open-floor test scans the shapes of the
    map's coarse buckets; a crowd passes this one for almost every disc almost every tick.
    Without reference counting (``NO_REFCOUNT``, see ``ecs_nav.compile.options``): called per disc, its
    incref/decref of ``F.free`` and ``meta`` were half of ``move_on_map``'s time."""
    if e != meta[4]:
        return False
    reach = max(radius, MIN_COLLISION_RADIUS) + _OPEN_REACH
    lx, hx = min(x, nx) - reach, max(x, nx) + reach
    ly, hy = min(y, ny) - reach, max(y, ny) + reach
    if not (lx >= meta[0] and ly >= meta[1] and hx <= meta[2] and hy <= meta[3]):
        return False
    c0 = int(math.floor((lx - F[_OX]) * F[_INV_CELL]))
    c1 = int(math.floor((hx - F[_OX]) * F[_INV_CELL]))
    r0 = int(math.floor((ly - F[_OY]) * F[_INV_CELL]))
    r1 = int(math.floor((hy - F[_OY]) * F[_INV_CELL]))
    cols, free = F[_COLS], F[_FREE]
    if not (0 <= c0 and c1 < cols and 0 <= r0 and r1 < F[_ROWS]):
        return False
    for r in range(r0, r1 + 1):
        for c in range(c0, c1 + 1):
            if free[r * cols + c] == 0:
                return False
    return True


@kernel
def integrate(pos, vel, max_speed, dt):
    """Truncate ``vel`` to ``max_speed`` (in place); return ``pos + vel * dt`` (k, 2)."""
    out = np.empty_like(pos)
    for i in range(pos.shape[0]):
        speed = math.hypot(vel[i, 0], vel[i, 1])
        if speed > max_speed[i]:
            scale = max_speed[i] / speed
            vel[i, 0] *= scale
            vel[i, 1] *= scale
        out[i, 0] = pos[i, 0] + vel[i, 0] * dt
        out[i, 1] = pos[i, 1] + vel[i, 1] * dt
    return out


@kernel
def resolve_map(G, F, start, target, radius, elevation, max_climb, body_height):
    """Every disc swept from ``start`` toward ``target`` against the map (``resolve_disc``;
    ``F``: the map's ``OpenCells``, see ``moves_freely``): returns (positions (k, 2),
    elevations (k,))."""
    k = start.shape[0]
    pos = np.empty((k, 2))
    elev = np.empty(k)
    meta = G[2]
    for i in range(k):
        if moves_freely(meta, F, start[i, 0], start[i, 1], target[i, 0], target[i, 1], radius[i], elevation[i]):
            pos[i, 0], pos[i, 1], elev[i] = target[i, 0], target[i, 1], elevation[i]
        else:
            pos[i, 0], pos[i, 1], elev[i] = resolve_disc(G, start[i, 0], start[i, 1], target[i, 0], target[i, 1],
                                                         radius[i], elevation[i], max_climb[i], body_height)
    return pos, elev


@kernel
def move_on_map(G, F, pos, vel, max_speed, dt, radius, elevation, max_climb, body_height, tolerance, target, out,
                elev):
    """``integrate``, ``resolve_map`` and ``slide_velocity`` in one pass (the same arithmetic,
    the same results): ``vel`` truncated and, where the map removed motion, slid (in place);
    writes the integrated targets ``target`` (k, 2), the resolved positions ``out`` (k, 2) and
    elevations ``elev`` (k,), arrays of the caller's that alias no input (each array a kernel
    returns costs numba a ``_numba_unpickle`` call to box it, ~0.3 µs). A disc whose target is
    not finite is not resolved (the target is written as its position, for the caller's guard
    to refuse)."""
    k = pos.shape[0]
    meta = G[2]
    for i in range(k):
        speed = math.hypot(vel[i, 0], vel[i, 1])
        if speed > max_speed[i]:
            scale = max_speed[i] / speed
            vel[i, 0] *= scale
            vel[i, 1] *= scale
        tx = pos[i, 0] + vel[i, 0] * dt
        ty = pos[i, 1] + vel[i, 1] * dt
        target[i, 0] = tx
        target[i, 1] = ty
        e = elevation[i]
        if not (math.isfinite(tx) and math.isfinite(ty)) or moves_freely(meta, F, pos[i, 0], pos[i, 1], tx, ty,
                                                                          radius[i], e):
            out[i, 0], out[i, 1], elev[i] = tx, ty, e  # no wall in reach: slide_velocity keeps vel
            continue
        x, y, e = resolve_disc(G, pos[i, 0], pos[i, 1], tx, ty, radius[i], e, max_climb[i], body_height)
        out[i, 0], out[i, 1], elev[i] = x, y, e
        # slide_velocity
        step = math.hypot(tx - pos[i, 0], ty - pos[i, 1])
        miss = math.hypot(x - tx, y - ty)
        if miss <= tolerance * (1.0 + step):
            continue
        ax = (x - pos[i, 0]) / dt
        ay = (y - pos[i, 1]) / dt
        actual = math.hypot(ax, ay)
        limit = math.hypot(vel[i, 0], vel[i, 1])
        scale = limit / actual if actual > limit else 1.0
        vel[i, 0] = ax * scale
        vel[i, 1] = ay * scale


@kernel
def substep_need(vel, max_speed, radius, collides, dt, min_radius):
    """The largest ``min(|vel|, max_speed) * dt / max(radius, min_radius)`` over the rows that
    ``collides`` (0 without any; NaN when one of them is NaN): how many radii the fastest
    colliding agent would move this tick."""
    need = 0.0
    for i in range(vel.shape[0]):
        if not collides[i]:
            continue
        speed = math.sqrt(vel[i, 0] * vel[i, 0] + vel[i, 1] * vel[i, 1])
        if math.isnan(speed) or math.isnan(max_speed[i]):
            return math.nan
        value = min(speed, max_speed[i]) * dt / max(radius[i], min_radius)
        if math.isnan(value):
            return math.nan
        need = max(need, value)
    return need


@kernel
def slide_velocity(start, target, resolved, vel, dt, tolerance):
    """Where the map removed motion (``resolved`` differs from ``target`` by more than
    ``tolerance * (1 + step)``), ``vel`` becomes the displacement actually made over ``dt``
    -- along a wall that is the tangential part, head-on zero -- never faster than before.
    In place."""
    for i in range(start.shape[0]):
        step = math.hypot(target[i, 0] - start[i, 0], target[i, 1] - start[i, 1])
        miss = math.hypot(resolved[i, 0] - target[i, 0], resolved[i, 1] - target[i, 1])
        if miss <= tolerance * (1.0 + step):
            continue
        ax = (resolved[i, 0] - start[i, 0]) / dt
        ay = (resolved[i, 1] - start[i, 1]) / dt
        actual = math.hypot(ax, ay)
        limit = math.hypot(vel[i, 0], vel[i, 1])
        scale = limit / actual if actual > limit else 1.0
        vel[i, 0] = ax * scale
        vel[i, 1] = ay * scale


@kernel
def relax_agents(G, F, use_map, pos, previous, elevation, radius, max_climb, movable, ids, body_height, iterations,
                 tolerance, resolve_factor=COLLISION_RESOLVE_FACTOR):
    """Agent-agent non-penetration: up to ``iterations`` Jacobi passes (DetourCrowd, as
    ``relax.relax_pass``), each followed by the map for the agents it moved (swept from their
    collision-free position, so relaxation never pushes an agent into or through a wall). An
    agent the map held back (it kept less than half of its correction: pinned against a wall)
    is not movable for the remaining passes, so the agents pressing on it take the whole
    overlap. Stops early once a pass moves no agent farther than ``tolerance``.

    The result is that of full passes, at the cost of the contacts: the grids are built once
    (queries reach further by the farthest any agent has moved since), and a pass after the
    first visits only the agents that touched another in the pass before or lie within reach
    of one that moved -- no other agent can have gained a contact.

    The work is bounded whatever the input: at most ``iterations`` passes, each examining at
    most ``relax.MAX_PAIR_CHECKS`` other agents an agent (a sample where more are in reach: a
    stack on one point), and the agents to visit next found cell by cell (O(agents + cells)).

    ``previous`` (k, 2): where the agents stood before this step's motion (two that come to
    coincide part along the line between those; ``pos`` itself where there is no such step).
    ``pos`` (k, 2) and ``elevation`` (k,) are updated in place; ``movable`` is not modified.
    Returns (passes run, pair checks made, the most candidates one agent's reach held in a
    pass: above ``MAX_PAIR_CHECKS`` where a sample was taken)."""
    k = pos.shape[0]
    max_radius = 0.0
    for i in range(k):
        max_radius = max(max_radius, radius[i])
    if k < 2 or max_radius == 0.0 or iterations <= 0:
        return 0, 0, 0
    meta = G[2]
    order, grids = bin_by_size(pos, radius)
    # The passes run on copies in the grids' order (a point lies in one cell: ``order`` lists
    # every agent once, size class by class, cell by cell, each cell by row): an agent's
    # neighbours are then next to each other in memory. Each agent still meets its neighbours
    # in the same order, so every sum is the same, bit for bit; only the coincident-centre tie
    # of two equal ``ids`` falls to the grid order instead of the row order (ids are entity ids:
    # never equal).
    spos = np.empty((k, 2))
    sprev = np.empty((k, 2))
    selev = np.empty(k)
    srad = np.empty(k)
    sclimb = np.empty(k)
    smov = np.empty(k, np.bool_)
    sids = np.empty(k, ids.dtype)
    for p in range(k):
        i = order[p]
        spos[p, 0] = pos[i, 0]
        spos[p, 1] = pos[i, 1]
        sprev[p, 0] = previous[i, 0]
        sprev[p, 1] = previous[i, 1]
        selev[p] = elevation[i]
        srad[p] = radius[i]
        sclimb[p] = max_climb[i]
        smov[p] = movable[i]
        sids[p] = ids[i]
    items = np.arange(k)
    start = spos.copy()
    slack = 0.0
    active = np.ones(k, np.bool_)
    disp = np.empty((k, 2))
    touching = np.empty(k, np.bool_)
    moved = np.empty(k, np.int64)
    # cells within reach of a moved agent (counts), class by class: (rows + 1) x (cols + 1) each
    near_base = np.zeros(grids.cols.shape[0] + 1, np.int64)
    for c in range(grids.cols.shape[0]):
        near_base[c + 1] = near_base[c] + (grids.rows[c] + 1) * (grids.cols[c] + 1)
    near = np.empty(near_base[-1], np.int64)
    passes = 0
    checks = 0
    widest = 0
    for _ in range(iterations):
        pass_checks, pass_widest = relax_displacements(spos, sprev, srad, smov, active, sids, selev, body_height,
                                                       resolve_factor, slack, grids, items, disp, touching)
        passes += 1
        checks += pass_checks
        widest = max(widest, pass_widest)
        worst = 0.0
        n_moved = 0
        for i in range(k):
            sx, sy = disp[i, 0], disp[i, 1]
            shift2 = sx * sx + sy * sy
            if shift2 == 0.0:
                continue
            worst = max(worst, shift2)
            x, y = spos[i, 0] + sx, spos[i, 1] + sy
            if use_map:
                e = selev[i]
                if not moves_freely(meta, F, spos[i, 0], spos[i, 1], x, y, srad[i], e):
                    x, y, e = resolve_disc(G, spos[i, 0], spos[i, 1], x, y, srad[i], e, sclimb[i], body_height)
                if (x - spos[i, 0]) * sx + (y - spos[i, 1]) * sy < 0.5 * shift2:
                    smov[i] = False
                selev[i] = e
            disp[i, 0] = x
            disp[i, 1] = y
            moved[n_moved] = i
            n_moved += 1
        if worst == 0.0:
            break
        # apply (Jacobi: every displacement was computed from the same positions)
        for m in range(n_moved):
            i = moved[m]
            spos[i, 0] = disp[i, 0]
            spos[i, 1] = disp[i, 1]
            slack = max(slack, math.hypot(spos[i, 0] - start[i, 0], spos[i, 1] - start[i, 1]))
        if worst < tolerance * tolerance:
            break
        # the next pass: agents still touching, and every agent within reach of one that moved:
        # the agents of every cell in the reach box of a moved agent, the boxes added up as a
        # 2-D difference array (O(1) a moved agent, however far its reach)
        for i in range(k):
            active[i] = touching[i]
        near[:] = 0
        for m in range(n_moved):
            i = moved[m]
            for c in range(grids.cols.shape[0]):
                reach = srad[i] + grids.max_radius[c] + slack
                cx0, cx1, cy0, cy1 = reach_cells(grids, c, spos[i, 0], spos[i, 1], reach)
                width = grids.cols[c] + 1
                near[near_base[c] + cy0 * width + cx0] += 1
                near[near_base[c] + cy0 * width + cx1 + 1] -= 1
                near[near_base[c] + (cy1 + 1) * width + cx0] -= 1
                near[near_base[c] + (cy1 + 1) * width + cx1 + 1] += 1
        for c in range(grids.cols.shape[0]):
            cols, width = grids.cols[c], grids.cols[c] + 1
            for cy in range(grids.rows[c]):
                run = 0
                for cx in range(cols):
                    q = near_base[c] + cy * width + cx
                    run += near[q]
                    near[q] = run + near[q - width] if cy > 0 else run
                    if near[q] > 0:
                        cell = grids.cell_base[c] + cy * cols + cx
                        for s in range(grids.cell_start[cell], grids.cell_start[cell + 1]):
                            active[items[s]] = True
    for p in range(k):
        i = order[p]
        pos[i, 0] = spos[p, 0]
        pos[i, 1] = spos[p, 1]
        elevation[i] = selev[p]
    return passes, checks, widest


@kernel(inline="always")
def any_overlap(run, pos, radius):
    """Whether two agents of ``run`` overlap (centres closer than the sum of their radii, as
    ``relax_displacements`` counts a contact); pair by pair."""
    for a in range(run.shape[0]):
        i = run[a]
        for b in range(a + 1, run.shape[0]):
            j = run[b]
            contact = radius[i] + radius[j]
            dx, dy = pos[i, 0] - pos[j, 0], pos[i, 1] - pos[j, 1]
            if dx * dx + dy * dy < contact * contact:
                return True
    return False


@kernel
def relax_layers(G, F, use_map, pos, previous, elevation, radius, max_climb, movable, ids, layer, body_height,
                 iterations, tolerance):
    """``relax_agents`` with agents on layers (``layer`` (k,), ``Collider.layer``): agents of
    different layers do not push each other. With more than one layer, each layer's agents are
    relaxed on their own, as in a world holding only them (its passes, its early stop, its
    grid); a layer of one agent, or of at most ``SMALL_LAYER`` none of which overlap (the single
    layer too), is left as the first pass would leave it, untouched, and adds no work. ``pos`` and
    ``elevation`` are updated in place (``previous``: as ``relax_agents``'). Returns
    ``relax_agents``' work over the layers: (the most passes a layer ran, the pair checks of all,
    the most candidates one agent's reach held)."""
    if single_layer(layer):
        if pos.shape[0] <= SMALL_LAYER and not any_overlap(np.arange(pos.shape[0]), pos, radius):
            return 0, 0, 0  # no overlap: the first pass would move nobody (and a small world builds no grid)
        return relax_agents(G, F, use_map, pos, previous, elevation, radius, max_climb, movable, ids, body_height,
                            iterations, tolerance)
    passes, checks, widest = 0, 0, 0
    order, starts = layer_runs(layer)
    for r in range(starts.shape[0] - 1):
        run = order[starts[r]:starts[r + 1]]
        m = run.shape[0]
        if m < 2 or (m <= SMALL_LAYER and not any_overlap(run, pos, radius)):
            continue  # no overlap: the first pass would move nobody
        r_pos, r_prev, r_elev = np.empty((m, 2)), np.empty((m, 2)), np.empty(m)
        r_radius, r_climb = np.empty(m), np.empty(m)
        r_movable, r_ids = np.empty(m, np.bool_), np.empty(m, ids.dtype)
        for j in range(m):
            i = run[j]
            r_pos[j, 0], r_pos[j, 1], r_elev[j] = pos[i, 0], pos[i, 1], elevation[i]
            r_prev[j, 0], r_prev[j, 1] = previous[i, 0], previous[i, 1]
            r_radius[j], r_climb[j], r_movable[j], r_ids[j] = radius[i], max_climb[i], movable[i], ids[i]
        work = relax_agents(G, F, use_map, r_pos, r_prev, r_elev, r_radius, r_climb, r_movable, r_ids, body_height,
                            iterations, tolerance)
        passes, checks, widest = max(passes, work[0]), checks + work[1], max(widest, work[2])
        for j in range(m):
            i = run[j]
            pos[i, 0], pos[i, 1], elevation[i] = r_pos[j, 0], r_pos[j, 1], r_elev[j]
    return passes, checks, widest


@kernel
def drop_velocity_into(vel, correction):
    """Contacts moved an agent by ``correction``: remove the component of ``vel`` against it
    (an inelastic contact; the correction itself is not added). In place."""
    for i in range(vel.shape[0]):
        cx, cy = correction[i, 0], correction[i, 1]
        norm2 = cx * cx + cy * cy
        push = vel[i, 0] * cx + vel[i, 1] * cy
        if push < 0.0 and norm2 > 0.0:
            vel[i, 0] -= push / norm2 * cx
            vel[i, 1] -= push / norm2 * cy


@kernel
def _half_turn(hx, hy):
    """The unit quaternion (cos a/2, sin a/2) of the unit heading (cos a, sin a), a in (-pi, pi],
    without trigonometry: (1 + cos a, sin a) = 2 cos(a/2) (cos a/2, sin a/2)."""
    w = 1.0 + hx
    if w <= 1e-12:  # a = pi
        return 0.0, 1.0
    n = math.sqrt(w * w + hy * hy)
    return w / n, hy / n


@kernel
def _yaw_lerp(hx, hy, tx, ty, t):
    qa0, qa1 = _half_turn(hx, hy)
    qb0, qb1 = _half_turn(tx, ty)
    if qa0 * qb0 + qa1 * qb1 < 0.0:  # the shorter arc
        qb0, qb1 = -qb0, -qb1
    q0 = qa0 + (qb0 - qa0) * t
    q1 = qa1 + (qb1 - qa1) * t
    # back to a heading: (cos 2b, sin 2b) = (q0² - q1², 2 q0 q1) / |q|²
    n2 = q0 * q0 + q1 * q1
    return (q0 * q0 - q1 * q1) / n2, 2.0 * q0 * q1 / n2


def yaw_lerp(heading: np.ndarray, target: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Unity's ``Quaternion.Lerp(current, target, t)`` for rotations about the vertical axis.

    ``heading`` and ``target`` are (k, 2) unit vectors, ``t`` (k,) in [0, 1]. A yaw ``a`` is the
    quaternion (cos a/2, sin a/2); the lerp takes the shorter arc (flips the target when the
    dot product is negative), normalises, and converts back. Returns (k, 2) unit vectors."""
    heading = np.asarray(heading, np.float64)
    target = np.asarray(target, np.float64)
    t = np.broadcast_to(np.asarray(t, np.float64), heading.shape[:1])
    out = np.empty_like(heading)
    for i in range(heading.shape[0]):
        out[i] = _yaw_lerp(heading[i, 0], heading[i, 1], target[i, 0], target[i, 1], t[i])
    return out


@kernel
def turn_heading(heading, vel, turn_speed, dt, min_speed):
    """The seed's ``Lerp(current, lookRotation, dt * turn_speed)`` toward the velocity (yaw only,
    ``t`` clamped to [0, 1]) for agents faster than ``min_speed``; the rest keep their heading.
    In place."""
    for i in range(heading.shape[0]):
        speed = math.hypot(vel[i, 0], vel[i, 1])
        if speed <= min_speed:
            continue
        t = min(max(dt * turn_speed[i], 0.0), 1.0)
        heading[i, 0], heading[i, 1] = _yaw_lerp(heading[i, 0], heading[i, 1], vel[i, 0] / speed,
                                                 vel[i, 1] / speed, t)
