"""Map geometry: the static and dynamic shapes of a map, and the queries on them.

Coordinates. The ground plane is (x, y); elevation is the third axis (the seed's Unity "y").
A map is a flat floor at height ``floor`` inside ``bounds`` plus solid shapes standing on it:

- :class:`Box`: axis-aligned, solid from ``base`` to ``base + height``; its top is walkable.
- :class:`Ramp`: the seed's hidden tilted slab along a staircase. An oriented rectangle from the
  ``start`` edge to the ``end`` edge, ``width`` wide; its walkable top rises linearly from
  ``low`` at ``start`` to ``high`` at ``end``; it is solid from the map floor up to that surface.
- :class:`Circle`: a vertical cylinder (also the obstacles of steering's obstacle avoidance).

Inside, boxes and ramps are one thing: an oriented rectangular prism whose top is a plane
linear along its axis (a box is a ramp with ``low == high``). Shapes are packed into flat
arrays with a uniform bucket grid over their ground-plane AABBs as the broadphase, and every
query is a compiled numba kernel (``cache=True``) vectorised over query points.

The kernels are compiled without numba's reference counting (``NO_REFCOUNT``, see
``ecs_nav.kernel_options``): they allocate nothing and read arrays their caller holds. With it, each
helper call paid an atomic incref and decref for every array it took out of the packed map or
viewed a row of (``G[0]``, ``rects[item]``), once per shape visited: 3/4 of ``resolve_disc``'s
time (1.64 -> 0.51 ms for ``resolve_circles`` of 10,000 discs, 1.35 -> 0.37 ms in
``bench/graph_build.py``), same results. A kernel added here must not allocate either (numba
refuses to compile one that does).

Walls. Whether a solid blocks an agent depends on where the agent stands: to an agent at
elevation ``e`` a solid is a *wall* where it occupies the body band ``(e + max_climb,
e + body_height)``, i.e. its top rises more than ``max_climb`` above ``e`` and its base is
below the agent's head. The part of a ramp below ``e + max_climb`` is not a wall: it is stepped
onto. A box of height 0.3 is a step; the same box is a wall to nobody standing on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numba as nb
import numpy as np

from ecs_nav.kernel_options import NO_REFCOUNT
from ecs_nav.limits import COORDINATE_LIMIT, SHAPE_LIMIT, TILE_LIMIT

AABB = tuple[float, float, float, float]
"""A ground-plane axis-aligned box ``(xmin, ymin, xmax, ymax)``."""

_EPS = 1e-9
"""Penetration below this is touching, not crossing (length units)."""
MIN_COLLISION_RADIUS = 0.05
"""Agents collide as discs of at least this radius (a point agent keeps 5 cm off walls), so the
sub-steps of :meth:`MapGeometry.resolve_circles` (half the radius) stay finite and no wall,
however thin, can be stepped over."""


# --- shapes ------------------------------------------------------------------------------------


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


def _vec2(name: str, value, nonneg: bool = False) -> tuple[float, float]:
    try:
        x, y = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (x, y), got {value!r}") from None
    return (finite_scalar(f"{name}[0]", x, nonneg), finite_scalar(f"{name}[1]", y, nonneg))


@dataclass(frozen=True)
class Box:
    """Axis-aligned box: footprint ``center`` ± ``size``/2, solid from ``base`` to ``base + height``."""

    center: tuple[float, float]
    size: tuple[float, float]
    height: float
    base: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "center", _vec2("center", self.center))
        object.__setattr__(self, "size", _vec2("size", self.size, nonneg=True))
        object.__setattr__(self, "height", finite_scalar("height", self.height, nonneg=True))
        object.__setattr__(self, "base", finite_scalar("base", self.base))

    @property
    def top(self) -> float:
        return self.base + self.height

    def aabb(self) -> AABB:
        (cx, cy), (w, d) = self.center, self.size
        return (cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2)

    def moved_to(self, center) -> Box:
        return replace(self, center=tuple(center))


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
        object.__setattr__(self, "start", _vec2("start", self.start))
        object.__setattr__(self, "end", _vec2("end", self.end))
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
class Circle:
    """Vertical cylinder of ``radius`` around ``center``, solid from ``base`` to ``base + height``."""

    center: tuple[float, float]
    radius: float
    height: float
    base: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "center", _vec2("center", self.center))
        object.__setattr__(self, "radius", finite_scalar("radius", self.radius, nonneg=True))
        object.__setattr__(self, "height", finite_scalar("height", self.height, nonneg=True))
        object.__setattr__(self, "base", finite_scalar("base", self.base))

    @property
    def top(self) -> float:
        return self.base + self.height

    def aabb(self) -> AABB:
        (cx, cy), r = self.center, self.radius
        return (cx - r, cy - r, cx + r, cy + r)

    def moved_to(self, center) -> Circle:
        return replace(self, center=tuple(center))


Shape = Box | Ramp | Circle


def union_aabb(a: AABB, b: AABB) -> AABB:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


# --- packed arrays -----------------------------------------------------------------------------
# rects (R, 9): cx, cy, ux, uy, half_length (along u), half_width, base, low (at s = -hl), high (at s = +hl)
# circs (C, 5): cx, cy, radius, base, top
# meta  (8,):   xmin, ymin, xmax, ymax, floor, grid x0, grid y0, grid cell size
# dims  (3,):   buckets in x, buckets in y, R
# bptr, bitems: CSR bucket lists; an item < R is a rect, else circle item - R.
# aabbs (R+C, 4): xmin, ymin, xmax, ymax of each item's footprint (same item numbering).


def _pack_rect(shape: Box | Ramp, floor: float) -> list[float]:
    if isinstance(shape, Box):
        (cx, cy), (w, d) = shape.center, shape.size
        return [cx, cy, 1.0, 0.0, w / 2, d / 2, shape.base, shape.top, shape.top]
    (sx, sy), (ex, ey) = shape.start, shape.end
    length = shape.length
    return [(sx + ex) / 2, (sy + ey) / 2, (ex - sx) / length, (ey - sy) / length,
            length / 2, shape.width / 2, floor, shape.low, shape.high]


# --- kernels: primitives -----------------------------------------------------------------------


@nb.njit(cache=True, **NO_REFCOUNT)
def _clampi(v, n):
    # v is a float; clamp before int() so huge values cannot overflow (and NaN goes to 0)
    if not v >= 0.0:
        return 0
    if v >= n - 1:
        return n - 1
    return int(v)


@nb.njit(cache=True, **NO_REFCOUNT)
def bucket_range(meta, dims, x0, y0, x1, y1):
    cs = meta[7]
    i0 = _clampi(math.floor((x0 - meta[5]) / cs), dims[0])
    i1 = _clampi(math.floor((x1 - meta[5]) / cs), dims[0])
    j0 = _clampi(math.floor((y0 - meta[6]) / cs), dims[1])
    j1 = _clampi(math.floor((y1 - meta[6]) / cs), dims[1])
    return i0, i1, j0, j1


@nb.njit(cache=True, **NO_REFCOUNT)
def local_coords(r, x, y):
    dx, dy = x - r[0], y - r[1]
    return dx * r[2] + dy * r[3], -dx * r[3] + dy * r[2]


@nb.njit(cache=True, **NO_REFCOUNT)
def _slope_mid(r):
    hl = r[4]
    slope = (r[8] - r[7]) / (2.0 * hl) if hl > 0.0 else 0.0
    return slope, 0.5 * (r[7] + r[8])


@nb.njit(cache=True, **NO_REFCOUNT)
def _rect_surface(r, s):
    slope, mid = _slope_mid(r)
    if s < -r[4]:
        s = -r[4]
    elif s > r[4]:
        s = r[4]
    return mid + slope * s


@nb.njit(cache=True, **NO_REFCOUNT)
def _shape_top_at(G, item, x, y):
    """Walkable top of shape ``item`` at (x, y), or NaN where (x, y) is off its footprint."""
    rects, circs = G[0], G[1]
    n_rect = rects.shape[0]
    if item < n_rect:
        r = rects[item]
        s, t = local_coords(r, x, y)
        if abs(s) <= r[4] + _EPS and abs(t) <= r[5] + _EPS:
            return _rect_surface(r, s)
        return np.nan
    c = circs[item - n_rect]
    dx, dy = x - c[0], y - c[1]
    if dx * dx + dy * dy <= c[2] * c[2] + _EPS:
        return c[4]
    return np.nan


@nb.njit(cache=True, **NO_REFCOUNT)
def top_among(G, items, first, last, x, y, zmax):
    """Highest walkable top at (x, y) at or below ``zmax`` among the floor and the shapes
    ``items[first:last]``; NaN off the map or where nothing lies below ``zmax``."""
    meta = G[2]
    if not (meta[0] <= x <= meta[2] and meta[1] <= y <= meta[3]):
        return np.nan
    zlim = zmax + _EPS
    best = meta[4] if meta[4] <= zlim else -np.inf
    for k in range(first, last):
        h = _shape_top_at(G, items[k], x, y)
        if h == h and h <= zlim and h > best:
            best = h
    if best == -np.inf:
        return np.nan
    return best


@nb.njit(cache=True, **NO_REFCOUNT)
def top_at(G, x, y, zmax):
    """Highest walkable top at (x, y) at or below ``zmax`` (floor included); NaN off the map."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    i0, i1, j0, j1 = bucket_range(meta, dims, x, y, x, y)
    b = j0 * dims[0] + i0
    return top_among(G, bitems, bptr[b], bptr[b + 1], x, y, zmax)


