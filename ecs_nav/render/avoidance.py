"""What the viewer draws of the selected agent's ORCA choice (the "avoidance" layer), as line rows
of :mod:`ecs_nav.render.draw` (``(k, 6)``: x, y, r, g, b, a). No pyglet, no GL.

The record is an ``ecs_nav.motion.avoidance_trace.AvoidanceTrace`` (the last tick's choice of the
traced agent). A velocity ``v`` (m/s) is drawn at the point the agent would reach with it in
``AVOIDANCE_SECONDS``, ``position + v * AVOIDANCE_SECONDS``, so the velocity space sits on the
map round the agent:

- the disc of its maximum speed, as a ring (PALETTE "orca_speed");
- each half-plane's boundary where it crosses the disc ``LINE_REACH`` times the maximum speed,
  with a tick every ``HATCH_SPACING`` of its length on the forbidden side (the right of the
  boundary's direction): agents' half-planes in PALETTE "orca_agent", walls' in "orca_wall";
- the preferred velocity (after the drift of the agent's side), a line from the agent with a +
  at its tip (PALETTE "orca_preferred");
- the chosen velocity, a line from the agent with a ring at its tip (PALETTE "orca_chosen").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.render.draw import PALETTE, crosses, empty_rows, rings, segments

AVOIDANCE_SECONDS = 1.0
"""s. A velocity is drawn as the point it takes the agent to in this time (1 m/s: 1 m away)."""

LINE_REACH = 1.5
"""A half-plane's boundary is drawn within this many times the maximum speed of the agent."""

HATCH_SPACING = 0.1
"""m/s between the ticks on a boundary's forbidden side (at least 4 ticks a boundary)."""

HATCH_LENGTH = 0.06
"""m/s: the length of a tick."""

TIP_SIZE = 0.08
"""m: the half size of the + and the radius of the ring at the tips of the velocities."""


def boundary_span(point: np.ndarray, direction: np.ndarray, reach: float) -> tuple[float, float] | None:
    """The parameters t0 <= t1 where the line ``point + t * direction`` (a unit direction) crosses
    the circle of radius ``reach`` round the origin; None when it passes outside it."""
    along = float(point @ direction)
    rest = float(point @ point) - reach * reach
    discriminant = along * along - rest
    if discriminant <= 0.0:
        return None
    root = float(np.sqrt(discriminant))
    return -along - root, -along + root


def half_plane_lines(trace: Any, seconds: float = AVOIDANCE_SECONDS) -> np.ndarray:
    """The traced agent's half-planes, speed disc, preferred and chosen velocity as line rows (the
    module docstring); no rows without a record."""
    if trace is None or getattr(trace, "tick", -1) < 0:
        return empty_rows()
    origin = np.asarray(trace.position, dtype=np.float64)
    speed = float(trace.max_speed)
    parts = [rings(origin, speed * seconds, PALETTE["orca_speed"], sides=48)]
    starts, ends, colours = [], [], []
    for m, (px, py, dx, dy) in enumerate(np.asarray(trace.lines, dtype=np.float64).reshape(-1, 4)):
        point, direction = np.array([px, py]), np.array([dx, dy])
        span = boundary_span(point, direction, LINE_REACH * max(speed, 1e-9))
        if span is None:
            continue
        colour = PALETTE["orca_wall"] if m < trace.obstacle_lines else PALETTE["orca_agent"]
        t0, t1 = span
        starts.append(point + t0 * direction)
        ends.append(point + t1 * direction)
        colours.append(colour)
        hatches = max(4, int((t1 - t0) / HATCH_SPACING))
        along = point + np.linspace(t0, t1, hatches)[:, None] * direction
        forbidden = np.array([dy, -dx])  # the right of the direction
        starts.extend(along)
        ends.extend(along + HATCH_LENGTH * forbidden)
        colours.extend([colour] * hatches)
    if starts:
        parts.append(segments(origin + np.array(starts) * seconds, origin + np.array(ends) * seconds,
                              np.array(colours, dtype=np.float64)))
    preferred = origin + np.asarray(trace.preferred, dtype=np.float64) * seconds
    chosen = origin + np.asarray(trace.chosen, dtype=np.float64) * seconds
    parts += [segments(origin, preferred, PALETTE["orca_preferred"]), crosses(preferred, TIP_SIZE,
                                                                               PALETTE["orca_preferred"]),
              segments(origin, chosen, PALETTE["orca_chosen"]), rings(chosen, TIP_SIZE, PALETTE["orca_chosen"],
                                                                       sides=12)]
    return np.concatenate(parts).astype(np.float32)
