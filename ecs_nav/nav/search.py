"""Searches over a NavGraph: A*, Dijkstra and the multi-source reverse search (distance field).

A point query (``astar``, ``dijkstra`` with a goal) runs one compiled kernel (numba,
``cache=True``) over the graph's flat CSR arrays: an indexed binary heap with decrease-key, on
buffers kept per graph and reused between queries; it never clears an O(n) buffer: a node's
scratch record is valid only when its stamp equals the query's generation number. A
whole-graph search (``dijkstra`` without a goal, ``distance_field``, re-exported here) runs
``ecs_nav.nav.distance``'s field kernel and returns an array per node.

Results are exact: costs equal ``scipy.sparse.csgraph.shortest_path`` on the same graph (the
A* heuristic is scaled so that it stays consistent, see ``admissibility_factor``). Graphs of up
to 2**31 - 1 node slots.

Failure is a status, not an exception: an unreachable goal, or a search stopped by its budget
(``max_expanded``, the search budget Detour and Godot give a query), returns a *partial* path to
the expanded node closest to the goal, or an *unreachable* result with no nodes when partial
paths are not allowed. Only a bad argument (a start or goal that is not a walkable node)
raises ValueError: the PathfindSystem snaps points to valid nodes before it asks.

Ties are broken the same way every time: lower f, then lower heuristic (closer to the goal),
then lower node id.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.distance import dijkstra_field
from ecs_nav.nav.distance import distance_field as distance_field  # re-exported: callers import it from here
from ecs_nav.nav.graph import NavGraph, check_node
from ecs_nav.nav.open_list import sift_down, sift_up

STATUS_COMPLETE = "complete"
"""The path reaches the goal and is optimal."""
STATUS_PARTIAL = "partial"
"""The goal was not reached (unreachable, or the budget ran out): the path leads to the expanded
node closest to the goal, optimally."""
STATUS_UNREACHABLE = "unreachable"
"""No path is returned (``nodes`` empty, ``cost`` inf): the goal was not reached and partial paths
were not allowed."""

HEURISTICS = ("octile", "euclidean", "zero")
_HEURISTIC_CODE = {"octile": 0, "euclidean": 1, "zero": 2}
_SQRT2_M1 = math.sqrt(2.0) - 1.0

# kernel result codes
_FOUND, _EXHAUSTED, _BUDGET = 0, 1, 2


@dataclass
class PathResult:
    """The answer to one path query.

    Attributes:
        nodes: (k,) int64 node ids from the start to the end of the path (the goal when
            complete, the closest node reached when partial); empty when unreachable.
        cost: sum of the edge costs along ``nodes`` (0 for a one-node path, inf when unreachable).
        status: STATUS_COMPLETE, STATUS_PARTIAL or STATUS_UNREACHABLE.
        expanded: how many nodes the search expanded (popped from its open list).
        expanded_nodes: (expanded,) int64 ids of those nodes in increasing order, when the
            query asked for them (``trace=True``); else None. Recovered after the search from
            the scratch records closed in its generation, so the kernel does no extra work.
    """

    nodes: np.ndarray
    cost: float
    status: str
    expanded: int
    expanded_nodes: np.ndarray | None = None

    @property
    def complete(self) -> bool:
        return self.status == STATUS_COMPLETE


# --- the kernel ---------------------------------------------------------------------------------


NODE_DTYPE = np.dtype(
    [("g", np.float64), ("stamp", np.int32), ("pos", np.int32), ("parent", np.int32), ("pad", np.int32)]
)
"""Per-node search scratch, one 24-byte record per node: a node's cost so far, generation stamp,
heap slot and parent share a cache line (four separate arrays were 5-15% slower on the big maps)."""


@kernel(inline="always")
def _ground_distance(mode, xy, a, b):
    """Heuristic distance between nodes a and b in the ground plane (octile / euclidean / 0)."""
    if mode == 2:
        return 0.0
    dx = abs(xy[a, 0] - xy[b, 0])
    dy = abs(xy[a, 1] - xy[b, 1])
    if mode == 0:
        if dx < dy:
            return dy + _SQRT2_M1 * dx
        return dx + _SQRT2_M1 * dy
    return math.sqrt(dx * dx + dy * dy)


@kernel
def _search(
    indptr, adj, cost_table, shift, mask, xy,
    sources, goal, mode, h_scale, max_expanded, max_cost,
    nodes, gen, heap_node, heap_f, heap_h,
):  # fmt: skip
    """Best-first search from ``sources`` (all at cost 0) until ``goal`` is expanded.

    Edge e leads to node ``adj[e] >> shift`` at cost ``cost_table[adj[e] & mask]`` (see
    ``NavGraph.packed_adjacency``). ``goal`` < 0 searches the whole component (Dijkstra; ``mode`` must be
    2). A record of
    ``nodes`` (NODE_DTYPE) is valid only when its stamp equals ``gen``; its ``pos`` is its heap
    slot, or -1 once the node is closed. Nodes farther than ``max_cost`` are never opened.

    Returns (code, end, expanded): code _FOUND (end = goal), _EXHAUSTED (end = the expanded
    node closest to the goal) or _BUDGET (likewise, stopped after ``max_expanded`` expansions).
    """
    size = 0
    for s in sources:
        rec = nodes[s]
        if rec.stamp == gen:
            continue
        rec.stamp = gen
        rec.g = 0.0
        rec.parent = -1
        h = h_scale * _ground_distance(mode, xy, s, goal) if goal >= 0 else 0.0
        heap_node[size], heap_f[size], heap_h[size] = s, h, h
        sift_up(heap_node, heap_f, heap_h, nodes, size)
        size += 1
    # a partial path ends at the expanded node closest to the goal (heuristic distance;
    # euclidean when the search has none), ties to the cheaper node
    best, best_d, best_g = -1, np.inf, np.inf
    expanded = 0
    while size > 0:
        u = heap_node[0]
        hu = heap_h[0]
        size -= 1
        nodes[u].pos = -1
        if size > 0:
            heap_node[0], heap_f[0], heap_h[0] = heap_node[size], heap_f[size], heap_h[size]
            sift_down(heap_node, heap_f, heap_h, nodes, 0, size)
        expanded += 1
        if u == goal:
            return _FOUND, u, expanded
        gu = nodes[u].g
        if goal >= 0:
            d = hu if mode != 2 else _ground_distance(1, xy, u, goal)
            if d < best_d or (d == best_d and gu < best_g):
                best, best_d, best_g = u, d, gu
        if expanded >= max_expanded:
            return _BUDGET, best, expanded
        for e in range(indptr[u], indptr[u + 1]):
            a = adj[e]
            v = a >> shift
            gv = gu + cost_table[a & mask]
            rec = nodes[v]
            if rec.stamp != gen:
                if gv > max_cost:  # an opened node is within max_cost: no check below
                    continue
                rec.stamp = gen
                rec.g = gv
                rec.parent = u
                h = h_scale * _ground_distance(mode, xy, v, goal) if goal >= 0 else 0.0
                heap_node[size], heap_f[size], heap_h[size] = v, gv + h, h
                sift_up(heap_node, heap_f, heap_h, nodes, size)
                size += 1
            elif rec.pos >= 0 and gv < rec.g:
                rec.g = gv
                rec.parent = u
                i = rec.pos
                heap_f[i] = gv + heap_h[i]
                sift_up(heap_node, heap_f, heap_h, nodes, i)
    return _EXHAUSTED, best, expanded


@kernel
def _path_query(indptr, adj, cost_table, shift, mask, xy, start, goal, mode, h_scale, max_expanded,
                nodes, gen, heap_node, heap_f, heap_h):  # fmt: skip
    """One start → goal search and its path: (code, expanded, nodes start..end, cost)."""
    sources = np.empty(1, dtype=np.int64)
    sources[0] = start
    code, end, expanded = _search(
        indptr, adj, cost_table, shift, mask, xy, sources, goal, mode, h_scale, max_expanded, np.inf,
        nodes, gen, heap_node, heap_f, heap_h,
    )  # fmt: skip
    return code, expanded, _trace(nodes, end), nodes[end].g


@kernel
def _trace(nodes, end):
    """Node ids from the root of ``end``'s search tree to ``end`` (parent = -1 at a root)."""
    k = 0
    v = end
    while v >= 0:
        k += 1
        v = nodes[v].parent
    out = np.empty(k, dtype=np.int64)
    v = end
    for i in range(k - 1, -1, -1):
        out[i] = v
        v = nodes[v].parent
    return out


