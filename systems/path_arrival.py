"""The PathFollowSystem's final approach: arrival, group arrival, re-arming and facing of the
rows that follow a once-path (``systems/path_follow.py`` describes the rules, seed 000).

Per tick, after the waypoint tests: the compiled pass ``ecs_nav.motion.follow_rows.final_approach``
finds each row's final target (the goal, or where the target entity stands now), points the
rows on their final leg at it, and tells which rows arrive (within ``stopping_distance``),
which may be held back by the arrived crowd (group arrival, asked only when some agent has
arrived) and which STOPPED rows are far enough to re-arm; the few rows that change state are
then handled here (``held_back``, ``touching_arrived``, events, despawn on arrival), and the
STOPPED rows turn to face their target (``follow_rows.face_stopped``, every tick).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import DirectCall
from ecs_nav.core.events import PathFailed, TargetReached
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.motion.arrival import held_back, touching_arrived
from ecs_nav.motion.follow_rows import face_stopped, final_approach

REARM_RADII = 4.0
"""An agent stopped at a fixed goal re-arms only when pushed this many of its radii further
from the goal than where it stopped (and no longer touching the arrived crowd)."""


_final_approach = DirectCall(lambda: final_approach)
_face_stopped = DirectCall(lambda: face_stopped)
"""The two kernels without numba's dispatch: ``approach`` hands them the same types always (the
table's columns, the follower's arrays, settings converted as they are read)."""


def approach(follower, world, once: np.ndarray, pos: np.ndarray, last: np.ndarray) -> None:
    """The final approach of ``follower``'s (a PathFollowSystem) cached rows where ``once``
    ((m,) bool, some true); ``pos`` and ``last``: (m, 2) their positions now and at the
    previous tick."""
    f, table, rows = follower, world.table, follower.rows
    m = rows.size
    moving, arrive, candidates, rearm = np.empty((4, m), np.bool_)
    to_final, dist = np.empty((m, 2)), np.empty(m)
    # goal spreading (systems/goal_spreading.py): a row walking down the slot field steers at the
    # slot it sees best (this tick's final target; its Path stays as it is) and arrives by the field
    spreading = f.spreading
    fixed = once & ~f.partial & (f.target_row < 0) & ~f.leave
    aim = None
    if spreading.slots(world) is not None:
        aim = spreading.aim(world, rows, fixed, pos, np.hypot(*(f.final - pos).T))
    final, final_leg, stopping = f.final, f.final_leg, table.stopping_distance
    if aim is not None and aim.count:
        seeking = aim.seeking
        final, final_leg, stopping = f.final.copy(), f.final_leg.copy(), table.stopping_distance.copy()
        final[seeking] = aim.target[seeking]
        final_leg[seeking] = True
        stopping[rows[seeking]] = -1.0  # (its target is a slot on the way: it arrives by the field)
    n_arrive, n_candidates, n_rearm = _final_approach(
        rows, table.pos, once, final, f.target_row, final_leg, f.partial, table.follow_state, table.goal_key,
        table.n, stopping, table.arrival_distance, table.radius, table.steer_target,
        table.blocked_ticks, bool(f.group_arrival), float(f.stop_hysteresis), REARM_RADII, FOLLOW_STOPPED, moving,
        to_final, dist, arrive, candidates, rearm)  # fmt: skip
    if aim is not None:
        arrive |= aim.arrive
    if n_candidates:  # group arrival
        toward = table.steer_target[rows[candidates]] - pos[candidates]
        held = np.zeros(m, bool)
        held[candidates] = held_back(table, rows[candidates], toward, (pos - last)[candidates], world.dt,
                                     f.settle_ticks)  # fmt: skip
        arrive |= spreading.settles(aim, held)
    n_arrive = np.count_nonzero(arrive)
    # a settled crowd is pushed about as it packs: an agent with a fixed goal re-arms only when
    # pushed REARM_RADII radii past where it stopped and touching no arrived agent of its goal;
    # one whose target moves re-arms by distance alone (seed 000); one stopped on a slot when
    # pushed off it (goal spreading)
    slotted = np.zeros(m, bool)
    if aim is not None:
        slotted = aim.spread & (table.goal_slot_index[rows] != -1)
        rearm[slotted] = aim.back[slotted]
        n_rearm = np.count_nonzero(rearm)
    if f.group_arrival and n_rearm:
        held = rearm & ~moving & ~f.partial & ~slotted
        toward = table.steer_target[rows[held]] - pos[held]
        rearm[held] = ~touching_arrived(table, rows[held], toward)
        n_rearm = np.count_nonzero(rearm)
    if n_rearm:
        table.follow_state[rows[rearm]] = np.where(f.last_once[rearm], FOLLOW_ARRIVE, FOLLOW_SEEK)
        table.stuck_ticks[rows[rearm]] = -1
        table.stuck_anchor[rows[rearm]] = pos[rearm]
        f.at_end[rearm] = False
    if n_arrive:
        table.follow_state[rows[arrive]] = FOLLOW_STOPPED
        table.arrival_distance[rows[arrive]] = dist[arrive]
        at_goal = arrive & fixed
        spreading.arrived(world, rows[at_goal], f.final[at_goal])  # a shared goal's first: its slots
        again = spreading.stopped(world, rows, arrive, fixed, pos)  # walked back: arrived already
        for i in arrive.nonzero()[0].tolist():
            if again[i]:
                continue
            if f.partial[i]:  # the end of a partial path: stopped, not arrived
                f.at_end[i] = True
                gap = float(np.hypot(*(f.goal[i] - pos[i])))
                world.emit(PathFailed(int(f.ents[i]), "partial", world.tick, remaining=gap))
            else:
                world.emit(TargetReached(int(f.ents[i]), world.tick))
                if f.leave[i]:
                    world.despawn(int(f.ents[i]))
    # the STOPPED rows face their target (seed 000)
    _face_stopped(rows, once, table.follow_state, FOLLOW_STOPPED, to_final, table.heading, table.turn_speed,
                  float(world.dt))
