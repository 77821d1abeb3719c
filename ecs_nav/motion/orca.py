"""ORCA: reciprocal velocity avoidance as RVO2 computes it (van den Berg, Guy, Lin, Manocha,
"Reciprocal n-Body Collision Avoidance", 2011; RVO2 2.0's ``Agent::computeNeighbors`` and
``Agent::computeNewVelocity``).

For every avoiding agent, from the positions and current velocities of all agents:

1. its obstacle neighbours: the obstacle segments (``ecs_nav.motion.orca_obstacles``) it sees
   from their free side closer than ``time_horizon_obst * max_speed + radius``, nearest first;
2. its agent neighbours: the (at most ``max_neighbours``) nearest agents closer than
   ``neighbour_dist`` (centre to centre), nearest first (ties by row);
3. one ORCA half-plane per obstacle neighbour (horizon ``time_horizon_obst``; a segment already
   covered by an earlier line adds none), then one per agent neighbour (horizon
   ``time_horizon``; when the two already overlap, the horizon is the tick ``dt``);
4. the velocity within ``max_speed`` closest to its preferred velocity that satisfies every
   half-plane (``orca_lp.linear_program2``), or, when none does, the one that least violates
   the agent half-planes while satisfying the obstacles' (``orca_lp.linear_program3``).

Each half-plane of an agent pair leaves the avoiding agent ``share`` of the velocity change:
RVO2's half (reciprocity) when the other agent avoids too and would take the pair into account,
all of it when the other does not (an agent without avoidance, a static body, an agent whose
``avoidance_mask`` misses this one's layers, or one of higher ``priority``: Godot's rules).

Which agents meet: those of the same ``Collider.layer`` whose bodies overlap in height
(``|elevation_i - elevation_j| < body_height``), where the avoiding agent's ``avoid_mask``
shares a bit with the other's ``avoid_layers`` and the other's ``priority`` is not below its
own. Obstacles are every layer's.

Where RVO2 divides by a length that is zero (two agents at one point moving alike, an agent on
an obstacle vertex), the kernel takes a direction instead of a NaN: away from the other agent,
or, at one point, along -x for the lower entity id and +x for the other; an obstacle line it
cannot orient is left out.

Shapes: positions and velocities (n, 2) float64 (m, m/s); per-agent values (n,).
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.orca_lp import RVO_EPSILON, det, linear_program2, linear_program3
from ecs_nav.motion.spatial import bin_into_grid, cell_range

ZERO_LENGTH = 1e-12
"""A vector shorter than this (m/s) has no direction: the kernel's replacements for RVO2's
divisions by zero apply."""


@kernel
def left_of(ax, ay, bx, by, cx, cy):
    """RVO2's ``leftOf(a, b, c)``: > 0 when c lies left of the line from a to b."""
    return det(ax - cx, ay - cy, bx - ax, by - ay)


@kernel
def segment_distance_sq(px, py, ax, ay, bx, by):
    """Squared distance from (px, py) to the segment a-b (RVO2's ``insertObstacleNeighbor``)."""
    ex, ey = bx - ax, by - ay
    r = ((px - ax) * ex + (py - ay) * ey) / (ex * ex + ey * ey)
    if r < 0.0:
        qx, qy = ax, ay
    elif r > 1.0:
        qx, qy = bx, by
    else:
        qx, qy = ax + r * ex, ay + r * ey
    return (px - qx) * (px - qx) + (py - qy) * (py - qy)


