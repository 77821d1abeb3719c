"""Steering behaviours and force combiners (seed 001: Buckland, "Programming Game AI by
Example", ch. 3; seed 004: the steering pipeline), vectorised over all agents.

Every behaviour is a pure function of columns: arrays in, a (k, 2) steering force out, one row
per agent. Unit mass: a force is "desired velocity - current velocity". Scalars broadcast to
all agents; ``target``-like arguments take (k, 2) or a single (2,) point.

Conventions (Buckland's): ``heading`` (k, 2) is a unit vector; ``side = perp(heading) =
(-hy, hx)``; a point's local coordinates are ``x = (p - pos) . heading`` (ahead) and
``y = (p - pos) . side``; a local vector (fx, fy) is ``fx * heading + fy * side`` in the world.

Nothing here produces NaN or infinity from finite inputs: zero vectors normalise to zero,
coincident points give the behaviour's "no direction" answer (documented per behaviour).

Time: forces are per second. ``apply_steering`` integrates ``velocity += force / mass * dt``
(Buckland's Vehicle::Update: acceleration = force / mass), then truncates to max_speed. Seed
004's per-frame pipeline is the same with dt = 1 frame.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.compile.options import NO_REFCOUNT

# the behaviours' names and columns live in a light module; here for the systems that read them
from ecs_nav.core.behaviours import BEHAVIOURS as BEHAVIOURS
from ecs_nav.core.behaviours import B as B
from ecs_nav.motion.spatial import UniformGrid, build_grid, cell_range

# --- constants (seed 001 / Buckland) ---------------------------------------------------------

DECELERATION_SLOW = 3.0
DECELERATION_NORMAL = 2.0
DECELERATION_FAST = 1.0
DECELERATION_TWEAKER = 0.3
"""Arrive: speed = dist / (deceleration * DECELERATION_TWEAKER)."""

HEAD_ON_RELATIVE_HEADING = -0.95
"""Pursuit: headings with a dot product below this (within about 18 degrees of opposite) and the
evader ahead mean "coming at each other": seek the evader's current position."""

TURNAROUND_COEFFICIENT = 0.5
"""Pursuit turn-around time = (dot - 1) * -coefficient: 1 s for a target straight behind."""

THREAT_RANGE = 100.0
"""Evade: a pursuer further than this is ignored."""

BRAKING_WEIGHT = 0.2
"""Obstacle avoidance: weight of the braking (along-heading) force."""

WALL_FEELER_ANGLE = math.pi / 4
"""Wall avoidance: the side feelers point this far either side of the heading, at half length."""

MIN_WALL_LENGTH = 1e-9
"""Wall avoidance ignores segments shorter than this."""



# --- vector helpers --------------------------------------------------------------------------

def _col(value, k: int) -> np.ndarray:
    """A scalar or (k,) value as a (k,) float64 column."""
    return np.broadcast_to(np.asarray(value, dtype=np.float64), (k,))


def _points(value, k: int) -> np.ndarray:
    """A (2,) point or (k, 2) points as (k, 2) float64."""
    return np.broadcast_to(np.asarray(value, dtype=np.float64), (k, 2))


def length(v: np.ndarray) -> np.ndarray:
    """(k,) Euclidean length of each row of (k, 2) ``v`` (``sqrt(x² + y²)``: three times as fast
    as ``np.hypot``, which guards against overflow beyond 1e154 that no game coordinate needs)."""
    x, y = v[..., 0], v[..., 1]
    return np.sqrt(x * x + y * y)


def normalize(v) -> np.ndarray:
    """Rows of ``v`` (..., 2) scaled to unit length; zero rows stay zero (never NaN)."""
    v = np.asarray(v, dtype=np.float64)
    n = length(v)[..., None]
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def truncate(v, max_len) -> np.ndarray:
    """Rows of ``v`` (k, 2) shortened to at most ``max_len`` (scalar or (k,)); direction kept."""
    v = np.asarray(v, dtype=np.float64)
    n = length(v)
    max_len = np.asarray(max_len, dtype=np.float64)
    scale = np.divide(max_len, n, out=np.ones_like(n), where=n > max_len)
    return v * scale[..., None]


def perp(heading: np.ndarray) -> np.ndarray:
    """Buckland's side vector: heading rotated +90 degrees, (-hy, hx)."""
    return np.stack([-heading[:, 1], heading[:, 0]], axis=1)


def to_world_vector(local: np.ndarray, heading: np.ndarray) -> np.ndarray:
    """(k, 2) local vectors (x ahead, y side) turned into world vectors."""
    return np.stack([local[:, 0] * heading[:, 0] - local[:, 1] * heading[:, 1],
                     local[:, 0] * heading[:, 1] + local[:, 1] * heading[:, 0]], axis=1)


