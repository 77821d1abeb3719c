"""The packed map and the compiled (numba) kernels that query it.

Inside, boxes and ramps are one thing: an oriented rectangular prism whose top is a plane
linear along its axis (a box is a ramp with ``low == high``). Shapes are packed into flat
arrays with a uniform bucket grid over their ground-plane AABBs as the broadphase, and every
query is a compiled numba kernel (``cache=True``) vectorised over query points. The batch
kernels (``*_into``) are what ``ecs_nav.geometry.map.MapGeometry``'s queries call after checking
their input; the per-point kernels (``top_at``, ``resolve_disc``, ``wall_distance``, ...) are
for other kernels (the nav graph scan, smoothing, physics). What a wall is: ``ecs_nav.geometry.map``.

The kernels are compiled without numba's reference counting (``NO_REFCOUNT``, see
``ecs_nav.compile.options``): they allocate nothing and read arrays their caller holds. With it, each
helper call paid an atomic incref and decref for every array it took out of the packed map or
viewed a row of (``G[0]``, ``rects[item]``), once per shape visited: 3/4 of ``resolve_disc``'s
time (1.64 -> 0.51 ms for ``resolve_circles`` of 10,000 discs, 1.35 -> 0.37 ms in
``bench/graph_build.py``), same results. A kernel added here must not allocate either (numba
refuses to compile one that does).
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.compile.options import NO_REFCOUNT
from ecs_nav.geometry.shapes import Box, Ramp

_EPS = 1e-9
"""Penetration below this is touching, not crossing (length units)."""
MIN_COLLISION_RADIUS = 0.05
"""Agents collide as discs of at least this radius (a point agent keeps 5 cm off walls), so the
sub-steps of ``ecs_nav.geometry.map.MapGeometry.resolve_circles`` and ``resolve_disc`` (half the
radius) stay finite and no wall, however thin, can be stepped over."""


# --- packed arrays -----------------------------------------------------------------------------
# rects (R, 9): cx, cy, ux, uy, half_length (along u), half_width, base, low (at s = -hl), high (at s = +hl)
# circs (C, 5): cx, cy, radius, base, top
# meta  (8,):   xmin, ymin, xmax, ymax, floor, grid x0, grid y0, grid cell size
# dims  (3,):   buckets in x, buckets in y, R
# bptr, bitems: CSR bucket lists; an item < R is a rect, else circle item - R.
# aabbs (R+C, 4): xmin, ymin, xmax, ymax of each item's footprint (same item numbering).


def rect_row(shape: Box | Ramp, floor: float) -> list[float]:
    """The ``rects`` row (layout above) of a box, or of a ramp on a map whose floor is at
    ``floor`` (a ramp is solid from the floor up)."""
    if isinstance(shape, Box):
        (cx, cy), (w, d) = shape.center, shape.size
        return [cx, cy, 1.0, 0.0, w / 2, d / 2, shape.base, shape.top, shape.top]
    (sx, sy), (ex, ey) = shape.start, shape.end
    length = shape.length
    return [(sx + ex) / 2, (sy + ey) / 2, (ex - sx) / length, (ey - sy) / length,
            length / 2, shape.width / 2, floor, shape.low, shape.high]  # fmt: skip


# --- kernels: primitives -----------------------------------------------------------------------


@kernel(**NO_REFCOUNT)
def _clampi(v, n):
    # v is a float; clamp before int() so huge values cannot overflow (and NaN goes to 0)
    if not v >= 0.0:
        return 0
    if v >= n - 1:
        return n - 1
    return int(v)


@kernel(**NO_REFCOUNT)
def bucket_range(meta, dims, x0, y0, x1, y1):
    cs = meta[7]
    i0 = _clampi(math.floor((x0 - meta[5]) / cs), dims[0])
    i1 = _clampi(math.floor((x1 - meta[5]) / cs), dims[0])
    j0 = _clampi(math.floor((y0 - meta[6]) / cs), dims[1])
    j1 = _clampi(math.floor((y1 - meta[6]) / cs), dims[1])
    return i0, i1, j0, j1


@kernel(**NO_REFCOUNT)
def local_coords(r, x, y):
    dx, dy = x - r[0], y - r[1]
    return dx * r[2] + dy * r[3], -dx * r[3] + dy * r[2]


@kernel(**NO_REFCOUNT)
def _slope_mid(r):
    hl = r[4]
    slope = (r[8] - r[7]) / (2.0 * hl) if hl > 0.0 else 0.0
    return slope, 0.5 * (r[7] + r[8])


@kernel(**NO_REFCOUNT)
def _rect_surface(r, s):
    slope, mid = _slope_mid(r)
    if s < -r[4]:
        s = -r[4]
    elif s > r[4]:
        s = r[4]
    return mid + slope * s


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
def top_at(G, x, y, zmax):
    """Highest walkable top at (x, y) at or below ``zmax`` (floor included); NaN off the map."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    i0, i1, j0, j1 = bucket_range(meta, dims, x, y, x, y)
    b = j0 * dims[0] + i0
    return top_among(G, bitems, bptr[b], bptr[b + 1], x, y, zmax)


