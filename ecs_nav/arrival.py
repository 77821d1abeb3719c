"""Group arrival: when an agent that has not arrived counts as arrived next to those that have.

A crowd sent to one point cannot all stand on it: the first agents stop within their stopping
distance and every later one pushes at them. The rule here (the "settling" used by RTS crowds
and by pedestrian models that let arrived agents become obstacles): an agent that touches an
agent already arrived at the *same goal*, lying ahead of it toward the goal, has arrived too.
The crowd grows outward from the goal, a ring at a time, and every member stops once.

``goal_key`` says which agents share a goal (equal keys; -1 is no goal); ``toward`` is each
candidate's direction to its goal (need not be unit: only its sign against the neighbour
matters). Two agents touch when their centres are at most ``r_i + r_j + gap`` apart and their
bodies overlap in height (``|elevation_i - elevation_j| < body_height``, as in the physics).

Shapes: positions (n, 2) float64 in m, radii and elevations (n,), rows int64 into them.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ecs_nav.spatial import build_grid

SETTLE_GAP = 0.5
"""Extra distance (m) beyond contact at which an arrived neighbour still holds an agent back:
separation keeps a walking agent a few decimetres off the agents in front of it, so it stops
short of contact (about 0.2-0.4 m at the default weights)."""


@nb.njit(cache=True)
def _settled(pos, radius, elevation, goal_key, toward, candidates, arrived_pos, arrived_radius,
             arrived_elevation, arrived_key, gap, body_height, max_radius,
             ox, oy, inv_cell, cols, rows, cell_start, cell_items):
    out = np.zeros(candidates.size, np.bool_)
    top_x, top_y = cols - 1.0, rows - 1.0
    for k in range(candidates.size):
        i = candidates[k]
        px, py = pos[i, 0], pos[i, 1]
        reach = radius[i] + max_radius + gap
        # clamped as floats first: a far-away agent cannot overflow the integer conversion
        cx0 = int(min(max(np.floor((px - reach - ox) * inv_cell), 0.0), top_x))
        cx1 = int(min(max(np.floor((px + reach - ox) * inv_cell), 0.0), top_x))
        cy0 = int(min(max(np.floor((py - reach - oy) * inv_cell), 0.0), top_y))
        cy1 = int(min(max(np.floor((py + reach - oy) * inv_cell), 0.0), top_y))
        found = False
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * cols + cx
                for s in range(cell_start[c], cell_start[c + 1]):
                    j = cell_items[s]
                    if arrived_key[j] != goal_key[i]:
                        continue
                    dx = arrived_pos[j, 0] - px
                    dy = arrived_pos[j, 1] - py
                    touch = radius[i] + arrived_radius[j] + gap
                    if dx * dx + dy * dy > touch * touch:
                        continue
                    if abs(arrived_elevation[j] - elevation[i]) >= body_height:
                        continue
                    if dx * toward[k, 0] + dy * toward[k, 1] <= 0.0:
                        continue  # beside or behind: it does not stand between this agent and the goal
                    found = True
                    break
                if found:
                    break
            if found:
                break
        out[k] = found
    return out


def settled_against_arrived(pos, radius, elevation, goal_key, candidates, toward, arrived, *,
                            gap: float = SETTLE_GAP, body_height: float = 2.0) -> np.ndarray:
    """Which ``candidates`` touch an agent of ``arrived`` with the same goal that lies ahead.

    Args:
        pos, radius, elevation, goal_key: per-row columns, (n, 2), (n,), (n,), (n,) int64.
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
    arrived_pos = np.ascontiguousarray(pos[arrived], dtype=np.float64)
    arrived_radius = np.ascontiguousarray(radius[arrived], dtype=np.float64)
    max_radius = float(arrived_radius.max())
    grid = build_grid(arrived_pos, cell_size=max(2.0 * max_radius + gap, 1e-3))
    return _settled(
        np.ascontiguousarray(pos, dtype=np.float64), np.ascontiguousarray(radius, dtype=np.float64),
        np.ascontiguousarray(elevation, dtype=np.float64), np.ascontiguousarray(goal_key, dtype=np.int64),
        toward, candidates, arrived_pos, arrived_radius,
        np.ascontiguousarray(elevation[arrived], dtype=np.float64),
        np.ascontiguousarray(goal_key[arrived], dtype=np.int64),
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
