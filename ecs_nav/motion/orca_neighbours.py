"""Which agents an avoiding agent takes into account (ORCA's agent neighbours, RVO2's
``KdTree::computeAgentNeighbors``): the (at most ``max_neighbours``) nearest within
``neighbour_dist``, centre to centre, nearest first, ties by row, among those it sees
(``sees_rows``).

The agents are binned into a uniform grid (``agent_grid``) whose cells are a quarter of the
largest ``neighbour_dist``. ``nearest_agents`` walks the cells ring by ring outward from the
agent's own and skips a cell whose nearest point lies beyond the current cut: the neighbour
range, and, once ``max_neighbours`` are held, the furthest of them (RVO2's kd-tree shrinks its
range the same way). It stops at the first ring that lies wholly beyond the cut. In a packed
crowd the ten nearest lie within about a metre and a half, so it reads a few dozen agents
where one pass over every agent within ``neighbour_dist`` reads hundreds. The neighbours found
do not depend on the order the cells are read in: the same agents, in the same order, as a
scan of every agent within range.

The loop over every agent (``ecs_nav.motion.orca.choose_velocities``) reads the ``Crowd``'s and
the grid's arrays once and hands them to ``nearest_rows`` as arrays: handing the named tuples to a
function called for every agent, or reading their fields in the inner loops, costs numba a
reference count on each of their arrays at each call or read, and made the kernel two to five
times slower.

Shapes: positions and velocities (n, 2) float64 (m, m/s); per-agent values (n,).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.spatial import bin_into_grid, cell_range

CELLS_PER_REACH = 4.0
"""The grid's cells are the largest ``neighbour_dist`` divided by this (or larger, where the
grid's cell cap asks: ``ecs_nav.motion.spatial.MAX_CELLS_PER_ITEM``)."""


class Crowd(NamedTuple):
    """The per-agent inputs of ORCA, one row per table row.

    Attributes:
        pos, velocity, preferred: (n, 2) positions (m), current and preferred velocities (m/s).
        radius, max_speed: (n,) m and m/s.
        avoids: (n,) bool, the rows that choose a velocity.
        visible: (n,) bool, the rows others avoid (bodies: a collider of radius > 0, or avoiding).
        ids, layer: (n,) int64 entity ids (ties between coincident agents), ``Collider.layer``.
        elevation: (n,) m.
        neighbour_dist (m), max_neighbours, time_horizon (s), time_horizon_obst (s),
            avoid_layers, avoid_mask (int64 bit sets), priority, side (+1 right, -1 left,
            0 none): (n,) the Avoidance columns.
    """

    pos: np.ndarray
    velocity: np.ndarray
    preferred: np.ndarray
    radius: np.ndarray
    max_speed: np.ndarray
    avoids: np.ndarray
    visible: np.ndarray
    ids: np.ndarray
    layer: np.ndarray
    elevation: np.ndarray
    neighbour_dist: np.ndarray
    max_neighbours: np.ndarray
    time_horizon: np.ndarray
    time_horizon_obst: np.ndarray
    avoid_layers: np.ndarray
    avoid_mask: np.ndarray
    priority: np.ndarray
    side: np.ndarray


class AgentGrid(NamedTuple):
    """The agents binned into square cells (``ecs_nav.motion.spatial.bin_into_grid``): the rows of
    cell ``c`` are ``cell_items[cell_start[c]:cell_start[c + 1]]``, ascending; cell id
    ``row * cols + col``; ``cell`` m a side, the lower-left corner of cell 0 at
    (``origin_x``, ``origin_y``)."""

    origin_x: float
    origin_y: float
    cell: float
    inv_cell: float
    cols: int
    rows: int
    cell_start: np.ndarray
    cell_items: np.ndarray


@kernel
def agent_grid(pos, reach):
    """The ``AgentGrid`` of ``pos`` (n, 2) for neighbours within ``reach`` m (> 0)."""
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(pos, pos, max(reach, 1e-6) / CELLS_PER_REACH)
    return AgentGrid(ox, oy, cell, 1.0 / cell, cols, rows, cell_start, cell_items)