@kernel
def obstacle_neighbours(px, py, range_sq, O, stamp, tag, found, found_d2):
    """The segments of ``O`` seen from (px, py) (the point strictly on their right) closer
    than ``sqrt(range_sq)``, written to ``found`` nearest first (ties by vertex); returns how
    many. ``stamp`` (v,) int64 marks the segments visited with ``tag`` (a grid lists a segment
    in every cell it touches)."""
    reach = math.sqrt(range_sq)
    cx0, cx1 = cell_range(px - reach, px + reach, O.origin_x, O.inv_cell, O.cols)
    cy0, cy1 = cell_range(py - reach, py + reach, O.origin_y, O.inv_cell, O.rows)
    n = 0
    for cy in range(cy0, cy1 + 1):
        for s in range(O.cell_start[cy * O.cols + cx0], O.cell_start[cy * O.cols + cx1 + 1]):
            v = O.cell_items[s]
            if stamp[v] == tag:
                continue
            stamp[v] = tag
            w = O.next[v]
            ax, ay, bx, by = O.point[v, 0], O.point[v, 1], O.point[w, 0], O.point[w, 1]
            if left_of(ax, ay, bx, by, px, py) >= 0.0:
                continue  # seen from its solid side
            d2 = segment_distance_sq(px, py, ax, ay, bx, by)
            if d2 >= range_sq:
                continue
            b = n
            while b > 0 and (found_d2[b - 1] > d2 or (found_d2[b - 1] == d2 and found[b - 1] > v)):
                found[b] = found[b - 1]
                found_d2[b] = found_d2[b - 1]
                b -= 1
            found[b] = v
            found_d2[b] = d2
            n += 1
    return n


