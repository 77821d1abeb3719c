"""Which agents an avoiding agent takes into account (ORCA's agent neighbours, RVO2's
``KdTree::computeAgentNeighbors``): the (at most ``max_neighbours``) nearest within
``neighbour_dist``, centre to centre, nearest first, ties by row, among those it ``sees``.

The agents are binned into a uniform grid (``agent_grid``) whose cells are a quarter of the
largest ``neighbour_dist``. ``nearest_agents`` walks the cells ring by ring outward from the
agent's own and skips a cell whose nearest point lies beyond the current cut: the neighbour
range, and, once ``max_neighbours`` are held, the furthest of them (RVO2's kd-tree shrinks its
range the same way). It stops at the first ring that lies wholly beyond the cut. In a packed
crowd the ten nearest lie within about a metre and a half, so it reads a few dozen agents
where one pass over every agent within ``neighbour_dist`` reads hundreds. The neighbours found
do not depend on the order the cells are read in: the same agents, in the same order, as a
scan of every agent within range.

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


@kernel
def sees(i, j, C, body_height):
    """Whether agent i takes agent j into account: the same ``Collider.layer``, bodies that
    overlap in height (``|elevation_i - elevation_j| < body_height``), i's ``avoid_mask`` sharing
    a bit with j's ``avoid_layers``, and j's ``priority`` not below i's (Godot's rules)."""
    return (C.layer[i] == C.layer[j] and abs(C.elevation[i] - C.elevation[j]) < body_height
            and (C.avoid_mask[i] & C.avoid_layers[j]) != 0 and C.priority[j] >= C.priority[i])


@kernel
def cell_distance_sq(px, py, G, cx, cy):
    """Squared distance from (px, py) to the nearest point of cell (cx, cy) of ``G``."""
    x0 = G.origin_x + cx * G.cell
    y0 = G.origin_y + cy * G.cell
    dx = x0 - px if px < x0 else (px - x0 - G.cell if px > x0 + G.cell else 0.0)
    dy = y0 - py if py < y0 else (py - y0 - G.cell if py > y0 + G.cell else 0.0)
    return dx * dx + dy * dy


@kernel
def take_cell(i, px, py, C, body_height, G, c, range_sq, cap, k, near, near_d2):
    """Offer the rows of cell ``c`` to i's nearest list ``near[:k]`` (ascending by (distance,
    row)); returns the new count."""
    for s in range(G.cell_start[c], G.cell_start[c + 1]):
        j = G.cell_items[s]
        if j == i or not C.visible[j]:
            continue
        dx, dy = C.pos[j, 0] - px, C.pos[j, 1] - py
        d2 = dx * dx + dy * dy
        if d2 >= range_sq or (k == cap and (d2 > near_d2[k - 1] or (d2 == near_d2[k - 1] and j > near[k - 1]))):
            continue
        if not sees(i, j, C, body_height):
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
    return k


@kernel
def nearest_agents(i, C, body_height, G, near, near_d2):
    """Agent i's neighbours (the module docstring) written to ``near`` (rows) and ``near_d2``
    (squared distances, m²), nearest first; returns how many (at most ``C.max_neighbours[i]``)."""
    cap = C.max_neighbours[i]
    if cap <= 0:
        return 0
    px, py = C.pos[i, 0], C.pos[i, 1]
    range_sq = C.neighbour_dist[i] * C.neighbour_dist[i]
    cx, _ = cell_range(px, px, G.origin_x, G.inv_cell, G.cols)
    cy, _ = cell_range(py, py, G.origin_y, G.inv_cell, G.rows)
    # the nearest any cell of ring r (r >= 1) can be: r - 1 cells and the way to its own cell's edge
    x0, y0 = G.origin_x + cx * G.cell, G.origin_y + cy * G.cell
    edge = max(min(px - x0, x0 + G.cell - px, py - y0, y0 + G.cell - py), 0.0)
    last_ring = max(cx, G.cols - 1 - cx, cy, G.rows - 1 - cy)
    k = 0
    for ring in range(last_ring + 1):
        if ring > 0:
            nearest = (ring - 1) * G.cell + edge
            cut = range_sq if k < cap else min(range_sq, near_d2[k - 1])
            if nearest * nearest > cut or nearest * nearest >= range_sq:
                break
        for yy in range(max(cy - ring, 0), min(cy + ring, G.rows - 1) + 1):
            on_edge_row = yy == cy - ring or yy == cy + ring
            step = 1 if on_edge_row or ring == 0 else 2 * ring
            xx = cx - ring
            while xx <= cx + ring:
                if 0 <= xx < G.cols:
                    d2 = cell_distance_sq(px, py, G, xx, yy)
                    if d2 < range_sq and (k < cap or d2 <= near_d2[k - 1]):
                        k = take_cell(i, px, py, C, body_height, G, yy * G.cols + xx, range_sq, cap, k, near,
                                      near_d2)
                xx += step
    return k