@nb.njit(cache=True, **NO_REFCOUNT)
def _clip(f0, f1, t0, t1):
    """Clip [t0, t1] to where f0 + t (f1 - f0) <= -EPS (strictly inside a half-space)."""
    df = f1 - f0
    if abs(df) < 1e-15:
        if f0 > -_EPS:
            return 1.0, 0.0
        return t0, t1
    tc = (-_EPS - f0) / df
    if df > 0.0:
        if tc < t1:
            t1 = tc
    else:
        if tc > t0:
            t0 = tc
    return t0, t1


@nb.njit(cache=True, **NO_REFCOUNT)
def _seg_hits_rect(r, ax, ay, az, bx, by, bz):
    sa, ta = local_coords(r, ax, ay)
    sb, tb = local_coords(r, bx, by)
    hl, hw, base = r[4], r[5], r[6]
    slope, mid = _slope_mid(r)
    t0, t1 = 0.0, 1.0
    t0, t1 = _clip(sa - hl, sb - hl, t0, t1)
    t0, t1 = _clip(-sa - hl, -sb - hl, t0, t1)
    t0, t1 = _clip(ta - hw, tb - hw, t0, t1)
    t0, t1 = _clip(-ta - hw, -tb - hw, t0, t1)
    t0, t1 = _clip(base - az, base - bz, t0, t1)
    t0, t1 = _clip(az - mid - slope * sa, bz - mid - slope * sb, t0, t1)
    return t1 - t0 > 1e-12