# --- seek, flee, arrive, pursuit, evade -------------------------------------------------------

def seek(pos, vel, target, max_speed) -> np.ndarray:
    """Seek: ``normalize(target - pos) * max_speed - vel``. At the target: ``-vel`` (stop)."""
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    desired = normalize(_points(target, k) - pos) * _col(max_speed, k)[:, None]
    return desired - vel


def flee(pos, vel, target, max_speed, panic_distance=math.inf) -> np.ndarray:
    """Flee: ``normalize(pos - target) * max_speed - vel`` when the target is within
    ``panic_distance`` (Buckland: distance² > panic² → zero force); zero outside.
    On the target itself there is no away direction: ``-vel``."""
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    away = pos - _points(target, k)
    desired = normalize(away) * _col(max_speed, k)[:, None]
    panic = _col(panic_distance, k)
    inside = (away[:, 0] ** 2 + away[:, 1] ** 2) <= panic * panic
    return np.where(inside[:, None], desired - vel, 0.0)


def arrive(pos, vel, target, max_speed, deceleration=DECELERATION_NORMAL) -> np.ndarray:
    """Arrive: ``speed = min(dist / (deceleration * DECELERATION_TWEAKER), max_speed)``,
    desired = ``to_target * speed / dist``; force ``desired - vel``; zero force at dist 0.

    ``deceleration`` per agent: DECELERATION_SLOW (3), _NORMAL (2) or _FAST (1); any value > 0.
    """
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    to_target = _points(target, k) - pos
    dist = length(to_target)
    speed = np.minimum(dist / (_col(deceleration, k) * DECELERATION_TWEAKER), _col(max_speed, k))
    per_dist = np.divide(speed, dist, out=np.zeros_like(dist), where=dist > 0)
    force = to_target * per_dist[:, None] - vel
    return np.where((dist > 0)[:, None], force, 0.0)


def turnaround_time(pos, heading, target, coefficient=TURNAROUND_COEFFICIENT) -> np.ndarray:
    """(k,) Buckland's TurnAroundTime: ``(heading . normalize(target - pos) - 1) * -coefficient``
    (0 for a target dead ahead, 2·coefficient straight behind; coefficient 0 disables it)."""
    to_target = normalize(_points(target, len(pos)) - pos)
    dot = np.einsum("ij,ij->i", heading, to_target)
    return (dot - 1.0) * -np.asarray(coefficient, dtype=np.float64)


def pursuit(pos, vel, heading, max_speed, evader_pos, evader_vel, evader_heading,
            turnaround_coefficient=TURNAROUND_COEFFICIENT) -> np.ndarray:
    """Pursuit (Buckland): when the evader is ahead (``to_evader . heading > 0``) and the two
    face each other (``heading . evader_heading < HEAD_ON_RELATIVE_HEADING``), seek the evader's
    position. Otherwise seek ``evader_pos + evader_vel * T`` with look-ahead
    ``T = |to_evader| / (max_speed + evader_speed)`` plus the turn-around time (T = 0 when
    both speeds are 0).

    ``evader_*`` are (k, 2): row i describes the evader agent i pursues."""
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    evader_pos = _points(evader_pos, k)
    evader_vel = _points(evader_vel, k)
    to_evader = evader_pos - pos
    relative_heading = np.einsum("ij,ij->i", heading, _points(evader_heading, k))
    ahead = np.einsum("ij,ij->i", to_evader, heading) > 0
    head_on = ahead & (relative_heading < HEAD_ON_RELATIVE_HEADING)
    closing_speed = _col(max_speed, k) + length(evader_vel)
    look_ahead = np.divide(length(to_evader), closing_speed, out=np.zeros(k), where=closing_speed > 0)
    look_ahead = look_ahead + turnaround_time(pos, heading, evader_pos, turnaround_coefficient)
    look_ahead = np.where(head_on, 0.0, look_ahead)
    return seek(pos, vel, evader_pos + evader_vel * look_ahead[:, None], max_speed)


