"""What a learning agent senses: ray distances to walls, its clearance from walls, and its nearest
neighbours, as compiled kernels over the packed map (``MapGeometry.kernel_data()``, layout in
``ecs_nav.geometry.kernels``) and the agent table's columns.

Walls are as the physics sees them (``ecs_nav.geometry.map``): to an agent whose body spans the
height band ``(zlo, zhi)`` (``elevation + max_climb``, ``elevation + body_height``), a box or
circle is a wall where it rises into that band; a ramp only along the part of it that does
(``rect_wall_span``). The map's bounds are walls too (nothing stands outside them). Distances are
in the ground plane, in metres, from the agent's centre.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.geometry.kernels import bucket_range, local_coords, rect_wall_span, wall_distance


@kernel
def ray_exit_bounds(meta, x, y, dx, dy):
    """Distance along the unit direction (dx, dy) from (x, y) to the edge of the map's bounds
    (``meta[0:4]``: xmin, ymin, xmax, ymax); 0 for a point outside them."""
    if not (meta[0] <= x <= meta[2] and meta[1] <= y <= meta[3]):
        return 0.0
    t = np.inf
    if dx > 0.0:
        t = min(t, (meta[2] - x) / dx)
    elif dx < 0.0:
        t = min(t, (meta[0] - x) / dx)
    if dy > 0.0:
        t = min(t, (meta[3] - y) / dy)
    elif dy < 0.0:
        t = min(t, (meta[1] - y) / dy)
    return t


@kernel
def slab(origin, direction, a, b):
    """(enter, leave): the ray parameters between which ``origin + t * direction`` lies in [a, b]
    (enter > leave: never; a ray parallel to the slab is in it for every t or for none)."""
    if abs(direction) < 1e-15:
        if origin < a or origin > b:
            return np.inf, -np.inf
        return -np.inf, np.inf
    ta, tb = (a - origin) / direction, (b - origin) / direction
    if ta > tb:
        return tb, ta
    return ta, tb


@kernel
def ray_hits_rect(r, lo, hi, x, y, dx, dy):
    """Distance along (dx, dy) from (x, y) to the rect ``r`` (a ``rects`` row) clipped to
    ``lo <= s <= hi`` along its axis; 0 from inside it, inf where the ray misses."""
    s0, t0 = local_coords(r, x, y)
    ds = dx * r[2] + dy * r[3]
    dt = -dx * r[3] + dy * r[2]
    enter_s, leave_s = slab(s0, ds, lo, hi)
    enter_t, leave_t = slab(t0, dt, -r[5], r[5])
    enter, leave = max(enter_s, enter_t), min(leave_s, leave_t)
    if enter > leave or leave < 0.0:
        return np.inf
    return max(enter, 0.0)


@kernel
def ray_hits_circle(c, x, y, dx, dy):
    """Distance along the unit (dx, dy) from (x, y) to the disc ``c`` (cx, cy, radius, ...);
    0 from inside it, inf where the ray misses."""
    fx, fy = x - c[0], y - c[1]
    cq = fx * fx + fy * fy - c[2] * c[2]
    if cq <= 0.0:
        return 0.0
    bq = fx * dx + fy * dy
    disc = bq * bq - cq
    if bq >= 0.0 or disc < 0.0:
        return np.inf
    return -bq - math.sqrt(disc)


@kernel
def ray_distances_into(G, px, py, hx, hy, zlo, zhi, max_range, out):
    """Cast ``out.shape[1]`` rays from each agent i at (px[i], py[i]), ray r at angle
    ``2 pi r / n_rays`` anticlockwise from its heading (hx[i], hy[i]) (a unit vector), and write the
    distance to the first wall each meets, capped at ``max_range`` (m), to ``out[i, r]``.

    ``zlo``, ``zhi`` (k,): each agent's body band (see the module). ``out``: (k, n_rays) float64.
    Each agent's shapes within ``max_range`` are gathered once (the map's buckets list a shape in
    every bucket it touches) and every ray tested against them."""
    rects, circs, meta, dims, bptr, bitems = G[0], G[1], G[2], G[3], G[4], G[5]
    n_rect = rects.shape[0]
    n_items = n_rect + circs.shape[0]
    n_rays = out.shape[1]
    turn_c = np.empty(n_rays)
    turn_s = np.empty(n_rays)
    for ray in range(n_rays):
        turn_c[ray] = math.cos(2.0 * math.pi * ray / n_rays)
        turn_s[ray] = math.sin(2.0 * math.pi * ray / n_rays)
    near = np.empty(n_items, np.int64)
    lo_of = np.empty(n_items)
    hi_of = np.empty(n_items)
    stamp = np.full(n_items, -1, np.int64)
    for i in range(px.shape[0]):
        x, y = px[i], py[i]
        found = 0
        i0, i1, j0, j1 = bucket_range(meta, dims, x - max_range, y - max_range, x + max_range, y + max_range)
        for j in range(j0, j1 + 1):
            for b_i in range(i0, i1 + 1):
                b = j * dims[0] + b_i
                for k in range(bptr[b], bptr[b + 1]):
                    item = bitems[k]
                    if stamp[item] == i:
                        continue
                    stamp[item] = i
                    if item < n_rect:
                        lo, hi = rect_wall_span(rects[item], zlo[i], zhi[i])
                        if not lo < hi:
                            continue
                        lo_of[found], hi_of[found] = lo, hi
                    else:
                        c = circs[item - n_rect]
                        if not (c[3] < zhi[i] and c[4] > zlo[i]):
                            continue
                    near[found] = item
                    found += 1
        for ray in range(n_rays):
            dx = hx[i] * turn_c[ray] - hy[i] * turn_s[ray]
            dy = hx[i] * turn_s[ray] + hy[i] * turn_c[ray]
            best = min(max_range, ray_exit_bounds(meta, x, y, dx, dy))
            for n in range(found):
                item = near[n]
                if item < n_rect:
                    best = min(best, ray_hits_rect(rects[item], lo_of[n], hi_of[n], x, y, dx, dy))
                else:
                    best = min(best, ray_hits_circle(circs[item - n_rect], x, y, dx, dy))
            out[i, ray] = best


@kernel
def wall_clearance_into(G, px, py, zlo, zhi, reach, out):
    """``out[i]``: the ground-plane distance (m) from (px[i], py[i]) to the nearest wall (a
    shape's wall region for the band (zlo[i], zhi[i]), or the edge of the bounds), capped at
    ``reach``; 0 inside a wall or outside the bounds."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    for i in range(px.shape[0]):
        x, y = px[i], py[i]
        if meta[0] <= x <= meta[2] and meta[1] <= y <= meta[3]:
            best = min(reach, x - meta[0], meta[2] - x, y - meta[1], meta[3] - y)
        else:
            best = 0.0
        i0, i1, j0, j1 = bucket_range(meta, dims, x - reach, y - reach, x + reach, y + reach)
        for j in range(j0, j1 + 1):
            for b_i in range(i0, i1 + 1):
                b = j * dims[0] + b_i
                for k in range(bptr[b], bptr[b + 1]):
                    best = min(best, wall_distance(G, bitems[k], x, y, zlo[i], zhi[i]))
        out[i] = best


@kernel
def nearest_agents_into(pos, vel, radius, layer_start, layer_rows, rows, row_layer, hx, hy, reach, out, gap):
    """The K = ``out.shape[1]`` nearest agents of each learner, in its own frame.

    For learner i (table row ``rows[i]`` on layer ``row_layer[i]``), among the rows
    ``layer_rows[layer_start[l]:layer_start[l + 1]]`` of its layer other than its own whose
    centres lie within ``reach`` (m), nearest first: ``out[i, j]`` = (forward, left offset of
    the neighbour's centre (m), forward, left velocity relative to the learner's (m/s), 1.0),
    forward along the learner's heading (hx[i], hy[i]) and left 90 degrees anticlockwise of it;
    rows past the neighbours found are zeros (their last element, the mask, 0). ``gap[i]``: the
    least distance between the learner's disc and any other disc of its layer (centre distance
    minus both radii, m; negative where they overlap, inf alone)."""
    k_max = out.shape[1]
    dist = np.empty(k_max)
    for i in range(rows.shape[0]):
        me, layer = rows[i], row_layer[i]
        x, y, vx, vy = pos[me, 0], pos[me, 1], vel[me, 0], vel[me, 1]
        fx, fy = hx[i], hy[i]
        found = 0
        least = np.inf
        for s in range(layer_start[layer], layer_start[layer + 1]):
            other = layer_rows[s]
            if other == me:
                continue
            dx, dy = pos[other, 0] - x, pos[other, 1] - y
            d = math.sqrt(dx * dx + dy * dy)
            least = min(least, d - radius[me] - radius[other])
            if d > reach:
                continue
            if found == k_max and d >= dist[k_max - 1]:
                continue
            at = min(found, k_max - 1)
            while at > 0 and dist[at - 1] > d:
                if at < k_max:
                    dist[at] = dist[at - 1]
                    out[i, at, :] = out[i, at - 1, :]
                at -= 1
            dist[at] = d
            rvx, rvy = vel[other, 0] - vx, vel[other, 1] - vy
            out[i, at, 0] = dx * fx + dy * fy
            out[i, at, 1] = -dx * fy + dy * fx
            out[i, at, 2] = rvx * fx + rvy * fy
            out[i, at, 3] = -rvx * fy + rvy * fx
            out[i, at, 4] = 1.0
            found = min(found + 1, k_max)
        for j in range(found, k_max):
            out[i, j, :] = 0.0
        gap[i] = least
