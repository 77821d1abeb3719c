"""Path smoothing by string pulling: line-of-sight shortcuts over the map geometry.

A graph path zig-zags along the grid (octile moves). ``smooth_path`` keeps the first
waypoint and greedily jumps to the farthest later waypoint that can be walked to in a straight
line, repeatedly, keeping the last. "Walked in a straight line" is the same rule the physics
applies (``ecs_nav.geometry.map``): walking the line in steps of at most ``step``, tracking the
elevation an agent would have (the highest surface within ``max_climb`` above it),

- the disc of ``radius`` swept along each step touches no wall (exact segment-to-shape distance
  in the ground plane, walls taken relative to the tracked elevation), so the smoothed path
  never crosses a collider even for a wide agent; as in the physics, the disc is at least
  ``MIN_COLLISION_RADIUS`` wide (a point agent keeps as far off walls as it does there);
- the ground never drops by more than ``max_climb`` between samples (no shortcut off a ledge),
  never ends (no shortcut across the map's edge), and the walk arrives within ``max_climb`` of
  the target waypoint's elevation (no shortcut along the floor under a wall-top waypoint).

The original graph links are always kept as a fallback, so smoothing never loses a path.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.compile.options import NO_REFCOUNT
from ecs_nav.geometry.kernels import MIN_COLLISION_RADIUS, bucket_range, local_coords, rect_wall_span, top_at
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import finite_scalar
from ecs_nav.nav.build import CLIMB_TOL


@kernel
def _clip0(f0, f1, t0, t1):
    """Clip [t0, t1] to where f0 + t (f1 - f0) <= 0."""
    df = f1 - f0
    if abs(df) < 1e-15:
        if f0 > 0.0:
            return 1.0, 0.0
        return t0, t1
    tc = -f0 / df
    if df > 0.0:
        t1 = min(t1, tc)
    else:
        t0 = max(t0, tc)
    return t0, t1


@kernel
def _point_seg_dist(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    ll = dx * dx + dy * dy
    t = 0.0 if ll == 0.0 else min(max(((px - ax) * dx + (py - ay) * dy) / ll, 0.0), 1.0)
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


@kernel
def _point_rect_dist(s, t, lo, hi, hw):
    ds = max(lo - s, 0.0, s - hi)
    dt = max(-hw - t, 0.0, t - hw)
    return math.hypot(ds, dt)


@kernel(**NO_REFCOUNT)
def _segment_wall_distance(G, ax, ay, bx, by, zlo, zhi, reach):
    """Least ground-plane distance from segment a→b to a wall region for the band (zlo, zhi),
    exact up to ``reach`` (shapes farther than that from the segment may be left out: inf).
    No reference counting (``NO_REFCOUNT``, see ``ecs_nav.compile.options``), nor in ``_line_walkable``
    that calls it per step: ``smooth_path`` 0.67 -> 0.40 ms (``bench/graph_build.py``)."""
    rects, circs, meta, dims, bptr, bitems = G[0], G[1], G[2], G[3], G[4], G[5]
    n_rect = rects.shape[0]
    best = np.inf
    i0, i1, j0, j1 = bucket_range(
        meta, dims, min(ax, bx) - reach, min(ay, by) - reach, max(ax, bx) + reach, max(ay, by) + reach
    )
    for j in range(j0, j1 + 1):
        for i in range(i0, i1 + 1):
            b = j * dims[0] + i
            for k in range(bptr[b], bptr[b + 1]):
                it = bitems[k]
                if it < n_rect:
                    r = rects[it]
                    lo, hi = rect_wall_span(r, zlo, zhi)
                    if not lo < hi:
                        continue
                    hw = r[5]
                    sa, ta = local_coords(r, ax, ay)
                    sb, tb = local_coords(r, bx, by)
                    t0, t1 = 0.0, 1.0
                    t0, t1 = _clip0(sa - hi, sb - hi, t0, t1)
                    t0, t1 = _clip0(lo - sa, lo - sb, t0, t1)
                    t0, t1 = _clip0(ta - hw, tb - hw, t0, t1)
                    t0, t1 = _clip0(-hw - ta, -hw - tb, t0, t1)
                    if t0 <= t1:
                        return 0.0
                    d = min(_point_rect_dist(sa, ta, lo, hi, hw), _point_rect_dist(sb, tb, lo, hi, hw))
                    for cs in (lo, hi):
                        for ct in (-hw, hw):
                            d = min(d, _point_seg_dist(cs, ct, sa, ta, sb, tb))
                    best = min(best, d)
                else:
                    c = circs[it - n_rect]
                    if not (c[3] < zhi and c[4] > zlo):
                        continue
                    best = min(best, max(_point_seg_dist(c[0], c[1], ax, ay, bx, by) - c[2], 0.0))
    return best


@kernel(**NO_REFCOUNT)
def _line_walkable(G, ax, ay, ae, bx, by, be, radius, max_climb, body_height, step):
    length = math.hypot(bx - ax, by - ay)
    n = max(1, int(math.ceil(length / step)))
    clear = max(radius, MIN_COLLISION_RADIUS)  # the physics' collision disc (resolve_disc)
    e = ae
    px, py = ax, ay
    for k in range(1, n + 1):
        qx, qy = ax + (bx - ax) * k / n, ay + (by - ay) * k / n
        if _segment_wall_distance(G, px, py, qx, qy, e + max_climb, e + body_height, clear) < clear:
            return False
        h = top_at(G, qx, qy, e + max_climb)
        if not (h >= e - max_climb - CLIMB_TOL):  # a ledge, or off the map (NaN)
            return False
        e = h
        px, py = qx, qy
    return not (be == be) or abs(e - be) <= max_climb + CLIMB_TOL


@kernel
def _smooth(G, w, radius, max_climb, body_height, step):
    k = w.shape[0]
    keep = np.empty(k, dtype=np.int64)
    keep[0] = 0
    m = 1
    i = 0
    while i < k - 1:
        j = k - 1
        while j > i + 1:
            if _line_walkable(G, w[i, 0], w[i, 1], w[i, 2], w[j, 0], w[j, 1], w[j, 2], radius, max_climb,
                              body_height, step):
                break
            j -= 1
        keep[m] = j
        m += 1
        i = j
    return keep[:m]


def _walk_args(radius, max_climb, body_height, step) -> tuple[float, float, float, float]:
    """The agent and sampling arguments of ``line_walkable``/``smooth_path`` as floats; a
    ValueError naming a bad one (finite; >= 0, and step > 0)."""
    return (
        finite_scalar("radius", radius, nonneg=True),
        finite_scalar("max_climb", max_climb, nonneg=True),
        finite_scalar("body_height", body_height, nonneg=True),
        finite_scalar("step", step, positive=True),
    )


def _point(name: str, p) -> np.ndarray:
    """``p`` as a (3,) float64 point (x, y, elevation) with finite x and y."""
    try:
        q = np.asarray(p, dtype=np.float64).reshape(3)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a point (x, y, elevation), got {p!r}") from None
    if not np.all(np.isfinite(q[:2])):
        raise ValueError(f"{name} x and y must be finite, got {p!r}")
    return q


def line_walkable(geometry: MapGeometry, a, b, radius: float = 0.0, max_climb: float = 0.5,
                  body_height: float = 2.0, step: float = 0.25) -> bool:
    """Can a disc of ``radius`` walk straight from ``a`` to ``b`` ((3,) x, y, elevation)?

    Raises ValueError for a point with non-finite x or y, a negative or non-finite
    ``radius``/``max_climb``/``body_height``, or a ``step`` that is not finite and > 0."""
    a, b = _point("a", a), _point("b", b)
    radius, max_climb, body_height, step = _walk_args(radius, max_climb, body_height, step)
    return bool(_line_walkable(geometry.kernel_data(), a[0], a[1], a[2], b[0], b[1], b[2], radius,
                               max_climb, body_height, step))


def smooth_path(
    waypoints,
    geometry: MapGeometry,
    radius: float = 0.0,
    max_climb: float = 0.5,
    body_height: float = 2.0,
    step: float = 0.25,
) -> np.ndarray:
    """String-pull a path: (k, 3) waypoints (x, y, elevation) → (j, 3), a subsequence, j <= k.

    Keeps the first and last waypoints; from each kept waypoint jumps to the farthest later one
    reachable in a straight line (see the module docstring), falling back to the next waypoint.
    ``step`` is the sampling step of the ground along a shortcut (walls are tested exactly)."""
    w = np.asarray(waypoints, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != 3:
        raise ValueError(f"waypoints must have shape (k, 3), got {w.shape}")
    if not np.all(np.isfinite(w[:, :2])):
        raise ValueError("waypoint x and y must be finite")
    radius, max_climb, body_height, step = _walk_args(radius, max_climb, body_height, step)
    if w.shape[0] <= 2:
        return w.copy()
    keep = _smooth(geometry.kernel_data(), np.ascontiguousarray(w), radius, max_climb, body_height, step)
    return w[keep].copy()