def evade(pos, vel, max_speed, pursuer_pos, pursuer_vel, threat_range=THREAT_RANGE) -> np.ndarray:
    """Evade (Buckland): flee the pursuer's predicted position ``pursuer_pos + pursuer_vel * T``,
    ``T = |to_pursuer| / (max_speed + pursuer_speed)``; zero force when the pursuer is further
    than ``threat_range``. (The seed's ``ToEvader``/``evader`` are typos for the pursuer.)"""
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    pursuer_pos = _points(pursuer_pos, k)
    pursuer_vel = _points(pursuer_vel, k)
    to_pursuer = pursuer_pos - pos
    dist = length(to_pursuer)
    closing_speed = _col(max_speed, k) + length(pursuer_vel)
    look_ahead = np.divide(dist, closing_speed, out=np.zeros(k), where=closing_speed > 0)
    force = flee(pos, vel, pursuer_pos + pursuer_vel * look_ahead[:, None], max_speed)
    threat = _col(threat_range, k)
    return np.where((dist * dist <= threat * threat)[:, None], force, 0.0)


# --- wander and its per-entity noise ------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def entity_uniforms(seed: int, entity_ids, tick: int, stream: int = 0) -> np.ndarray:
    """(k, 2) counter-based noise in [-1, 1): a pure function of (seed, entity id, tick, stream).

    Each entity's numbers do not depend on its row or on the other entities, so a run is the
    same whatever order rows are in. ``stream`` separates independent uses (wander, dithering).
    """
    ids = np.asarray(entity_ids, dtype=np.int64).reshape(-1).view(np.uint64)
    with np.errstate(over="ignore"):
        key = _splitmix64(np.array([int(seed) % 2**64], dtype=np.uint64))  # any seed up to 2**64 - 1
        key = _splitmix64(key ^ np.array([stream], dtype=np.int64).view(np.uint64))
        key = _splitmix64(key ^ np.array([tick], dtype=np.int64).view(np.uint64))
        h = _splitmix64(key ^ ids)
        bits = _splitmix64(h[:, None] + np.arange(2, dtype=np.uint64) * _GOLDEN)
    return (bits >> np.uint64(11)).astype(np.float64) * (2.0 / 2.0**53) - 1.0


def wander(pos, vel, heading, wander_target, wander_radius, wander_distance, wander_jitter, dt,
           uniforms) -> tuple[np.ndarray, np.ndarray]:
    """Wander (Buckland): jitter the target on a circle ahead of the agent.

    ``wander_target`` (k, 2) is in local space, on the circle of radius ``wander_radius``. Each
    step adds ``uniforms * wander_jitter * dt`` (jitter is per second; ``uniforms`` (k, 2) in
    [-1, 1), e.g. ``entity_uniforms``), projects back onto the circle (a target jittered onto
    the centre goes to the circle's front point), moves the circle ``wander_distance`` ahead and
    turns it into the world. Force = world target - pos, not desired - vel (Reynolds, as the
    seed notes); ``vel`` is unused but kept for a uniform signature.

    Returns (force (k, 2), new_wander_target (k, 2)).
    """
    del vel
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    radius = _col(wander_radius, k)
    jitter = (_col(wander_jitter, k) * float(dt))[:, None]
    target = _points(wander_target, k) + np.asarray(uniforms, dtype=np.float64) * jitter
    target = normalize(target)
    target[length(target) == 0] = (1.0, 0.0)
    target = target * radius[:, None]
    local = target + np.stack([_col(wander_distance, k), np.zeros(k)], axis=1)
    return to_world_vector(local, np.asarray(heading, dtype=np.float64)), target


# --- obstacle and wall avoidance (compiled, with a grid broadphase) ---------------------------

@kernel(**NO_REFCOUNT)
def obstacle_force(px, py, hx, hy, radius, box, centres, obstacle_radius, ox, oy, inv_cell, cols, rows, cell_start,
                   cell_items):
    """One agent's obstacle avoidance force (see ``obstacle_avoidance``) as (fx, fy): the agent at
    (px, py) heading (hx, hy) with its own ``radius`` and detection box length ``box`` (<= 0: no
    force); the circles and their grid's kernel args. ``obstacle_avoidance``'s loop and the
    SteeringSystem's (``ecs_nav.motion.steering_given``) call it per agent."""
    if box <= 0.0:
        return 0.0, 0.0
    # obstacles are binned by their bounding boxes: the cells within box of pos hold every
    # obstacle whose centre is closer than box + its radius (Buckland's tagging range)
    c0x, c1x = cell_range(px - box, px + box, ox, inv_cell, cols)
    c0y, c1y = cell_range(py - box, py + box, oy, inv_cell, rows)
    best_ip = np.inf
    best = -1
    best_x = 0.0
    best_y = 0.0
    for cy in range(c0y, c1y + 1):
        for cx in range(c0x, c1x + 1):
            c = cy * cols + cx
            for s in range(cell_start[c], cell_start[c + 1]):
                j = cell_items[s]
                dx = centres[j, 0] - px
                dy = centres[j, 1] - py
                reach = box + obstacle_radius[j]
                if dx * dx + dy * dy >= reach * reach:
                    continue
                local_x = dx * hx + dy * hy
                local_y = -dx * hy + dy * hx
                if local_x < 0.0:
                    continue
                expanded = obstacle_radius[j] + radius
                if abs(local_y) >= expanded:
                    continue
                sqrt_part = np.sqrt(expanded * expanded - local_y * local_y)
                ip = local_x - sqrt_part
                if ip <= 0.0:
                    ip = local_x + sqrt_part
                # closest wins; ties to the lower obstacle index (a cell visit order of
                # duplicates must not matter)
                if ip < best_ip or (ip == best_ip and j < best):
                    best_ip = ip
                    best = j
                    best_x = local_x
                    best_y = local_y
    if best < 0:
        return 0.0, 0.0
    multiplier = 1.0 + (box - best_x) / box
    lateral = (obstacle_radius[best] - best_y) * multiplier
    braking = (obstacle_radius[best] - best_x) * BRAKING_WEIGHT
    return braking * hx - lateral * hy, braking * hy + lateral * hx


