"""Group arrival: when an agent that has not arrived counts as arrived next to those that have.

A crowd sent to one point cannot all stand on it: the first agents stop within their stopping
distance and every later one pushes at them. The rule here (the "settling" used by RTS crowds
and by pedestrian models that let arrived agents become obstacles): an agent that touches an
agent already arrived at the *same goal*, lying ahead of it toward the goal, has arrived too.
The crowd grows outward from the goal, a ring at a time, and every member stops once.

``goal_key`` says which agents share a goal (equal keys; -1 is no goal); agents on different
layers (``Collider.layer``: ``layer``, another per-row column) never hold each other back; ``toward`` is each
candidate's direction to its goal (need not be unit: only its sign against the neighbour
matters). Two agents touch when their centres are at most ``r_i + r_j + gap`` apart and their
bodies overlap in height (``|elevation_i - elevation_j| < body_height``, as in the physics).

Shapes: positions (n, 2) float64 in m, radii and elevations (n,), rows int64 into them.

The rules over the agent table (``touching_arrived``, ``held_back``, ``standing_still``) are
shared by the path follower and the flow-field follower: they read and write the table's
``follow_state``, ``goal_key``, ``blocked_ticks``, ``stuck_ticks`` and ``stuck_anchor``.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import DirectCall, kernel
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.motion.spatial import build_grid, cell_range

SETTLE_TICKS = 15
"""Ticks an agent must be held back by the arrived crowd of its goal before it settles."""

BLOCKED_SPEED_FRACTION = 0.1
"""Advancing toward its target slower than this fraction of max speed is being held back."""

STUCK_DISTANCE = 0.01
"""An agent that stays within this distance (m) of where it last moved is standing still
(seed 002 compares positions; the physics jitters a packed agent by millimetres)."""

STUCK_RELEASE = 0.5
"""m. An agent reported ``Stuck`` is not reported again until it has moved this far (or its
radius, if larger) from where it was stuck: one report per blockage."""

STUCK_REPORTED = -2
"""``stuck_ticks`` of an agent reported Stuck and not yet moved ``STUCK_RELEASE`` from where it
stood (-1: its anchor was set this tick; >= 0: ticks counted standing still)."""

SETTLE_GAP = 0.5
"""Extra distance (m) beyond contact at which an arrived neighbour still holds an agent back:
separation keeps a walking agent a few decimetres off the agents in front of it, so it stops
short of contact (about 0.2-0.4 m at the default weights)."""


@kernel(inline="always")
def stands_ahead(dx, dy, touch, rise, body_height, toward_x, toward_y):
    """An arrived agent at offset (dx, dy) and height difference ``rise`` holds this one back:
    within ``touch`` of its centre, on its level, and ahead of it (toward its goal); one beside
    or behind does not stand between it and the goal."""
    return dx * dx + dy * dy <= touch * touch and abs(rise) < body_height and dx * toward_x + dy * toward_y > 0.0


@kernel
def _settled(pos, radius, elevation, goal_key, layer, toward, candidates, arrived_pos, arrived_radius,
             arrived_elevation, arrived_key, arrived_layer, gap, body_height, max_radius,
             ox, oy, inv_cell, cols, rows, cell_start, cell_items):
    out = np.zeros(candidates.size, np.bool_)
    for k in range(candidates.size):
        i = candidates[k]
        px, py = pos[i, 0], pos[i, 1]
        reach = radius[i] + max_radius + gap
        cx0, cx1 = cell_range(px - reach, px + reach, ox, inv_cell, cols)
        cy0, cy1 = cell_range(py - reach, py + reach, oy, inv_cell, rows)
        found = False
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * cols + cx
                for s in range(cell_start[c], cell_start[c + 1]):
                    j = cell_items[s]
                    if arrived_key[j] != goal_key[i] or arrived_layer[j] != layer[i]:
                        continue
                    if stands_ahead(arrived_pos[j, 0] - px, arrived_pos[j, 1] - py, radius[i] + arrived_radius[j] + gap,
                                    arrived_elevation[j] - elevation[i], body_height, toward[k, 0], toward[k, 1]):
                        found = True
                        break
                if found:
                    break
            if found:
                break
        out[k] = found
    return out


@kernel
def _settled_scan(pos, radius, elevation, goal_key, layer, toward, candidates, arrived, gap, body_height):
    """``_settled`` without a grid: every candidate against every arrived row, the same tests
    (the grid only skips rows too far to pass the distance test). For a few candidates this
    is cheaper than binning every arrived agent (the stuck check's queue test asks for a
    handful of candidates against the whole crowd most ticks)."""
    out = np.zeros(candidates.size, np.bool_)
    for k in range(candidates.size):
        i = candidates[k]
        px, py = pos[i, 0], pos[i, 1]
        for m in range(arrived.size):
            j = arrived[m]
            if goal_key[j] != goal_key[i] or layer[j] != layer[i]:
                continue
            if stands_ahead(pos[j, 0] - px, pos[j, 1] - py, radius[i] + radius[j] + gap, elevation[j] - elevation[i],
                            body_height, toward[k, 0], toward[k, 1]):
                out[k] = True
                break
    return out


SCAN_CANDIDATES = 8
"""At most this many candidates are tested by a scan of the arrived rows instead of a grid
(a scan costs about 2 ns per arrived row and candidate; binning costs about 35 ns per row)."""


def settled_against_arrived(pos, radius, elevation, goal_key, candidates, toward, arrived, *, layer=None,
                            gap: float = SETTLE_GAP, body_height: float = 2.0) -> np.ndarray:
    """Which ``candidates`` touch an agent of ``arrived`` with the same goal (and layer) that lies
    ahead.

    Args:
        pos, radius, elevation, goal_key: per-row columns, (n, 2), (n,), (n,), (n,) int64.
        layer: (n,) int64 each row's layer (``Collider.layer``); None: every row on layer 0.
        candidates: (k,) rows of agents still on their way.
        toward: (k, 2) each candidate's direction toward its goal.
        arrived: (a,) rows of agents that have arrived (stopped at their goal).
        gap: see SETTLE_GAP (m, >= 0).
        body_height: agents whose elevations differ by this much (m) do not touch.

    Returns:
        (k,) bool: True where the candidate has arrived by touching the arrived crowd.
    """
    candidates = np.ascontiguousarray(candidates, dtype=np.int64).reshape(-1)
    arrived = np.ascontiguousarray(arrived, dtype=np.int64).reshape(-1)
    toward = np.ascontiguousarray(toward, dtype=np.float64).reshape(-1, 2)
    if toward.shape[0] != candidates.size:
        raise ValueError(f"toward: expected ({candidates.size}, 2), got {toward.shape}")
    if not (gap >= 0 and np.isfinite(gap)) or not (body_height > 0 and np.isfinite(body_height)):
        raise ValueError(f"gap must be >= 0 and body_height > 0 (finite), got {gap!r}, {body_height!r}")
    if candidates.size == 0 or arrived.size == 0:
        return np.zeros(candidates.size, bool)
    goal_key = np.ascontiguousarray(goal_key, dtype=np.int64)
    layer = np.zeros(goal_key.shape[0], np.int64) if layer is None else np.ascontiguousarray(layer, dtype=np.int64)
    if candidates.size <= SCAN_CANDIDATES:
        return _settled_scan(np.ascontiguousarray(pos, dtype=np.float64),
                             np.ascontiguousarray(radius, dtype=np.float64),
                             np.ascontiguousarray(elevation, dtype=np.float64),
                             goal_key, layer, toward, candidates, arrived, float(gap), float(body_height))
    arrived_pos = np.ascontiguousarray(pos[arrived], dtype=np.float64)
    arrived_radius = np.ascontiguousarray(radius[arrived], dtype=np.float64)
    max_radius = float(arrived_radius.max())
    grid = build_grid(arrived_pos, cell_size=max(2.0 * max_radius + gap, 1e-3))
    return _settled(
        np.ascontiguousarray(pos, dtype=np.float64), np.ascontiguousarray(radius, dtype=np.float64),
        np.ascontiguousarray(elevation, dtype=np.float64), goal_key, layer, toward, candidates, arrived_pos,
        arrived_radius, np.ascontiguousarray(elevation[arrived], dtype=np.float64), goal_key[arrived],
        layer[arrived],
        float(gap), float(body_height), max_radius, *grid.kernel_args(),
    )


_KEY_SPACE = 1 << 60


def goal_key_of_point(x: float, y: float) -> int:
    """The goal key of a fixed goal point: equal points (to a micrometre) share one."""
    qx, qy = int(round(float(x) * 1e6)), int(round(float(y) * 1e6))
    return ((qx * 0x9E3779B1) ^ (qy * 0x85EBCA77)) % _KEY_SPACE


def goal_key_of_entity(entity: int) -> int:
    """The goal key of agents chasing ``entity`` (never equal to a point's key)."""
    return _KEY_SPACE + int(entity)


def goal_key_of_field(field_id: int) -> int:
    """The goal key of agents following flow field ``field_id`` (never equal to the others)."""
    return 2 * _KEY_SPACE + int(field_id)


def arrived_rows(table) -> np.ndarray:
    """Rows of the agents stopped at a goal (STOPPED with a goal key)."""
    n = table.n
    return ((table.follow_state[:n] == FOLLOW_STOPPED) & (table.goal_key[:n] >= 0)).nonzero()[0]


@kernel
def anyone_arrived(n, follow_state, goal_key):
    """Whether ``arrived_rows`` would find a row among [0, n): one pass, to the first."""
    for i in range(n):
        if follow_state[i] == FOLLOW_STOPPED and goal_key[i] >= 0:
            return True
    return False


def touching_arrived(table, rows: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """(k,) bool: ``rows`` touch another agent of their layer arrived at their goal, lying
    ``toward`` it (an agent is never ahead of itself, so ``rows`` may include arrived agents)."""
    arrived = arrived_rows(table)
    n = table.n
    return settled_against_arrived(table.pos[:n], table.radius[:n], table.elevation[:n], table.goal_key[:n],
                                   rows, toward, arrived, layer=table.layer[:n])


def held_back(table, rows: np.ndarray, toward: np.ndarray, moved: np.ndarray, dt: float,
              settle_ticks: int = SETTLE_TICKS) -> np.ndarray:
    """Group arrival for agents on their way: (k,) bool, True where an agent of ``rows`` has
    been held back for ``settle_ticks`` ticks by agents already arrived at its goal.

    Held back: touching such an agent that lies ahead (``toward``: (k, 2), the way it wants to
    go) and advancing that way slower than ``BLOCKED_SPEED_FRACTION`` of its max speed this tick
    (``moved``: (k, 2), its displacement over the tick). An agent that touches the arrived crowd
    but slides round it keeps going. Updates ``blocked_ticks`` of ``rows``."""
    rows = np.asarray(rows, np.int64)
    count = np.zeros(rows.size, np.int32)
    out = np.zeros(rows.size, bool)
    if rows.size:
        touching = touching_arrived(table, rows, toward)
        if np.count_nonzero(touching):
            length = np.sqrt(toward[:, 0] ** 2 + toward[:, 1] ** 2)
            advance = (moved[:, 0] * toward[:, 0] + moved[:, 1] * toward[:, 1]) / np.where(length > 0, length, 1.0)
            slow = advance < BLOCKED_SPEED_FRACTION * table.max_speed[rows] * dt
            count = np.where(touching & slow, table.blocked_ticks[rows] + 1, 0).astype(np.int32)
            out = count >= settle_ticks
    table.blocked_ticks[rows] = count
    return out


@kernel
def _count_still(rows, active, pos, radius, follow_state, stuck_ticks, stuck_anchor, stuck_limit, stuck_distance2,
                 release, reached):
    """The counting of ``standing_still`` in one pass, in place: ``reached`` (k,) bool receives
    the rows whose count reached ``stuck_limit`` this tick (they become ``STUCK_REPORTED``, their
    anchor where they stand); returns how many. A reported row counts again (0, anchored where it
    stands) once it is further than ``max(release, radius)`` from its anchor; every other row
    that is not standing still restarts its count at its position.
    (The caller's array, not a returned one: see ``follow_rows.waypoint_hits``.)"""
    n_reached = 0
    for k in range(rows.size):
        reached[k] = False
        i = rows[k]
        dx = pos[i, 0] - stuck_anchor[i, 0]
        dy = pos[i, 1] - stuck_anchor[i, 1]
        d2 = dx * dx + dy * dy
        if stuck_ticks[i] == STUCK_REPORTED:  # reported: silent until it has moved off
            away = max(release, radius[i])
            if d2 > away * away:
                stuck_ticks[i] = 0
                stuck_anchor[i, 0] = pos[i, 0]
                stuck_anchor[i, 1] = pos[i, 1]
            continue
        state = follow_state[i]
        still = active[k] and (state == FOLLOW_SEEK or state == FOLLOW_ARRIVE) and d2 <= stuck_distance2
        count = stuck_ticks[i] + 1 if still else 0
        reported = count >= stuck_limit
        if reported:
            reached[k] = True
            n_reached += 1
            stuck_ticks[i] = STUCK_REPORTED
        else:
            stuck_ticks[i] = count
        if not still or reported:
            stuck_anchor[i, 0] = pos[i, 0]
            stuck_anchor[i, 1] = pos[i, 1]
    return n_reached


_count_still_direct = DirectCall(lambda: _count_still)
"""``_count_still`` without numba's dispatch (``standing_still`` hands it the same types always)."""


def standing_still(table, rows, active: np.ndarray, stuck_ticks: int,
                   stuck_distance: float = STUCK_DISTANCE) -> np.ndarray:
    """Stuck detection (seed 002: the position did not change for K ticks): (k,) bool, True
    where an ``active`` following agent (SEEK or ARRIVE) of ``rows`` stayed
    within ``stuck_distance`` of ``stuck_anchor`` for ``stuck_ticks`` ticks and is not queueing
    (``queueing``: another agent stands right ahead of it, so its count restarts). Once per
    blockage: a row reported is ``STUCK_REPORTED`` in the table until it has moved
    ``STUCK_RELEASE`` (or its radius) from where it stood, then it counts again. Moving off
    resets the count and the anchor. ``stuck_ticks`` -1 in the table means the anchor was set
    this tick (it does not count). ``rows``: a slice or mask of the live rows, or an int64 array
    of live row ids, which is used as given (the followers' own row arrays)."""
    given = isinstance(rows, np.ndarray) and rows.dtype == np.int64
    index = rows if given else np.arange(table.n, dtype=np.int64)[rows]
    # the same types on every call (``_count_still_direct`` checks none): 1-D, C order
    index, active = np.ascontiguousarray(index), np.ascontiguousarray(active, dtype=np.bool_)
    if index.ndim != 1 or active.shape != index.shape:
        raise ValueError(f"standing_still: rows must select a 1-D run of rows and active be one flag per row, got "
                         f"rows of shape {index.shape} and active of shape {active.shape}")
    distance = float(stuck_distance)
    stuck = np.empty(index.size, np.bool_)
    if _count_still_direct(index, active, table.pos, table.radius, table.follow_state, table.stuck_ticks,
                           table.stuck_anchor, int(stuck_ticks), distance * distance, STUCK_RELEASE, stuck):
        at = stuck.nonzero()[0]
        rows_at = index[at]
        in_queue = queueing(table, rows_at, table.steer_target[rows_at] - table.pos[rows_at])
        stuck[at[in_queue]] = False  # waiting behind others is not stuck: the count starts again
        table.stuck_ticks[rows_at[in_queue]] = 0
    return stuck


def queueing(table, rows: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """(k,) bool: another agent (any of its layer) stands within ``SETTLE_GAP`` of contact ahead
    of each of ``rows`` in the direction ``toward`` ((k, 2)): it waits in a queue, it is not
    stuck."""
    n = table.n
    everyone = np.flatnonzero(table.is_agent[:n])
    return settled_against_arrived(table.pos[:n], table.radius[:n], table.elevation[:n], np.zeros(n, np.int64),
                                   rows, toward, everyone, layer=table.layer[:n])
