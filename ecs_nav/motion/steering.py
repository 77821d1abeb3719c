"""Steering behaviours of one agent and force combiners (seed 001: Buckland, "Programming Game
AI by Example", ch. 3; seed 004: the steering pipeline), vectorised over all agents. Obstacle and
wall avoidance are ``ecs_nav.motion.steering_obstacles``; separation, alignment, cohesion and the
flock are ``ecs_nav.motion.steering_group``.

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

# the behaviours' names and columns live in a light module; here for the systems that read them
from ecs_nav.core.behaviours import BEHAVIOURS as BEHAVIOURS
from ecs_nav.core.behaviours import B as B

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


def __getattr__(name: str):
    """The names that moved out of this module (``ecs_nav.moved.MOVED_NAMES``), answered with a
    DeprecationWarning for one release."""
    from ecs_nav.moved import moved_attribute

    return moved_attribute(__name__, name)


# --- vector helpers --------------------------------------------------------------------------

def per_agent(value, k: int) -> np.ndarray:
    """A scalar or (k,) value as a (k,) float64 column (a read-only broadcast view)."""
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
    desired = normalize(_points(target, k) - pos) * per_agent(max_speed, k)[:, None]
    return desired - vel


def flee(pos, vel, target, max_speed, panic_distance=math.inf) -> np.ndarray:
    """Flee: ``normalize(pos - target) * max_speed - vel`` when the target is within
    ``panic_distance`` (Buckland: distance² > panic² → zero force); zero outside.
    On the target itself there is no away direction: ``-vel``."""
    pos = np.asarray(pos, dtype=np.float64)
    k = pos.shape[0]
    away = pos - _points(target, k)
    desired = normalize(away) * per_agent(max_speed, k)[:, None]
    panic = per_agent(panic_distance, k)
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
    speed = np.minimum(dist / (per_agent(deceleration, k) * DECELERATION_TWEAKER), per_agent(max_speed, k))
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
    closing_speed = per_agent(max_speed, k) + length(evader_vel)
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
    closing_speed = per_agent(max_speed, k) + length(pursuer_vel)
    look_ahead = np.divide(dist, closing_speed, out=np.zeros(k), where=closing_speed > 0)
    force = flee(pos, vel, pursuer_pos + pursuer_vel * look_ahead[:, None], max_speed)
    threat = per_agent(threat_range, k)
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
    radius = per_agent(wander_radius, k)
    jitter = (per_agent(wander_jitter, k) * float(dt))[:, None]
    target = _points(wander_target, k) + np.asarray(uniforms, dtype=np.float64) * jitter
    target = normalize(target)
    target[length(target) == 0] = (1.0, 0.0)
    target = target * radius[:, None]
    local = target + np.stack([per_agent(wander_distance, k), np.zeros(k)], axis=1)
    return to_world_vector(local, np.asarray(heading, dtype=np.float64)), target


def follow_flow(vel, field_direction, max_speed) -> np.ndarray:
    """Follow a flow field (seed 003): desired = field direction * max_speed; force = desired - vel.
    ``field_direction`` (k, 2) is the field sampled at each agent (unit or zero)."""
    vel = np.asarray(vel, dtype=np.float64)
    return np.asarray(field_direction, dtype=np.float64) * per_agent(max_speed, len(vel))[:, None] - vel


# --- combiners and the pipeline --------------------------------------------------------------

def combine_weighted_sum(forces, weights, max_force) -> np.ndarray:
    """Weighted truncated sum (Buckland's CalculateWeightedSum): sum of force·weight over the
    behaviours, then truncated to max_force. forces (k, B, 2), weights (k, B) -> (k, 2)."""
    forces = np.asarray(forces, dtype=np.float64)
    total = np.einsum("kbi,kb->ki", forces, np.asarray(weights, dtype=np.float64))
    return truncate(total, per_agent(max_force, forces.shape[0]))


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
    return _prioritized(forces, weights, np.ascontiguousarray(per_agent(max_force, k)))


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
                     np.ascontiguousarray(per_agent(max_force, k)), table(uniforms))


def apply_steering(vel, force, mass, max_speed, max_force, dt) -> np.ndarray:
    """Seed 004's pipeline with a fixed dt: force truncated to max_force, divided by mass
    (acceleration, per second), ``velocity + acceleration * dt`` truncated to max_speed.
    Returns the new (k, 2) velocity. Raises ValueError for a mass <= 0."""
    vel = np.asarray(vel, dtype=np.float64)
    k = vel.shape[0]
    mass = per_agent(mass, k)
    if np.any(~(mass > 0)):
        raise ValueError("mass must be > 0")
    accel = truncate(force, per_agent(max_force, k)) / mass[:, None]
    return truncate(vel + accel * float(dt), per_agent(max_speed, k))
