"""follow_flow's input, compiled: the flow field's direction at each steering agent's nearest node
of the nav graph.

The follow_flow behaviour (``ecs_nav.motion.steering.follow_flow``: ``direction * max_speed -
vel``) reads a field of one direction per node slot of ``world.nav_graph`` (the
``world.resources["flow_field"]`` array, or an object's ``direction`` attribute holding one),
sampled at the agent's nearest walkable node reachable from its surface (``NavGraph.nearest_nodes``
with the agent's elevation and ``SEARCH_CELLS``: ``ecs_nav.nav.graph.nearest_walkable``); zero
off the graph and where the field's direction is not finite. The reference path
(``systems/steering_reference.py``'s ``flow_directions``) does it with numpy over the rows that
follow the field; ``flow_rows`` does the same lookups one row at a time inside the steering tick
(``ecs_nav.motion.steering_rows.steer_tick``), so a crowd that follows a field costs no Python
and no temporaries per tick for it. The directions are copied, not computed: both paths give the
same numbers bit for bit (tests compare them).

``flow_inputs`` checks the field against the graph once, where it enters, and gathers what the
kernel reads into a ``FlowInputs``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.behaviours import B
from ecs_nav.nav.graph import nearest_walkable

SEARCH_CELLS = 3
"""How many grid cells round an agent's own the nearest node is looked for when its own cell
has none it can stand on (``NavGraph.nearest_nodes``' ``search_cells``)."""

_FOLLOW_FLOW = B["follow_flow"]


class FlowInputs(NamedTuple):
    """What ``flow_rows`` reads: the field and the graph it is laid on, as flat arrays.

    ``present`` False: no field (or no nav graph): follow_flow gives no force, and the arrays
    are empty. ``fetched`` False: not looked up (the SteeringSystem fetches the field only
    once a row follows it; ``steer_tick`` then asks for it)."""

    fetched: bool
    present: bool
    direction: np.ndarray  # (n, 2) float64: the field's direction at each node slot (unit or zero)
    positions: np.ndarray  # (n, 3) float64: the graph's node positions (x, y, elevation)
    walkable: np.ndarray  # (n,) bool: the graph's
    max_climb: float  # m, the graph's: the largest elevation step onto a node
    ox: float  # m: the graph grid's origin, x
    oy: float  # m: y
    spacing: float  # m, > 0: the grid's spacing
    cols: int  # the grid's columns
    rows: int  # the grid's rows
    levels: int  # the grid's levels (surfaces over one grid point)


def _no_field(fetched: bool) -> FlowInputs:
    return FlowInputs(fetched, False, np.zeros((0, 2)), np.zeros((0, 3)), np.zeros(0, np.bool_), 0.0, 0.0, 0.0, 1.0,
                      0, 0, 1)


NOT_FETCHED = _no_field(False)
"""``steer_tick``'s field before a row has followed one: a row that does is answered NEEDS_INPUT."""
NO_FIELD = _no_field(True)
"""Looked up, and there is no field or no nav graph: follow_flow gives no force."""


def flow_inputs(field, graph) -> FlowInputs:
    """The ``FlowInputs`` of ``field`` (an (n_nodes, 2) array of directions, or an object whose
    ``direction`` attribute holds one; None: no field) on ``graph`` (a NavGraph, or None).

    The arrays are the field's and the graph's own where they are already float64 (bool) and
    C-contiguous (changes made to them in place are read), else copies.

    Raises:
        ValueError: the field is not (graph.node_count, 2), or the graph's arrays are shorter
            than its grid.
    """
    if field is None or graph is None:
        return NO_FIELD
    direction = np.require(getattr(field, "direction", field), dtype=np.float64, requirements="CW")
    if direction.ndim != 2 or direction.shape != (graph.node_count, 2):
        raise ValueError(f"flow_field: expected ({graph.node_count}, 2) directions per node, got {direction.shape}")
    g = graph.grid
    slots = int(g.node_count)
    positions = np.require(graph.positions, dtype=np.float64, requirements="CW")
    walkable = np.require(graph.walkable, dtype=np.bool_, requirements="CW")
    if positions.shape[0] < slots or walkable.shape[0] < slots:
        raise ValueError(f"flow_field: a graph of {positions.shape[0]} positions and {walkable.shape[0]} walkable "
                         f"flags for a grid of {slots} slots")
    return FlowInputs(True, True, direction, positions, walkable, float(graph.max_climb), float(g.origin[0]),
                      float(g.origin[1]), float(g.spacing), int(g.cols), int(g.rows), int(g.levels))


@kernel
def flow_rows(n, has_steering, weights, pos, elevation, field, out):
    """The field's direction at each steering row of [0, n) with a non-zero follow_flow weight,
    written to ``out`` (n, 2): the direction of the row's nearest node (``nearest_walkable`` of
    its position and elevation, ``SEARCH_CELLS`` round), zero where there is none or the
    direction is not finite; the other rows zero. ``field``: a ``FlowInputs`` whose ``present``
    is True. Table columns as the AgentTable holds them (capacity-long).

    The following rows' points are gathered and looked up in one ``nearest_walkable`` call: a call
    per row (its arrays handed over each time) made 10,000 rows' sampling 0.85 ms of CPU instead
    of 0.11 (measured 2026-11-28 on a 2-core AMD EPYC VM)."""
    rows = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        out[i, 0], out[i, 1] = 0.0, 0.0
        if has_steering[i] and weights[i, _FOLLOW_FLOW] != 0.0:
            rows[k] = i
            k += 1
    points, z, nodes = np.empty((k, 2)), np.empty(k), np.empty(k, np.int64)
    for j in range(k):
        i = rows[j]
        points[j, 0], points[j, 1], z[j] = pos[i, 0], pos[i, 1], elevation[i]
    nearest_walkable(field.positions, field.walkable, field.max_climb, field.ox, field.oy, field.spacing, field.cols,
                     field.rows, field.levels, points, True, z, SEARCH_CELLS, nodes)
    for j in range(k):
        node = nodes[j]
        if node < 0:
            continue
        dx, dy = field.direction[node, 0], field.direction[node, 1]
        if math.isfinite(dx) and math.isfinite(dy):
            out[rows[j], 0], out[rows[j], 1] = dx, dy