@nb.njit(cache=True, **NO_REFCOUNT)
def _seg_hits_circle(c, ax, ay, az, bx, by, bz):
    t0, t1 = 0.0, 1.0
    t0, t1 = _clip(c[3] - az, c[3] - bz, t0, t1)
    t0, t1 = _clip(az - c[4], bz - c[4], t0, t1)
    if t1 - t0 <= 1e-12:
        return False
    dx, dy = bx - ax, by - ay
    fx, fy = ax - c[0], ay - c[1]
    a = dx * dx + dy * dy
    rr = c[2] * c[2] - _EPS
    cq = fx * fx + fy * fy - rr
    if a < 1e-18:
        return cq < 0.0
    bq = 2.0 * (fx * dx + fy * dy)
    disc = bq * bq - 4.0 * a * cq
    if disc <= 0.0:
        return False
    sq = math.sqrt(disc)
    lo, hi = (-bq - sq) / (2.0 * a), (-bq + sq) / (2.0 * a)
    if lo > t0:
        t0 = lo
    if hi < t1:
        t1 = hi
    return t1 - t0 > 1e-12


@nb.njit(cache=True, **NO_REFCOUNT)
def segment_blocked_by(G, ax, ay, az, bx, by, bz):
    rects, circs, meta, dims, bptr, bitems = G[0], G[1], G[2], G[3], G[4], G[5]
    n_rect = rects.shape[0]
    i0, i1, j0, j1 = bucket_range(meta, dims, min(ax, bx), min(ay, by), max(ax, bx), max(ay, by))
    for j in range(j0, j1 + 1):
        for i in range(i0, i1 + 1):
            b = j * dims[0] + i
            for k in range(bptr[b], bptr[b + 1]):
                it = bitems[k]
                if it < n_rect:
                    if _seg_hits_rect(rects[it], ax, ay, az, bx, by, bz):
                        return True
                elif _seg_hits_circle(circs[it - n_rect], ax, ay, az, bx, by, bz):
                    return True
    return False


# --- kernels: walls (the solid in an agent's body band) ----------------------------------------


@nb.njit(cache=True, **NO_REFCOUNT)
def rect_wall_span(r, zlo, zhi):
    """(lo, hi) along the rect's axis where it is a wall for the band (zlo, zhi); lo >= hi: none."""
    hl = r[4]
    if r[6] >= zhi:
        return 1.0, 0.0
    slope, mid = _slope_mid(r)
    if slope == 0.0:
        if mid > zlo:
            return -hl, hl
        return 1.0, 0.0
    st = (zlo - mid) / slope
    if slope > 0.0:
        return max(st, -hl), hl
    return -hl, min(st, hl)


@nb.njit(cache=True, **NO_REFCOUNT)
def _wall_push(G, item, x, y, zlo, zhi):
    """Closest point of shape ``item``'s wall region to (x, y), and whether (x, y) is inside it.

    Returns (has_wall, qx, qy, inside, exit_x, exit_y): when inside, (exit_x, exit_y) is the
    nearest point on the region's boundary."""
    rects, circs = G[0], G[1]
    n_rect = rects.shape[0]
    if item < n_rect:
        r = rects[item]
        lo, hi = rect_wall_span(r, zlo, zhi)
        if not lo < hi:
            return False, 0.0, 0.0, False, 0.0, 0.0
        hw = r[5]
        s, t = local_coords(r, x, y)
        cs = min(max(s, lo), hi)
        ct = min(max(t, -hw), hw)
        inside = cs == s and ct == t
        if inside:
            # nearest face of the (clipped) rect
            d0, d1, d2, d3 = s - lo, hi - s, t + hw, hw - t
            m = min(min(d0, d1), min(d2, d3))
            if m == d0:
                cs = lo
            elif m == d1:
                cs = hi
            elif m == d2:
                ct = -hw
            else:
                ct = hw
        qx = r[0] + cs * r[2] - ct * r[3]
        qy = r[1] + cs * r[3] + ct * r[2]
        return True, qx, qy, inside, qx, qy
    c = circs[item - n_rect]
    if not (c[3] < zhi and c[4] > zlo):
        return False, 0.0, 0.0, False, 0.0, 0.0
    dx, dy = x - c[0], y - c[1]
    d = math.sqrt(dx * dx + dy * dy)
    if d > c[2]:
        qx, qy = c[0] + dx / d * c[2], c[1] + dy / d * c[2]
        return True, qx, qy, False, qx, qy
    if d > 0.0:
        ex, ey = c[0] + dx / d * c[2], c[1] + dy / d * c[2]
    else:
        ex, ey = c[0] + c[2], c[1]
    return True, x, y, True, ex, ey


