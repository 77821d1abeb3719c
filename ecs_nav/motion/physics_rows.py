"""The PhysicsSystem's compiled path: a whole tick of physics in one call over the agent table's
columns.

``systems/physics.py`` describes the tick (integration, map collisions and the slide, sub-steps,
agent-agent relaxation against the map, the velocity left after contacts, the heading's yaw
lerp, the NaN guard). Its reference path does it with the kernels of ``ecs_nav.motion.physics``, called
from Python on the moving rows gathered by numpy; this kernel gathers the same rows and calls the
same kernels in the same order, so its positions, velocities, elevations and headings equal the
reference path's bit for bit (``PhysicsSystem(compiled=False)``; tests compare the two on
randomised worlds and on every built-in scene that moves agents). It exists for small worlds:
the reference path's tick is about forty numpy calls and eight kernel calls around the work,
several times the work itself below a hundred agents; this is one call. When every row moves
(the usual crowd) it reads the columns in place instead of gathering them, so a crowd's tick
allocates what the reference path's does.

Nothing is written unless every result is finite: a non-finite velocity, position, elevation or
heading makes it return ``REFUSED`` with the table untouched, and the caller takes the reference
path, which raises the precise error naming the entities.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.finite import all_finite
from ecs_nav.core.table_columns import (
    ELEVATION,
    ENTITY,
    HAS_COLLIDER,
    HAS_VELOCITY,
    HEADING,
    IS_AGENT,
    LAYER,
    MAX_CLIMB,
    MAX_SPEED,
    POS,
    PREV_POS,
    RADIUS,
    TURN_SPEED,
    VEL,
    column,
)
from ecs_nav.motion.physics import (
    any_overlap,
    drop_velocity_into,
    integrate,
    move_on_map,
    relax_layers,
    substep_need,
    turn_heading,
)
from ecs_nav.motion.spatial import SMALL_LAYER

MOVED = 0
REFUSED = 1
"""``move_rows`` return codes: the table was updated; nothing was written (see the module doc)."""


@kernel(inline="always")
def _take_rows(rows, pos, elevation, out_pos, out_elevation):
    """``out_pos[j], out_elevation[j] = pos[rows[j]], elevation[rows[j]]`` for every j."""
    for j in range(rows.size):
        i = rows[j]
        out_pos[j, 0], out_pos[j, 1], out_elevation[j] = pos[i, 0], pos[i, 1], elevation[i]


@kernel(inline="always")
def _put_rows(rows, pos, elevation, out_pos, out_elevation):
    """``out_pos[rows[j]], out_elevation[rows[j]] = pos[j], elevation[j]`` for every j."""
    for j in range(rows.size):
        i = rows[j]
        out_pos[i, 0], out_pos[i, 1], out_elevation[i] = pos[j, 0], pos[j, 1], elevation[j]


@kernel
def move_rows(n, capacity, layout, floats, pairs, flags, ids, G, F, use_map, dt, max_substeps, min_radius, body_height,
              relax_iterations, relax_tolerance, collision_tolerance, heading_epsilon):
    """One PhysicsSystem tick of rows [0, n) of the table; returns MOVED or REFUSED.

    ``capacity``, ``layout`` and the AgentTable's buffer as ``floats``, ``pairs``, ``flags`` and
    ``ids`` (its ``float_view``, ``pair_view``, ``flag_view``, ``int64_view``:
    ``ecs_nav.core.table_columns``) hold the columns: ``prev_pos``, ``pos``, ``vel``, ``elevation``
    and ``heading`` of the moving rows (``is_agent & has_velocity``) are written;
    ``has_collider``, ``entity``, ``layer``, ``radius``, ``max_speed``, ``max_climb`` and
    ``turn_speed`` read. ``G``, ``F``, ``use_map``: the packed map, its open cells and whether there is a map
    (``ecs_nav.motion.physics``); the rest are the PhysicsSystem's settings."""
    is_agent, has_velocity = column(flags, layout[IS_AGENT], capacity), column(flags, layout[HAS_VELOCITY], capacity)
    has_collider, entity = column(flags, layout[HAS_COLLIDER], capacity), column(ids, layout[ENTITY], capacity)
    pos, vel = column(pairs, layout[POS], capacity), column(pairs, layout[VEL], capacity)
    heading, prev_pos = column(pairs, layout[HEADING], capacity), column(pairs, layout[PREV_POS], capacity)
    elevation, radius = column(floats, layout[ELEVATION], capacity), column(floats, layout[RADIUS], capacity)
    max_speed, max_climb = column(floats, layout[MAX_SPEED], capacity), column(floats, layout[MAX_CLIMB], capacity)
    turn_speed, layer = column(floats, layout[TURN_SPEED], capacity), column(ids, layout[LAYER], capacity)
    # the moving rows (the reference path's ``sel``); when every row moves (the usual crowd) the
    # per-row inputs are views of the columns, not gathered copies (a crowd's tick then allocates
    # what the reference path does)
    sel = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        if is_agent[i] and has_velocity[i]:
            sel[k] = i
            k += 1
    if k == 0:
        return MOVED
    every = k == n
    if every:
        pos0, vel_k, elev = pos[:n], vel[:n].copy(), elevation[:n].copy()
        speed_k, radius_k, climb_k, turn_k = max_speed[:n], radius[:n], max_climb[:n], turn_speed[:n]
    else:
        pos0, vel_k, elev = np.empty((k, 2)), np.empty((k, 2)), np.empty(k)
        speed_k, radius_k, climb_k, turn_k = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
        for j in range(k):
            i = sel[j]
            pos0[j, 0], pos0[j, 1] = pos[i, 0], pos[i, 1]
            vel_k[j, 0], vel_k[j, 1] = vel[i, 0], vel[i, 1]
            elev[j] = elevation[i]
            speed_k[j], radius_k[j], climb_k[j], turn_k[j] = max_speed[i], radius[i], max_climb[i], turn_speed[i]
    if not (all_finite(vel_k) and all_finite(pos0)):
        return REFUSED

    substeps = 1
    if max_substeps > 1:
        collide_k = np.empty(k, np.bool_)
        for j in range(k):
            collide_k[j] = has_collider[sel[j]] and radius_k[j] > 0.0
        need = substep_need(vel_k, speed_k, radius_k, collide_k, dt, min_radius)
        if math.isfinite(need):
            substeps = max_substeps if need >= max_substeps else max(int(math.ceil(need)), 1)

    # the rows that push (and, moving, are pushed): every row with a collider of positive radius
    n_collide = 0
    if relax_iterations > 0:
        for i in range(n):
            if has_collider[i] and radius[i] > 0.0:
                n_collide += 1
    relax = n_collide >= 2
    every_collides = n_collide == n
    c_movable = np.empty(n_collide, np.bool_)
    if every_collides:
        csel, c_radius, c_climb, c_ids, c_layer = sel[:0], radius[:n], max_climb[:n], entity[:n], layer[:n]
        for i in range(n):
            c_movable[i] = is_agent[i] and has_velocity[i]
    else:
        csel, c_radius, c_climb = np.empty(n_collide, np.int64), np.empty(n_collide), np.empty(n_collide)
        c_ids, c_layer = np.empty(n_collide, entity.dtype), np.empty(n_collide, np.int64)
        if relax:
            c = 0
            for i in range(n):
                if has_collider[i] and radius[i] > 0.0:
                    csel[c] = i
                    c_radius[c], c_climb[c] = radius[i], max_climb[i]
                    c_movable[c], c_ids[c], c_layer[c] = is_agent[i] and has_velocity[i], entity[i], layer[i]
                    c += 1

    step_dt = dt / substeps
    moved = pos0
    for _ in range(substeps):
        # 1-3. integrate, map collisions, the slide
        if use_map:
            target, out, elev_out = np.empty((k, 2)), np.empty((k, 2)), np.empty(k)
            move_on_map(G, F, moved, vel_k, speed_k, step_dt, radius_k, elev, climb_k, body_height,
                        collision_tolerance, target, out, elev_out)
            elev = elev_out
        else:
            target = out = integrate(moved, vel_k, speed_k, step_dt)
        if not all_finite(target):
            return REFUSED
        if not relax or (every and every_collides and k <= SMALL_LAYER and not any_overlap(sel[:k], out, radius_k)):
            moved = out  # (a small world none of whose agents overlap: what relaxing would leave, without copies)
            continue
        # 4-5. agent-agent relaxation over the colliding rows, each pass followed by the map
        if every:
            all_pos, all_elev = out.copy(), elev
        else:
            all_pos, all_elev = pos[:n].copy(), elevation[:n].copy()
            _put_rows(sel[:k], out, elev, all_pos, all_elev)
        if every_collides:
            c_pos, c_elev = all_pos, all_elev
        else:
            c_pos, c_elev = np.empty((n_collide, 2)), np.empty(n_collide)
            _take_rows(csel, all_pos, all_elev, c_pos, c_elev)
        # where the colliding rows stood before this step's motion (two that come to coincide part along it)
        if every:
            all_prev = moved
        else:
            all_prev = pos[:n].copy()
            for j in range(k):
                all_prev[sel[j], 0], all_prev[sel[j], 1] = moved[j, 0], moved[j, 1]
        if every_collides:
            c_prev = all_prev
        else:
            c_prev = np.empty((n_collide, 2))
            for c in range(n_collide):
                c_prev[c, 0], c_prev[c, 1] = all_prev[csel[c], 0], all_prev[csel[c], 1]
        relax_layers(G, F, use_map, c_pos, c_prev, c_elev, c_radius, c_climb, c_movable, c_ids, c_layer, body_height,
                     relax_iterations, relax_tolerance)
        if not every_collides:
            _put_rows(csel, c_pos, c_elev, all_pos, all_elev)
        if every:
            relaxed, elev = all_pos, all_elev
        else:
            relaxed = np.empty((k, 2))
            _take_rows(sel[:k], all_pos, all_elev, relaxed, elev)
        # the contacts removed motion: drop the velocity component against the correction
        correction = np.empty((k, 2))
        for j in range(k):
            correction[j, 0], correction[j, 1] = relaxed[j, 0] - out[j, 0], relaxed[j, 1] - out[j, 1]
        drop_velocity_into(vel_k, correction)
        moved = relaxed

    # 7. heading toward the velocity
    if every:
        heading_k = heading[:n].copy()
    else:
        heading_k = np.empty((k, 2))
        for j in range(k):
            heading_k[j, 0], heading_k[j, 1] = heading[sel[j], 0], heading[sel[j], 1]
    turn_heading(heading_k, vel_k, turn_k, dt, heading_epsilon)

    # the NaN guard: nothing is written unless everything is finite
    # (elevations as one (1, k) row: all_finite is then compiled in here for (k, 2)-shaped arrays only,
    # as in the SteeringSystem's kernels, and a first run without the kernels compiled ahead of time
    # may compile the two systems' kernels in two processes: ecs_nav.compile.split.units)
    if not (all_finite(moved) and all_finite(vel_k) and all_finite(heading_k)
            and all_finite(elev.reshape((1, k)))):
        return REFUSED
    for j in range(k):
        i = sel[j]
        prev_pos[i, 0], prev_pos[i, 1] = pos0[j, 0], pos0[j, 1]
        pos[i, 0], pos[i, 1] = moved[j, 0], moved[j, 1]
        vel[i, 0], vel[i, 1] = vel_k[j, 0], vel_k[j, 1]
        elevation[i] = elev[j]
        heading[i, 0], heading[i, 1] = heading_k[j, 0], heading_k[j, 1]
    return MOVED