@kernel
def _trace_many(next_hop, starts):
    """Concatenated paths along ``next_hop`` from each start: (offsets (k+1,), nodes)."""
    k = starts.shape[0]
    offsets = np.zeros(k + 1, dtype=np.int64)
    for i in range(k):
        length = 0
        v = starts[i]
        if v >= 0:
            while v >= 0:
                length += 1
                v = next_hop[v]
        offsets[i + 1] = offsets[i] + length
    nodes = np.empty(offsets[k], dtype=np.int64)
    for i in range(k):
        v = starts[i]
        for j in range(offsets[i], offsets[i + 1]):
            nodes[j] = v
            v = next_hop[v]
    return offsets, nodes


# --- per-graph state ------------------------------------------------------------------------------


class _SearchState:
    """Buffers and derived data of one graph; the derived data is refreshed when the graph's
    version (or one of its arrays) changes, the buffers are kept while the node count is.

    Not shared between threads: the kernels hold the GIL, so one query runs at a time."""

    def __init__(self, graph: NavGraph):
        n = graph.node_count
        if n >= np.iinfo(np.int32).max:
            raise ValueError(f"graph too large for the search kernels ({n} nodes)")
        self.key = graph.cache_key()
        self.xy = np.ascontiguousarray(graph.positions[:, :2])
        self.adjacency = graph.packed_adjacency()
        self.nodes = np.zeros(n, dtype=NODE_DTYPE)
        self.gen = 0
        self.heap_node = np.empty(n, dtype=np.int32)
        self.heap_f = np.empty(n, dtype=np.float64)
        self.heap_h = np.empty(n, dtype=np.float64)
        self.factors: dict[int, float] = {}

    def next_gen(self) -> int:
        if self.gen == np.iinfo(np.int32).max:
            self.nodes["stamp"] = 0
            self.gen = 0
        self.gen += 1
        return self.gen


