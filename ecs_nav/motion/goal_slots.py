"""Goal spreading's slots: the places round a goal that a crowd sent to one point fills, nearest
first by walking distance.

A crowd sent to one point cannot stand on it. Group arrival (``ecs_nav.motion.arrival``) lets
the crowd settle against its first arrivals, so it grows from the goal toward where the agents
come from, and through a doorway or up a ramp it plugs the way behind it. Here the places round
the goal are *slots*: the points of a hexagonal packing (``hex_lattice``: neighbouring slots
``spacing`` apart, the agents' diameter plus a gap) kept where a disc of the agents' radius stands
on the nav graph's walkable floor, level and off the walls (``walkable_slots``), each with its
walking distance from the goal over the nav graph (an exact flow field's, ``ecs_nav.nav.flowfield``)
and its neighbours in the packing on its own level (``lattice_neighbours``). A slot is
*occupied* when a stopped agent stands on it (``occupy_slots``). Which free slot an agent walks
to, and how, is ``ecs_nav.motion.slot_field``'s.

The slot sets are built, kept and used by the path and flow-field followers' goal spreading
(``systems/goal_spreading.py``).

Shapes: points (s, 2) float64 in m; distances (s,) m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.table import ColumnSpec
from ecs_nav.motion.spatial import UniformGrid, build_grid, cell_range
from ecs_nav.nav.fields import FieldGoal, goal_nodes
from ecs_nav.nav.flowfield import flow_field

SLOT_GAP = 0.1
"""m between the discs of two neighbouring slots: the packing's spacing is the agents' diameter
plus this (>= 0)."""

OCCUPIED_FRACTION = 0.75
"""A slot is occupied by a stopped agent whose centre lies closer to it than this fraction of the
sum of the two radii (a settled agent stands up to ``slot_field.SLOT_SETTLE_SPACINGS`` spacings off a slot,
mostly much less, without taking its neighbours')."""

SPARE_SLOTS = 1.5
"""A slot set is built to hold at least this many slots per agent of its goal where the floor
allows (the packing reaches further until it does, or covers the nav graph)."""

SEEKING = -2
"""``goal_slot_index`` of an agent walking down the slot field (>= 0: the slot it stopped on;
-1: none)."""


def hex_lattice(centre, spacing: float, reach: float) -> np.ndarray:
    """(k, 2) the points of a hexagonal packing (neighbours ``spacing`` apart, rows
    ``spacing * sqrt(3) / 2`` apart, every other row shifted by half a spacing) within ``reach``
    of ``centre``, which is one of them. Ordered by row, then column.

    Raises:
        ValueError: ``spacing`` not > 0, ``reach`` not >= 0, or ``centre`` not a finite (x, y).
    """
    c = np.asarray(centre, dtype=np.float64).reshape(-1)
    if c.shape != (2,) or not np.all(np.isfinite(c)):
        raise ValueError(f"hex_lattice: centre must be a finite (x, y), got {centre!r}")
    if not (spacing > 0 and math.isfinite(spacing)) or not (reach >= 0 and math.isfinite(reach)):
        raise ValueError(f"hex_lattice: spacing must be > 0 and reach >= 0 (finite), got {spacing!r}, {reach!r}")
    row_step = spacing * math.sqrt(3.0) / 2.0
    rows = int(reach / row_step) + 1
    cols = int(reach / spacing) + 2
    j, i = np.meshgrid(np.arange(-rows, rows + 1), np.arange(-cols, cols + 1), indexing="ij")
    x = (i + 0.5 * (j & 1)) * spacing
    y = j * row_step
    points = np.stack([x.ravel(), y.ravel()], axis=1)
    keep = points[:, 0] ** 2 + points[:, 1] ** 2 <= reach * reach + 1e-12
    return points[keep] + c


def lattice_neighbours(points: np.ndarray, centre, spacing: float, elevation=None,
                       max_climb: float = math.inf) -> np.ndarray:
    """(k, 6) int64: for each of ``points`` (a subset of one ``hex_lattice(centre, spacing, ...)``,
    in any order) the indices into ``points`` of its six lattice neighbours, -1 where a neighbour
    is not among them or, given the points' ``elevation`` (k,) m, lies more than ``max_climb``
    above or below it (the edge of a platform is no way down to the floor)."""
    c = np.asarray(centre, dtype=np.float64).reshape(2)
    row_step = spacing * math.sqrt(3.0) / 2.0
    j = np.rint((points[:, 1] - c[1]) / row_step).astype(np.int64)
    i = np.rint((points[:, 0] - c[0]) / spacing - 0.5 * (j & 1)).astype(np.int64)
    index = {(a, b): q for q, (a, b) in enumerate(zip(i.tolist(), j.tolist()))}
    out = np.full((points.shape[0], 6), -1, np.int64)
    for q, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        lo = a - 1 + (b & 1)  # the left one of the two neighbours in the rows above and below
        for m, cell in enumerate(((a - 1, b), (a + 1, b), (lo, b - 1), (lo + 1, b - 1), (lo, b + 1), (lo + 1, b + 1))):
            r = index.get(cell, -1)
            if r >= 0 and elevation is not None and abs(elevation[r] - elevation[q]) > max_climb:
                r = -1
            out[q, m] = r
    return out


@dataclass
class SlotSet:
    """The slots of one goal for the agents of one layer.

    Attributes:
        key: the goal key its agents share (``arrival.goal_key_of_point`` / ``goal_key_of_field``).
        layer: their ``Collider.layer``.
        goal: (2,) the goal point, m.
        radius: m, the radius of a slot's disc (the largest agent of the goal when it was built).
        spacing: m, between neighbouring slots.
        points: (s, 2) the slots, nearest first by walking distance from the goal.
        distance: (s,) m, walking distance from the goal (ascending).
        neighbours: (s, 6) int64 each slot's lattice neighbours among the slots (-1: none).
        grid: the slots binned for lookups by position (``spatial.build_grid``).
        graph_key: the nav graph's ``cache_key()`` it was built on (None: built without a graph).
        extent: m, how far the stopped crowd reaches: the walking distance of the farthest slot an
            agent stopped on (the straight distance of one that stopped off the slots); 0 at first.
        occupied: (s,) bool, field: (s,) float64, source: (s,) bool, the occupancy, the field
            and its sources of ``tick``.
        traffic: (s,) int64, the walkers' ways of the tick before (``trace_ways``), which the field
            of ``tick`` keeps clear; traffic_next: those of ``tick``.
        tick: the tick they were computed at (-1: never).
    """

    key: int
    layer: int
    goal: np.ndarray
    radius: float
    spacing: float
    points: np.ndarray
    distance: np.ndarray
    neighbours: np.ndarray
    grid: UniformGrid
    graph_key: tuple | None = None
    extent: float = 0.0
    occupied: np.ndarray | None = None
    field: np.ndarray | None = None
    source: np.ndarray | None = None
    traffic: np.ndarray | None = None
    traffic_next: np.ndarray | None = None
    tick: int = -1

    def digest_bytes(self) -> bytes:
        """What the simulation depends on, for ``World.state_digest``."""
        head = np.array([self.key, self.layer, self.points.shape[0], self.tick], np.int64).tobytes()
        ways = b"" if self.traffic_next is None else self.traffic_next.tobytes()
        return head + np.array([self.extent, self.radius, self.spacing]).tobytes() + ways


def walkable_slots(points: np.ndarray, radius: float, graph, geometry,
                   goal_elevation: float) -> tuple[np.ndarray, np.ndarray]:
    """((k,) bool, (k,) m): which ``points`` can hold a disc of ``radius``, and the floor's
    elevation there (the centre's node's; ``goal_elevation`` without a graph): its centre and the four points
    ``radius`` away along x and y lie in walkable cells of ``graph`` (a NavGraph) on one level
    (the centre's: of its cell's levels the nearest ``goal_elevation``; the others' node
    elevations within the graph's ``max_climb`` of the centre's), and it overlaps no wall
    of ``geometry`` (a MapGeometry, or None) at that level. Without a graph every point is
    walkable that overlaps no wall at ``goal_elevation``."""
    k = points.shape[0]
    ok = np.ones(k, bool)
    elevation = np.full(k, float(goal_elevation))
    if graph is not None:
        for n, (dx, dy) in enumerate(((0.0, 0.0), (radius, 0.0), (-radius, 0.0), (0.0, radius), (0.0, -radius))):
            # the centre: its cell's level nearest the goal's; the others: within a climb of it
            node = graph.cell_nodes(points + (dx, dy), elevation, np.inf if n == 0 else graph.max_climb)
            walk = node >= 0
            ok &= walk
            if n == 0:
                elevation = np.where(walk, graph.positions[node, 2], elevation)
    if geometry is not None and ok.any():
        at = np.flatnonzero(ok)
        climb = graph.max_climb if graph is not None and math.isfinite(graph.max_climb) else 0.5
        depth = geometry.penetration(points[at], radius, elevation[at], climb)
        ok[at] = depth <= 1e-9
    return ok, elevation


def slot_columns() -> dict[str, ColumnSpec]:
    """The agent table's columns of goal spreading, added by ``add_columns`` when the first slot
    set is built (a World whose crowds never share a goal keeps its columns and state digest)."""
    f8, i8 = np.float64, np.int64
    return {
        "goal_slot": ColumnSpec((2,), f8),  # where it stopped, or the slot it steers at, m
        "goal_slot_index": ColumnSpec((), i8, -1),  # that slot's index (SEEKING: walking down the field)
        "goal_slot_key": ColumnSpec((), i8, -1),  # the goal key of its slot set
        "goal_slot_layer": ColumnSpec((), i8, 0),  # the layer of its slot set
        "goal_slot_reached": ColumnSpec((), np.bool_, False),  # arrived at the goal of goal_slot_key once
        "goal_slot_anchor": ColumnSpec((2,), f8),  # where it stood when it last moved SLOT_PROGRESS, m
        "goal_slot_wait": ColumnSpec((), i8, 0),  # ticks since
    }


def build_slot_set(key: int, layer: int, goal, radius: float, count: int, graph, geometry,
                   gap: float = SLOT_GAP) -> SlotSet:
    """The slots of ``goal`` ((x, y), m) for ``count`` agents of at most ``radius`` m: a hexagonal
    packing of spacing ``2 * radius + gap`` centred on the goal, kept where ``walkable_slots``
    says a disc of ``radius`` stands and the goal can be walked to over ``graph`` (a NavGraph; None:
    every such point, in straight distance), ordered by walking distance from the goal (ties:
    lattice order). The lattice reaches out until it holds ``SPARE_SLOTS * count`` slots or
    covers the graph (without a graph: a disc of that many)."""
    goal = np.asarray(goal, dtype=np.float64).reshape(2)
    spacing = 2.0 * float(radius) + float(gap)
    needed = max(int(math.ceil(SPARE_SLOTS * count)), 1)
    reach = spacing * (math.sqrt(needed * math.sqrt(3.0) / (2.0 * math.pi)) + 2.0)
    field_of_goal, goal_elevation, limit = None, 0.0, reach
    if graph is not None:
        nodes, points = goal_nodes(FieldGoal(points=((float(goal[0]), float(goal[1])),)), graph, None, geometry)
        if nodes.size == 0:
            return SlotSet(key, layer, goal, float(radius), spacing, np.zeros((0, 2)), np.zeros(0),
                           np.zeros((0, 6), np.int64), build_grid(goal[None, :], spacing), graph.cache_key())
        field_of_goal = flow_field(graph, nodes[:1], points[:1])
        goal_elevation = float(graph.positions[nodes[0], 2])
        g = graph.grid
        corners = np.array([g.origin, (g.origin[0] + g.cols * g.spacing, g.origin[1] + g.rows * g.spacing)])
        limit = float(np.hypot(*np.maximum(np.abs(corners - goal).max(axis=0), 0.0))) + spacing
    elif geometry is not None:
        height = geometry.surface_height(goal[None, :])[0]
        goal_elevation = float(height) if math.isfinite(height) else 0.0
    while True:
        points = hex_lattice(goal, spacing, reach)
        ok, elevation = walkable_slots(points, float(radius), graph, geometry, goal_elevation)
        points, elevation = points[ok], elevation[ok]
        if field_of_goal is not None:
            distance = field_of_goal.sample(points)[1] if points.shape[0] else np.zeros(0)
        else:
            distance = np.hypot(points[:, 0] - goal[0], points[:, 1] - goal[1])
        reached = np.isfinite(distance)
        points, distance, elevation = points[reached], distance[reached], elevation[reached]
        if points.shape[0] >= needed or reach >= limit:
            break
        reach = min(reach * 1.6, limit)
    order = np.argsort(distance, kind="stable")
    points, elevation = np.ascontiguousarray(points[order]), elevation[order]
    climb = graph.max_climb if graph is not None and math.isfinite(graph.max_climb) else 0.5
    return SlotSet(key, layer, goal, float(radius), spacing, points, np.ascontiguousarray(distance[order]),
                   lattice_neighbours(points, goal, spacing, elevation, climb),
                   build_grid(points if points.shape[0] else goal[None, :], spacing),
                   None if graph is None else graph.cache_key())


@kernel
def occupy_slots(points, radius, occupied_fraction, occ_pos, occ_radius, ox, oy, inv_cell, cols, rows, cell_start,
                 cell_items, max_occ_radius, occupied):
    """``occupied`` (s,) bool receives the slots a stopped agent stands on: one of ``occ_pos`` /
    ``occ_radius`` (binned in the grid given) within ``occupied_fraction * (radius + its radius)``
    of the slot. Returns how many are occupied."""
    n_occupied = 0
    reach = occupied_fraction * (radius + max_occ_radius)
    for s in range(points.shape[0]):
        px, py = points[s, 0], points[s, 1]
        cx0, cx1 = cell_range(px - reach, px + reach, ox, inv_cell, cols)
        cy0, cy1 = cell_range(py - reach, py + reach, oy, inv_cell, rows)
        taken = False
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * cols + cx
                for q in range(cell_start[c], cell_start[c + 1]):
                    j = cell_items[q]
                    dx, dy = occ_pos[j, 0] - px, occ_pos[j, 1] - py
                    limit = occupied_fraction * (radius + occ_radius[j])
                    if dx * dx + dy * dy < limit * limit:
                        taken = True
                        break
                if taken:
                    break
            if taken:
                break
        occupied[s] = taken
        n_occupied += taken
    return n_occupied
