"""The PathFollowSystem's per-tick waypoint test as one compiled pass over the following rows.

The test (``systems/path_follow.py``, seeds 004 and 002): a row that follows a waypoint has
reached it when it stands within the path radius of it, or its last step swept within the radius
of it, or it crossed the plane through the waypoint perpendicular to the leg leading to it -- each
only from the waypoint's own level on a planned path; it skips ahead when the next waypoint is
already within the radius (and on its level). Written with numpy this was some thirty calls on
(m,) and (m, 2) temporaries a tick, most of a small world's path-following cost; here it is one
call. The arithmetic is the numpy version's, operation for operation (products summed in the same
order, no fused multiply-add, which numba does not emit without ``fastmath``), so the rows found
are the same. The final approach (``final_approach``) and the facing of the rows stopped at their
target (``face_stopped``) are compiled passes too.

Shapes: table columns (capacity, ...) indexed by ``rows`` (m,) int64; the follower's own arrays
(m,) or (m, 2), aligned with ``rows``.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.arrival import anyone_arrived
from ecs_nav.motion.physics import turn_heading


@kernel
def waypoint_hits(
    rows,
    pos,
    path_radius,
    elevation,
    max_climb,
    active,
    final_leg,
    cur,
    cur_z,
    last,
    leg,
    planned,
    nxt,
    nxt_z,
    has_nxt,
    last_once,
    out_pos,
    hits,
):
    """``hits`` (m,) bool receives the rows whose current waypoint is reached or whose next one
    is within reach this tick (see the module doc), and ``out_pos`` (m, 2) the rows' positions;
    returns how many hit. (Written into the caller's arrays: an array a kernel returns costs its
    call numba's boxing, 2-3 µs a call from the library compiled ahead of time, ``ecs_nav.compile.aot``.)"""
    m = rows.size
    n_hits = 0
    for k in range(m):
        i = rows[k]
        px, py = pos[i, 0], pos[i, 1]
        out_pos[k, 0], out_pos[k, 1] = px, py
        hits[k] = False
        if not active[k] or final_leg[k]:
            continue
        r = path_radius[i]
        r2 = r * r
        tcx, tcy = px - cur[k, 0], py - cur[k, 1]
        near = tcx * tcx + tcy * tcy <= r2
        sx, sy = px - last[k, 0], py - last[k, 1]
        step2 = sx * sx + sy * sy
        fx, fy = cur[k, 0] - last[k, 0], cur[k, 1] - last[k, 1]
        t = (fx * sx + fy * sy) / step2 if step2 > 0 else 0.0
        t = min(max(t, 0.0), 1.0)
        cx, cy = sx * t - fx, sy * t - fy
        swept = cx * cx + cy * cy <= r2
        crossed = (fx * leg[k, 0] + fy * leg[k, 1] > 0) and (tcx * leg[k, 0] + tcy * leg[k, 1] >= 0)
        # a planned waypoint is reached only from its own level: an agent on the floor below a
        # ramp's edge node has not reached it (the next leg would walk into the ramp's side)
        elev, climb = elevation[i], max_climb[i]
        level = not planned[k] or abs(elev - cur_z[k]) < climb
        if level and (near or swept or crossed):
            hits[k] = True
            n_hits += 1
            continue
        if has_nxt[k] and not last_once[k]:
            tnx, tny = px - nxt[k, 0], py - nxt[k, 1]
            if tnx * tnx + tny * tny <= r2 and (not planned[k] or abs(elev - nxt_z[k]) < climb):
                hits[k] = True
                n_hits += 1
    return n_hits


@kernel
def final_approach(rows, pos, once, final, target_row, final_leg, partial, follow_state, goal_key, n,
                   stopping_distance, arrival_distance, radius, steer_target, blocked_ticks, group_arrival,
                   stop_hysteresis, rearm_radii, stopped_code, moving, to_final, dist, arrive, candidates,
                   rearm):  # fmt: skip
    """The once-path rows' approach to their final target (``once`` (m,) bool), before group
    arrival: the final target is ``final`` or, where ``target_row >= 0``, where that row stands
    now; a row on its final leg steers at it (``steer_target`` written). Writes, for every row of
    ``rows`` (zero or False where not ``once``): ``moving`` (m,) the rows with a target entity,
    ``to_final`` (m, 2) and ``dist`` (m,) from ``pos`` to the final target, ``arrive`` (m,) on
    their way (not ``stopped_code``) and within their ``stopping_distance``, ``candidates`` (m,)
    on their way, not arriving, not on a partial path -- the rows group arrival may settle (none
    without ``group_arrival``, nor when no row of the table's [0, ``n``) has arrived at a goal,
    ``arrival.anyone_arrived``: no arrived agent holds anyone back) --, ``rearm`` (m,) stopped
    and further than their re-arm distance. With ``group_arrival``, ``blocked_ticks`` of every
    row of ``rows`` that is not a candidate is zeroed. Returns how many rows arrive, are
    candidates and re-arm. (The caller's arrays, not returned ones: see ``waypoint_hits``.)"""
    m = rows.size
    settles = group_arrival and anyone_arrived(n, follow_state, goal_key)
    n_arrive = n_candidates = n_rearm = 0
    moving[:] = False
    arrive[:] = False
    candidates[:] = False
    rearm[:] = False
    to_final[:] = 0.0
    dist[:] = 0.0
    for k in range(m):
        i = rows[k]
        if not once[k]:
            if group_arrival:
                blocked_ticks[i] = 0
            continue
        j = target_row[k]
        if j >= 0:
            moving[k] = True
            fx, fy = pos[j, 0], pos[j, 1]
        else:
            fx, fy = final[k, 0], final[k, 1]
        if final_leg[k]:
            steer_target[i, 0], steer_target[i, 1] = fx, fy
        tx, ty = fx - pos[i, 0], fy - pos[i, 1]
        to_final[k, 0], to_final[k, 1] = tx, ty
        d = np.hypot(tx, ty)
        dist[k] = d
        stop = stopping_distance[i]
        if follow_state[i] != stopped_code:
            arrive[k] = d <= stop
            candidates[k] = settles and not arrive[k] and not partial[k]
            n_arrive += arrive[k]
            n_candidates += candidates[k]
        else:
            margin = stop_hysteresis if j >= 0 else max(stop_hysteresis, rearm_radii * radius[i])
            rearm[k] = d > max(stop, arrival_distance[i]) + margin
            n_rearm += rearm[k]
        if group_arrival and not candidates[k]:
            blocked_ticks[i] = 0
    return n_arrive, n_candidates, n_rearm


@kernel
def face_stopped(rows, once, follow_state, stopped_code, to_final, heading, turn_speed, dt):
    """Seed 000: the once-path rows (``once`` (m,) bool) STOPPED at their final target turn to
    face it, ``to_final`` (m, 2) (``final_approach``'s): heading = Lerp(heading, to_final,
    dt * turn_speed), yaw only, ``physics.turn_heading`` on each such row (with no minimum
    length). ``heading`` (a table column) in place; the other rows are left as they are."""
    for k in range(rows.size):
        i = rows[k]
        if once[k] and follow_state[i] == stopped_code:
            turn_heading(heading[i:i + 1], to_final[k:k + 1], turn_speed[i:i + 1], dt, 0.0)