def _state(graph: NavGraph) -> _SearchState:
    state = graph.__dict__.get("_search_state")
    key = graph.cache_key()
    if state is None or state.nodes.shape[0] != graph.node_count:
        state = _SearchState(graph)
        graph.__dict__["_search_state"] = state
    elif state.key != key:  # same slots, new edges or positions: keep the buffers
        state.key = key
        state.xy = np.ascontiguousarray(graph.positions[:, :2])
        state.adjacency = graph.packed_adjacency()
        state.factors.clear()
    return state


def admissibility_factor(graph: NavGraph, heuristic: str = "octile") -> float:
    """The largest s ≤ 1 with ``cost(e) ≥ s · h(e)`` for every edge e, h the heuristic distance
    between its endpoints in the ground plane.

    Both heuristics are metrics, so ``s · h`` is then consistent and A* stays exact even when an
    off-mesh link is cheaper than the ground it spans. On an octile grid the factor is 1 (to
    rounding). Cached per graph version."""
    if heuristic not in _HEURISTIC_CODE:
        raise ValueError(f"unknown heuristic {heuristic!r}; choose one of {HEURISTICS}")
    code = _HEURISTIC_CODE[heuristic]
    if code == 2:
        return 0.0
    state = _state(graph)
    if code not in state.factors:
        src = graph.edge_sources()
        dst = graph.indices
        dx = np.abs(state.xy[src, 0] - state.xy[dst, 0])
        dy = np.abs(state.xy[src, 1] - state.xy[dst, 1])
        if code == 0:
            h = np.maximum(dx, dy) + _SQRT2_M1 * np.minimum(dx, dy)
        else:
            h = np.hypot(dx, dy)
        spans = h > 0
        ratio = graph.costs[spans] / h[spans]
        state.factors[code] = float(min(1.0, ratio.min())) if ratio.size else 1.0
    return state.factors[code]


def _budget(max_expanded) -> int:
    if max_expanded is None:
        return np.iinfo(np.int64).max
    if int(max_expanded) < 1:
        raise ValueError(f"max_expanded must be >= 1, got {max_expanded}")
    return int(max_expanded)


def _point_search(graph, start, goal, code, max_expanded, allow_partial, trace=False) -> PathResult:
    start = check_node(graph, start, "start")
    goal = check_node(graph, goal, "goal")
    budget = _budget(max_expanded)
    if start == goal:
        return PathResult(np.array([start], dtype=np.int64), 0.0, STATUS_COMPLETE, 0,
                          np.zeros(0, np.int64) if trace else None)
    h_scale = admissibility_factor(graph, HEURISTICS[code])
    st = _state(graph)
    gen = st.next_gen()
    found, expanded, path, cost = _path_query(
        graph.indptr, *st.adjacency, st.xy, start, goal, code, h_scale, budget,
        st.nodes, gen, st.heap_node, st.heap_f, st.heap_h,
    )  # fmt: skip
    closed = None
    if trace:  # stamped in this generation and out of the heap (pos -1): popped, i.e. expanded
        closed = np.flatnonzero((st.nodes["stamp"] == gen) & (st.nodes["pos"] == -1)).astype(np.int64)
    if found == _FOUND:
        return PathResult(path, cost, STATUS_COMPLETE, expanded, closed)
    if allow_partial:
        return PathResult(path, cost, STATUS_PARTIAL, expanded, closed)
    return PathResult(np.empty(0, dtype=np.int64), math.inf, STATUS_UNREACHABLE, expanded, closed)


# --- public searches --------------------------------------------------------------------------


