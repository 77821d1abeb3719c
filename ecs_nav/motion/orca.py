"""ORCA: reciprocal velocity avoidance as RVO2 computes it (van den Berg, Guy, Lin, Manocha,
"Reciprocal n-Body Collision Avoidance", 2011; RVO2 2.0's ``Agent::computeNeighbors`` and
``Agent::computeNewVelocity``).

For every avoiding agent, from the positions and current velocities of all agents:

1. its obstacle neighbours: the obstacle segments (``ecs_nav.motion.orca_obstacles``) it sees
   from their free side closer than ``time_horizon_obst * max_speed + radius``, nearest first;
2. its agent neighbours: the (at most ``max_neighbours``) nearest agents closer than
   ``neighbour_dist`` (centre to centre), nearest first (ties by row;
   ``ecs_nav.motion.orca_neighbours``);
3. one ORCA half-plane per obstacle neighbour (horizon ``time_horizon_obst``; a segment already
   covered by an earlier line adds none), then one per agent neighbour (horizon
   ``time_horizon``; when the two already overlap, the horizon is the tick ``dt``);
4. the velocity within ``max_speed`` closest to its preferred velocity that satisfies every
   half-plane (``orca_lp.linear_program2``), or, when none does, the one that least violates
   the agent half-planes while satisfying the obstacles' (``orca_lp.linear_program3``).

An agent with a ``side`` (+1: pass on the right, -1: the left; 0, RVO2's agents, has none)
drifts to that side while agents walk against it in its way and passes oncoming neighbours on
it (``ecs_nav.motion.orca_lanes``): opposing streams form lanes.

Each half-plane of an agent pair leaves the avoiding agent ``share`` of the velocity change:
RVO2's half (reciprocity) when the other agent avoids too and would take the pair into account,
all of it when the other does not (an agent without avoidance, a static body, an agent whose
``avoidance_mask`` misses this one's layers, or one of higher ``priority``: Godot's rules).

Which agents meet: ``orca_neighbours.sees_rows`` (the same ``Collider.layer``, bodies that overlap in
height, Godot's mask and priority). Obstacles are every layer's (``ecs_nav.motion.orca_walls``).

Where RVO2 divides by a length that is zero (two agents at one point moving alike, an agent on
an obstacle vertex), the kernel takes a direction instead of a NaN: away from the other agent,
or, at one point, along -x for the lower entity id and +x for the other; an obstacle line it
cannot orient is left out.

``agent_half_planes`` is the same choice for one agent, returning its half-planes, its
preferred velocity after the drift and the velocity chosen (the viewer's "avoidance" layer).

Shapes: positions and velocities (n, 2) float64 (m, m/s); per-agent values (n,).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.orca_lanes import SIDE_TOLERANCE, drifted, heading, oncoming_rows, passing_side
from ecs_nav.motion.orca_lp import ZERO_LENGTH, det, linear_program2, linear_program3
from ecs_nav.motion.orca_neighbours import Crowd, agent_grid, nearest_rows, sees_rows
from ecs_nav.motion.orca_walls import obstacle_lines, obstacle_neighbours


class Scratch(NamedTuple):
    """Work arrays of one agent's choice, reused from agent to agent: ``lines`` and ``projected``
    (m, 4) half-planes (the obstacles' first), ``stamp``/``found``/``found_d2`` (v,) for the
    obstacle query, ``near``/``near_d2`` the agent neighbours, ``result`` (2,) the velocity."""

    lines: np.ndarray
    projected: np.ndarray
    stamp: np.ndarray
    found: np.ndarray
    found_d2: np.ndarray
    near: np.ndarray
    near_d2: np.ndarray
    result: np.ndarray


@kernel
def scratch(vertices, most_neighbours):
    """``Scratch`` for ``vertices`` obstacle vertices and at most ``most_neighbours`` agents."""
    most_lines = vertices + most_neighbours
    return Scratch(np.empty((most_lines, 4)), np.empty((most_lines, 4)), np.full(vertices, -1, np.int64),
                   np.empty(vertices, np.int64), np.empty(vertices), np.empty(most_neighbours + 1, np.int64),
                   np.empty(most_neighbours + 1), np.empty(2))


@kernel
def agent_line(rpx, rpy, rvx, rvy, vx, vy, combined, share, inv_tau, inv_dt, first, side, lines, m):
    """Row ``m`` of ``lines``: the ORCA line of a neighbour at relative position (rpx, rpy)
    (its position minus the agent's), relative velocity (rvx, rvy) (the agent's minus its),
    ``combined`` the sum of radii; the agent at velocity (vx, vy) takes ``share`` of the
    change. ``first`` says whether the agent has the lower entity id (coincident agents).
    ``side`` (+1, -1; 0: none) is the side it passes this neighbour on when the two are on
    course to collide (``orca_lanes``)."""
    dist_sq = rpx * rpx + rpy * rpy
    combined_sq = combined * combined
    if dist_sq > combined_sq:
        wx, wy = rvx - inv_tau * rpx, rvy - inv_tau * rpy  # from the cut-off centre to the relative velocity
        w_len_sq = wx * wx + wy * wy
        dot = wx * rpx + wy * rpy
        if dot < 0.0 and dot * dot > combined_sq * w_len_sq:
            w_len = math.sqrt(w_len_sq)  # on the cut-off circle
            ux, uy = wx / w_len, wy / w_len
            dx, dy = uy, -ux
            scale = combined * inv_tau - w_len
            upx, upy = scale * ux, scale * uy
        else:
            leg = math.sqrt(dist_sq - combined_sq)  # on a leg
            left = det(rpx, rpy, wx, wy) > 0.0
            if side != 0.0:
                # on course to collide (the relative velocity inside the cone), and not already
                # missing on the other side by more than the tolerance: the leg on its side
                along = rvx * rpx + rvy * rpy
                rv_sq = rvx * rvx + rvy * rvy
                if (along > 0.0 and along * along > rv_sq * (dist_sq - combined_sq)
                        and side * det(rpx, rpy, rvx, rvy) < SIDE_TOLERANCE * combined * math.sqrt(rv_sq)):
                    left = side < 0.0
            if left:
                dx, dy = (rpx * leg - rpy * combined) / dist_sq, (rpx * combined + rpy * leg) / dist_sq
            else:
                dx, dy = -(rpx * leg + rpy * combined) / dist_sq, -(-rpx * combined + rpy * leg) / dist_sq
            along = rvx * dx + rvy * dy
            upx, upy = along * dx - rvx, along * dy - rvy
    else:
        # overlapping: the cut-off circle of one tick
        wx, wy = rvx - inv_dt * rpx, rvy - inv_dt * rpy
        w_len = math.sqrt(wx * wx + wy * wy)
        if w_len > ZERO_LENGTH:
            ux, uy = wx / w_len, wy / w_len
        else:
            d = math.sqrt(dist_sq)
            if d > ZERO_LENGTH:
                ux, uy = -rpx / d, -rpy / d  # straight away from the other
            else:
                ux, uy = (-1.0 if first else 1.0), 0.0
        dx, dy = uy, -ux
        scale = combined * inv_dt - w_len
        upx, upy = scale * ux, scale * uy
    lines[m, 0] = vx + share * upx
    lines[m, 1] = vy + share * upy
    lines[m, 2] = dx
    lines[m, 3] = dy


@kernel
def choose_velocities(C, body_height, dt, O, G, S, out, only):
    """Every avoiding row's new velocity (the module docstring) written to ``out`` (n, 2), or,
    with ``only`` >= 0, that row's alone (its half-planes then stay in ``S.lines``). Returns, for
    the last row chosen, (how many half-planes it has, how many of them, first, are the
    obstacles'; its preferred velocity's x and y after the drift of its side)."""
    # every array once, as a local: numba would count a reference to each array of a named tuple
    # handed to a function per agent, or read from it in the loops (orca_neighbours.nearest_rows)
    pos, velocity, preferred, radius, max_speed, avoids, visible, ids, layer, elevation, neighbour_dist, \
        max_neighbours, time_horizon, time_horizon_obst, avoid_layers, avoid_mask, priority, side = C
    lines, projected, stamp, found, found_d2, near, near_d2, result = S
    origin_x, origin_y, cell, inv_cell, cols, rows, cell_start, cell_items = G
    has_obstacles = O.point.shape[0] > 0
    inv_dt = 1.0 / dt
    m, obstacle_count, prx, pry = 0, 0, 0.0, 0.0
    for i in range(pos.shape[0]):
        if not avoids[i] or (only >= 0 and i != only):
            continue
        px, py = pos[i, 0], pos[i, 1]
        vx, vy = velocity[i, 0], velocity[i, 1]
        m = 0
        if has_obstacles:
            obstacle_range = time_horizon_obst[i] * max_speed[i] + radius[i]
            count = obstacle_neighbours(px, py, obstacle_range * obstacle_range, O, stamp, i, found, found_d2)
            m = obstacle_lines(px, py, vx, vy, radius[i], 1.0 / time_horizon_obst[i], O, found, count, lines)
        obstacle_count = m
        k = nearest_rows(i, max_neighbours[i], neighbour_dist[i] * neighbour_dist[i], body_height, pos, visible, layer,
                         elevation, avoid_layers, avoid_mask, priority, origin_x, origin_y, cell, inv_cell, cols, rows,
                         cell_start, cell_items, near, near_d2)
        prx, pry = preferred[i, 0], preferred[i, 1]
        hx, hy, speed = heading(prx, pry) if side[i] != 0.0 else (0.0, 0.0, 0.0)
        inv_tau = 1.0 / time_horizon[i]
        for a in range(k):
            j = near[a]
            reciprocal = avoids[j] and sees_rows(j, i, layer, elevation, body_height, avoid_layers, avoid_mask,
                                                 priority)
            agent_line(pos[j, 0] - px, pos[j, 1] - py, vx - velocity[j, 0], vy - velocity[j, 1], vx, vy,
                       radius[i] + radius[j], 0.5 if reciprocal else 1.0, inv_tau, inv_dt,
                       ids[i] < ids[j] or (ids[i] == ids[j] and i < j), passing_side(i, j, hx, hy, pos, velocity, side),
                       lines, m)
            m += 1
        if side[i] != 0.0 and speed > 0.0:
            flow = oncoming_rows(i, hx, hy, pos, velocity, visible, max_speed[i], origin_x, origin_y, inv_cell, cols,
                                 rows, cell_start, cell_items)
            prx, pry = drifted(side[i], prx, pry, flow)
        failed = linear_program2(lines, m, max_speed[i], prx, pry, False, result)
        if failed < m:
            linear_program3(lines, m, obstacle_count, failed, max_speed[i], result, projected)
        out[i, 0] = result[0]
        out[i, 1] = result[1]
    return m, obstacle_count, prx, pry


@kernel
def crowd_reach(C):
    """(the largest ``neighbour_dist`` of the avoiding rows, m; their largest ``max_neighbours``;
    whether any row avoids)."""
    reach = 0.0
    most_neighbours = 0
    any_avoid = False
    for i in range(C.pos.shape[0]):
        if C.avoids[i]:
            any_avoid = True
            reach = max(reach, C.neighbour_dist[i])
            most_neighbours = max(most_neighbours, C.max_neighbours[i])
    return reach, most_neighbours, any_avoid


@kernel
def orca_velocities(pos, velocity, preferred, radius, max_speed, avoids, visible, ids, layer, elevation, body_height,
                    neighbour_dist, max_neighbours, time_horizon, time_horizon_obst, avoid_layers, avoid_mask,
                    priority, side, dt, O, out):
    """Every avoiding row's new velocity (the module docstring), written to ``out`` (n, 2);
    the other rows of ``out`` get their ``preferred`` velocity.

    Args:
        pos, velocity, preferred: (n, 2) positions (m), current and preferred velocities (m/s).
        radius, max_speed: (n,) m and m/s. avoids: (n,) bool, the rows that choose a velocity.
        visible: (n,) bool, the rows others avoid (bodies: a collider of radius > 0, or avoiding).
        ids, layer: (n,) int64 entity ids (ties between coincident agents), ``Collider.layer``.
        elevation: (n,) m; body_height: m (agents further apart in height do not meet).
        neighbour_dist (m), max_neighbours, time_horizon (s), time_horizon_obst (s),
            avoid_layers, avoid_mask (int64 bit sets), priority, side (float64: +1 right,
            -1 left, 0 none): (n,) the Avoidance columns.
        dt: the tick, s (the horizon of agents that already overlap).
        O: the obstacles (``orca_obstacles.Obstacles``).
    """
    n = pos.shape[0]
    for i in range(n):
        out[i, 0] = preferred[i, 0]
        out[i, 1] = preferred[i, 1]
    C = Crowd(pos, velocity, preferred, radius, max_speed, avoids, visible, ids, layer, elevation, neighbour_dist,
              max_neighbours, time_horizon, time_horizon_obst, avoid_layers, avoid_mask, priority, side)
    reach, most_neighbours, any_avoid = crowd_reach(C)
    if not any_avoid:
        return
    choose_velocities(C, body_height, dt, O, agent_grid(pos, reach), scratch(O.point.shape[0], most_neighbours), out,
                      -1)


def agent_half_planes(row: int, crowd: Crowd, body_height: float, dt: float, obstacles) -> dict:
    """What ORCA weighs for one avoiding row of ``crowd`` (``orca_neighbours.Crowd``), as
    ``orca_velocities`` computes it: ``lines`` (m, 4) its half-planes (a point on the boundary,
    m/s, and the boundary's unit direction; the permitted velocities on its left), the first
    ``obstacle_lines`` of them the walls'; ``preferred`` (2,) its preferred velocity after the
    drift of its side; ``chosen`` (2,) the velocity chosen, m/s. A row that does not avoid has
    no lines and keeps its preferred velocity."""
    preferred = np.array(crowd.preferred[row], dtype=np.float64)
    if not crowd.avoids[row]:
        return {"lines": np.zeros((0, 4)), "obstacle_lines": 0, "preferred": preferred, "chosen": preferred.copy()}
    reach, most_neighbours, _ = crowd_reach(crowd)
    work = scratch(obstacles.point.shape[0], most_neighbours)
    out = np.array(crowd.preferred, dtype=np.float64)
    m, obstacle_count, prx, pry = choose_velocities(crowd, float(body_height), float(dt), obstacles,
                                                    agent_grid(crowd.pos, reach), work, out, int(row))
    return {"lines": work.lines[:m].copy(), "obstacle_lines": int(obstacle_count), "preferred": np.array([prx, pry]),
            "chosen": out[row].copy()}
