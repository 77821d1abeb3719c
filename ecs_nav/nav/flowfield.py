"""Flow fields: one exact distance field shared by every agent heading to the same goal(s).

Seed 003 as written (the brushfire heat map, its vector field, the subdivision fix) lives in
``seed_field.py`` and is re-exported here. Beyond the seed, ``flow_field`` builds a
``FlowField``: the exact distance of every node to the nearest goal over the nav graph's own
edges (octile costs with no corner cutting on a grid: ``distance.distance_field``), and samples
a direction at any point:

- **Anchors (line of sight).** Each node looks past its next hop toward the farthest node of
  its next-hop chain it can see, Theta*-style: ``anchor[v] = anchor[next_hop[v]]`` when ``v``
  sees that anchor, else ``next_hop[v]``; a goal node's anchor is its goal point. Open areas
  therefore point straight at the goal instead of along 45-degree zig-zags. Anchors are
  computed lazily, only for nodes that agents sample (and the chains behind them), memoised in
  the field, in a compiled kernel.
- **Line of sight** (``sight.py``): the straight segment walked over the grid's cells, every
  step between two cells an edge of the graph in the walking direction (walkability,
  ``max_climb``, clearance and one-way drops are the graph's own; through a cell corner, the
  diagonal edge with both cells beside it walkable). It assumes an edge costs its ground length
  (true of grid maps): the straight line is then never longer than the chain it replaces. On a
  graph weighted by area costs (``ecs_nav.nav.areas``: ``graph.node_multiplier`` set) a line
  stays within cells of one multiplier, so it costs that multiplier times its length, no more
  than the chain unless the chain passes a cheaper area.
- **Sampling.** A point's direction is the bilinear blend, over the (up to) four surrounding
  node slots that can reach a goal, of the unit vectors from the point toward each one's
  anchor, normalised; so motion is smooth across tile borders. Its distance is the blend of
  those nodes' distances. Off the graph (no surrounding slot reaches a goal), the point heads
  for the nearest node that does within ``OFF_GRAPH_CELLS`` cells, distance = that node's
  distance + the straight line to it; with none, zero direction and distance inf.

Floors: on a graph of several levels (``ecs_nav.nav.build``, ``floors``) a point samples, at
each surrounding grid point, the level within a climb of its elevation (``sample``'s
``elevations``), and a node's anchor is its next hop: line of sight walks one level's grid, so
the directions there follow the graph's eight ways.

Limits: on one level the blend takes the surrounding slots as they are, whatever their elevation
(a point at the foot of a wall whose top reaches the goal blends the top's way in too), and a next hop
across an off-mesh link (a jump, a teleporter) makes its far end the anchor: the follower crosses
the link as a link when it stands at its start (``systems/flow_links.py``).

Coordinates: world (x, y); node slot (col, row) at ``grid.origin + (col, row) * spacing``, where
NavGraph puts its nodes: the kernels compute a node's ground position from its id instead of
reading ``graph.positions``, and memoise only each node's anchor id (an int32 per node).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.distance import check_sources, distance_field
from ecs_nav.nav.graph import NavGraph
from ecs_nav.nav.seed_field import SeedField, heat_map, seed_field, subdivide, tile_directions, vector_field
from ecs_nav.nav.sight import grid_shape, line_of_sight, sees_node, sees_point, sight_grid

__all__ = [
    "OFF_GRAPH_CELLS", "FlowField", "SeedField", "flow_field", "heat_map", "line_of_sight", "seed_field",
    "subdivide", "tile_directions", "vector_field",
]  # fmt: skip

OFF_GRAPH_CELLS = 2
"""How far (in cells, Chebyshev) a point off the graph looks for a node that reaches a goal."""
_UNKNOWN = -2  # an anchor not computed yet
_NO_ELEVATIONS = np.zeros(0)


class Levels(NamedTuple):
    """How the kernels pick a grid point's level on a graph of several (floors)."""

    count: int  # levels of the grid (1: the plain grid, nothing to pick)
    heights: np.ndarray  # (n,) float64 node elevations (NaN: not walkable)
    max_climb: float  # m: a point stands on a node within this of its elevation


