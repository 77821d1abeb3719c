"""The steering behaviours that read more than their agent's own row, compiled row by row: flee,
pursuit and evade (a target entity's row), wander (per-entity noise) and obstacle avoidance (the
map's circles).

``ecs_nav.motion.steering`` and ``steering_obstacles`` hold them as vectorised functions (the reference: Buckland's
formulas, tested on their own). The kernels here do the same arithmetic one row at a time, in
the same order of floating-point operations, so that the SteeringSystem's compiled path
(``ecs_nav.motion.steering_rows``) gives the reference path's forces, velocities and wander
targets (``SteeringSystem(compiled=False)``; tests compare the two). ``given_forces`` writes
them into the slots of the forces the row kernel sums (``steering_rows.GIVEN``: these five
first, in ``COMPUTED``'s order).

Noise: ``entity_noise`` is ``ecs_nav.motion.steering.entity_uniforms`` for one entity, bit for
bit: the same splitmix64 chain over (seed, stream, tick, entity id), so a compiled run draws the
numbers the reference path draws, whatever order the rows are in.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.behaviours import BEHAVIOURS, B
from ecs_nav.core.table_columns import (
    DETECTION_BOX_LENGTH,
    ENTITY,
    HAS_STEER_TARGET,
    HAS_STEERING,
    HEADING,
    MAX_SPEED,
    PANIC_DISTANCE,
    POS,
    RADIUS,
    STEER_TARGET,
    TARGET_ENTITY,
    THREAT_RANGE,
    VEL,
    WANDER_DISTANCE,
    WANDER_JITTER,
    WANDER_RADIUS,
    WANDER_TARGET,
    WEIGHTS,
    column,
    float_rows,
)
from ecs_nav.motion.steering import HEAD_ON_RELATIVE_HEADING, TURNAROUND_COEFFICIENT
from ecs_nav.motion.steering_obstacles import obstacle_force

COMPUTED = ("flee", "pursuit", "evade", "wander", "obstacle_avoidance")
"""The behaviours ``given_forces`` computes, in the order of their slots in ``given``."""
COMPUTED_BEHAVIOURS = np.array([B[b] for b in COMPUTED], dtype=np.int64)
"""Their columns in the weights."""
WANDER_STREAM = 0
"""``entity_uniforms``' stream of wander's noise (the reference path's)."""
DITHER_STREAM = 1
"""``entity_uniforms`` streams: wander uses 0; dithering uses 1, 2, ... (two behaviours each:
behaviour b's number is component ``b % 2`` of stream ``DITHER_STREAM + b // 2``)."""
DITHER_STREAMS = (len(BEHAVIOURS) + 1) // 2
"""How many streams dithering draws from."""
DITHER_PROBABILITIES = np.array([
    {"wall_avoidance": 0.5, "obstacle_avoidance": 0.5, "evade": 1.0, "flee": 0.6, "separation": 0.2,
     "alignment": 0.3, "cohesion": 0.6, "seek": 0.8, "arrive": 0.5, "wander": 0.8, "pursuit": 0.8,
     "follow_path": 0.8, "follow_flow": 0.8}[b] for b in BEHAVIOURS])
"""Buckland's Params.ini probabilities (prWallAvoidance 0.5, ... prArrive 0.5) by behaviour column;
pursuit, follow_path and follow_flow, absent from his dithered list, take prSeek's 0.8."""

_FLEE, _PURSUIT, _EVADE, _WANDER, _OBSTACLE = (B[b] for b in COMPUTED)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIT = 2.0 / 2.0**53


# --- noise ---------------------------------------------------------------------------------

@kernel(inline="always")
def splitmix64(x):
    """splitmix64's finaliser of a uint64 (wrapping arithmetic), as ``steering``'s numpy one."""
    x = x + _GOLDEN
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@kernel
def noise_key(seed, stream, tick):
    """The key of one tick's noise: ``seed`` a uint64 (the world's seed modulo 2**64), ``stream``
    and ``tick`` integers >= 0. ``entity_noise(noise_key(...), entity)`` equals row 0 of
    ``entity_uniforms(seed, [entity], tick, stream)``."""
    key = splitmix64(seed)
    key = splitmix64(key ^ np.uint64(stream))
    return splitmix64(key ^ np.uint64(tick))


@kernel(inline="always")
def entity_noise(key, entity):
    """The two numbers in [-1, 1) of ``entity`` (an id >= 0) under a tick's ``noise_key``."""
    h = splitmix64(key ^ np.uint64(entity))
    a = splitmix64(h)
    b = splitmix64(h + _GOLDEN)
    return float(a >> _S11) * _UNIT - 1.0, float(b >> _S11) * _UNIT - 1.0


# --- the behaviours, one row ------------------------------------------------------------------

@kernel(inline="always")
def _unit(x, y):
    """(x, y) / its length; (0, 0) for a zero (or NaN) length, as ``steering.normalize``."""
    d = math.sqrt(x * x + y * y)
    if d > 0.0:
        return x / d, y / d
    return 0.0, 0.0


@kernel(inline="always")
def flee_force(px, py, vx, vy, tx, ty, max_speed, panic_distance):
    """``steering.flee`` of one agent from (tx, ty)."""
    ax, ay = px - tx, py - ty
    nx, ny = _unit(ax, ay)
    if ax * ax + ay * ay <= panic_distance * panic_distance:
        return nx * max_speed - vx, ny * max_speed - vy
    return 0.0, 0.0


@kernel(inline="always")
def pursuit_force(px, py, vx, vy, hx, hy, max_speed, ex, ey, evx, evy, ehx, ehy):
    """``steering.pursuit`` of one agent after the evader at (ex, ey) moving (evx, evy), heading
    (ehx, ehy)."""
    tox, toy = ex - px, ey - py
    relative_heading = hx * ehx + hy * ehy
    head_on = tox * hx + toy * hy > 0.0 and relative_heading < HEAD_ON_RELATIVE_HEADING
    closing_speed = max_speed + math.sqrt(evx * evx + evy * evy)
    look_ahead = 0.0
    if closing_speed > 0.0:
        look_ahead = math.sqrt(tox * tox + toy * toy) / closing_speed
    nx, ny = _unit(tox, toy)
    look_ahead = look_ahead + (hx * nx + hy * ny - 1.0) * -TURNAROUND_COEFFICIENT
    if head_on:
        look_ahead = 0.0
    # seek the predicted position
    dx, dy = _unit(ex + evx * look_ahead - px, ey + evy * look_ahead - py)
    return dx * max_speed - vx, dy * max_speed - vy


@kernel(inline="always")
def evade_force(px, py, vx, vy, max_speed, qx, qy, qvx, qvy, threat_range):
    """``steering.evade`` of one agent from the pursuer at (qx, qy) moving (qvx, qvy)."""
    tox, toy = qx - px, qy - py
    dist = math.sqrt(tox * tox + toy * toy)
    closing_speed = max_speed + math.sqrt(qvx * qvx + qvy * qvy)
    look_ahead = 0.0
    if closing_speed > 0.0:
        look_ahead = dist / closing_speed
    fx, fy = flee_force(px, py, vx, vy, qx + qvx * look_ahead, qy + qvy * look_ahead, max_speed, math.inf)
    if dist * dist <= threat_range * threat_range:
        return fx, fy
    return 0.0, 0.0


@kernel(inline="always")
def wander_force(hx, hy, target_x, target_y, radius, distance, jitter, dt, ux, uy):
    """``steering.wander`` of one agent: (force x, force y, new target x, new target y) from its
    local target, circle and jitter, and its two numbers in [-1, 1)."""
    step = jitter * dt
    tx, ty = _unit(target_x + ux * step, target_y + uy * step)
    if math.sqrt(tx * tx + ty * ty) == 0.0:  # jittered onto the centre: the circle's front point
        tx, ty = 1.0, 0.0
    tx, ty = tx * radius, ty * radius
    lx, ly = tx + distance, ty + 0.0
    return lx * hx - ly * hy, lx * hy + ly * hx, tx, ty


# --- every row ----------------------------------------------------------------------------------

@kernel
def given_forces(n, capacity, layout, floats, pairs, flags, ints, row_by_entity, used, circles, seed, tick, dt,
                 given, given_on, new_wander):
    """The forces of ``COMPUTED``'s behaviours of the steering rows [0, n) that weight them,
    written to their rows of ``given[slot]`` (slot: the behaviour's place in ``COMPUTED``); the
    slot of each behaviour with ``used[b]`` (``steering_survey``'s) set in ``given_on`` (obstacle
    avoidance's only with a circle). The other rows of a slot are left as they are.

    ``capacity``, ``layout`` and the table's ``float_view``, ``pair_view``, ``flag_view`` and
    ``int64_view`` hold its columns (``ecs_nav.core.table_columns``); ``row_by_entity`` its
    ``row_by_entity``. ``circles``: (centres (m, 2), radii (m,), *grid.kernel_args()) of the map's
    circles (m = 0: none). ``seed`` (uint64) and ``tick``: wander's noise (``noise_key``, stream
    ``WANDER_STREAM``); ``dt`` s. A wandering row's new local target goes to its row of
    ``new_wander`` (n, 2) (``keep_wander_targets`` writes them to the table once the tick is
    accepted). Returns whether every new target is finite.

    Inputs as the reference path's: flee from the target entity's position where the row has a
    live one, else from ``steer_target`` where it has one, else no force; pursuit and evade only
    against a live target entity."""
    has_steering = column(flags, layout[HAS_STEERING], capacity)
    has_steer_target = column(flags, layout[HAS_STEER_TARGET], capacity)
    weights = float_rows(floats, layout[WEIGHTS], capacity, used.shape[0])
    pos, vel = column(pairs, layout[POS], capacity), column(pairs, layout[VEL], capacity)
    heading, steer_target = column(pairs, layout[HEADING], capacity), column(pairs, layout[STEER_TARGET], capacity)
    max_speed, radius = column(floats, layout[MAX_SPEED], capacity), column(floats, layout[RADIUS], capacity)
    entity, target_entity = column(ints, layout[ENTITY], capacity), column(ints, layout[TARGET_ENTITY], capacity)
    centres, obstacle_radius, ox, oy, inv_cell, cols, rows, cell_start, cell_items = circles
    flee_on, pursuit_on, evade_on, wander_on = used[_FLEE], used[_PURSUIT], used[_EVADE], used[_WANDER]
    obstacle_on = used[_OBSTACLE] and centres.shape[0] > 0
    given_on[0], given_on[1], given_on[2], given_on[3], given_on[4] = (flee_on, pursuit_on, evade_on, wander_on,
                                                                       obstacle_on)
    panic, threat = column(floats, layout[PANIC_DISTANCE], capacity), column(floats, layout[THREAT_RANGE], capacity)
    wander_target = column(pairs, layout[WANDER_TARGET], capacity)
    wander_radius = column(floats, layout[WANDER_RADIUS], capacity)
    wander_distance = column(floats, layout[WANDER_DISTANCE], capacity)
    wander_jitter = column(floats, layout[WANDER_JITTER], capacity)
    box_length = column(floats, layout[DETECTION_BOX_LENGTH], capacity)
    key = noise_key(seed, WANDER_STREAM, tick)
    finite = True
    for i in range(n):
        if not has_steering[i]:
            continue
        w = weights[i]
        px, py, vx, vy = pos[i, 0], pos[i, 1], vel[i, 0], vel[i, 1]
        hx, hy, ms = heading[i, 0], heading[i, 1], max_speed[i]
        t = -1  # the target entity's row
        if flee_on or pursuit_on or evade_on:
            te = target_entity[i]
            if 0 <= te < row_by_entity.shape[0]:
                t = row_by_entity[te]
        if flee_on and w[_FLEE] != 0.0:
            fx, fy = 0.0, 0.0
            if t >= 0:
                fx, fy = flee_force(px, py, vx, vy, pos[t, 0], pos[t, 1], ms, panic[i])
            elif has_steer_target[i]:
                fx, fy = flee_force(px, py, vx, vy, steer_target[i, 0], steer_target[i, 1], ms, panic[i])
            given[0, i, 0], given[0, i, 1] = fx, fy
        if pursuit_on and w[_PURSUIT] != 0.0:
            fx, fy = 0.0, 0.0
            if t >= 0:
                fx, fy = pursuit_force(px, py, vx, vy, hx, hy, ms, pos[t, 0], pos[t, 1], vel[t, 0], vel[t, 1],
                                       heading[t, 0], heading[t, 1])
            given[1, i, 0], given[1, i, 1] = fx, fy
        if evade_on and w[_EVADE] != 0.0:
            fx, fy = 0.0, 0.0
            if t >= 0:
                fx, fy = evade_force(px, py, vx, vy, ms, pos[t, 0], pos[t, 1], vel[t, 0], vel[t, 1], threat[i])
            given[2, i, 0], given[2, i, 1] = fx, fy
        if wander_on and w[_WANDER] != 0.0:
            ux, uy = entity_noise(key, entity[i])
            fx, fy, tx, ty = wander_force(hx, hy, wander_target[i, 0], wander_target[i, 1], wander_radius[i],
                                          wander_distance[i], wander_jitter[i], dt, ux, uy)
            given[3, i, 0], given[3, i, 1] = fx, fy
            new_wander[i, 0], new_wander[i, 1] = tx, ty
            if not (math.isfinite(tx) and math.isfinite(ty)):
                finite = False
        if obstacle_on and w[_OBSTACLE] != 0.0:
            ratio = 0.0
            if ms > 0.0:
                ratio = math.sqrt(vx * vx + vy * vy) / ms
            given[4, i, 0], given[4, i, 1] = obstacle_force(
                px, py, hx, hy, radius[i], box_length[i] * (1.0 + ratio), centres, obstacle_radius, ox, oy, inv_cell,
                cols, rows, cell_start, cell_items)
    return finite


@kernel
def keep_wander_targets(n, has_steering, weights, new_wander, wander_target):
    """Write ``given_forces``' new wander targets to the rows [0, n) that wander (``wander_target``:
    the table's column)."""
    for i in range(n):
        if has_steering[i] and weights[i, _WANDER] != 0.0:
            wander_target[i, 0], wander_target[i, 1] = new_wander[i, 0], new_wander[i, 1]
