"""The SteeringSystem's compiled path: every steering row's behaviours, their weighted truncated
sum and seed 004's velocity update in one pass over the agent table's columns.

``ecs_nav.steering`` holds the behaviours as vectorised functions (the reference: Buckland's
formulas, tested on their own); this kernel does the same arithmetic one row at a time, in the
same order of operations, so that its forces and velocities equal the reference path's
(``SteeringSystem(compiled=False)``; tests compare the two). It exists for speed at both ends:
a small world pays one kernel call instead of a few hundred numpy calls, a crowd pays no
(k, 2) temporaries per behaviour.

It handles rows whose combiner is the weighted truncated sum (code 0). The inputs that need a
search or noise are computed before the call, only for the rows and behaviours that use them:
wander's uniforms, the flow field sampled at each agent, obstacle avoidance, the target
entities' rows and the neighbour sums of the group behaviours. Wall avoidance runs here
(``ecs_nav.steering.wall_force``).

Nothing is written unless every steering row passes: a combiner other than 0, a mass <= 0 or a
non-finite force, velocity or wander target makes the kernel return ``REFUSED`` with the table
untouched, and the caller takes the reference path, which raises the precise error (or
combines the prioritised and dithered rows).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ecs_nav.behaviours import B
from ecs_nav.spatial import bin_into_grid
from ecs_nav.steering import (
    DECELERATION_TWEAKER,
    HEAD_ON_RELATIVE_HEADING,
    TURNAROUND_COEFFICIENT,
    flock_sums,
    wall_force,
)
from ecs_nav.table import FOLLOW_ARRIVE, FOLLOW_SEEK, FOLLOW_STOPPED

WRITTEN = 0
REFUSED = 1
"""``steer_rows`` return codes: the table was updated; nothing was written (see the module doc)."""

STOP_SPEED = 1e-9
"""A STOPPED (path-following) agent slower than this is set to exactly zero velocity."""

GROUP_NONE = 0
GROUP_ALL = 1
GROUP_FORCES = 2
"""``group_mode``: no group behaviour; every neighbour within the radius counts (the kernel bins
the agents and sums over them as ``ecs_nav.steering.flock`` does); separation, alignment and
cohesion forces computed beforehand (a neighbour cap)."""

_SEEK, _ARRIVE, _FLEE, _PURSUIT, _EVADE = B["seek"], B["arrive"], B["flee"], B["pursuit"], B["evade"]
_WANDER, _OBSTACLE, _WALL = B["wander"], B["obstacle_avoidance"], B["wall_avoidance"]
_SEPARATION, _ALIGNMENT, _COHESION = B["separation"], B["alignment"], B["cohesion"]
_FOLLOW_PATH, _FOLLOW_FLOW = B["follow_path"], B["follow_flow"]
_NEG_TURNAROUND = -TURNAROUND_COEFFICIENT


@nb.njit(cache=True)
def _seek(px, py, vx, vy, tx, ty, max_speed):
    dx = tx - px
    dy = ty - py
    d = math.sqrt(dx * dx + dy * dy)
    if d > 0.0:
        return dx / d * max_speed - vx, dy / d * max_speed - vy
    return 0.0 * max_speed - vx, 0.0 * max_speed - vy


@nb.njit(cache=True)
def _flee(px, py, vx, vy, tx, ty, max_speed, panic):
    ax = px - tx
    ay = py - ty
    if not (ax * ax + ay * ay <= panic * panic):
        return 0.0, 0.0
    d = math.sqrt(ax * ax + ay * ay)
    if d > 0.0:
        return ax / d * max_speed - vx, ay / d * max_speed - vy
    return 0.0 * max_speed - vx, 0.0 * max_speed - vy


@nb.njit(cache=True)
def _arrive(px, py, vx, vy, tx, ty, max_speed, deceleration):
    dx = tx - px
    dy = ty - py
    dist = math.sqrt(dx * dx + dy * dy)
    if not (dist > 0.0):
        return 0.0, 0.0
    speed = dist / (deceleration * DECELERATION_TWEAKER)
    if not (speed < max_speed or speed != speed):  # np.minimum: NaN wins
        speed = max_speed
    per_dist = speed / dist
    return dx * per_dist - vx, dy * per_dist - vy


@nb.njit(cache=True)
def _truncate(x, y, max_len):
    d = math.sqrt(x * x + y * y)
    if d > max_len:
        scale = max_len / d
        return x * scale, y * scale
    return x, y


@nb.njit(cache=True)
def _group_sums(n, is_agent, has_steering, weights, pos, heading, neighbour_radius, with_heading):
    """``flock``'s neighbour pass over the agents (``is_agent`` or ``has_steering``) among rows
    [0, n): (index (n,) of each row among them or -1, count, sums); radius 0 for the rows
    without a group behaviour. None for a non-finite position or radius (the reference path's
    ``build_grid`` raises)."""
    m = 0
    for i in range(n):
        if is_agent[i] or has_steering[i]:
            m += 1
    index = np.full(n, -1, np.int64)
    gpos = np.empty((m, 2))
    gheading = np.empty((m, 2))
    radius = np.zeros(m)
    g = 0
    largest = 0.0
    finite = True
    for i in range(n):
        if not (is_agent[i] or has_steering[i]):
            continue
        index[i] = g
        gpos[g, 0], gpos[g, 1] = pos[i, 0], pos[i, 1]
        gheading[g, 0], gheading[g, 1] = heading[i, 0], heading[i, 1]
        finite = finite and math.isfinite(pos[i, 0]) and math.isfinite(pos[i, 1])
        if has_steering[i] and (weights[i, _SEPARATION] != 0.0 or weights[i, _ALIGNMENT] != 0.0
                                or weights[i, _COHESION] != 0.0):
            radius[g] = neighbour_radius[i]
            finite = finite and math.isfinite(radius[g])
            largest = max(largest, radius[g])
        g += 1
    if not finite:
        return None
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(gpos, gpos, max(largest, 1e-6))
    count, sums = flock_sums(gpos, gheading, radius, with_heading, ox, oy, 1.0 / cell, cols, rows, cell_start,
                             cell_items)
    return index, count, sums


@nb.njit(cache=True)
def steer_rows(n, has_steering, has_velocity, combiner, weights, pos, vel, heading, max_speed, max_force, mass,
               deceleration, panic_distance, threat_range, has_steer_target, steer_target, follow_state,
               wander_target, wander_radius, wander_distance, wander_jitter, feeler_length, force,
               is_agent, neighbour_radius, target_row, uniforms, obstacle, flow, group_mode, with_heading,
               group_forces, wall_a, wall_b, ox, oy, inv_cell, cols, rows, cell_start, cell_items, dt):
    """Steer rows [0, n) of the table where ``has_steering``; returns WRITTEN or REFUSED.

    Table columns (capacity-long, as the AgentTable holds them): ``force``, ``vel`` and
    ``wander_target`` are written, the rest read. Per-row inputs, indexed by table row:
    ``target_row`` (n,) the target entity's row or -1 (empty when no row pursues, evades or
    flees); ``uniforms`` (n, 2) wander's ``entity_uniforms`` (empty without wander);
    ``obstacle`` (n, 2) obstacle avoidance forces (empty: no obstacles or no row avoids them);
    ``flow`` (n, 2) the flow direction at each agent (empty: no field). Group behaviours by
    ``group_mode``: GROUP_ALL sums over every neighbour within ``neighbour_radius`` among the
    rows that are agents or steer (``is_agent``; headings too with ``with_heading``, for
    alignment); GROUP_FORCES reads ``group_forces`` (n, 3, 2) (separation, alignment,
    cohesion). Walls: end points (w, 2) and their grid's kernel args (w = 0: no walls).
    """
    group_index = np.zeros(0, np.int64)
    group_count = np.zeros(0, np.int64)
    group_sums = np.zeros((0, 6))
    if group_mode == GROUP_ALL:
        neighbours = _group_sums(n, is_agent, has_steering, weights, pos, heading, neighbour_radius, with_heading)
        if neighbours is None:
            return REFUSED
        group_index, group_count, group_sums = neighbours
    out_force = np.empty((n, 2))
    out_vel = np.empty((n, 2))
    out_wander = np.empty((n, 2))
    has_uniforms = uniforms.shape[0] > 0
    has_obstacles = obstacle.shape[0] > 0
    has_flow = flow.shape[0] > 0
    has_walls = wall_a.shape[0] > 0
    for i in range(n):
        if not has_steering[i]:
            continue
        if combiner[i] != 0:
            return REFUSED
        w = weights[i]
        px, py = pos[i, 0], pos[i, 1]
        vx, vy = vel[i, 0], vel[i, 1]
        hx, hy = heading[i, 0], heading[i, 1]
        ms = max_speed[i]
        has_t = has_steer_target[i]
        tx, ty = steer_target[i, 0], steer_target[i, 1]
        sx = 0.0
        sy = 0.0
        # the reference path's order of accumulation (systems/steering.py)
        if w[_SEEK] != 0.0 and has_t:
            fx, fy = _seek(px, py, vx, vy, tx, ty, ms)
            sx += fx * w[_SEEK]
            sy += fy * w[_SEEK]
        if w[_ARRIVE] != 0.0 and has_t:
            fx, fy = _arrive(px, py, vx, vy, tx, ty, ms, deceleration[i])
            sx += fx * w[_ARRIVE]
            sy += fy * w[_ARRIVE]
        te = target_row[i] if (w[_FLEE] != 0.0 or w[_PURSUIT] != 0.0 or w[_EVADE] != 0.0) else -1
        if w[_FLEE] != 0.0 and (te >= 0 or has_t):
            if te >= 0:
                fx, fy = _flee(px, py, vx, vy, pos[te, 0], pos[te, 1], ms, panic_distance[i])
            else:
                fx, fy = _flee(px, py, vx, vy, tx, ty, ms, panic_distance[i])
            sx += fx * w[_FLEE]
            sy += fy * w[_FLEE]
        if w[_PURSUIT] != 0.0 and te >= 0:
            ex, ey = pos[te, 0], pos[te, 1]
            evx, evy = vel[te, 0], vel[te, 1]
            to_x = ex - px
            to_y = ey - py
            relative_heading = hx * heading[te, 0] + hy * heading[te, 1]
            head_on = (to_x * hx + to_y * hy > 0.0) and relative_heading < HEAD_ON_RELATIVE_HEADING
            closing = ms + math.sqrt(evx * evx + evy * evy)
            look = math.sqrt(to_x * to_x + to_y * to_y) / closing if closing > 0.0 else 0.0
            d = math.sqrt(to_x * to_x + to_y * to_y)
            ux, uy = (to_x / d, to_y / d) if d > 0.0 else (0.0, 0.0)
            look = look + (hx * ux + hy * uy - 1.0) * _NEG_TURNAROUND
            if head_on:
                look = 0.0
            fx, fy = _seek(px, py, vx, vy, ex + evx * look, ey + evy * look, ms)
            sx += fx * w[_PURSUIT]
            sy += fy * w[_PURSUIT]
        if w[_EVADE] != 0.0 and te >= 0:
            ex, ey = pos[te, 0], pos[te, 1]
            evx, evy = vel[te, 0], vel[te, 1]
            to_x = ex - px
            to_y = ey - py
            dist = math.sqrt(to_x * to_x + to_y * to_y)
            closing = ms + math.sqrt(evx * evx + evy * evy)
            look = dist / closing if closing > 0.0 else 0.0
            threat = threat_range[i]
            if dist * dist <= threat * threat:
                fx, fy = _flee(px, py, vx, vy, ex + evx * look, ey + evy * look, ms, np.inf)
            else:
                fx, fy = 0.0, 0.0
            sx += fx * w[_EVADE]
            sy += fy * w[_EVADE]
        if w[_WANDER] != 0.0 and has_uniforms:
            jitter = wander_jitter[i] * dt
            wx = wander_target[i, 0] + uniforms[i, 0] * jitter
            wy = wander_target[i, 1] + uniforms[i, 1] * jitter
            d = math.sqrt(wx * wx + wy * wy)
            if d > 0.0:
                wx, wy = wx / d, wy / d
            else:
                wx, wy = 0.0, 0.0
            if math.sqrt(wx * wx + wy * wy) == 0.0:
                wx, wy = 1.0, 0.0
            wx = wx * wander_radius[i]
            wy = wy * wander_radius[i]
            out_wander[i, 0], out_wander[i, 1] = wx, wy
            lx = wx + wander_distance[i]
            ly = wy + 0.0
            fx, fy = lx * hx - ly * hy, lx * hy + ly * hx
            sx += fx * w[_WANDER]
            sy += fy * w[_WANDER]
        if w[_OBSTACLE] != 0.0 and has_obstacles:
            sx += obstacle[i, 0] * w[_OBSTACLE]
            sy += obstacle[i, 1] * w[_OBSTACLE]
        if w[_WALL] != 0.0 and has_walls:
            fx, fy = wall_force(px, py, hx, hy, feeler_length[i], wall_a, wall_b, ox, oy, inv_cell, cols, rows,
                                cell_start, cell_items)
            sx += fx * w[_WALL]
            sy += fy * w[_WALL]
        if group_mode == GROUP_ALL:
            g = group_index[i]
            count = group_count[g]
            if w[_SEPARATION] != 0.0:
                sx += group_sums[g, 0] * w[_SEPARATION]
                sy += group_sums[g, 1] * w[_SEPARATION]
            if w[_ALIGNMENT] != 0.0:
                fx, fy = 0.0, 0.0
                if count > 0:
                    fx = group_sums[g, 4] / count - hx
                    fy = group_sums[g, 5] / count - hy
                sx += fx * w[_ALIGNMENT]
                sy += fy * w[_ALIGNMENT]
            if w[_COHESION] != 0.0:
                fx, fy = 0.0, 0.0
                if count > 0:
                    fx, fy = _seek(px, py, vx, vy, group_sums[g, 2] / count, group_sums[g, 3] / count, ms)
                    d = math.sqrt(fx * fx + fy * fy)
                    if d > 0.0:
                        fx, fy = fx / d, fy / d
                    else:
                        fx, fy = 0.0, 0.0
                sx += fx * w[_COHESION]
                sy += fy * w[_COHESION]
        elif group_mode == GROUP_FORCES:
            for slot, b in ((0, _SEPARATION), (1, _ALIGNMENT), (2, _COHESION)):
                if w[b] != 0.0:
                    sx += group_forces[i, slot, 0] * w[b]
                    sy += group_forces[i, slot, 1] * w[b]
        state = follow_state[i]
        stopped = False
        if w[_FOLLOW_PATH] != 0.0:
            if state == FOLLOW_SEEK and has_t:
                fx, fy = _seek(px, py, vx, vy, tx, ty, ms)
                sx += fx * w[_FOLLOW_PATH]
                sy += fy * w[_FOLLOW_PATH]
            elif state == FOLLOW_ARRIVE and has_t:
                fx, fy = _arrive(px, py, vx, vy, tx, ty, ms, deceleration[i])
                sx += fx * w[_FOLLOW_PATH]
                sy += fy * w[_FOLLOW_PATH]
            elif state == FOLLOW_STOPPED:
                stopped = True
        if w[_FOLLOW_FLOW] != 0.0 and has_flow:
            fx = flow[i, 0] * ms - vx
            fy = flow[i, 1] * ms - vy
            sx += fx * w[_FOLLOW_FLOW]
            sy += fy * w[_FOLLOW_FLOW]
        if stopped:  # it holds still: only the brake acts
            per_second = mass[i] / dt
            sx = -vx * per_second * w[_FOLLOW_PATH]
            sy = -vy * per_second * w[_FOLLOW_PATH]
        mf = max_force[i]
        fx, fy = _truncate(sx, sy, mf)
        if not (math.isfinite(fx) and math.isfinite(fy)):
            return REFUSED
        out_force[i, 0], out_force[i, 1] = fx, fy
        if w[_WANDER] != 0.0 and has_uniforms:
            if not (math.isfinite(out_wander[i, 0]) and math.isfinite(out_wander[i, 1])):
                return REFUSED
        if has_velocity[i]:
            m = mass[i]
            if not (m > 0.0):
                return REFUSED
            ax, ay = _truncate(fx, fy, mf)
            nvx, nvy = _truncate(vx + ax / m * dt, vy + ay / m * dt, ms)
            if not (math.isfinite(nvx) and math.isfinite(nvy)):
                return REFUSED
            if stopped and math.hypot(nvx, nvy) < STOP_SPEED:
                nvx, nvy = 0.0, 0.0
            out_vel[i, 0], out_vel[i, 1] = nvx, nvy
    for i in range(n):
        if not has_steering[i]:
            continue
        force[i, 0], force[i, 1] = out_force[i, 0], out_force[i, 1]
        if has_velocity[i]:
            vel[i, 0], vel[i, 1] = out_vel[i, 0], out_vel[i, 1]
        if weights[i, _WANDER] != 0.0 and has_uniforms:
            wander_target[i, 0], wander_target[i, 1] = out_wander[i, 0], out_wander[i, 1]
    return WRITTEN
