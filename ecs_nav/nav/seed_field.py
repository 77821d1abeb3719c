"""Seed 003 as written: the brushfire heat map, its vector field, and the subdivision fix.

Goal-based vector field pathfinding (``../shared/SEEDS.md``, 003) on a NavGraph's node slots:

1. ``heat_map``: the breadth-first wavefront from the goal: 0 at the goal, +1 per step to a
   left / right / up / down neighbour, until every reachable tile is marked.
2. ``vector_field``: per tile, the difference of the neighbours' heat, pointing downhill.
3. Movement: velocity = field(tile) · desired speed (``tile_directions`` reads the field at
   agents' positions).
4. Local optima, the seed's fix: ``seed_field`` subdivides the grid once (``subdivide``: each
   tile into four) and seeds the wavefront with the four sub-tiles nearest the goal point.

Coordinates: world x grows to the right and world y upwards; grid row grows with world y, so a
tile's "up" neighbour is the slot one row higher (``id + cols``) and "left" is ``id - 1``.
``flowfield.py`` builds the exact, interpolated fields beyond the seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.nav.distance import step_field
from ecs_nav.nav.graph import EDGE_WALK, GridIndex, NavGraph


def heat_map(graph: NavGraph, goals) -> np.ndarray:
    """The seed's heat map: how many orthogonal steps each tile needs to reach a goal.

    Args:
        goals: one node id or an array of them (walkable).

    Returns:
        (n,) int32: 0 at goals, +1 per step over the graph's links between 4-neighbour slots,
        followed in the walking direction (a one-way drop is walked only down); -1 where no goal
        can be reached and on slots that are not walkable.
    """
    return step_field(graph, goals)


def _linked_neighbours(graph: NavGraph) -> dict[str, np.ndarray]:
    """Per tile and side, the neighbour slot when the tile has an edge *to* it, else -1."""
    n, cols = graph.node_count, graph.grid.cols
    src = graph.edge_sources()
    dst = graph.indices.astype(np.int64)
    same_row = src // cols == dst // cols
    sides = {"left": (dst == src - 1) & same_row, "right": (dst == src + 1) & same_row,
             "down": dst == src - cols, "up": dst == src + cols}  # fmt: skip
    out = {}
    for side, mask in sides.items():
        neighbour = np.full(n, -1, dtype=np.int64)
        neighbour[src[mask]] = dst[mask]
        out[side] = neighbour
    return out


def vector_field(graph: NavGraph, heat: np.ndarray) -> np.ndarray:
    """The seed's vector field: per tile, the heat gradient, pointing downhill to the goal.

    ``x = h(left) - h(right)`` and ``y = h(down) - h(up)`` in world axes (x right, y up; the
    seed's screen y grows downwards, hence its ``up - down``): the vector points toward lower
    heat. A neighbour that is missing, not walkable, unreachable (heat -1) or not linked *from*
    the tile uses the tile's own heat. Normalised.

    Args:
        heat: (n,) heat per tile (``heat_map``; any non-negative distances work, -1 unreached).

    Returns:
        (n, 2) float64 unit vectors; zero where both differences are zero (a goal, or a local
        optimum) and on unreachable tiles.
    """
    heat = np.asarray(heat)
    if heat.shape != (graph.node_count,):
        raise ValueError(f"heat must have shape ({graph.node_count},), got {heat.shape}")
    h = heat.astype(np.float64)
    reached = h >= 0
    side = {}
    for name, neighbour in _linked_neighbours(graph).items():
        value = h[np.maximum(neighbour, 0)]
        side[name] = np.where((neighbour >= 0) & (value >= 0), value, h)
    vectors = np.zeros((graph.node_count, 2))
    vectors[:, 0] = side["left"] - side["right"]
    vectors[:, 1] = side["down"] - side["up"]
    vectors[~reached] = 0.0
    norm = np.hypot(vectors[:, 0], vectors[:, 1])
    moving = norm > 0
    vectors[moving] /= norm[moving, None]
    return vectors


def tile_directions(graph: NavGraph, vectors: np.ndarray, points: np.ndarray, search_cells: int = 2) -> np.ndarray:
    """The seed's movement rule: each point takes the vector of its tile (the nearest walkable
    node slot within ``search_cells`` cells). ``vectors`` (n, 2), ``points`` (k, 2) →
    (k, 2) float64; zero for a point with no walkable slot near it."""
    vectors = np.asarray(vectors)
    if vectors.shape != (graph.node_count, 2):
        raise ValueError(f"vectors must have shape ({graph.node_count}, 2), got {vectors.shape}")
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"points must have shape (k, 2), got {p.shape}")
    nodes = graph.nearest_nodes(p, search_cells=search_cells)
    out = np.zeros((p.shape[0], 2))
    ok = nodes >= 0
    out[ok] = vectors[nodes[ok]]
    return out


_STEPS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))  # (d_row, d_col)


def subdivide(graph: NavGraph) -> NavGraph:
    """Each node slot split into four at half the spacing: the seed's finer grid.

    Fine slot (2 col + i, 2 row + j), i, j in {0, 1}, lies a quarter spacing from its parent's
    position, with the parent's elevation and walkability. Two fine slots that are 8-neighbours
    are linked when they share a parent, or when their parents are linked (in that direction:
    one-way drops stay one-way); a diagonal also needs both fine slots beside it walkable (no
    corner cutting). Costs: ground distance inside a parent; across parents, ground distance
    times the parent edge's cost per unit of ground (so an octile grid stays octile, at half
    scale; per spacing for an edge whose ends share a ground point). Kinds: EDGE_WALK inside a
    parent, the parent edge's kind across.

    Returns:
        A NavGraph with ``4 n`` slots on a grid of ``2 rows x 2 cols`` at ``spacing / 2``.
    """
    g = graph.grid
    rows, cols, n = 2 * g.rows, 2 * g.cols, graph.node_count
    half = g.spacing / 2
    fine_grid = GridIndex((g.origin[0] - half / 2, g.origin[1] - half / 2), half, rows, cols)
    fr, fc = (a.ravel() for a in np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"))
    parent = (fr // 2) * g.cols + fc // 2
    walkable = graph.walkable[parent]
    positions = np.empty((rows * cols, 3))
    positions[:, :2] = fine_grid.cell_centres()
    positions[:, 2] = graph.positions[parent, 2]

    parent_src = graph.edge_sources()
    parent_keys = parent_src * n + graph.indices  # sorted: the CSR is by source, then target
    parent_ground = np.hypot(*(graph.positions[graph.indices, :2] - graph.positions[parent_src, :2]).T)
    parent_ground[~(parent_ground > 0)] = g.spacing  # a link between slots at one point: per spacing
    srcs, dsts, costs, kinds = [], [], [], []
    for dr, dc in _STEPS:
        nr, nc = fr + dr, fc + dc
        ok = walkable & (nr >= 0) & (nr < rows) & (nc >= 0) & (nc < cols)
        a = np.flatnonzero(ok)
        b = nr[a] * cols + nc[a]
        keep = walkable[b]
        if dr and dc:  # both fine slots beside the diagonal must be walkable
            keep &= walkable[fr[a] * cols + nc[a]] & walkable[nr[a] * cols + fc[a]]
        a, b = a[keep], b[keep]
        pa, pb = parent[a], parent[b]
        ground = half * (math.sqrt(2.0) if dr and dc else 1.0)
        inside = pa == pb
        keys = pa * n + pb
        k = np.zeros(keys.shape, dtype=np.int64)
        across = np.zeros(keys.shape, dtype=bool)
        if len(parent_keys):
            k = np.searchsorted(parent_keys, keys).clip(max=len(parent_keys) - 1)
            across = ~inside & (parent_keys[k] == keys)
        link = inside | across
        srcs.append(a[link])
        dsts.append(b[link])
        scale = np.ones(a.shape[0])
        scale[across] = graph.costs[k[across]] / parent_ground[k[across]]
        costs.append(ground * scale[link])
        kind = np.full(a.shape[0], EDGE_WALK, dtype=np.uint8)
        kind[across] = graph.kinds[k[across]]
        kinds.append(kind[link])
    return NavGraph.from_edges(
        positions, walkable, np.concatenate(srcs), np.concatenate(dsts), np.concatenate(costs), fine_grid,
        kinds=np.concatenate(kinds), max_climb=graph.max_climb, version=graph.version,
    )  # fmt: skip


@dataclass
class SeedField:
    """The seed's subdivided field around one goal point.

    Attributes:
        graph: the subdivided graph (``subdivide``): its node ids index ``heat`` and ``vectors``.
        goal_point: (2,) float64 world point the field leads to.
        goals: (k,) int64 fine slots seeded at heat 0 (the four nearest the goal point, fewer
            when fewer are walkable near it).
        heat: (4 n,) int32 steps to the seeds over the fine graph (``heat_map``).
        vectors: (4 n, 2) float64 unit vectors downhill (``vector_field``).
    """

    graph: NavGraph
    goal_point: np.ndarray
    goals: np.ndarray
    heat: np.ndarray
    vectors: np.ndarray

    def directions(self, points: np.ndarray) -> np.ndarray:
        """(k, 2) field vector at each point of ``points`` (k, 2): its fine tile's
        (``tile_directions``); zero off the graph."""
        return tile_directions(self.graph, self.vectors, points)


def seed_field(graph: NavGraph, goal_point) -> SeedField:
    """The seed's fix for local optima: the field on the subdivided grid, seeded at distance 0
    with the four walkable fine slots nearest ``goal_point`` (ties to the lower id).

    Four seeds around the goal put any line of symmetry between fine tiles, so no tile on it has
    two equal ways round an obstacle: the zero vectors of ``vector_field`` on the plain grid go.
    Costs four times the tiles.

    Args:
        goal_point: (2,) world (x, y).

    Raises:
        ValueError: ``goal_point`` is not a finite pair, or no walkable fine slot lies within two
            fine cells of it.
    """
    point = np.asarray(goal_point, dtype=np.float64).reshape(-1)
    if point.shape != (2,) or not np.all(np.isfinite(point)):
        raise ValueError(f"goal_point must be a finite (x, y), got {goal_point!r}")
    fine = subdivide(graph)
    g = fine.grid
    col, row = (int(v[0]) for v in g.cells_of(point[None, :]))
    rr, cc = np.meshgrid(np.arange(row - 2, row + 3), np.arange(col - 2, col + 3), indexing="ij")
    inside = (rr >= 0) & (rr < g.rows) & (cc >= 0) & (cc < g.cols)
    ids = (rr[inside] * g.cols + cc[inside]).astype(np.int64)
    ids = np.sort(ids[fine.walkable[ids]])
    if ids.size == 0:
        raise ValueError(f"goal_point {tuple(point)} is not on the graph (no walkable slot near it)")
    d2 = np.sum((fine.positions[ids, :2] - point) ** 2, axis=1)
    seeds = np.sort(ids[np.argsort(d2, kind="stable")[:4]])
    heat = heat_map(fine, seeds)
    return SeedField(fine, point, seeds, heat, vector_field(fine, heat))