@kernel
def _obstacle_avoidance(pos, heading, radius, box_length, centres, obstacle_radius, ox, oy, inv_cell,
                        cols, rows, cell_start, cell_items):
    k = pos.shape[0]
    out = np.zeros((k, 2))
    for i in range(k):
        out[i, 0], out[i, 1] = obstacle_force(pos[i, 0], pos[i, 1], heading[i, 0], heading[i, 1], radius[i],
                                              box_length[i], centres, obstacle_radius, ox, oy, inv_cell, cols, rows,
                                              cell_start, cell_items)
    return out


def obstacle_grid(obstacles_centre, obstacles_radius, cell_size: float) -> UniformGrid:
    """The broadphase grid over circle obstacles (build once for static obstacles)."""
    c = np.asarray(obstacles_centre, dtype=np.float64).reshape(-1, 2)
    r = np.asarray(obstacles_radius, dtype=np.float64).reshape(-1, 1)
    return build_grid(c - r, cell_size, hi=c + r)


def obstacle_avoidance(pos, vel, heading, radius, max_speed, obstacles_centre, obstacles_radius,
                       min_detection_box_length, grid: UniformGrid | None = None) -> np.ndarray:
    """Obstacle avoidance (Buckland), circles only.

    Detection box length ``L = min_detection_box_length * (1 + speed / max_speed)``. Obstacles
    closer than ``L + r_obstacle`` are taken into local space; those behind (local x < 0) and
    those with ``|local y| >= r_obstacle + r_agent`` are dropped; the expanded circle meets the
    agent's x axis at ``ip = cx - sqrt(r_exp² - cy²)`` (``cx + ...`` when that is <= 0); the
    smallest ip wins. Force in local space: lateral ``(r_obstacle - local_y) * multiplier``,
    ``multiplier = 1 + (L - local_x) / L``; braking ``(r_obstacle - local_x) * BRAKING_WEIGHT``.

    ``r_obstacle`` in both force terms is the obstacle's own radius, not the expanded one: so
    Buckland's code (``ClosestIntersectingObstacle->BRadius()``) and the seed write it. A quirk
    kept from the source: the lateral term is positive (toward +side) whenever local y < r_obs,
    so an obstacle slightly to the +side is passed on its far side; it is still avoided.

    Args:
        pos, vel, heading: (k, 2). radius, max_speed, min_detection_box_length: scalar or (k,).
        obstacles_centre: (m, 2); obstacles_radius: (m,).
        grid: ``obstacle_grid(...)`` over the same obstacles, to reuse across ticks.
    """
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    k = pos.shape[0]
    centres = np.ascontiguousarray(obstacles_centre, dtype=np.float64).reshape(-1, 2)
    if k == 0 or centres.shape[0] == 0:
        return np.zeros((k, 2))
    obstacle_radius = np.ascontiguousarray(obstacles_radius, dtype=np.float64).reshape(-1)
    max_speed = _col(max_speed, k)
    ratio = np.divide(length(np.asarray(vel, dtype=np.float64)), max_speed, out=np.zeros(k),
                      where=max_speed > 0)
    box_length = np.ascontiguousarray(_col(min_detection_box_length, k) * (1.0 + ratio))
    if grid is None:
        grid = obstacle_grid(centres, obstacle_radius, max(float(box_length.max()), 1e-6))
    return _obstacle_avoidance(
        pos, np.ascontiguousarray(heading, dtype=np.float64),
        np.ascontiguousarray(_col(radius, k)), box_length, centres, obstacle_radius,
        *grid.kernel_args())


