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
- **Line of sight** from a node to a point is a supercover walk over the grid's cells from the
  node's cell to the point's cell: every step between two cells must be an edge of the graph
  in the walking direction (so walkability, ``max_climb``, one-way drops and clearance are the
  graph's own), and a step through a cell corner must be a diagonal edge with both cells
  beside it walkable. It assumes an edge costs its ground length (true of grid maps): the
  straight line is then never longer than the chain it replaces.
- **Sampling.** A point's direction is the bilinear blend, over the (up to) four surrounding
  node slots that can reach a goal, of the unit vectors from the point toward each one's
  anchor, normalised; so motion is smooth across tile borders. Its distance is the blend of
  those nodes' distances. Off the graph (no surrounding slot reaches a goal), the point heads
  for the nearest node that does within ``OFF_GRAPH_CELLS`` cells, distance = that node's
  distance + the straight line to it; with none, zero direction and distance inf.

Coordinates: world (x, y); node slot (col, row) at ``grid.origin + (col, row) * spacing``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ecs_nav.nav.distance import check_sources, distance_field
from ecs_nav.nav.graph import NavGraph
from ecs_nav.nav.seed_field import SeedField, heat_map, seed_field, subdivide, tile_directions, vector_field

__all__ = [
    "OFF_GRAPH_CELLS", "FlowField", "GridShape", "SeedField", "flow_field", "heat_map", "line_of_sight", "seed_field",
    "subdivide", "tile_directions", "vector_field",
]  # fmt: skip

OFF_GRAPH_CELLS = 2
"""How far (in cells, Chebyshev) a point off the graph looks for a node that reaches a goal."""
_UNKNOWN = -2  # an anchor not computed yet


class GridShape(NamedTuple):
    """The node grid as the kernels read it: slot (col, row) at origin + (col, row) * spacing."""

    origin_x: float
    origin_y: float
    spacing: float
    rows: int
    cols: int
_CORNER_EPS = 1e-9  # a walk this close to a cell corner passes through it


@numba.njit(cache=True, inline="always")
def _linked(indptr, indices, a, b):
    for e in range(indptr[a], indptr[a + 1]):
        if indices[e] == b:
            return True
    return False


@numba.njit(cache=True)
def _sees(indptr, indices, walkable, grid, ax, ay, bx, by):
    """Line of sight from point a to point b (world) by the supercover walk of the module doc
    (False when either point's cell is outside the grid). ``grid``: GridShape."""
    rows, cols = grid.rows, grid.cols
    x0 = (ax - grid.origin_x) / grid.spacing + 0.5  # cell (c, r) covers [c, c + 1) x [r, r + 1) here
    y0 = (ay - grid.origin_y) / grid.spacing + 0.5
    x1 = (bx - grid.origin_x) / grid.spacing + 0.5
    y1 = (by - grid.origin_y) / grid.spacing + 0.5
    if not (abs(x0) < 4.0e9 and abs(y0) < 4.0e9 and abs(x1) < 4.0e9 and abs(y1) < 4.0e9):
        return False
    c, r = int(math.floor(x0)), int(math.floor(y0))
    ec, er = int(math.floor(x1)), int(math.floor(y1))
    if not (0 <= c < cols and 0 <= r < rows and 0 <= ec < cols and 0 <= er < rows):
        return False
    dx, dy = x1 - x0, y1 - y0
    sx = 1 if dx > 0 else -1
    sy = 1 if dy > 0 else -1
    t_dx = abs(1.0 / dx) if dx != 0 else np.inf
    t_dy = abs(1.0 / dy) if dy != 0 else np.inf
    t_x = ((c + 1 - x0) if dx > 0 else (x0 - c)) * t_dx if dx != 0 else np.inf
    t_y = ((r + 1 - y0) if dy > 0 else (y0 - r)) * t_dy if dy != 0 else np.inf
    u = r * cols + c
    for _ in range(abs(ec - c) + abs(er - r) + 1):
        if c == ec and r == er:
            return True
        if abs(t_x - t_y) <= _CORNER_EPS:  # through a corner: a diagonal step
            nc, nr = c + sx, r + sy
            if not (0 <= nc < cols and 0 <= nr < rows):
                return False
            v = nr * cols + nc
            if not (walkable[r * cols + nc] and walkable[nr * cols + c] and _linked(indptr, indices, u, v)):
                return False
            t_x += t_dx
            t_y += t_dy
        elif t_x < t_y:
            nc, nr = c + sx, r
            t_x += t_dx
        else:
            nc, nr = c, r + sy
            t_y += t_dy
        if not (0 <= nc < cols and 0 <= nr < rows):
            return False
        v = nr * cols + nc
        if not _linked(indptr, indices, u, v):
            return False
        c, r, u = nc, nr, v
    return c == ec and r == er


@numba.njit(cache=True)
def _anchor_of(v, next_hop, anchor, stack, anchor_xy, indptr, indices, walkable, grid):
    """The anchor of reachable node ``v``, computing (and memoising) the chain behind it."""
    top = 0
    w = v
    while anchor[w] == _UNKNOWN:  # goal nodes are always known: the walk stops
        stack[top] = w
        top += 1
        w = next_hop[w]
    while top > 0:
        top -= 1
        w = stack[top]
        hop = next_hop[w]
        a = anchor[hop]
        if a != hop and _sees(indptr, indices, walkable, grid, anchor_xy[w, 0], anchor_xy[w, 1], anchor_xy[a, 0],
                              anchor_xy[a, 1]):  # fmt: skip
            anchor[w] = a
        else:
            anchor[w] = hop
    return anchor[v]


@numba.njit(cache=True)
def _resolve_anchors(nodes, next_hop, anchor, stack, anchor_xy, indptr, indices, walkable, grid):
    for v in nodes:
        _anchor_of(v, next_hop, anchor, stack, anchor_xy, indptr, indices, walkable, grid)


@numba.njit(cache=True)
def _sample(points, distance, next_hop, anchor, stack, anchor_xy, indptr, indices, walkable, grid, off_cells,
            out_dir, out_dist):  # fmt: skip
    """Direction and distance at each point (see the module doc); writes ``out_dir`` (k, 2) and
    ``out_dist`` (k,). ``anchor_xy`` (n, 2): node positions, goal nodes at their goal points."""
    ox, oy, spacing, rows, cols = grid.origin_x, grid.origin_y, grid.spacing, grid.rows, grid.cols
    for i in range(points.shape[0]):
        px, py = points[i, 0], points[i, 1]
        out_dir[i, 0] = 0.0
        out_dir[i, 1] = 0.0
        out_dist[i] = np.inf
        fx = (px - ox) / spacing
        fy = (py - oy) / spacing
        if not (np.isfinite(fx) and np.isfinite(fy)) or abs(fx) > 4.0e9 or abs(fy) > 4.0e9:
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
            v = r * cols + c
            w = (tx if dc else 1.0 - tx) * (ty if dr else 1.0 - ty)
            if w <= 0.0 or not np.isfinite(distance[v]):
                continue
            a = _anchor_of(v, next_hop, anchor, stack, anchor_xy, indptr, indices, walkable, grid)
            ux, uy = anchor_xy[a, 0] - px, anchor_xy[a, 1] - py
            length = math.sqrt(ux * ux + uy * uy)
            if length > 0.0:
                ux /= length
                uy /= length
            sum_x += w * ux
            sum_y += w * uy
            sum_w += w
            sum_d += w * distance[v]
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
                v = r * cols + c
                if np.isfinite(distance[v]):
                    ddx, ddy = ox + c * spacing - px, oy + r * spacing - py
                    d2 = ddx * ddx + ddy * ddy
                    if d2 < best_d2:  # row-major scan: ties go to the lower id
                        best, best_d2 = v, d2
        if best >= 0:
            length = math.sqrt(best_d2)
            bc, br = best % cols, best // cols
            out_dir[i, 0] = (ox + bc * spacing - px) / length
            out_dir[i, 1] = (oy + br * spacing - py) / length
            out_dist[i] = distance[best] + length


def line_of_sight(graph: NavGraph, a, b) -> bool:
    """Whether a walker can go straight from point ``a`` to point ``b`` (world (x, y) each) by the
    rule of the module doc: every step of the supercover walk over the grid's cells is an edge
    of the graph, in the walking direction. False when either point is outside the grid or a's
    cell is not walkable."""
    p = np.asarray(a, dtype=np.float64).reshape(-1)
    q = np.asarray(b, dtype=np.float64).reshape(-1)
    if p.shape != (2,) or q.shape != (2,) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
        raise ValueError(f"a and b must be finite (x, y) points, got {a!r} and {b!r}")
    g = graph.grid
    col, row = g.cells_of(p[None, :])
    if not (0 <= col[0] < g.cols and 0 <= row[0] < g.rows and graph.walkable[row[0] * g.cols + col[0]]):
        return False
    return bool(_sees(graph.indptr, graph.indices, graph.walkable, _grid_shape(graph), *p, *q))


def _grid_shape(graph: NavGraph) -> GridShape:
    g = graph.grid
    return GridShape(float(g.origin[0]), float(g.origin[1]), float(g.spacing), int(g.rows), int(g.cols))


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
        self._anchor = np.empty(0, dtype=np.int64)
        self._stack = np.empty(0, dtype=np.int64)
        self._anchor_xy = np.empty((0, 2))
        self.goals = np.empty(0, dtype=np.int64)
        self.goal_points = np.empty((0, 2))
        self.max_cost = float(max_cost)
        self.graph_key: tuple | None = None
        self._graph: NavGraph | None = None
        self.rebuild(graph, goals, goal_points)

    def rebuild(self, graph: NavGraph, goals, goal_points=None, max_cost: float | None = None) -> FlowField:
        """Build the field again (new goals, or the graph changed), in place: when the node count
        is unchanged every (n,) array is reused and the kernels write into it, so a rebuild
        allocates nothing O(n). ``max_cost`` None keeps the field's. Returns self.

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
        if max_cost is not None:
            self.max_cost = float(max_cost)
        if math.isnan(self.max_cost):
            raise ValueError("max_cost must be a number, got nan")
        n = graph.node_count
        fresh = self.distance.shape[0] != n
        if fresh:
            self.distance = np.empty(n)
            self.next_hop = np.empty(n, dtype=np.int64)
            self._anchor = np.empty(n, dtype=np.int64)
            self._stack = np.empty(n, dtype=np.int64)
            self._anchor_xy = np.empty((n, 2))
        distance_field(graph, ids, self.max_cost, out=(self.distance, self.next_hop))
        if fresh or graph is not self._graph or graph.cache_key() != self.graph_key:
            np.copyto(self._anchor_xy, graph.positions[:, :2])
        else:  # same graph as it was: only the old goals' rows (their goal points) change back
            self._anchor_xy[self.goals] = graph.positions[self.goals, :2]
        self._anchor.fill(_UNKNOWN)
        self._anchor[ids] = ids
        self._anchor_xy[ids] = points
        self.goals, self.goal_points = ids, points
        self.graph_key = graph.cache_key()
        self._graph = graph
        self._grid = _grid_shape(graph)
        return self

    def is_current(self, graph: NavGraph) -> bool:
        """Whether the field was built on ``graph`` as it is now (same ``cache_key``)."""
        return graph.cache_key() == self.graph_key

    def sample(self, points) -> tuple[np.ndarray, np.ndarray]:
        """Direction toward the goal and distance to it at each point (see the module doc).

        Args:
            points: (k, 2) world (x, y).

        Returns:
            ``(directions, distance)``: (k, 2) float64 unit vectors (never zero where a
            surrounding node reaches a goal, except exactly on a goal point; zero off the graph)
            and (k,) float64 distances (inf off the graph).
        """
        p = np.ascontiguousarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 2:
            raise ValueError(f"points must have shape (k, 2), got {p.shape}")
        directions = np.empty((p.shape[0], 2))
        distance = np.empty(p.shape[0])
        g = self._graph
        _sample(p, self.distance, self.next_hop, self._anchor, self._stack, self._anchor_xy, g.indptr, g.indices,
                g.walkable, self._grid, OFF_GRAPH_CELLS, directions, distance)  # fmt: skip
        return directions, distance

    def anchors(self, nodes) -> np.ndarray:
        """(k,) int64 anchor node of each of ``nodes`` (computed now if not yet): the farthest node
        along its next-hop chain it sees (a goal node is its own anchor, its point being its goal
        point); -1 for a node that reaches no goal."""
        ids = np.asarray(nodes, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.distance.shape[0]):
            raise ValueError(f"nodes must be node ids in 0..{self.distance.shape[0] - 1}")
        reachable = ids[np.isfinite(self.distance[ids])]
        g = self._graph
        _resolve_anchors(reachable, self.next_hop, self._anchor, self._stack, self._anchor_xy, g.indptr, g.indices,
                         g.walkable, self._grid)  # fmt: skip
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
