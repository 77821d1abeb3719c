"""The ORCA half-planes of the map's walls, as RVO2 2.0 computes them (``Agent::computeNeighbors``'
obstacle query and the obstacle part of ``Agent::computeNewVelocity``), over the flat obstacle
arrays of ``ecs_nav.motion.orca_obstacles``:

* ``obstacle_neighbours``: the segments an agent sees from their free side within its range,
  nearest first;
* ``obstacle_lines``: one half-plane of velocities per segment that keeps the agent off it for
  ``time_horizon_obst`` seconds (a segment already covered by an earlier line adds none).

A half-plane is a row ``(px, py, dx, dy)``: a point on its boundary and the boundary's unit
direction, the permitted velocities on its left (``ecs_nav.motion.orca_lp``).
"""

from __future__ import annotations

import math

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.orca_lp import RVO_EPSILON, ZERO_LENGTH, det
from ecs_nav.motion.spatial import cell_range


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
def _cutoff_circle_line(lines, m, cx, cy, vx, vy, r):
    """The line for a velocity (vx, vy) nearest a cut-off circle (centre (cx, cy), radius
    ``r``), written to ``lines[m]``: through the circle's point nearest it, facing out. Returns
    the next free row (``m`` again when the velocity is the centre: no line)."""
    wx, wy = vx - cx, vy - cy
    wn = math.sqrt(wx * wx + wy * wy)
    if wn > ZERO_LENGTH:
        ux, uy = wx / wn, wy / wn
        lines[m, 0], lines[m, 1] = cx + r * ux, cy + r * uy
        lines[m, 2], lines[m, 3] = uy, -ux
        m += 1
    return m


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
            m = _cutoff_circle_line(lines, m, lcx, lcy, vx, vy, radius * inv_tau)  # on the left cut-off circle
            continue
        if t > 1.0 and t_right < 0.0:
            m = _cutoff_circle_line(lines, m, rcx, rcy, vx, vy, radius * inv_tau)  # on the right one
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