@kernel(**NO_REFCOUNT)
def wall_force(px, py, hx, hy, reach, wall_a, wall_b, ox, oy, inv_cell, cols, rows, cell_start, cell_items):
    """One agent's wall avoidance force (see ``wall_avoidance``) as (fx, fy): the agent at
    (px, py) heading (hx, hy) with feelers of ``reach``; walls and their grid's kernel args.
    ``wall_avoidance``'s loop and the SteeringSystem's (``steering_rows.wall_avoidance_rows``) call
    it per agent, so it is compiled without reference counting (``NO_REFCOUNT``, see ``ecs_nav.compile.options``): the
    incref/decref of its four arrays per call made that loop 1.45x slower."""
    cos_f = np.cos(WALL_FEELER_ANGLE)
    sin_f = np.sin(WALL_FEELER_ANGLE)
    c0x, c1x = cell_range(px - reach, px + reach, ox, inv_cell, cols)
    c0y, c1y = cell_range(py - reach, py + reach, oy, inv_cell, rows)
    best_overshoot = 0.0
    out_x = 0.0
    out_y = 0.0
    for f in range(3):
        if f == 0:
            fx, fy, flen = hx, hy, reach
        elif f == 1:
            fx, fy, flen = hx * cos_f - hy * sin_f, hx * sin_f + hy * cos_f, 0.5 * reach
        else:
            fx, fy, flen = hx * cos_f + hy * sin_f, -hx * sin_f + hy * cos_f, 0.5 * reach
        ex, ey = fx * flen, fy * flen  # feeler vector from pos to its tip
        best_t = np.inf
        best_wall = -1
        for cy in range(c0y, c1y + 1):
            for cx in range(c0x, c1x + 1):
                c = cy * cols + cx
                for s in range(cell_start[c], cell_start[c + 1]):
                    w = cell_items[s]
                    ax, ay = wall_a[w, 0], wall_a[w, 1]
                    wx, wy = wall_b[w, 0] - ax, wall_b[w, 1] - ay
                    denom = ex * wy - ey * wx
                    if denom == 0.0:
                        continue  # parallel: no single crossing point
                    qx, qy = ax - px, ay - py
                    t = (qx * wy - qy * wx) / denom  # along the feeler
                    u = (qx * ey - qy * ex) / denom  # along the wall
                    if t < 0.0 or t > 1.0 or u < 0.0 or u > 1.0:
                        continue
                    if t < best_t or (t == best_t and w < best_wall):
                        best_t = t
                        best_wall = w
        if best_wall < 0:
            continue
        overshoot = (1.0 - best_t) * flen
        if overshoot <= best_overshoot:
            continue
        wx = wall_b[best_wall, 0] - wall_a[best_wall, 0]
        wy = wall_b[best_wall, 1] - wall_a[best_wall, 1]
        wl = np.sqrt(wx * wx + wy * wy)
        nx, ny = -wy / wl, wx / wl  # Buckland's wall normal: left of a -> b
        if nx * (px - wall_a[best_wall, 0]) + ny * (py - wall_a[best_wall, 1]) < 0.0:
            nx, ny = -nx, -ny  # two-sided: the normal faces the agent
        best_overshoot = overshoot
        out_x = nx * overshoot
        out_y = ny * overshoot
    return out_x, out_y


@kernel
def _wall_avoidance(pos, heading, feeler_length, wall_a, wall_b, ox, oy, inv_cell, cols, rows,
                    cell_start, cell_items):
    k = pos.shape[0]
    out = np.zeros((k, 2))
    for i in range(k):
        out[i, 0], out[i, 1] = wall_force(pos[i, 0], pos[i, 1], heading[i, 0], heading[i, 1], feeler_length[i],
                                          wall_a, wall_b, ox, oy, inv_cell, cols, rows, cell_start, cell_items)
    return out


def wall_grid(walls_a, walls_b, cell_size: float) -> UniformGrid:
    """The broadphase grid over wall segments (build once for static walls)."""
    a = np.asarray(walls_a, dtype=np.float64).reshape(-1, 2)
    b = np.asarray(walls_b, dtype=np.float64).reshape(-1, 2)
    return build_grid(np.minimum(a, b), cell_size, hi=np.maximum(a, b))


