"""The row kernel's combiners: how one steering row's behaviour forces become its steering force, N.

``ecs_nav.motion.steering_rows.steer_rows`` combines each row as its ``Steering.combiner`` code
says, with the same operations as the reference path's vectorised functions
(``ecs_nav.motion.steering``): the weighted sum truncated to ``max_force`` (code 0, ``truncate``),
the prioritised running sum (1, ``prioritised``, as ``combine_prioritized``) or prioritised
dithering (2, ``dithered``, as ``combine_dithered``, its numbers drawn from the splitmix64 chain
of ``steering_given.entity_noise`` on the reference path's streams). Forces in N, ``max_force``
>= 0.
"""

from __future__ import annotations

import math

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.steering_given import DITHER_PROBABILITIES, DITHER_STREAM, entity_noise, noise_key


@kernel
def truncate(x, y, max_len):
    """(x, y) scaled down to length ``max_len`` (>= 0) when longer, else as it is: the weighted
    combiner (code 0) applied to a row's weighted sum, and the force and speed caps."""
    d = math.sqrt(x * x + y * y)
    if d > max_len:
        scale = max_len / d
        return x * scale, y * scale
    return x, y


@kernel
def prioritised(forces, w, max_force):
    """``steering.combine_prioritized`` of one row: ``forces`` (B, 2) unweighted, in BEHAVIOURS
    order, ``w`` (B,) its weights; the same operations as its kernel."""
    tx = 0.0
    ty = 0.0
    for b in range(forces.shape[0]):
        remaining = max_force - math.sqrt(tx * tx + ty * ty)
        if remaining <= 0.0:
            break
        fx = forces[b, 0] * w[b]
        fy = forces[b, 1] * w[b]
        magnitude = math.sqrt(fx * fx + fy * fy)
        if magnitude > remaining:
            fx *= remaining / magnitude
            fy *= remaining / magnitude
        tx += fx
        ty += fy
    return tx, ty


@kernel
def dithered(forces, w, max_force, seed, tick, entity):
    """``steering.combine_dithered`` of one row with ``DITHER_PROBABILITIES`` and the reference
    path's uniforms: behaviour b's is ``(u + 1) / 2`` of component ``b % 2`` of
    ``entity_noise(noise_key(seed, DITHER_STREAM + b // 2, tick), entity)``."""
    for b in range(forces.shape[0]):
        p = DITHER_PROBABILITIES[b]
        ua, ub = entity_noise(noise_key(seed, DITHER_STREAM + b // 2, tick), entity)
        u = ((ua if b % 2 == 0 else ub) + 1.0) / 2.0
        if not (u < p):
            continue
        fx = forces[b, 0] * w[b] / p
        fy = forces[b, 1] * w[b] / p
        if fx == 0.0 and fy == 0.0:
            continue
        magnitude = math.sqrt(fx * fx + fy * fy)
        if magnitude > max_force:
            fx *= max_force / magnitude
            fy *= max_force / magnitude
        return fx, fy
    return 0.0, 0.0