@nb.njit(cache=True, **NO_REFCOUNT)
def wall_distance(G, item, x, y, zlo, zhi):
    """Ground-plane distance from (x, y) to shape ``item``'s wall region (inf: no wall, 0: inside)."""
    has, qx, qy, inside, ex, ey = _wall_push(G, item, x, y, zlo, zhi)
    if not has:
        return np.inf
    if inside:
        return 0.0
    return math.hypot(x - qx, y - qy)


@nb.njit(cache=True, **NO_REFCOUNT)
def _penetration(G, x, y, radius, zlo, zhi):
    """Deepest overlap of the disc (x, y, radius) with any wall region for the band (zlo, zhi)."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    reach = radius + 1e-6
    i0, i1, j0, j1 = bucket_range(meta, dims, x - reach, y - reach, x + reach, y + reach)
    worst = 0.0
    for j in range(j0, j1 + 1):
        for i in range(i0, i1 + 1):
            b = j * dims[0] + i
            for k in range(bptr[b], bptr[b + 1]):
                has, qx, qy, inside, ex, ey = _wall_push(G, bitems[k], x, y, zlo, zhi)
                if not has:
                    continue
                if inside:
                    depth = radius + math.hypot(x - ex, y - ey)
                else:
                    depth = radius - math.hypot(x - qx, y - qy)
                if depth > worst:
                    worst = depth
    return worst


@nb.njit(cache=True, **NO_REFCOUNT)
def _push_out(G, x, y, radius, zlo, zhi):
    """Move the disc out of every wall it overlaps, one pass, nearest exit per wall."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    reach = radius + 1e-6
    i0, i1, j0, j1 = bucket_range(meta, dims, x - reach, y - reach, x + reach, y + reach)
    for j in range(j0, j1 + 1):
        for i in range(i0, i1 + 1):
            b = j * dims[0] + i
            for k in range(bptr[b], bptr[b + 1]):
                has, qx, qy, inside, ex, ey = _wall_push(G, bitems[k], x, y, zlo, zhi)
                if not has:
                    continue
                if inside:
                    # out through the nearest face, then radius beyond it
                    dx, dy = ex - x, ey - y
                    d = math.hypot(dx, dy)
                    if d > 0.0:
                        x, y = ex + dx / d * radius, ey + dy / d * radius
                    else:
                        x, y = ex + radius, ey
                    continue
                dx, dy = x - qx, y - qy
                d = math.hypot(dx, dy)
                if d < radius and d > 0.0:
                    x, y = qx + dx / d * radius, qy + dy / d * radius
    return x, y


@nb.njit(cache=True, **NO_REFCOUNT)
def _clamp_bounds(meta, x, y, radius):
    lo_x, hi_x = meta[0] + radius, meta[2] - radius
    lo_y, hi_y = meta[1] + radius, meta[3] - radius
    if lo_x > hi_x:
        x = 0.5 * (meta[0] + meta[2])
    else:
        x = min(max(x, lo_x), hi_x)
    if lo_y > hi_y:
        y = 0.5 * (meta[1] + meta[3])
    else:
        y = min(max(y, lo_y), hi_y)
    return x, y


@nb.njit(cache=True, **NO_REFCOUNT)
def _settle(G, x, y, radius, zlo, zhi):
    """Push out of walls (a few passes) and into the bounds; returns (x, y, remaining overlap)."""
    meta = G[2]
    for _ in range(4):
        x, y = _push_out(G, x, y, radius, zlo, zhi)
        x, y = _clamp_bounds(meta, x, y, radius)
        if _penetration(G, x, y, radius, zlo, zhi) <= 1e-7:
            return x, y, 0.0
    return x, y, _penetration(G, x, y, radius, zlo, zhi)


@nb.njit(cache=True, **NO_REFCOUNT)
def _try_move(G, x, y, r, e, mc, bh):
    """Settle the disc at (x, y) against the walls of elevation ``e``, then step onto the surface
    there; if that changes the elevation, the walls change too: settle again against them.
    Returns (x, y, elevation, remaining overlap)."""
    cx, cy, pen = _settle(G, x, y, r, e + mc, e + bh)
    if pen > 1e-6:
        return cx, cy, e, pen
    h = top_at(G, cx, cy, e + mc)
    if h != h:
        h = e
    if h != e:
        pen = _penetration(G, cx, cy, r, h + mc, h + bh)
        if pen > 1e-6:
            # e.g. stepped off a ramp's side: the ramp beside is now a wall the body overlaps
            cx, cy, pen = _settle(G, cx, cy, r, h + mc, h + bh)
            h2 = top_at(G, cx, cy, e + mc)
            if h2 == h2:
                h = h2
            pen = _penetration(G, cx, cy, r, h + mc, h + bh)
    return cx, cy, h, pen