def wall_avoidance(pos, heading, walls_a, walls_b, feeler_length,
                   grid: UniformGrid | None = None) -> np.ndarray:
    """Wall avoidance (Buckland): three feelers from the agent -- ahead at ``feeler_length``, and
    45 degrees either side at half length. Each feeler finds its closest crossing with a wall
    segment; force = the wall's normal * overshoot (the part of the feeler beyond the wall).

    Two choices where Buckland's code is one-sided or order-dependent: a wall's normal is
    turned to face the agent (walls are two-sided: box edges and map edges alike, whatever
    their winding), and where several feelers hit, the deepest overshoot gives the force
    (Buckland's loop lets the last feeler overwrite the others). Walls
    walls parallel to a feeler are ignored, and so are segments shorter than MIN_WALL_LENGTH
    (they have no usable normal).

    Args:
        pos, heading: (k, 2). walls_a, walls_b: (w, 2) segment end points.
        feeler_length: scalar or (k,). grid: ``wall_grid(...)`` to reuse across ticks.
    """
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    k = pos.shape[0]
    a = np.ascontiguousarray(walls_a, dtype=np.float64).reshape(-1, 2)
    b = np.ascontiguousarray(walls_b, dtype=np.float64).reshape(-1, 2)
    keep = length(b - a) > MIN_WALL_LENGTH
    if not keep.all():
        a, b = np.ascontiguousarray(a[keep]), np.ascontiguousarray(b[keep])
        grid = None
    if k == 0 or a.shape[0] == 0:
        return np.zeros((k, 2))
    feeler = np.ascontiguousarray(_col(feeler_length, k))
    if grid is None:
        grid = wall_grid(a, b, max(float(feeler.max()), 1e-6))
    return _wall_avoidance(pos, np.ascontiguousarray(heading, dtype=np.float64), feeler, a, b,
                           *grid.kernel_args())


# --- group behaviours over the neighbour CSR (ecs_nav.motion.neighbours.neighbours_within) -------------

@kernel
def _separation(pos, offsets, rows):
    k = pos.shape[0]
    out = np.zeros((k, 2))
    for i in range(k):
        for s in range(offsets[i], offsets[i + 1]):
            dx = pos[i, 0] - pos[rows[s], 0]
            dy = pos[i, 1] - pos[rows[s], 1]
            d2 = dx * dx + dy * dy
            if d2 > 0.0:
                out[i, 0] += dx / d2
                out[i, 1] += dy / d2
    return out


@kernel
def _neighbour_mean(values, offsets, rows):
    """(k, 2) mean of ``values`` over each agent's neighbours; (k,) neighbour counts."""
    k = offsets.shape[0] - 1
    out = np.zeros((k, 2))
    count = np.diff(offsets)
    for i in range(k):
        if count[i] == 0:
            continue
        for s in range(offsets[i], offsets[i + 1]):
            out[i, 0] += values[rows[s], 0]
            out[i, 1] += values[rows[s], 1]
        out[i, 0] /= count[i]
        out[i, 1] /= count[i]
    return out, count


def _csr(offsets, neighbour_rows):
    return (np.ascontiguousarray(offsets, dtype=np.int64),
            np.ascontiguousarray(neighbour_rows, dtype=np.int64))


def separation(pos, offsets, neighbour_rows) -> np.ndarray:
    """Separation (Buckland): sum over neighbours of ``normalize(to_agent) / |to_agent|``
    (to_agent = pos - neighbour pos), i.e. to_agent / |to_agent|². A coincident neighbour has no
    direction and adds nothing. ``offsets``/``neighbour_rows``: the CSR of
    ``ecs_nav.motion.neighbours.neighbours_within``."""
    return _separation(np.ascontiguousarray(pos, dtype=np.float64), *_csr(offsets, neighbour_rows))


def alignment(heading, offsets, neighbour_rows) -> np.ndarray:
    """Alignment (Buckland): average neighbour heading - own heading; zero with no neighbours."""
    heading = np.ascontiguousarray(heading, dtype=np.float64)
    average, count = _neighbour_mean(heading, *_csr(offsets, neighbour_rows))
    return np.where((count > 0)[:, None], average - heading, 0.0)


def cohesion(pos, vel, max_speed, offsets, neighbour_rows) -> np.ndarray:
    """Cohesion (Buckland): seek the neighbours' centre of mass, normalised to unit length (as
    Buckland's code does: cohesion is otherwise much stronger than separation and alignment).
    Zero with no neighbours."""
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    centre, count = _neighbour_mean(pos, *_csr(offsets, neighbour_rows))
    return np.where((count > 0)[:, None], normalize(seek(pos, vel, centre, max_speed)), 0.0)


