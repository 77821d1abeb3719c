"""Separation, alignment and cohesion under a neighbour cap, compiled: each agent's closest
``max_neighbours`` neighbours (``ecs_nav.motion.neighbours.neighbours_within``'s lists) instead of
every neighbour within its radius.

``systems/steering_reference.py``'s ``group_forces`` is the reference: per ``Collider.layer``, a
grid over that layer's agents, the neighbour lists (closest first, ties by ascending row), then
``ecs_nav.motion.steering_group``'s ``separation``, ``alignment`` and ``cohesion`` over the lists. The
kernel here does the same steps in the same order of floating-point operations, so the
SteeringSystem's compiled path gives the reference path's forces bit for bit (tests compare the
two). It writes into the slots of the forces the row kernel sums (``steering_rows.GIVEN``).
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.behaviours import B
from ecs_nav.core.finite import all_finite
from ecs_nav.motion.neighbours import neighbour_lists
from ecs_nav.motion.spatial import bin_into_grid, layer_runs, single_layer

_SEPARATION, _ALIGNMENT, _COHESION = B["separation"], B["alignment"], B["cohesion"]


@kernel(inline="always")
def _unit_seek(px, py, vx, vy, tx, ty, max_speed):
    """``normalize(steering.seek(...))`` of one agent: the unit vector of the seek force, (0, 0)
    for a zero (or NaN) one."""
    dx, dy = tx - px, ty - py
    d = math.sqrt(dx * dx + dy * dy)
    if d > 0.0:
        fx, fy = dx / d * max_speed - vx, dy / d * max_speed - vy
    else:
        fx, fy = 0.0 * max_speed - vx, 0.0 * max_speed - vy
    d = math.sqrt(fx * fx + fy * fy)
    if d > 0.0:
        return fx / d, fy / d
    return 0.0, 0.0


@kernel
def capped_group_forces(n, is_agent, has_steering, weights, pos, vel, heading, max_speed, radius, layer, n_members,
                        max_neighbours, used, given, first_slot):
    """The group behaviours of the steering rows [0, n) over each one's closest ``max_neighbours``
    (>= 0) neighbours among the agents (``is_agent`` or ``has_steering``, ``n_members`` of them)
    on its own ``layer``, strictly within its ``radius`` (n,) (``steering_survey``'s: 0 for the
    rows without a group behaviour). ``used`` (B,): the behaviours some row weights
    (``steering_survey``'s). Separation's, alignment's and cohesion's forces go to the rows of
    ``given[first_slot]``, ``given[first_slot + 1]`` and ``given[first_slot + 2]`` of the steering
    rows that weight them (the other rows are left as they are). Table columns capacity-long, read
    for rows [0, n). Returns whether every member's position is finite (nothing is written
    otherwise); the radii must be finite (the caller refuses others)."""
    rows_of = np.empty(n_members, np.int64)
    m_pos, m_layer = np.empty((n_members, 2)), np.empty(n_members, np.int64)
    m = 0
    for i in range(n):
        if is_agent[i] or has_steering[i]:
            rows_of[m] = i
            m_pos[m, 0], m_pos[m, 1] = pos[i, 0], pos[i, 1]
            m_layer[m] = layer[i]
            m += 1
    if not all_finite(m_pos):
        return False
    sep_on, ali_on, coh_on = used[_SEPARATION], used[_ALIGNMENT], used[_COHESION]
    if single_layer(m_layer):
        order, starts = np.arange(n_members), np.array([0, n_members], np.int64)
    else:
        order, starts = layer_runs(m_layer)
    for r in range(starts.shape[0] - 1):
        run = order[starts[r]:starts[r + 1]]
        k = run.shape[0]
        p_pos, p_radius = np.empty((k, 2)), np.empty(k)
        top = 0.0
        for j in range(k):
            i = rows_of[run[j]]
            p_pos[j, 0], p_pos[j, 1] = pos[i, 0], pos[i, 1]
            p_radius[j] = radius[i]
            top = max(top, radius[i])
        ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(p_pos, p_pos, max(top, 1e-6))
        offsets, found = neighbour_lists(p_pos, p_radius, True, max_neighbours, p_pos, ox, oy, 1.0 / cell, cols, rows,
                                         cell_start, cell_items)
        for j in range(k):
            i = rows_of[run[j]]
            if not has_steering[i]:
                continue
            first, last = offsets[j], offsets[j + 1]
            count = last - first
            if sep_on and weights[i, _SEPARATION] != 0.0:
                sx, sy = 0.0, 0.0
                for s in range(first, last):
                    dx = p_pos[j, 0] - p_pos[found[s], 0]
                    dy = p_pos[j, 1] - p_pos[found[s], 1]
                    d2 = dx * dx + dy * dy
                    if d2 > 0.0:
                        sx += dx / d2
                        sy += dy / d2
                given[first_slot, i, 0], given[first_slot, i, 1] = sx, sy
            if ali_on and weights[i, _ALIGNMENT] != 0.0:
                ax, ay = 0.0, 0.0
                if count > 0:
                    for s in range(first, last):
                        t = rows_of[run[found[s]]]
                        ax += heading[t, 0]
                        ay += heading[t, 1]
                    ax /= count
                    ay /= count
                    ax, ay = ax - heading[i, 0], ay - heading[i, 1]
                given[first_slot + 1, i, 0], given[first_slot + 1, i, 1] = ax, ay
            if coh_on and weights[i, _COHESION] != 0.0:
                cx, cy = 0.0, 0.0
                if count > 0:
                    for s in range(first, last):
                        cx += p_pos[found[s], 0]
                        cy += p_pos[found[s], 1]
                    cx /= count
                    cy /= count
                    cx, cy = _unit_seek(p_pos[j, 0], p_pos[j, 1], vel[i, 0], vel[i, 1], cx, cy, max_speed[i])
                given[first_slot + 2, i, 0], given[first_slot + 2, i, 1] = cx, cy
    return True
