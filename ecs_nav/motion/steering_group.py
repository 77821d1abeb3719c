"""Group behaviours (seed 001: Buckland, "Programming Game AI by Example", ch. 3): separation,
alignment and cohesion, vectorised over all agents.

``separation``, ``alignment`` and ``cohesion`` take the neighbour CSR of
``ecs_nav.motion.neighbours.neighbours_within``; ``flock`` computes all three over every neighbour
within a radius in one pass over a uniform grid, and ``flock_sums`` is its compiled kernel for
the SteeringSystem's row kernels (``steering_neighbours``). Conventions are
``ecs_nav.motion.steering``'s: (k, 2) columns in, (k, 2) steering forces out.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.spatial import UniformGrid, build_grid, cell_range
from ecs_nav.motion.steering import normalize, per_agent, seek


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
    radius = np.ascontiguousarray(per_agent(radius, k))
    if grid is None:
        grid = build_grid(pos, max(float(radius.max(initial=0.0)), 1e-6))
    count, sums = neighbour_sums(pos, heading, radius, bool(alignment), grid)
    some = (count > 0)[:, None]
    n = np.maximum(count, 1)[:, None]
    aligned = np.where(some, sums[:, 4:6] / n - heading, 0.0) if alignment else None
    cohesive = np.where(some, normalize(seek(pos, vel, sums[:, 2:4] / n, max_speed)), 0.0) if cohesion else None
    return np.ascontiguousarray(sums[:, 0:2]), aligned, cohesive