@kernel
def _flock_sums(pos, heading, radius, with_heading, ox, oy, inv_cell, cols, rows, cell_start, cell_items):
    """One pass over the grid: per agent the neighbour count and the sums of the separation
    push, the neighbours' positions and (``with_heading``) their headings; neighbours strictly
    within radius[i], itself excluded; agents with radius 0 are skipped."""
    k = pos.shape[0]
    # the cells of one grid row are one contiguous span of these, read in order
    near_pos = np.empty((cell_items.shape[0], 2))
    near_heading = np.zeros((cell_items.shape[0] if with_heading else 0, 2))
    for s in range(cell_items.shape[0]):  # by element: see kernel_options (no array-to-row copy)
        j = cell_items[s]
        near_pos[s, 0], near_pos[s, 1] = pos[j, 0], pos[j, 1]
        if with_heading:
            near_heading[s, 0], near_heading[s, 1] = heading[j, 0], heading[j, 1]
    count = np.zeros(k, np.int64)
    sums = np.zeros((k, 6))  # push x, y; position x, y; heading x, y
    for i in range(k):
        r = radius[i]
        if r <= 0.0:
            continue
        qx, qy = pos[i, 0], pos[i, 1]
        cx0, cx1 = cell_range(qx - r, qx + r, ox, inv_cell, cols)
        cy0, cy1 = cell_range(qy - r, qy + r, oy, inv_cell, rows)
        n = 0
        px = py = cx = cy_ = hx = hy = 0.0
        for cy in range(cy0, cy1 + 1):
            for s in range(cell_start[cy * cols + cx0], cell_start[cy * cols + cx1 + 1]):
                dx = qx - near_pos[s, 0]
                dy = qy - near_pos[s, 1]
                d2 = dx * dx + dy * dy
                if d2 >= r * r or cell_items[s] == i:
                    continue
                n += 1
                if d2 > 0.0:
                    px += dx / d2
                    py += dy / d2
                cx += near_pos[s, 0]
                cy_ += near_pos[s, 1]
                if with_heading:
                    hx += near_heading[s, 0]
                    hy += near_heading[s, 1]
        count[i] = n
        sums[i, 0], sums[i, 1], sums[i, 2], sums[i, 3], sums[i, 4], sums[i, 5] = px, py, cx, cy_, hx, hy
    return count, sums


flock_sums = _flock_sums
"""``neighbour_sums``' compiled kernel with the grid's kernel args spread, for other kernels to
call: (pos, heading, radius, with_heading, ox, oy, inv_cell, cols, rows, cell_start,
cell_items) -> (count, sums)."""


def neighbour_sums(pos, heading, radius, with_heading: bool, grid: UniformGrid):
    """Per agent over its neighbours strictly within ``radius[i]`` (itself excluded; radius 0:
    none): the count (k,) int64 and (k, 6) sums -- the separation push (to_agent / |to_agent|²),
    the neighbours' positions and, with ``with_heading``, their headings (else zero).
    pos, heading (k, 2) and radius (k,) contiguous float64; ``grid`` is ``build_grid(pos, ...)``."""
    return _flock_sums(pos, heading, radius, with_heading, *grid.kernel_args())


def flock(pos, vel, heading, max_speed, radius, grid: UniformGrid | None = None,
          alignment: bool = True, cohesion: bool = True):
    """Separation, alignment and cohesion of every agent over *all* its neighbours within
    ``radius`` (scalar or (k,); 0 = no neighbours) in one pass over a uniform grid, without
    building the neighbour lists: the same forces as ``separation``/``alignment``/``cohesion``
    over ``neighbours_within(pos, radius)`` (up to the order of summation), at about half the
    cost. With a cap on neighbours use those (the closest are kept).

    Args:
        grid: ``build_grid(pos, ...)`` of this tick; built with cells of the largest radius
            when None.
        alignment, cohesion: compute these too (separation always is).

    Returns:
        (separation, alignment or None, cohesion or None), each (k, 2).
    """
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    heading = np.ascontiguousarray(heading, dtype=np.float64)
    k = pos.shape[0]
    radius = np.ascontiguousarray(_col(radius, k))
    if grid is None:
        grid = build_grid(pos, max(float(radius.max(initial=0.0)), 1e-6))
    count, sums = neighbour_sums(pos, heading, radius, bool(alignment), grid)
    some = (count > 0)[:, None]
    n = np.maximum(count, 1)[:, None]
    aligned = np.where(some, sums[:, 4:6] / n - heading, 0.0) if alignment else None
    cohesive = np.where(some, normalize(seek(pos, vel, sums[:, 2:4] / n, max_speed)), 0.0) if cohesion else None
    return np.ascontiguousarray(sums[:, 0:2]), aligned, cohesive


def follow_flow(vel, field_direction, max_speed) -> np.ndarray:
    """Follow a flow field (seed 003): desired = field direction * max_speed; force = desired - vel.
    ``field_direction`` (k, 2) is the field sampled at each agent (unit or zero)."""
    vel = np.asarray(vel, dtype=np.float64)
    return np.asarray(field_direction, dtype=np.float64) * _col(max_speed, len(vel))[:, None] - vel