@kernel(**NO_REFCOUNT)
def _shape_base(G, item):
    """Elevation of shape ``item``'s underside (a ramp's is the floor's)."""
    rects, circs = G[0], G[1]
    n_rect = rects.shape[0]
    if item < n_rect:
        return rects[item, 6]
    return circs[item - n_rect, 3]


@kernel(**NO_REFCOUNT)
def solid_bottom(G, x, y, h):
    """The lowest elevation the solid under the walkable top ``h`` at (x, y) reaches down to
    without a gap: the underside of the shape whose top is there, or of the shape under it that
    it stands on, and so on; ``h`` itself where ``h`` is the floor's or no shape's top. A
    walkable surface lower down has the room between its top and this above it."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    if h <= meta[4] + _EPS:
        return h
    i0, i1, j0, j1 = bucket_range(meta, dims, x, y, x, y)
    b = j0 * dims[0] + i0
    bottom = h
    moved = True
    while moved:
        moved = False
        for k in range(bptr[b], bptr[b + 1]):
            item = bitems[k]
            top = _shape_top_at(G, item, x, y)
            if top == top and top >= bottom - _EPS:
                base = _shape_base(G, item)
                if base < bottom - _EPS and top <= h + _EPS:
                    bottom = base
                    moved = True
    return bottom


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


# --- kernels: walls (the solid in an agent's body band; see ecs_nav.geometry.map) ------------------


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
def wall_distance(G, item, x, y, zlo, zhi):
    """Ground-plane distance from (x, y) to shape ``item``'s wall region (inf: no wall, 0: inside)."""
    has, qx, qy, inside, ex, ey = _wall_push(G, item, x, y, zlo, zhi)
    if not has:
        return np.inf
    if inside:
        return 0.0
    return math.hypot(x - qx, y - qy)


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
def _settle(G, x, y, radius, zlo, zhi):
    """Push out of walls (a few passes) and into the bounds; returns (x, y, remaining overlap)."""
    meta = G[2]
    for _ in range(4):
        x, y = _push_out(G, x, y, radius, zlo, zhi)
        x, y = _clamp_bounds(meta, x, y, radius)
        if _penetration(G, x, y, radius, zlo, zhi) <= 1e-7:
            return x, y, 0.0
    return x, y, _penetration(G, x, y, radius, zlo, zhi)


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
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


@kernel(**NO_REFCOUNT)
def resolve_circles_into(G, px, py, nx, ny, radius, elev, max_climb, body_height, out_x, out_y, out_e):
    """``resolve_disc`` for each disc a, written to ``out_x[a], out_y[a], out_e[a]``: the kernel of
    ``MapGeometry.resolve_circles`` (inputs checked there)."""
    for a in range(px.shape[0]):
        out_x[a], out_y[a], out_e[a] = resolve_disc(G, px[a], py[a], nx[a], ny[a], radius[a], elev[a],
                                                       max_climb[a], body_height)  # fmt: skip


@kernel(**NO_REFCOUNT)
def surface_heights_into(G, xs, ys, zmax, out):
    """``out[k]`` = ``top_at`` (xs[k], ys[k]) at or below ``zmax[k]``: the kernel of
    ``MapGeometry.surface_height``."""
    for k in range(xs.shape[0]):
        out[k] = top_at(G, xs[k], ys[k], zmax[k])


@kernel(**NO_REFCOUNT)
def segments_blocked_into(G, a, b, out):
    """``out[k]`` = whether the 3-D segment a[k] -> b[k] ((k, 3) each) passes through a solid: the
    kernel of ``MapGeometry.segment_blocked``."""
    for k in range(a.shape[0]):
        out[k] = segment_blocked_by(G, a[k, 0], a[k, 1], a[k, 2], b[k, 0], b[k, 1], b[k, 2])


@kernel(**NO_REFCOUNT)
def penetrations_into(G, xs, ys, radius, elev, max_climb, body_height, out):
    """``out[k]`` = the deepest overlap of disc k with a wall for its body band: the kernel of
    ``MapGeometry.penetration``."""
    for k in range(xs.shape[0]):
        out[k] = _penetration(G, xs[k], ys[k], radius[k], elev[k] + max_climb[k], elev[k] + body_height)