@nb.njit(cache=True, **NO_REFCOUNT)
def _open_floor(G, x0, y0, x1, y1, r, e):
    """True when a disc of radius ``r`` standing on the floor (``e``) sweeps from (x0, y0) to
    (x1, y1) inside the bounds and clear of every shape's footprint box: nothing there can
    stop, lift or lower it, so the full sweep below would end exactly at (x1, y1) on the floor.
    Most agents most ticks take this test instead of the sweep."""
    meta, dims, bptr, bitems, aabbs = G[2], G[3], G[4], G[5], G[6]
    if e != meta[4]:
        return False
    reach = r + 1e-6 + _EPS
    lx, hx = min(x0, x1) - reach, max(x0, x1) + reach
    ly, hy = min(y0, y1) - reach, max(y0, y1) + reach
    if lx < meta[0] or ly < meta[1] or hx > meta[2] or hy > meta[3]:
        return False
    i0, i1, j0, j1 = bucket_range(meta, dims, lx, ly, hx, hy)
    for j in range(j0, j1 + 1):
        for i in range(i0, i1 + 1):
            b = j * dims[0] + i
            for k in range(bptr[b], bptr[b + 1]):
                box = aabbs[bitems[k]]
                if box[0] <= hx and box[2] >= lx and box[1] <= hy and box[3] >= ly:
                    return False
    return True


@nb.njit(cache=True, **NO_REFCOUNT)
def resolve_disc(G, x, y, nx, ny, radius, e, mc, body_height):
    """One disc (``radius``, standing at elevation ``e``, climbing at most ``mc``) moved from
    (x, y) toward (nx, ny) against the packed map ``G``: returns (x, y, elevation). The compiled
    core of ``MapGeometry.resolve_circles`` (see there), for other kernels; inputs trusted."""
    r = max(radius, MIN_COLLISION_RADIUS)
    if _open_floor(G, x, y, nx, ny, r, e):
        return nx, ny, e
    mx, my = nx - x, ny - y
    dist = math.hypot(mx, my)
    step = 0.5 * r
    n_sub = max(1, int(math.ceil(dist / step)))
    sx, sy = mx / n_sub, my / n_sub
    for _ in range(n_sub):
        # slide: the full step pushed out of walls; else each axis alone; else stay
        bx, by, be, bpen = _try_move(G, x + sx, y + sy, r, e, mc, body_height)
        if bpen > 1e-6:
            cx, cy, ce, pen = _try_move(G, x + sx, y, r, e, mc, body_height)
            if pen < bpen:
                bx, by, be, bpen = cx, cy, ce, pen
            cx, cy, ce, pen = _try_move(G, x, y + sy, r, e, mc, body_height)
            if pen < bpen:
                bx, by, be, bpen = cx, cy, ce, pen
            if bpen > 1e-6 and _penetration(G, x, y, r, e + mc, e + body_height) <= bpen:
                bx, by, be = x, y, e
        x, y, e = bx, by, be
    # the map's edge: never outside the bounds even if radius exceeds half the map
    x, y = _clamp_bounds(G[2], x, y, 0.0)
    return x, y, e


@nb.njit(cache=True, **NO_REFCOUNT)
def _resolve_circles(G, px, py, nx, ny, radius, elev, max_climb, body_height, out_x, out_y, out_e):
    for a in range(px.shape[0]):
        out_x[a], out_y[a], out_e[a] = resolve_disc(G, px[a], py[a], nx[a], ny[a], radius[a], elev[a],
                                                       max_climb[a], body_height)


@nb.njit(cache=True, **NO_REFCOUNT)
def _surface_heights(G, xs, ys, zmax, out):
    for k in range(xs.shape[0]):
        out[k] = top_at(G, xs[k], ys[k], zmax[k])


@nb.njit(cache=True, **NO_REFCOUNT)
def _segments_blocked(G, a, b, out):
    for k in range(a.shape[0]):
        out[k] = segment_blocked_by(G, a[k, 0], a[k, 1], a[k, 2], b[k, 0], b[k, 1], b[k, 2])


@nb.njit(cache=True, **NO_REFCOUNT)
def _penetrations(G, xs, ys, radius, elev, max_climb, body_height, out):
    for k in range(xs.shape[0]):
        out[k] = _penetration(G, xs[k], ys[k], radius[k], elev[k] + max_climb[k], elev[k] + body_height)


# --- MapGeometry -------------------------------------------------------------------------------


def _as_points(points, name: str = "points") -> np.ndarray:
    p = np.asarray(points, dtype=np.float64)
    if p.ndim == 1 and p.shape[0] >= 2:
        p = p[None, :]
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"{name} must have shape (k, 2), got {np.shape(points)}")
    p = np.ascontiguousarray(p[:, :2])
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite")
    return p


