"""The shape of an off-mesh link crossing: where an agent is, a fraction of the way across.

A crossing runs from the agent's point at the link's start, ``a`` (x, y, elevation), to the
matching point at its end, ``b``, over ``duration`` seconds:

- **jump**: a parabola: the ground position moves linearly, the elevation is the straight line's
  plus ``4 * h * s * (1 - s)``, an apex ``h = JUMP_APEX * ground distance`` (at least
  ``JUMP_MIN_APEX``) above the chord at mid-crossing; its length is taken as the chord's;
- **drop**, **ladder**, **door**: the straight segment a → b (a ladder climbs straight up its
  line, a door is walked through);
- **teleport**: instant: the agent is at ``b`` from the first tick, ``duration`` 0.

``duration = length / speed`` (the 3D chord length over the link's speed, or the agent's
``max_speed``).
"""

from __future__ import annotations

import numpy as np

KIND_CODES = {"jump": 0, "drop": 1, "ladder": 2, "door": 3, "teleport": 4}
"""``OffMeshLink.kind`` → the code ``crossing_points`` takes."""

JUMP_APEX = 0.25
"""A jump's apex height over its chord, as a fraction of its ground distance."""
JUMP_MIN_APEX = 0.5
"""m: the lowest apex of a jump, over its chord."""


def crossing_duration(kind: str, a: np.ndarray, b: np.ndarray, speed: float) -> float:
    """Seconds a crossing from ``a`` to ``b`` ((3,) m) takes at ``speed`` m/s (> 0); 0 for a
    teleport."""
    if kind == "teleport":
        return 0.0
    return float(np.linalg.norm(np.asarray(b, np.float64) - np.asarray(a, np.float64))) / float(speed)


def crossing_points(kind: np.ndarray, a: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(k, 3) positions (x, y, elevation, m) a fraction ``s`` ((k,), clamped to [0, 1]) of the way
    across crossings of ``kind`` ((k,) codes of KIND_CODES) from ``a`` to ``b`` ((k, 3) m)."""
    kind = np.asarray(kind, np.int64).reshape(-1)
    a = np.asarray(a, np.float64).reshape(-1, 3)
    b = np.asarray(b, np.float64).reshape(-1, 3)
    s = np.clip(np.asarray(s, np.float64).reshape(-1), 0.0, 1.0)
    s = np.where(kind == KIND_CODES["teleport"], 1.0, s)
    out = a + (b - a) * s[:, None]
    jump = kind == KIND_CODES["jump"]
    if jump.any():
        ground = np.hypot(b[jump, 0] - a[jump, 0], b[jump, 1] - a[jump, 1])
        apex = np.maximum(JUMP_APEX * ground, JUMP_MIN_APEX)
        out[jump, 2] += 4.0 * apex * s[jump] * (1.0 - s[jump])
    return out
