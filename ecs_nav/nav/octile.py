"""The uniform octile test: whether a graph is a plain 8-connected grid that jump point search solves exactly.

A graph is uniform octile when every edge is a step to one of the 8 neighbouring cells, a
cardinal step between two walkable cells is always present and costs one value, and a diagonal
step is present exactly where it and both cells beside it are walkable (no corner cutting) and
costs sqrt(2) times that (a graph from ``grid_graph`` or ``load_movingai``). Heights that block
steps (``max_climb``), off-mesh links, one-way drops, area costs or more than one level
(``GridIndex.levels``: surfaces over one another) make a graph fail the test.
``ecs_nav.nav.jump`` runs jump point search on the graphs that pass it.
"""

from __future__ import annotations

import math

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.graph import EDGE_WALK, NavGraph

SQRT2 = math.sqrt(2.0)
COST_RTOL = 1e-12
"""How far (relative) a graph's diagonal cost may be from sqrt(2) times its cardinal cost for the
graph to count as uniform octile (grid_graph computes it as ``sqrt(2.0) * cell_size``)."""


@kernel
def octile_step_costs(indptr, indices, costs, kinds, walkable, rows, cols):
    """Whether a CSR graph laid on a ``rows`` x ``cols`` grid (node id ``row * cols + col``) is
    uniform octile (module docstring), in one pass over its edges.

    Each node's targets must be ascending (as ``NavGraph`` keeps them): a walkable node's edges are
    exactly its steps to walkable neighbours, a diagonal one only where both cells beside it are
    walkable; a blocked node has none; every edge is EDGE_WALK.

    Returns:
        (uniform, straight, diagonal): the one cost of every cardinal and every diagonal step
        (-1 where the graph has none of that kind).
    """
    straight = -1.0
    diagonal = -1.0
    for node in range(rows * cols):
        lo, hi = indptr[node], indptr[node + 1]
        if not walkable[node]:
            if hi > lo:
                return False, straight, diagonal
            continue
        r, c = node // cols, node % cols
        e = lo
        for dr in range(-1, 2):
            for dc in range(-1, 2):
                if dr == 0 and dc == 0:
                    continue
                rr, cc = r + dr, c + dc
                ok = 0 <= rr < rows and 0 <= cc < cols and walkable[rr * cols + cc]
                if ok and dr != 0 and dc != 0:
                    ok = walkable[rr * cols + c] and walkable[r * cols + cc]
                if not ok:
                    continue
                if e >= hi or indices[e] != rr * cols + cc or kinds[e] != 0:
                    return False, straight, diagonal
                if dr != 0 and dc != 0:
                    if diagonal < 0.0:
                        diagonal = costs[e]
                    elif costs[e] != diagonal:
                        return False, straight, diagonal
                elif straight < 0.0:
                    straight = costs[e]
                elif costs[e] != straight:
                    return False, straight, diagonal
                e += 1
        if e != hi:
            return False, straight, diagonal
    return True, straight, diagonal


def _compute_costs(graph: NavGraph) -> tuple[float, float] | None:
    """(straight, diagonal) step costs when the graph is uniform octile (module docstring), else None."""
    rows, cols = graph.grid.rows, graph.grid.cols
    if graph.grid.levels != 1:  # surfaces over one another: not a flat grid
        return None
    if graph.node_count != rows * cols or graph.kinds.shape[0] != graph.edge_count:
        return None
    if EDGE_WALK != 0:  # (the kernel tests kinds against 0)
        raise AssertionError("EDGE_WALK is expected to be 0")
    uniform, straight, diagonal = octile_step_costs(graph.indptr, graph.indices, graph.costs, graph.kinds,
                                                    graph.walkable, rows, cols)
    if not uniform:
        return None
    if straight < 0.0:  # no step at all: isolated cells, any cost will do
        straight = float(graph.grid.spacing)
    if diagonal < 0.0:
        diagonal = SQRT2 * straight
    if abs(diagonal - SQRT2 * straight) > COST_RTOL * straight:
        return None
    return float(straight), float(diagonal)


def octile_costs(graph: NavGraph) -> tuple[float, float] | None:
    """The (straight, diagonal) step costs of a uniform octile graph, in the graph's cost units
    (diagonal = sqrt(2) * straight), or None when the graph is not uniform octile (module
    docstring). O(edges) once per graph version (``NavGraph.cache_key``), then cached."""
    key = graph.cache_key()
    cached = graph.__dict__.get("_octile_costs")
    if cached is None or cached[0] != key:
        cached = (key, _compute_costs(graph))
        graph.__dict__["_octile_costs"] = cached
    return cached[1]


def is_uniform_octile(graph: NavGraph) -> bool:
    """Whether jump point search is exact on ``graph`` (module docstring): its edges are exactly
    the octile steps between walkable cells without corner cutting, cardinal steps all of one
    cost and diagonal ones sqrt(2) times it. O(edges) once per graph version, then cached."""
    return octile_costs(graph) is not None