def astar(
    graph: NavGraph,
    start: int,
    goal: int,
    *,
    heuristic: str = "octile",
    max_expanded: int | None = None,
    allow_partial: bool = True,
    trace: bool = False,
) -> PathResult:
    """A* from ``start`` to ``goal``: the cheapest path, exactly.

    Args:
        heuristic: "octile" (grids), "euclidean", or "zero" (Dijkstra), computed from the nodes'
            ground-plane positions and scaled by ``admissibility_factor``.
        max_expanded: search budget: stop after expanding this many nodes (None: no limit).
        allow_partial: when the goal is not reached (unreachable, or budget spent), return the
            path to the expanded node closest to the goal (status "partial"); when False, an
            empty "unreachable" result.
        trace: also return the ids of the nodes the search expanded (``expanded_nodes``: one
            O(node count) pass over the scratch after the search; the viewer's "search" layer).

    A partial path may be just ``[start]`` (cost 0): the start itself is the closest node the
    search reached, which includes a start boxed in with no way out. ``start == goal`` is a
    complete one-node path of cost 0.

    Raises:
        ValueError: ``start`` or ``goal`` is not a walkable node of the graph, an unknown
            heuristic, or ``max_expanded`` < 1.
    """
    if heuristic not in _HEURISTIC_CODE:
        raise ValueError(f"unknown heuristic {heuristic!r}; choose one of {HEURISTICS}")
    return _point_search(graph, start, goal, _HEURISTIC_CODE[heuristic], max_expanded, allow_partial, trace)


def dijkstra(
    graph: NavGraph,
    start: int,
    goal: int | None = None,
    *,
    max_expanded: int | None = None,
    allow_partial: bool = True,
    max_cost: float = math.inf,
    trace: bool = False,
):
    """Dijkstra from ``start``: to one goal, or to every node.

    With a ``goal``: a PathResult exactly as ``astar(..., heuristic="zero")`` (partial paths end
    at the expanded node nearest the goal in straight-line ground distance), ``trace``
    included. ``max_cost`` is not used then.

    With ``goal=None`` (``max_expanded``, ``allow_partial`` and ``trace`` do not apply):
    ``(distance, predecessor)``, both of shape (n,): ``distance[v]`` float64
    is the cost of the cheapest path start → v (inf when v is unreachable or farther than
    ``max_cost``); ``predecessor[v]`` int64 is the node before v on that path (-1 at the start
    and at unreachable nodes), as in scipy's ``return_predecessors`` but with -1 for -9999.
    """
    if goal is not None:
        return _point_search(graph, start, goal, 2, max_expanded, allow_partial, trace)
    start = check_node(graph, start, "start")
    return dijkstra_field(graph, start, max_cost)


def _check_starts(next_hop: np.ndarray, starts) -> np.ndarray:
    """``starts`` as an int64 array, each in ``-1 .. len(next_hop) - 1``; else a ValueError
    naming the first bad one (the compiled trace reads ``next_hop[start]`` unchecked)."""
    s = np.asarray(starts)
    if s.size and s.dtype.kind not in "iu":
        raise ValueError(f"starts must be integer node ids, got dtype {s.dtype}")
    s = np.ascontiguousarray(s, dtype=np.int64).reshape(-1)
    n = len(next_hop)
    bad = np.flatnonzero((s < -1) | (s >= n))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"starts[{i}] = {int(s[i])} is not a node of the field (valid: -1..{n - 1})")
    return s


def path_from_field(next_hop: np.ndarray, start: int) -> np.ndarray:
    """Node ids from ``start`` to its goal along a ``distance_field`` next-hop array.

    ``[start]`` alone when start is a goal, or when it cannot reach one (check
    ``distance[start]`` to tell them apart); empty for a start of -1.

    Raises:
        ValueError: ``start`` is not an integer in ``-1 .. len(next_hop) - 1``.
    """
    try:
        i = operator.index(start)
    except TypeError:
        raise ValueError(f"start must be an integer node id, got {start!r}") from None
    if not -1 <= i < len(next_hop):
        raise ValueError(f"start {i} is not a node of the field (valid: -1..{len(next_hop) - 1})")
    offsets, nodes = _trace_many(next_hop, np.array([i], dtype=np.int64))
    return nodes


def paths_from_field(next_hop: np.ndarray, starts) -> tuple[np.ndarray, np.ndarray]:
    """Paths of many agents along one ``distance_field``, in one compiled pass.

    Returns ``(offsets, nodes)``: agent i's path is ``nodes[offsets[i]:offsets[i + 1]]``, as
    ``path_from_field`` would return it; a start of -1 gives an empty path.

    Raises:
        ValueError: a start is not an integer in ``-1 .. len(next_hop) - 1`` (the message names
            the first one).
    """
    return _trace_many(next_hop, _check_starts(next_hop, starts))