# --- combiners and the pipeline --------------------------------------------------------------

def combine_weighted_sum(forces, weights, max_force) -> np.ndarray:
    """Weighted truncated sum (Buckland's CalculateWeightedSum): sum of force·weight over the
    behaviours, then truncated to max_force. forces (k, B, 2), weights (k, B) -> (k, 2)."""
    forces = np.asarray(forces, dtype=np.float64)
    total = np.einsum("kbi,kb->ki", forces, np.asarray(weights, dtype=np.float64))
    return truncate(total, _col(max_force, forces.shape[0]))


@kernel
def _prioritized(forces, weights, max_force):
    k, n = weights.shape
    out = np.zeros((k, 2))
    for i in range(k):
        tx = 0.0
        ty = 0.0
        for b in range(n):
            # Buckland's AccumulateForce
            remaining = max_force[i] - np.sqrt(tx * tx + ty * ty)
            if remaining <= 0.0:
                break
            fx = forces[i, b, 0] * weights[i, b]
            fy = forces[i, b, 1] * weights[i, b]
            magnitude = np.sqrt(fx * fx + fy * fy)
            if magnitude > remaining:
                fx *= remaining / magnitude
                fy *= remaining / magnitude
            tx += fx
            ty += fy
        out[i, 0] = tx
        out[i, 1] = ty
    return out


def combine_prioritized(forces, weights, max_force) -> np.ndarray:
    """Weighted truncated running sum with prioritisation (Buckland's CalculatePrioritized with
    AccumulateForce): in priority order, each weighted force is added while magnitude is left
    (``max_force - |running total|`` > 0); one longer than what is left is cut to the remaining
    magnitude. Once the total reaches max_force nothing more is added.
    forces (k, B, 2) in BEHAVIOURS order, weights (k, B) -> (k, 2)."""
    forces = np.ascontiguousarray(forces, dtype=np.float64)
    k, n = forces.shape[:2]
    weights = np.ascontiguousarray(np.broadcast_to(np.asarray(weights, dtype=np.float64), (k, n)))
    return _prioritized(forces, weights, np.ascontiguousarray(_col(max_force, k)))


@kernel
def _dithered(forces, weights, probabilities, max_force, uniforms):
    k, n = weights.shape
    out = np.zeros((k, 2))
    for i in range(k):
        for b in range(n):
            p = probabilities[i, b]
            if not (uniforms[i, b] < p):
                continue
            fx = forces[i, b, 0] * weights[i, b] / p
            fy = forces[i, b, 1] * weights[i, b] / p
            if fx == 0.0 and fy == 0.0:
                continue
            magnitude = np.sqrt(fx * fx + fy * fy)
            if magnitude > max_force[i]:
                fx *= max_force[i] / magnitude
                fy *= max_force[i] / magnitude
            out[i, 0] = fx
            out[i, 1] = fy
            break
    return out


def combine_dithered(forces, weights, probabilities, max_force, uniforms) -> np.ndarray:
    """Prioritised dithering (Buckland's CalculateDithered): in priority order, behaviour b is
    evaluated when ``uniforms[:, b] < probabilities[b]``; the first evaluated one whose weighted
    force is non-zero is used alone, as ``force * weight / probability``, truncated to max_force.
    Zero when none is chosen.

    forces (k, B, 2); weights (k, B); probabilities (B,) or (k, B) in [0, 1];
    uniforms (k, B) in [0, 1) (e.g. ``(entity_uniforms(...) + 1) / 2``)."""
    forces = np.ascontiguousarray(forces, dtype=np.float64)
    k, n = forces.shape[:2]

    def table(values):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=np.float64), (k, n)))

    return _dithered(forces, table(weights), table(probabilities),
                     np.ascontiguousarray(_col(max_force, k)), table(uniforms))


def apply_steering(vel, force, mass, max_speed, max_force, dt) -> np.ndarray:
    """Seed 004's pipeline with a fixed dt: force truncated to max_force, divided by mass
    (acceleration, per second), ``velocity + acceleration * dt`` truncated to max_speed.
    Returns the new (k, 2) velocity. Raises ValueError for a mass <= 0."""
    vel = np.asarray(vel, dtype=np.float64)
    k = vel.shape[0]
    mass = _col(mass, k)
    if np.any(~(mass > 0)):
        raise ValueError("mass must be > 0")
    accel = truncate(force, _col(max_force, k)) / mass[:, None]
    return truncate(vel + accel * float(dt), _col(max_speed, k))
