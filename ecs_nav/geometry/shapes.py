"""The static shapes of a map, checked on construction: boxes, ramps and circles.

Coordinates as in ``ecs_nav.geometry.map``: the ground plane is (x, y); elevation is the third axis.

- ``Box``: axis-aligned, solid from ``base`` to ``base + height``; its top is walkable.
- ``Ramp``: the seed's hidden tilted slab along a staircase. An oriented rectangle from the
  ``start`` edge to the ``end`` edge, ``width`` wide; its walkable top rises linearly from
  ``low`` at ``start`` to ``high`` at ``end``; it is solid from the map floor up to that surface.
- ``Circle``: a vertical cylinder (also the obstacles of steering's obstacle avoidance).

Every number is checked where a shape is made (finite, within ``COORDINATE_LIMIT``, sizes
>= 0): the packed map (``ecs_nav.geometry.kernels``) and the compiled kernels never see anything else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ecs_nav.core.limits import COORDINATE_LIMIT

AABB = tuple[float, float, float, float]
"""A ground-plane axis-aligned box ``(xmin, ymin, xmax, ymax)``."""


def finite_scalar(name: str, value, nonneg: bool = False, positive: bool = False) -> float:
    """``value`` as a finite float (> 0 with ``positive``, >= 0 with ``nonneg``); else a
    ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if abs(v) > COORDINATE_LIMIT:
        raise ValueError(f"{name} must be at most {COORDINATE_LIMIT:g} in magnitude, got {value!r}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if nonneg and v < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


def finite_pair(name: str, value, nonneg: bool = False) -> tuple[float, float]:
    """``value`` as a pair (x, y) of finite floats (each >= 0 with ``nonneg``); else a ValueError
    naming ``name``."""
    try:
        x, y = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (x, y), got {value!r}") from None
    return (finite_scalar(f"{name}[0]", x, nonneg), finite_scalar(f"{name}[1]", y, nonneg))


class Upright:
    """What Box and Circle share: a footprint around ``center`` (their fields), solid from
    ``base`` up to ``top`` = ``base + height``."""

    def _check_upright(self, footprint: str, check) -> None:
        """Validate and normalise the fields in order: center, the footprint's own field
        (``check``: finite_pair or finite_scalar, non-negative), height (>= 0), base."""
        object.__setattr__(self, "center", finite_pair("center", self.center))
        object.__setattr__(self, footprint, check(footprint, getattr(self, footprint), nonneg=True))
        object.__setattr__(self, "height", finite_scalar("height", self.height, nonneg=True))
        object.__setattr__(self, "base", finite_scalar("base", self.base))

    @property
    def top(self) -> float:
        return self.base + self.height

    def moved_to(self, center):
        """The same shape around ``center``."""
        return replace(self, center=tuple(center))


@dataclass(frozen=True)
class Box(Upright):
    """Axis-aligned box: footprint ``center`` ± ``size``/2, solid from ``base`` to ``base + height``."""

    center: tuple[float, float]
    size: tuple[float, float]
    height: float
    base: float = 0.0

    def __post_init__(self):
        self._check_upright("size", finite_pair)

    def aabb(self) -> AABB:
        (cx, cy), (w, d) = self.center, self.size
        return (cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2)


@dataclass(frozen=True)
class Ramp:
    """Tilted slab: top rises linearly from ``low`` at the ``start`` edge to ``high`` at ``end``.

    The footprint is the rectangle swept by a ``width``-wide edge from ``start`` to ``end``
    (both are the midpoints of the short edges). Solid from the map floor up to the top."""

    start: tuple[float, float]
    end: tuple[float, float]
    width: float
    low: float
    high: float

    def __post_init__(self):
        object.__setattr__(self, "start", finite_pair("start", self.start))
        object.__setattr__(self, "end", finite_pair("end", self.end))
        object.__setattr__(self, "width", finite_scalar("width", self.width, nonneg=True))
        object.__setattr__(self, "low", finite_scalar("low", self.low))
        object.__setattr__(self, "high", finite_scalar("high", self.high))
        if self.length == 0:
            raise ValueError(f"end must differ from start (a ramp needs a length), got {self.end}")

    @property
    def length(self) -> float:
        return math.hypot(self.end[0] - self.start[0], self.end[1] - self.start[1])

    @property
    def center(self) -> tuple[float, float]:
        return ((self.start[0] + self.end[0]) / 2, (self.start[1] + self.end[1]) / 2)

    def corners(self) -> np.ndarray:
        """(4, 2) footprint corners."""
        (sx, sy), (ex, ey) = self.start, self.end
        length = self.length
        nx, ny = -(ey - sy) / length * self.width / 2, (ex - sx) / length * self.width / 2
        return np.array([[sx + nx, sy + ny], [sx - nx, sy - ny], [ex - nx, ey - ny], [ex + nx, ey + ny]])

    def aabb(self) -> AABB:
        c = self.corners()
        return (float(c[:, 0].min()), float(c[:, 1].min()), float(c[:, 0].max()), float(c[:, 1].max()))

    def moved_to(self, center) -> Ramp:
        dx, dy = float(center[0]) - self.center[0], float(center[1]) - self.center[1]
        return replace(
            self,
            start=(self.start[0] + dx, self.start[1] + dy),
            end=(self.end[0] + dx, self.end[1] + dy),
        )


@dataclass(frozen=True)
class Circle(Upright):
    """Vertical cylinder of ``radius`` around ``center``, solid from ``base`` to ``base + height``."""

    center: tuple[float, float]
    radius: float
    height: float
    base: float = 0.0

    def __post_init__(self):
        self._check_upright("radius", finite_scalar)

    def aabb(self) -> AABB:
        (cx, cy), r = self.center, self.radius
        return (cx - r, cy - r, cx + r, cy + r)


Shape = Box | Ramp | Circle


def union_aabb(a: AABB, b: AABB) -> AABB:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