def _per_point(value, k: int, name: str) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        return np.full(k, float(v))
    v = v.reshape(-1)
    if v.shape[0] != k:
        raise ValueError(f"{name} must be a scalar or have {k} values, got {v.shape[0]}")
    return np.ascontiguousarray(v)


class MapGeometry:
    """The solid shapes of a map, with stable ids, packed for the compiled queries.

    Args:
        bounds: ``(xmin, ymin, xmax, ymax)`` of the floor; outside it there is no ground.
        boxes, ramps, circles: the shapes; ids are given in this order (boxes first).
        floor: elevation of the floor.

    ``version`` counts changes (``add``, ``move``, ``remove``); the packed arrays are rebuilt
    lazily on the next query after a change (O(number of shapes)).
    """

    def __init__(
        self,
        bounds: Sequence[float],
        boxes: Iterable[Box] = (),
        ramps: Iterable[Ramp] = (),
        circles: Iterable[Circle] = (),
        floor: float = 0.0,
    ):
        try:
            xmin, ymin, xmax, ymax = (float(v) for v in bounds)
        except (TypeError, ValueError):
            raise ValueError(f"bounds must be (xmin, ymin, xmax, ymax), got {bounds!r}") from None
        if not all(math.isfinite(v) for v in (xmin, ymin, xmax, ymax)) or xmin >= xmax or ymin >= ymax:
            raise ValueError(f"bounds must be finite with xmin < xmax and ymin < ymax, got {bounds!r}")
        if max(abs(xmin), abs(ymin), abs(xmax), abs(ymax)) > COORDINATE_LIMIT:
            raise ValueError(f"bounds must be at most {COORDINATE_LIMIT:g} in magnitude, got {bounds!r}")
        self.bounds: AABB = (xmin, ymin, xmax, ymax)
        self.floor = finite_scalar("floor", floor)
        self._shapes: dict[int, Shape] = {}
        self._next_id = 0
        self.version = 0
        self._kernel_data: tuple | None = None
        for shape in (*boxes, *ramps, *circles):
            self._insert(shape)

    # --- shapes ----------------------------------------------------------------------------

    def _insert(self, shape: Shape) -> int:
        if not isinstance(shape, (Box, Ramp, Circle)):
            raise TypeError(f"expected a Box, Ramp or Circle, got {type(shape).__name__}")
        if len(self._shapes) >= SHAPE_LIMIT:
            raise ValueError(f"a map holds at most {SHAPE_LIMIT} shapes")
        sid = self._next_id
        self._next_id += 1
        self._shapes[sid] = shape
        self._kernel_data = None
        return sid

    def add(self, shape: Shape) -> int:
        """Add a shape; returns its id (its region is ``self.shape(id).aabb()``)."""
        sid = self._insert(shape)
        self.version += 1
        return sid

    def move(self, shape_id: int, new: Shape | Sequence[float]) -> AABB:
        """Replace shape ``shape_id`` by ``new`` (a shape, or a new centre (x, y) for the same
        shape); returns the ground-plane AABB that changed (old ∪ new)."""
        old = self.shape(shape_id)
        if not isinstance(new, (Box, Ramp, Circle)):
            new = old.moved_to(_vec2("center", new))
        self._shapes[shape_id] = new
        self._kernel_data = None
        self.version += 1
        return union_aabb(old.aabb(), new.aabb())

    def remove(self, shape_id: int) -> AABB:
        """Remove shape ``shape_id``; returns its ground-plane AABB."""
        old = self.shape(shape_id)
        del self._shapes[shape_id]
        self._kernel_data = None
        self.version += 1
        return old.aabb()

    def shape(self, shape_id: int) -> Shape:
        try:
            return self._shapes[int(shape_id)]
        except KeyError:
            raise KeyError(f"no shape with id {shape_id} (ids: {sorted(self._shapes)})") from None

    @property
    def shapes(self) -> dict[int, Shape]:
        """id → shape, a copy."""
        return dict(self._shapes)

    @property
    def boxes(self) -> list[Box]:
        return [s for s in self._shapes.values() if isinstance(s, Box)]

    @property
    def ramps(self) -> list[Ramp]:
        return [s for s in self._shapes.values() if isinstance(s, Ramp)]

    @property
    def circles(self) -> list[Circle]:
        return [s for s in self._shapes.values() if isinstance(s, Circle)]

    @property
    def max_top(self) -> float:
        """Highest point of the map (the floor when there are no shapes)."""
        tops = [self.floor]
        for s in self._shapes.values():
            tops.append(max(s.low, s.high) if isinstance(s, Ramp) else s.top)
        return max(tops)

    @classmethod
    def from_grid(
        cls,
        blocked_text_order: np.ndarray,
        cell_size: float = 1.0,
        origin: Sequence[float] = (0.0, 0.0),
        height: float = 2.0,
        floor: float = 0.0,
    ) -> MapGeometry:
        """A tile grid as boxes: blocked cells merged into few rectangles.

        ``blocked_text_order`` is (rows, cols) bool with row 0 the top text line, as in
        ``ecs_nav.nav.grid``: text row r is world row ``rows - 1 - r`` and cell (c, row) spans
        ``[origin.x + c * cell_size, origin.x + (c + 1) * cell_size)`` (likewise in y). Runs of
        blocked cells in a row become one box; equal runs in consecutive rows merge."""
        blocked = np.asarray(blocked_text_order, dtype=bool)
        if blocked.ndim != 2 or 0 in blocked.shape:
            raise ValueError(f"blocked_text_order must be a non-empty 2-D array, got {blocked.shape}")
        if blocked.size > TILE_LIMIT:
            raise ValueError(f"a tile map has at most {TILE_LIMIT} tiles, got {blocked.shape[0]} x {blocked.shape[1]}")
        cell = finite_scalar("cell_size", cell_size)
        if cell <= 0:
            raise ValueError(f"cell_size must be > 0, got {cell_size}")
        ox, oy = _vec2("origin", origin)
        height = finite_scalar("height", height, nonneg=True)
        floor = finite_scalar("floor", floor)
        rows, cols = blocked.shape
        world = blocked[::-1]
        padded = np.zeros((rows, cols + 2), dtype=np.int8)
        padded[:, 1:-1] = world
        edges = np.diff(padded, axis=1)
        open_runs: dict[tuple[int, int], int] = {}
        rects: list[tuple[int, int, int, int]] = []  # c0, c1, r0, r1 (half-open)
        for row in range(rows):
            starts = np.flatnonzero(edges[row] == 1)
            stops = np.flatnonzero(edges[row] == -1)
            current = {(int(a), int(b)) for a, b in zip(starts, stops, strict=True)}
            for run, r0 in list(open_runs.items()):
                if run not in current:
                    rects.append((run[0], run[1], r0, row))
                    del open_runs[run]
            for run in current:
                open_runs.setdefault(run, row)
        for run, r0 in open_runs.items():
            rects.append((run[0], run[1], r0, rows))
        rects.sort(key=lambda r: (r[2], r[0]))
        boxes = [
            Box(
                center=(ox + (c0 + c1) / 2 * cell, oy + (r0 + r1) / 2 * cell),
                size=((c1 - c0) * cell, (r1 - r0) * cell),
                height=height,
                base=floor,
            )
            for c0, c1, r0, r1 in rects
        ]
        return cls((ox, oy, ox + cols * cell, oy + rows * cell), boxes=boxes, floor=floor)

    # --- packing -----------------------------------------------------------------------------

    def kernel_data(self) -> tuple:
        """The packed tuple the numba kernels take (rebuilt after a change)."""
        if self._kernel_data is None:
            self._kernel_data = self._pack()
        return self._kernel_data

    def _pack(self) -> tuple:
        shapes = list(self._shapes.values())
        rect_shapes = [s for s in shapes if not isinstance(s, Circle)]
        circ_shapes = [s for s in shapes if isinstance(s, Circle)]
        rects = np.array([_pack_rect(s, self.floor) for s in rect_shapes], dtype=np.float64).reshape(-1, 9)
        circs = np.array(
            [[s.center[0], s.center[1], s.radius, s.base, s.top] for s in circ_shapes], dtype=np.float64
        ).reshape(-1, 5)
        aabbs = np.array([s.aabb() for s in rect_shapes + circ_shapes], dtype=np.float64).reshape(-1, 4)
        xmin, ymin, xmax, ymax = self.bounds
        width, depth = xmax - xmin, ymax - ymin
        n = max(len(shapes), 1)
        # about two buckets per shape, at most 2**20 buckets
        cell = max(math.sqrt(width * depth / (2.0 * n)), math.sqrt(width * depth / 2.0**20), 1e-6)
        nbx = max(1, math.ceil(width / cell))
        nby = max(1, math.ceil(depth / cell))
        i0 = np.clip(np.floor((aabbs[:, 0] - xmin) / cell), 0, nbx - 1).astype(np.int64)
        i1 = np.clip(np.floor((aabbs[:, 2] - xmin) / cell), 0, nbx - 1).astype(np.int64)
        j0 = np.clip(np.floor((aabbs[:, 1] - ymin) / cell), 0, nby - 1).astype(np.int64)
        j1 = np.clip(np.floor((aabbs[:, 3] - ymin) / cell), 0, nby - 1).astype(np.int64)
        ni, nj = i1 - i0 + 1, j1 - j0 + 1
        count = ni * nj
        total = int(count.sum())
        item = np.repeat(np.arange(len(shapes), dtype=np.int64), count)
        local = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        rep_ni = np.repeat(ni, count)
        bucket = (np.repeat(j0, count) + local // rep_ni) * nbx + np.repeat(i0, count) + local % rep_ni
        order = np.argsort(bucket, kind="stable")
        bitems = np.ascontiguousarray(item[order])
        bptr = np.zeros(nbx * nby + 1, dtype=np.int64)
        np.cumsum(np.bincount(bucket, minlength=nbx * nby), out=bptr[1:])
        meta = np.array([xmin, ymin, xmax, ymax, self.floor, xmin, ymin, cell], dtype=np.float64)
        dims = np.array([nbx, nby, rects.shape[0]], dtype=np.int64)
        return (rects, circs, meta, dims, bptr, bitems, aabbs)

    # --- queries ---------------------------------------------------------------------------

    def surface_height(self, points, from_height=np.inf) -> np.ndarray:
        """Cast a ray down at each point (k, 2) from ``from_height`` (scalar or (k,)).

        Returns (k,) the highest walkable top at or below ``from_height``: a box or circle top,
        a ramp surface (interpolated along the ramp), or the floor; NaN outside the bounds
        (the ray missed) or where nothing lies below ``from_height``."""
        p = _as_points(points)
        z = _per_point(from_height, p.shape[0], "from_height")
        out = np.empty(p.shape[0], dtype=np.float64)
        _surface_heights(self.kernel_data(), p[:, 0].copy(), p[:, 1].copy(), z, out)
        return out

    def support_height(self, points, elevation, max_climb: float) -> np.ndarray:
        """(k,) the surface an agent at ``elevation`` stands on at each point: the highest top
        at or below ``elevation + max_climb``; NaN off the map."""
        p = _as_points(points)
        e = _per_point(elevation, p.shape[0], "elevation")
        return self.surface_height(p, e + finite_scalar("max_climb", max_climb, nonneg=True))

    def segment_blocked(self, a, b) -> np.ndarray:
        """(k,) bool: does the 3-D segment a[k] → b[k] ((k, 3) each) pass through a solid?

        Touching a surface (a segment lying on a box top, grazing a face) is not blocked."""
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1, 3))
        b = np.ascontiguousarray(np.asarray(b, dtype=np.float64).reshape(-1, 3))
        if a.shape != b.shape:
            raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("segment endpoints must be finite")
        out = np.empty(a.shape[0], dtype=np.bool_)
        _segments_blocked(self.kernel_data(), a, b, out)
        return out

    def penetration(self, points, radius, elevation, max_climb, body_height: float = 2.0) -> np.ndarray:
        """(k,) how deep each disc (point, radius) at ``elevation`` overlaps a wall (0 = clear)."""
        p = _as_points(points)
        k = p.shape[0]
        out = np.empty(k, dtype=np.float64)
        _penetrations(
            self.kernel_data(), p[:, 0].copy(), p[:, 1].copy(), _per_point(radius, k, "radius"),
            _per_point(elevation, k, "elevation"), _per_point(max_climb, k, "max_climb"),
            finite_scalar("body_height", body_height, nonneg=True), out,
        )
        return out

    def resolve_circles(
        self, prev_pos, new_pos, radius, elevation, max_climb, body_height: float = 2.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Move agents (discs) from ``prev_pos`` toward ``new_pos`` ((k, 2) each) against the map.

        A disc cannot enter a wall (a solid rising more than ``max_climb`` above its current
        surface and starting below ``elevation + body_height``); it slides along it (the push
        out removes only the normal component of the motion). Motion is sub-stepped in steps
        of at most half the collision radius (``max(radius, MIN_COLLISION_RADIUS)``): a disc
        never moves far enough in one sub-step to pass a wall, so no speed tunnels through one.
        Discs stay inside the bounds; elevation follows box tops and ramp surfaces (walking
        up a ramp ends on top of the wall it leans on) and drops where a ledge ends.

        Args:
            radius, elevation, max_climb: scalars or (k,).

        Returns:
            (pos (k, 2), elevation (k,)). Raises ValueError on non-finite input.
        """
        p0, p1 = _as_points(prev_pos, "prev_pos"), _as_points(new_pos, "new_pos")
        if p0.shape != p1.shape:
            raise ValueError(f"prev_pos and new_pos must have the same shape, got {p0.shape}, {p1.shape}")
        k = p0.shape[0]
        r = _per_point(radius, k, "radius")
        e = _per_point(elevation, k, "elevation")
        mc = _per_point(max_climb, k, "max_climb")
        for name, arr in (("prev_pos", p0), ("new_pos", p1), ("radius", r), ("elevation", e),
                          ("max_climb", mc)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} must be finite")
        if np.any(r < 0) or np.any(mc < 0):
            raise ValueError("radius and max_climb must be >= 0")
        out_x, out_y, out_e = np.empty(k), np.empty(k), np.empty(k)
        _resolve_circles(
            self.kernel_data(), p0[:, 0].copy(), p0[:, 1].copy(), p1[:, 0].copy(), p1[:, 1].copy(),
            r, e, mc, finite_scalar("body_height", body_height, nonneg=True), out_x, out_y, out_e,
        )
        return np.stack([out_x, out_y], axis=1), out_e

    def __repr__(self) -> str:
        return (f"MapGeometry(bounds={self.bounds}, boxes={len(self.boxes)}, ramps={len(self.ramps)}, "
                f"circles={len(self.circles)}, floor={self.floor}, version={self.version})")