@kernel(inline="always")
def sees_rows(i, j, layer, elevation, body_height, avoid_layers, avoid_mask, priority):
    """Whether agent i takes agent j into account: the same ``Collider.layer``, bodies that
    overlap in height (``|elevation_i - elevation_j| < body_height``), i's ``avoid_mask`` sharing
    a bit with j's ``avoid_layers``, and j's ``priority`` not below i's (Godot's rules)."""
    return (layer[i] == layer[j] and abs(elevation[i] - elevation[j]) < body_height
            and (avoid_mask[i] & avoid_layers[j]) != 0 and priority[j] >= priority[i])


@kernel
def nearest_agents(i, C, body_height, G, near, near_d2):
    """Agent i's neighbours (the module docstring) written to ``near`` (rows) and ``near_d2``
    (squared distances, m²), nearest first; returns how many (at most ``C.max_neighbours[i]``).
    ``nearest_rows`` over a ``Crowd`` and an ``AgentGrid``."""
    return nearest_rows(i, C.max_neighbours[i], C.neighbour_dist[i] * C.neighbour_dist[i], body_height, C.pos,
                        C.visible, C.layer, C.elevation, C.avoid_layers, C.avoid_mask, C.priority, G.origin_x,
                        G.origin_y, G.cell, G.inv_cell, G.cols, G.rows, G.cell_start, G.cell_items, near, near_d2)


@kernel(inline="always")
def nearest_rows(i, cap, range_sq, body_height, pos, visible, layer, elevation, avoid_layers, avoid_mask, priority,
                 origin_x, origin_y, cell, inv_cell, cols, rows, cell_start, cell_items, near, near_d2):
    """``nearest_agents`` on the columns themselves (``Crowd``'s and ``AgentGrid``'s fields),
    for the loop over every agent: at most ``cap`` neighbours closer than ``sqrt(range_sq)``."""
    if cap <= 0:
        return 0
    px, py = pos[i, 0], pos[i, 1]
    cx, _ = cell_range(px, px, origin_x, inv_cell, cols)
    cy, _ = cell_range(py, py, origin_y, inv_cell, rows)
    # the nearest any cell of ring r (r >= 1) can be: r - 1 cells and the way to its own cell's edge
    x0, y0 = origin_x + cx * cell, origin_y + cy * cell
    edge = max(min(px - x0, x0 + cell - px, py - y0, y0 + cell - py), 0.0)
    last_ring = max(cx, cols - 1 - cx, cy, rows - 1 - cy)
    k = 0
    for ring in range(last_ring + 1):
        if ring > 0:
            nearest = (ring - 1) * cell + edge
            cut = range_sq if k < cap else min(range_sq, near_d2[k - 1])
            if nearest * nearest > cut or nearest * nearest >= range_sq:
                break
        for yy in range(max(cy - ring, 0), min(cy + ring, rows - 1) + 1):
            step = 1 if yy == cy - ring or yy == cy + ring or ring == 0 else 2 * ring
            ly = origin_y + yy * cell
            dy = ly - py if py < ly else (py - ly - cell if py > ly + cell else 0.0)
            xx = cx - ring
            while xx <= cx + ring:
                if 0 <= xx < cols:
                    lx = origin_x + xx * cell
                    dx = lx - px if px < lx else (px - lx - cell if px > lx + cell else 0.0)
                    box_d2 = dx * dx + dy * dy  # to the cell's nearest point
                    if box_d2 < range_sq and (k < cap or box_d2 <= near_d2[k - 1]):
                        c = yy * cols + xx
                        for s in range(cell_start[c], cell_start[c + 1]):
                            j = cell_items[s]
                            if j == i or not visible[j]:
                                continue
                            ex, ey = pos[j, 0] - px, pos[j, 1] - py
                            d2 = ex * ex + ey * ey
                            if d2 >= range_sq or (k == cap and (d2 > near_d2[k - 1] or (d2 == near_d2[k - 1]
                                                                                       and j > near[k - 1]))):
                                continue
                            if not sees_rows(i, j, layer, elevation, body_height, avoid_layers, avoid_mask, priority):
                                continue
                            b = k if k < cap else cap - 1
                            while b > 0 and (near_d2[b - 1] > d2 or (near_d2[b - 1] == d2 and near[b - 1] > j)):
                                near[b] = near[b - 1]
                                near_d2[b] = near_d2[b - 1]
                                b -= 1
                            near[b] = j
                            near_d2[b] = d2
                            if k < cap:
                                k += 1
                xx += step
    return k