@kernel
def obstacle_lines(px, py, vx, vy, radius, inv_tau, O, neighbours, count, lines):
    """The ORCA lines of the obstacle segments ``neighbours[:count]`` (nearest first) for an
    agent at (px, py) moving at (vx, vy), written to ``lines`` from row 0 in RVO2's order;
    returns how many (a segment covered by an earlier line, or seen past a non-convex vertex,
    adds none)."""
    m = 0
    radius_sq = radius * radius
    for k in range(count):
        o1 = neighbours[k]
        o2 = O.next[o1]
        r1x, r1y = O.point[o1, 0] - px, O.point[o1, 1] - py
        r2x, r2y = O.point[o2, 0] - px, O.point[o2, 1] - py
        covered = False
        for j in range(m):
            if (det(inv_tau * r1x - lines[j, 0], inv_tau * r1y - lines[j, 1], lines[j, 2], lines[j, 3])
                    - inv_tau * radius >= -RVO_EPSILON
                    and det(inv_tau * r2x - lines[j, 0], inv_tau * r2y - lines[j, 1], lines[j, 2], lines[j, 3])
                    - inv_tau * radius >= -RVO_EPSILON):
                covered = True
                break
        if covered:
            continue
        dist_sq1 = r1x * r1x + r1y * r1y
        dist_sq2 = r2x * r2x + r2y * r2y
        ox, oy = O.point[o2, 0] - O.point[o1, 0], O.point[o2, 1] - O.point[o1, 1]
        s = (-r1x * ox - r1y * oy) / (ox * ox + oy * oy)
        lx, ly = -r1x - s * ox, -r1y - s * oy
        dist_sq_line = lx * lx + ly * ly
        # already in collision: the line through the origin that keeps the agent off it
        if s < 0.0 and dist_sq1 <= radius_sq:
            if O.convex[o1] and dist_sq1 > 0.0:
                n1 = math.sqrt(dist_sq1)
                lines[m, 0], lines[m, 1], lines[m, 2], lines[m, 3] = 0.0, 0.0, -r1y / n1, r1x / n1
                m += 1
            continue
        if s > 1.0 and dist_sq2 <= radius_sq:
            if O.convex[o2] and det(r2x, r2y, O.direction[o2, 0], O.direction[o2, 1]) >= 0.0 and dist_sq2 > 0.0:
                n2 = math.sqrt(dist_sq2)
                lines[m, 0], lines[m, 1], lines[m, 2], lines[m, 3] = 0.0, 0.0, -r2y / n2, r2x / n2
                m += 1
            continue
        if s >= 0.0 and s <= 1.0 and dist_sq_line <= radius_sq:
            lines[m, 0], lines[m, 1], lines[m, 2], lines[m, 3] = 0.0, 0.0, -O.direction[o1, 0], -O.direction[o1, 1]
            m += 1
            continue
        # no collision: the legs of the velocity obstacle (both from one vertex when the
        # segment is seen end on; a non-convex vertex's leg extends the cut-off line)
        if s < 0.0 and dist_sq_line <= radius_sq:
            if not O.convex[o1]:
                continue
            o2 = o1
            leg = math.sqrt(max(dist_sq1 - radius_sq, 0.0))
            llx, lly = (r1x * leg - r1y * radius) / dist_sq1, (r1x * radius + r1y * leg) / dist_sq1
            rlx, rly = (r1x * leg + r1y * radius) / dist_sq1, (-r1x * radius + r1y * leg) / dist_sq1
        elif s > 1.0 and dist_sq_line <= radius_sq:
            if not O.convex[o2]:
                continue
            o1 = o2
            leg = math.sqrt(max(dist_sq2 - radius_sq, 0.0))
            llx, lly = (r2x * leg - r2y * radius) / dist_sq2, (r2x * radius + r2y * leg) / dist_sq2
            rlx, rly = (r2x * leg + r2y * radius) / dist_sq2, (-r2x * radius + r2y * leg) / dist_sq2
        else:
            if O.convex[o1]:
                leg = math.sqrt(max(dist_sq1 - radius_sq, 0.0))
                llx, lly = (r1x * leg - r1y * radius) / dist_sq1, (r1x * radius + r1y * leg) / dist_sq1
            else:
                llx, lly = -O.direction[o1, 0], -O.direction[o1, 1]
            if O.convex[o2]:
                leg = math.sqrt(max(dist_sq2 - radius_sq, 0.0))
                rlx, rly = (r2x * leg + r2y * radius) / dist_sq2, (-r2x * radius + r2y * leg) / dist_sq2
            else:
                rlx, rly = O.direction[o1, 0], O.direction[o1, 1]
        # a leg never points into the neighbouring segment of a convex vertex: that segment's
        # cut-off line is taken instead, and a velocity projected on such a "foreign" leg adds
        # no line
        left_neighbour = O.previous[o1]
        left_foreign = False
        right_foreign = False
        if O.convex[o1] and det(llx, lly, -O.direction[left_neighbour, 0], -O.direction[left_neighbour, 1]) >= 0.0:
            llx, lly = -O.direction[left_neighbour, 0], -O.direction[left_neighbour, 1]
            left_foreign = True
        if O.convex[o2] and det(rlx, rly, O.direction[o2, 0], O.direction[o2, 1]) <= 0.0:
            rlx, rly = O.direction[o2, 0], O.direction[o2, 1]
            right_foreign = True
        # the cut-off centres, and where the current velocity projects
        lcx, lcy = inv_tau * (O.point[o1, 0] - px), inv_tau * (O.point[o1, 1] - py)
        rcx, rcy = inv_tau * (O.point[o2, 0] - px), inv_tau * (O.point[o2, 1] - py)
        cvx, cvy = rcx - lcx, rcy - lcy
        same = o1 == o2
        t = 0.5 if same else ((vx - lcx) * cvx + (vy - lcy) * cvy) / (cvx * cvx + cvy * cvy)
        t_left = (vx - lcx) * llx + (vy - lcy) * lly
        t_right = (vx - rcx) * rlx + (vy - rcy) * rly
        if (t < 0.0 and t_left < 0.0) or (same and t_left < 0.0 and t_right < 0.0):
            wx, wy = vx - lcx, vy - lcy  # on the left cut-off circle
            wn = math.sqrt(wx * wx + wy * wy)
            if wn > ZERO_LENGTH:
                ux, uy = wx / wn, wy / wn
                lines[m, 0], lines[m, 1] = lcx + radius * inv_tau * ux, lcy + radius * inv_tau * uy
                lines[m, 2], lines[m, 3] = uy, -ux
                m += 1
            continue
        if t > 1.0 and t_right < 0.0:
            wx, wy = vx - rcx, vy - rcy  # on the right cut-off circle
            wn = math.sqrt(wx * wx + wy * wy)
            if wn > ZERO_LENGTH:
                ux, uy = wx / wn, wy / wn
                lines[m, 0], lines[m, 1] = rcx + radius * inv_tau * ux, rcy + radius * inv_tau * uy
                lines[m, 2], lines[m, 3] = uy, -ux
                m += 1
            continue
        # on the left leg, the right leg or the cut-off line, whichever is closest
        dist_cutoff = math.inf
        if not (t < 0.0 or t > 1.0 or same):
            qx, qy = vx - (lcx + t * cvx), vy - (lcy + t * cvy)
            dist_cutoff = qx * qx + qy * qy
        dist_left = math.inf
        if not t_left < 0.0:
            qx, qy = vx - (lcx + t_left * llx), vy - (lcy + t_left * lly)
            dist_left = qx * qx + qy * qy
        dist_right = math.inf
        if not t_right < 0.0:
            qx, qy = vx - (rcx + t_right * rlx), vy - (rcy + t_right * rly)
            dist_right = qx * qx + qy * qy
        if dist_cutoff <= dist_left and dist_cutoff <= dist_right:
            dx, dy = -O.direction[o1, 0], -O.direction[o1, 1]
            lines[m, 0], lines[m, 1] = lcx + radius * inv_tau * -dy, lcy + radius * inv_tau * dx
            lines[m, 2], lines[m, 3] = dx, dy
            m += 1
            continue
        if dist_left <= dist_right:
            if left_foreign:
                continue
            lines[m, 0], lines[m, 1] = lcx + radius * inv_tau * -lly, lcy + radius * inv_tau * llx
            lines[m, 2], lines[m, 3] = llx, lly
            m += 1
            continue
        if right_foreign:
            continue
        dx, dy = -rlx, -rly
        lines[m, 0], lines[m, 1] = rcx + radius * inv_tau * -dy, rcy + radius * inv_tau * dx
        lines[m, 2], lines[m, 3] = dx, dy
        m += 1
    return m


