"""The linear programs of ORCA, as RVO2 2.0 solves them (``Agent.cpp``: ``linearProgram1``,
``linearProgram2``, ``linearProgram3``).

A half-plane ("ORCA line") is a row ``(px, py, dx, dy)`` of a (m, 4) float64 array: a point on
its boundary and the boundary's unit direction; the permitted velocities lie on its left,
``det(d, p - v) <= 0``. The programs look for a velocity ``v`` inside the disc ``|v| <= radius``
(the agent's maximum speed, m/s) that satisfies every line:

* ``linear_program2``: the velocity closest to an optimisation velocity (or furthest in a unit
  direction) that satisfies the lines, added one at a time (an incremental 2-D program, each
  violated line solved as a 1-D program on it, ``linear_program1``); it returns the number of
  lines when it succeeds, else the index of the line it could not satisfy, with the result
  left at the last feasible velocity;
* ``linear_program3``: when the 2-D program fails, the velocity that minimises the largest
  violation of the agent lines while keeping the first ``num_obstacle_lines`` (the obstacles')
  hard, as a 3-D program projected on the failed lines.

Lines whose directions are closer to parallel than ``RVO_EPSILON`` (``|det| <= RVO_EPSILON``)
are treated as parallel, as RVO2 does. The arithmetic is RVO2's in float64 (RVO2 computes in
float32).
"""

from __future__ import annotations

import math

from ecs_nav.compile.aot import kernel

RVO_EPSILON = 1e-5
"""RVO2's ``RVO_EPSILON``: two lines are parallel when ``|det(d_i, d_j)|`` is at most this."""

ZERO_LENGTH = 1e-12
"""A vector shorter than this (m/s) has no direction: where RVO2 divides by its length, the
ORCA kernels take a direction instead of a NaN (``ecs_nav.motion.orca``) or leave the line out
(``ecs_nav.motion.orca_walls``)."""


@kernel
def det(ax, ay, bx, by):
    """The 2-D cross product ``a x b``."""
    return ax * by - ay * bx


@kernel
def linear_program1(lines, line_no, radius, opt_x, opt_y, direction_opt, result):
    """The best velocity on line ``line_no`` that satisfies lines ``[0, line_no)`` and the disc
    of ``radius``: the point of the line closest to ``(opt_x, opt_y)``, or, with
    ``direction_opt``, the furthest along that unit direction. Writes it to ``result`` (2,) and
    returns True; returns False, ``result`` untouched, when there is none."""
    px, py, dx, dy = lines[line_no, 0], lines[line_no, 1], lines[line_no, 2], lines[line_no, 3]
    dot = px * dx + py * dy
    discriminant = dot * dot + radius * radius - (px * px + py * py)
    if discriminant < 0.0:
        return False  # the disc of maximum speed lies wholly outside the line
    root = math.sqrt(discriminant)
    t_left = -dot - root
    t_right = -dot + root
    for i in range(line_no):
        denominator = det(dx, dy, lines[i, 2], lines[i, 3])
        numerator = det(lines[i, 2], lines[i, 3], px - lines[i, 0], py - lines[i, 1])
        if abs(denominator) <= RVO_EPSILON:
            if numerator < 0.0:
                return False  # (almost) parallel, and line i excludes all of this one
            continue
        t = numerator / denominator
        if denominator >= 0.0:
            t_right = min(t_right, t)  # line i bounds this one on the right
        else:
            t_left = max(t_left, t)  # and here on the left
        if t_left > t_right:
            return False
    if direction_opt:
        t = t_right if opt_x * dx + opt_y * dy > 0.0 else t_left
    else:
        t = dx * (opt_x - px) + dy * (opt_y - py)
        if t < t_left:
            t = t_left
        elif t > t_right:
            t = t_right
    result[0] = px + t * dx
    result[1] = py + t * dy
    return True


@kernel
def linear_program2(lines, count, radius, opt_x, opt_y, direction_opt, result):
    """The velocity of the disc of ``radius`` that satisfies lines ``[0, count)`` and is closest
    to ``(opt_x, opt_y)`` (furthest along that unit direction with ``direction_opt``), written
    to ``result`` (2,). Returns ``count``, or the index of the first line that could not be
    satisfied, ``result`` then holding the best velocity for the lines before it."""
    if direction_opt:
        result[0] = opt_x * radius
        result[1] = opt_y * radius
    elif opt_x * opt_x + opt_y * opt_y > radius * radius:
        norm = math.sqrt(opt_x * opt_x + opt_y * opt_y)
        result[0] = opt_x / norm * radius
        result[1] = opt_y / norm * radius
    else:
        result[0] = opt_x
        result[1] = opt_y
    for i in range(count):
        if det(lines[i, 2], lines[i, 3], lines[i, 0] - result[0], lines[i, 1] - result[1]) > 0.0:
            # the result violates line i: the new optimum lies on it
            if not linear_program1(lines, i, radius, opt_x, opt_y, direction_opt, result):
                return i
    return count


@kernel
def linear_program3(lines, count, num_obstacle_lines, begin_line, radius, result, projected):
    """RVO2's fallback when ``linear_program2`` failed at line ``begin_line``: from there on,
    the velocity that least violates the agent lines (those from ``num_obstacle_lines`` on),
    the obstacle lines kept hard; ``result`` (2,) is updated in place. ``projected`` is scratch
    of at least ``count`` rows of 4."""
    distance = 0.0
    for i in range(begin_line, count):
        pix, piy, dix, diy = lines[i, 0], lines[i, 1], lines[i, 2], lines[i, 3]
        if det(dix, diy, pix - result[0], piy - result[1]) <= distance:
            continue
        # the result violates line i by more than the worst so far: the agent lines projected
        # on line i, the obstacle lines as they are
        m = 0
        for j in range(num_obstacle_lines):
            for c in range(4):
                projected[m, c] = lines[j, c]
            m += 1
        for j in range(num_obstacle_lines, i):
            pjx, pjy, djx, djy = lines[j, 0], lines[j, 1], lines[j, 2], lines[j, 3]
            determinant = det(dix, diy, djx, djy)
            if abs(determinant) <= RVO_EPSILON:
                if dix * djx + diy * djy > 0.0:
                    continue  # parallel, the same way
                qx = 0.5 * (pix + pjx)  # parallel, opposite ways
                qy = 0.5 * (piy + pjy)
            else:
                s = det(djx, djy, pix - pjx, piy - pjy) / determinant
                qx = pix + s * dix
                qy = piy + s * diy
            ex = djx - dix
            ey = djy - diy
            norm = math.sqrt(ex * ex + ey * ey)
            projected[m, 0] = qx
            projected[m, 1] = qy
            projected[m, 2] = ex / norm
            projected[m, 3] = ey / norm
            m += 1
        kept_x, kept_y = result[0], result[1]
        if linear_program2(projected, m, radius, -diy, dix, True, result) < m:
            # in principle impossible (the result is feasible by construction): a rounding
            # error; keep the current result
            result[0] = kept_x
            result[1] = kept_y
        distance = det(dix, diy, pix - result[0], piy - result[1])