@kernel(inline="always")
def _level_node(slot, levels, distance, z, with_z):
    """The node a point at elevation ``z`` samples at grid point ``slot`` (``row * cols + col``):
    the slot itself on a plain grid; on several levels, of the nodes there that reach a goal, the
    one nearest ``z`` within a climb (``with_z``), or the highest; the slot when none does."""
    if levels.count == 1:
        return slot
    n_slots = distance.shape[0] // levels.count
    best, best_dz = slot, np.inf
    for level in range(levels.count):
        v = level * n_slots + slot
        if distance[v] == np.inf:
            continue
        if not with_z:
            return v
        dz = abs(levels.heights[v] - z)
        if dz <= levels.max_climb and dz < best_dz:
            best, best_dz = v, dz
    return best


class GoalSet(NamedTuple):
    """The goals as the kernels read them."""

    nodes: np.ndarray  # (k,) int64, sorted
    points: np.ndarray  # (k, 2) float64 goal points
    off_centre: np.ndarray  # (k,) bool: the goal point is not its node's position


@kernel(inline="always")
def _anchor_point(a, anchor, goals, grid):
    """World point of anchor node ``a``: a goal's goal point (a goal is its own anchor), else
    its slot position (computed: nodes sit on their slots)."""
    if anchor[a] == a:
        k = np.searchsorted(goals.nodes, a)
        return goals.points[k, 0], goals.points[k, 1]
    slot = a % (grid.rows * grid.cols)
    return grid.origin_x + (slot % grid.cols) * grid.spacing, grid.origin_y + (slot // grid.cols) * grid.spacing


@kernel
def _resolve_anchors(nodes, next_hop, anchor, stack, goals, sight, grid, levels):
    """Resolve (and memoise) the anchor of each reachable node of ``nodes`` and of the chain
    behind it. ``anchor`` (n,) int32: anchor node, _UNKNOWN until computed; a goal node is its
    own. On a graph of several levels a node's anchor is its next hop (no line of sight). One
    loop with no helper call per node: a per-node kernel call measured 1.7-2.3x slower
    over a whole 256-square map (its array arguments are passed, and reference-counted, per call)."""
    for v in nodes:
        if anchor[v] != _UNKNOWN:
            continue
        top = 0
        w = v
        while anchor[w] == _UNKNOWN:  # goal nodes are known: the walk stops at the latest there
            stack[top] = w
            top += 1
            w = next_hop[w]
        while top > 0:
            top -= 1
            w = stack[top]
            hop = next_hop[w]
            a = anchor[hop]
            if a == hop or levels.count > 1:  # hop is a goal: its point either way
                anchor[w] = hop
                continue
            if anchor[a] == a and goals.off_centre[np.searchsorted(goals.nodes, a)]:
                gx, gy = _anchor_point(a, anchor, goals, grid)
                wx = grid.origin_x + (w % grid.cols) * grid.spacing
                wy = grid.origin_y + (w // grid.cols) * grid.spacing
                sees = sees_point(sight, grid, wx, wy, gx, gy)
            else:
                sees = sees_node(sight, w, a)
            anchor[w] = a if sees else hop


@kernel
def _sample(points, elevations, with_z, distance, next_hop, anchor, stack, pending, queue, goals, sight, grid, levels,
            off_cells, out_dir, out_dist):  # fmt: skip
    """Direction and distance at each point (see the module doc); writes ``out_dir`` (k, 2) and
    ``out_dist`` (k,). ``pending`` (n,) uint8 zeros and ``queue`` (n,) int64: scratch, ``pending``
    left zero. On a graph of several levels each grid point's node is ``_level_node``'s for the
    point's elevation (``elevations[i]`` when ``with_z``)."""
    ox, oy, spacing, rows, cols = grid.origin_x, grid.origin_y, grid.spacing, grid.rows, grid.cols
    # Anchors still unknown are resolved first, in node-id order when there are many: chains of
    # neighbouring nodes then share cache lines (agents come in any order); 1.5-2x on 10k agents.
    count = 0
    for i in range(points.shape[0]):
        fx = (points[i, 0] - ox) / spacing
        fy = (points[i, 1] - oy) / spacing
        if not (abs(fx) < 4.0e9 and abs(fy) < 4.0e9):
            continue
        c0, r0 = int(math.floor(fx)), int(math.floor(fy))
        for corner in range(4):
            c, r = c0 + (corner & 1), r0 + (corner >> 1)
            if 0 <= c < cols and 0 <= r < rows:
                v = _level_node(r * cols + c, levels, distance, elevations[i] if with_z else 0.0, with_z)
                if anchor[v] == _UNKNOWN and distance[v] < np.inf and pending[v] == 0:
                    pending[v] = 1
                    queue[count] = v
                    count += 1
    if count * 16 >= pending.shape[0]:  # many: the same nodes in id order (a scan of every node)
        count = 0
        for v in range(pending.shape[0]):
            if pending[v] != 0:
                queue[count] = v
                count += 1
    for k in range(count):
        pending[queue[k]] = 0
    _resolve_anchors(queue[:count], next_hop, anchor, stack, goals, sight, grid, levels)
    for i in range(points.shape[0]):
        px, py = points[i, 0], points[i, 1]
        out_dir[i, 0] = 0.0
        out_dir[i, 1] = 0.0
        out_dist[i] = np.inf
        fx = (px - ox) / spacing
        fy = (py - oy) / spacing
        if not (abs(fx) < 4.0e9 and abs(fy) < 4.0e9):  # also NaN
            continue
        c0, r0 = int(math.floor(fx)), int(math.floor(fy))
        tx, ty = fx - c0, fy - r0
        sum_x = sum_y = sum_w = sum_d = 0.0
        best_w, best_x, best_y = -1.0, 0.0, 0.0
        for corner in range(4):
            dc, dr = corner & 1, corner >> 1
            c, r = c0 + dc, r0 + dr
            if not (0 <= c < cols and 0 <= r < rows):
                continue
            v = _level_node(r * cols + c, levels, distance, elevations[i] if with_z else 0.0, with_z)
            w = (tx if dc else 1.0 - tx) * (ty if dr else 1.0 - ty)
            d = distance[v]
            if w <= 0.0 or d == np.inf:
                continue
            ax, ay = _anchor_point(anchor[v], anchor, goals, grid)
            ux, uy = ax - px, ay - py
            length = math.sqrt(ux * ux + uy * uy)
            if length > 0.0:
                ux /= length
                uy /= length
            sum_x += w * ux
            sum_y += w * uy
            sum_w += w
            sum_d += w * d
            if w > best_w:
                best_w, best_x, best_y = w, ux, uy
        if sum_w > 0.0:
            out_dist[i] = sum_d / sum_w
            norm = math.sqrt(sum_x * sum_x + sum_y * sum_y)
            if norm > 1e-9 * sum_w:
                out_dir[i, 0] = sum_x / norm
                out_dir[i, 1] = sum_y / norm
            else:  # the blend cancels out (a ridge between two ways round): the heaviest node's way
                out_dir[i, 0] = best_x
                out_dir[i, 1] = best_y
            continue
        # off the graph: the nearest node that reaches a goal, within off_cells
        cr, rr = int(math.floor(fx + 0.5)), int(math.floor(fy + 0.5))
        best, best_d2 = -1, np.inf
        for r in range(max(rr - off_cells, 0), min(rr + off_cells + 1, rows)):
            for c in range(max(cr - off_cells, 0), min(cr + off_cells + 1, cols)):
                v = _level_node(r * cols + c, levels, distance, elevations[i] if with_z else 0.0, with_z)
                if distance[v] < np.inf:
                    ddx, ddy = ox + c * spacing - px, oy + r * spacing - py
                    d2 = ddx * ddx + ddy * ddy
                    if d2 < best_d2:  # row-major scan: ties go to the lower id
                        best, best_d2 = v, d2
        if best >= 0:
            length = math.sqrt(best_d2)
            slot = best % (rows * cols)
            out_dir[i, 0] = (ox + (slot % cols) * spacing - px) / length
            out_dir[i, 1] = (oy + (slot // cols) * spacing - py) / length
            out_dist[i] = distance[best] + length


class FlowField:
    """An exact flow field over one nav graph toward one or more goals (see the module doc).

    Attributes:
        distance: (n,) float64 cost of the cheapest path from each node to the nearest goal
            (0 at goals, inf where none is reachable within ``max_cost``), as
            ``search.distance_field``.
        next_hop: (n,) int64 next node on that path (-1 at goals and unreachable nodes).
        goals: (k,) int64 goal nodes, sorted and unique.
        goal_points: (k, 2) float64 world points the goal nodes stand for (row i for goals[i]).
        graph_key: ``graph.cache_key()`` when the field was built: the field is stale once the
            graph's key differs (``is_current``).
        max_cost: nodes farther than this from every goal are left unreached.
    """

    def __init__(self, graph: NavGraph, goals, goal_points=None, max_cost: float = math.inf):
        self.distance = np.empty(0)
        self.next_hop = np.empty(0, dtype=np.int64)
        self._anchor = np.empty(0, dtype=np.int32)
        self._stack = np.empty(0, dtype=np.int32)
        self._pending = np.zeros(0, dtype=np.uint8)
        self._queue = np.empty(0, dtype=np.int64)
        self.goals = np.empty(0, dtype=np.int64)
        self.goal_points = np.empty((0, 2))
        self.max_cost = float(max_cost)
        self.graph_key: tuple | None = None
        self._graph: NavGraph | None = None
        self.rebuild(graph, goals, goal_points)

    def rebuild(self, graph: NavGraph, goals, goal_points=None, max_cost: float | None = None) -> FlowField:
        """Build the field again (new goals, or the graph changed), in place: when the node count
        is unchanged every (n,) array is reused and the kernels write into it, so a rebuild
        allocates nothing O(n). With the same graph (same ``cache_key``), goals, goal points and
        ``max_cost`` it does nothing: the field and its memoised anchors stand. ``max_cost`` None
        keeps the field's. Returns self.

        Raises:
            ValueError: a goal is not a walkable node, ``goal_points`` is not (len(goals), 2)
                finite, or ``max_cost`` is not a number.
        """
        raw = np.asarray(goals).reshape(-1)
        ids = check_sources(graph, raw, "goal")
        if goal_points is None:
            points = graph.positions[ids, :2].copy()
        else:
            points = np.asarray(goal_points, dtype=np.float64)
            if points.shape != (raw.shape[0], 2) or not np.all(np.isfinite(points)):
                raise ValueError(f"goal_points must be ({raw.shape[0]}, 2) finite points (one per goal), "
                                 f"got shape {points.shape}")  # fmt: skip
            _, first = np.unique(raw.astype(np.int64), return_index=True)  # a repeated goal: its first point
            points = np.ascontiguousarray(points[first])
        new_cost = self.max_cost if max_cost is None else float(max_cost)
        if math.isnan(new_cost):
            raise ValueError("max_cost must be a number, got nan")
        if (graph is self._graph and self.graph_key == graph.cache_key() and new_cost == self.max_cost
                and np.array_equal(ids, self.goals) and np.array_equal(points, self.goal_points)):
            return self  # nothing changed: the field and its memoised anchors stand  # fmt: skip
        self.max_cost = new_cost
        n = graph.node_count
        fresh = self.distance.shape[0] != n
        if fresh:
            self.distance = np.empty(n)
            self.next_hop = np.empty(n, dtype=np.int64)
            self._anchor = np.empty(n, dtype=np.int32)
            self._stack = np.empty(n, dtype=np.int32)
            self._pending = np.zeros(n, dtype=np.uint8)
            self._queue = np.empty(n, dtype=np.int64)
        distance_field(graph, ids, self.max_cost, out=(self.distance, self.next_hop))
        self._anchor.fill(_UNKNOWN)
        self._anchor[ids] = ids
        centre = graph.positions[ids, :2]
        self._goal_set = GoalSet(ids, points, np.any(points != centre, axis=1))
        self._sight = sight_grid(graph)
        self._levels = Levels(graph.grid.levels, np.ascontiguousarray(graph.positions[:, 2]), float(graph.max_climb))
        self.goals, self.goal_points = ids, points
        self.graph_key = graph.cache_key()
        self._graph = graph
        self._grid = grid_shape(graph)
        return self

    def is_current(self, graph: NavGraph) -> bool:
        """Whether the field was built on ``graph`` as it is now (same ``cache_key``)."""
        return graph.cache_key() == self.graph_key

    def sample(self, points, elevations=None) -> tuple[np.ndarray, np.ndarray]:
        """Direction toward the goal and distance to it at each point (see the module doc).

        Args:
            points: (k, 2) world (x, y).
            elevations: optional (k,) elevation of each point, m: on a graph of several levels
                (floors) a point samples the level within a climb of it (under a bridge, the
                road's field, not the deck's); without, the highest level that reaches a goal.

        Returns:
            ``(directions, distance)``: (k, 2) float64 unit vectors (never zero where a
            surrounding node reaches a goal, except exactly on a goal point; zero off the graph)
            and (k,) float64 distances (inf off the graph).
        """
        p = np.ascontiguousarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 2:
            raise ValueError(f"points must have shape (k, 2), got {p.shape}")
        with_z = elevations is not None
        z = np.ascontiguousarray(elevations, dtype=np.float64).reshape(-1) if with_z else _NO_ELEVATIONS
        if with_z and z.shape[0] != p.shape[0]:
            raise ValueError(f"{z.shape[0]} elevations for {p.shape[0]} points")
        directions = np.empty((p.shape[0], 2))
        distance = np.empty(p.shape[0])
        _sample(p, z, with_z, self.distance, self.next_hop, self._anchor, self._stack, self._pending, self._queue,
                self._goal_set, self._sight, self._grid, self._levels, OFF_GRAPH_CELLS, directions,
                distance)  # fmt: skip
        return directions, distance

    def anchors(self, nodes) -> np.ndarray:
        """(k,) int64 anchor node of each of ``nodes`` (computed now if not yet): the farthest node
        along its next-hop chain it sees (a goal node is its own anchor, its point being its goal
        point); -1 for a node that reaches no goal."""
        ids = np.asarray(nodes, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.distance.shape[0]):
            raise ValueError(f"nodes must be node ids in 0..{self.distance.shape[0] - 1}")
        reachable = ids[np.isfinite(self.distance[ids])]
        _resolve_anchors(reachable, self.next_hop, self._anchor, self._stack, self._goal_set, self._sight, self._grid,
                         self._levels)
        out = np.where(np.isfinite(self.distance[ids]), self._anchor[ids], -1)
        return out.astype(np.int64)


def flow_field(graph: NavGraph, goals, goal_points=None, max_cost: float = math.inf) -> FlowField:
    """The exact flow field toward ``goals`` over ``graph`` (see the module doc).

    Args:
        goals: one node id or many (several exits, every node of a zone); walkable.
        goal_points: optional (len(goals), 2) exact world points the goal nodes stand for
            (default: the nodes' positions); directions near a goal lead to its point.
        max_cost: nodes farther than this from every goal are left unreached.

    Raises:
        ValueError: as ``FlowField.rebuild``.
    """
    return FlowField(graph, goals, goal_points, max_cost)