@kernel
def agent_line(rpx, rpy, rvx, rvy, vx, vy, combined, share, inv_tau, inv_dt, first, lines, m):
    """Row ``m`` of ``lines``: the ORCA line of a neighbour at relative position (rpx, rpy)
    (its position minus the agent's), relative velocity (rvx, rvy) (the agent's minus its),
    ``combined`` the sum of radii; the agent at velocity (vx, vy) takes ``share`` of the
    change. ``first`` says whether the agent has the lower entity id (coincident agents)."""
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
            if det(rpx, rpy, wx, wy) > 0.0:
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
def sees(i, j, layer, elevation, body_height, avoid_layers, avoid_mask, priority):
    """Whether agent i takes agent j into account (the module docstring's rules)."""
    return (layer[i] == layer[j] and abs(elevation[i] - elevation[j]) < body_height
            and (avoid_mask[i] & avoid_layers[j]) != 0 and priority[j] >= priority[i])


@kernel
def orca_velocities(pos, velocity, preferred, radius, max_speed, avoids, visible, ids, layer, elevation, body_height,
                    neighbour_dist, max_neighbours, time_horizon, time_horizon_obst, avoid_layers, avoid_mask,
                    priority, dt, O, out):
    """Every avoiding row's new velocity (the module docstring), written to ``out`` (n, 2);
    the other rows of ``out`` get their ``preferred`` velocity.

    Args:
        pos, velocity, preferred: (n, 2) positions (m), current and preferred velocities (m/s).
        radius, max_speed: (n,) m and m/s. avoids: (n,) bool, the rows that choose a velocity.
        visible: (n,) bool, the rows others avoid (bodies: a collider of radius > 0, or avoiding).
        ids, layer: (n,) int64 entity ids (ties between coincident agents), ``Collider.layer``.
        elevation: (n,) m; body_height: m (agents further apart in height do not meet).
        neighbour_dist (m), max_neighbours, time_horizon (s), time_horizon_obst (s),
            avoid_layers, avoid_mask (int64 bit sets), priority: (n,) the Avoidance columns.
        dt: the tick, s (the horizon of agents that already overlap).
        O: the obstacles (``orca_obstacles.Obstacles``).
    """
    n = pos.shape[0]
    for i in range(n):
        out[i, 0] = preferred[i, 0]
        out[i, 1] = preferred[i, 1]
    reach = 0.0
    most_neighbours = 0
    any_avoid = False
    for i in range(n):
        if avoids[i]:
            any_avoid = True
            reach = max(reach, neighbour_dist[i])
            most_neighbours = max(most_neighbours, max_neighbours[i])
    if not any_avoid:
        return
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(pos, pos, max(reach, 1e-6))
    inv_cell = 1.0 / cell
    v = O.point.shape[0]
    most_lines = v + most_neighbours
    lines = np.empty((most_lines, 4))
    projected = np.empty((most_lines, 4))
    stamp = np.full(v, -1, np.int64)
    found_obstacles = np.empty(v, np.int64)
    found_obstacle_d2 = np.empty(v)
    near = np.empty(most_neighbours + 1, np.int64)
    near_d2 = np.empty(most_neighbours + 1)
    result = np.empty(2)
    inv_dt = 1.0 / dt
    for i in range(n):
        if not avoids[i]:
            continue
        px, py = pos[i, 0], pos[i, 1]
        vx, vy = velocity[i, 0], velocity[i, 1]
        # obstacle lines
        m = 0
        if v > 0:
            obstacle_range = time_horizon_obst[i] * max_speed[i] + radius[i]
            count = obstacle_neighbours(px, py, obstacle_range * obstacle_range, O, stamp, i, found_obstacles,
                                        found_obstacle_d2)
            m = obstacle_lines(px, py, vx, vy, radius[i], 1.0 / time_horizon_obst[i], O, found_obstacles, count,
                               lines)
        obstacle_count = m
        # agent neighbours: the nearest max_neighbours within neighbour_dist, by (distance, row)
        k = 0
        cap = max_neighbours[i]
        if cap > 0:
            range_sq = neighbour_dist[i] * neighbour_dist[i]
            r = neighbour_dist[i]
            cx0, cx1 = cell_range(px - r, px + r, ox, inv_cell, cols)
            cy0, cy1 = cell_range(py - r, py + r, oy, inv_cell, rows)
            for cy in range(cy0, cy1 + 1):
                for s in range(cell_start[cy * cols + cx0], cell_start[cy * cols + cx1 + 1]):
                    j = cell_items[s]
                    if j == i or not visible[j]:
                        continue
                    ddx, ddy = pos[j, 0] - px, pos[j, 1] - py
                    d2 = ddx * ddx + ddy * ddy
                    if d2 >= range_sq or (k == cap and (d2 > near_d2[k - 1] or (d2 == near_d2[k - 1]
                                                                               and j > near[k - 1]))):
                        continue
                    if not sees(i, j, layer, elevation, body_height, avoid_layers, avoid_mask, priority):
                        continue
                    b = k if k < cap else cap - 1
                    while b > 0 and (near_d2[b - 1] > d2 or (near_d2[b - 1] == d2 and near[b - 1] > j)):
                        near[b] = near[b - 1]
                        near_d2[b] = near_d2[b - 1]
                        b -= 1
                    near[b] = j
                    near_d2[b] = d2
                    if k < cap:
                        k += 1
        inv_tau = 1.0 / time_horizon[i]
        for a in range(k):
            j = near[a]
            reciprocal = avoids[j] and sees(j, i, layer, elevation, body_height, avoid_layers, avoid_mask, priority)
            agent_line(pos[j, 0] - px, pos[j, 1] - py, vx - velocity[j, 0], vy - velocity[j, 1], vx, vy,
                       radius[i] + radius[j], 0.5 if reciprocal else 1.0, inv_tau, inv_dt,
                       ids[i] < ids[j] or (ids[i] == ids[j] and i < j), lines, m)
            m += 1
        failed = linear_program2(lines, m, max_speed[i], preferred[i, 0], preferred[i, 1], False, result)
        if failed < m:
            linear_program3(lines, m, obstacle_count, failed, max_speed[i], result, projected)
        out[i, 0] = result[0]
        out[i, 1] = result[1]
