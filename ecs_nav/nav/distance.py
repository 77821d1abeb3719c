"""Whole-graph distance fields: the exact multi-source Dijkstra and the seed's unit wavefront.

Compiled kernels (numba, ``cache=True``) over a NavGraph's flat arrays, each writing into
arrays the caller may keep (``out=``), so a field rebuilt on an unchanged graph allocates nothing
of size n:

- ``dijkstra_field``: distance from the nearest source along the graph's edges, with each node's
  predecessor, by the first kernel that fits the graph: (1) a grid graph (every edge a grid
  step, one cost per direction: ``grid_steps``) runs a Dijkstra with one FIFO queue per cost
  class whose edges are the bits of ``NavGraph.step_mask``; (2) a graph with at most
  ``MAX_QUEUE_CLASSES`` distinct costs, the same queues over the CSR (``packed_adjacency``:
  target and cost class in one 4-byte word); (3) otherwise a lazy-deletion binary heap (an
  entry pushed per improvement and skipped when popped stale; no decrease-key). The class
  queues are exact: nodes settle in nondecreasing distance and float addition is monotone, so
  the keys pushed onto one class's queue never decrease and the smallest head is the next node.
  All three give the same sums of float64 edge costs as ``scipy.sparse.csgraph.dijkstra``.
  ``distance_field`` runs it on ``graph.reverse()``, where the predecessor is the next hop *to*
  the goal.
- ``step_field``: the breadth-first "brushfire" of seed 003: steps over the links between
  orthogonally adjacent node slots, in the walking direction.

Heap buffers are kept per graph (``graph.__dict__``, like the searches' scratch) and grow when a
search pushes more than they hold; on an unchanged graph a call allocates only O(1).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.graph import NavGraph, check_node

_OVERFLOW = -1
MAX_QUEUE_CLASSES = 8
"""Graphs with at most this many distinct edge costs run the class-queue kernel (O(1) per
push and pop); others the heap."""


@kernel
def _dijkstra_kernel(indptr, adj, cost_table, shift, mask, sources, max_cost, dist, hop, heap_key, heap_node):
    """Multi-source Dijkstra into ``dist`` (n,) float64 and ``hop`` (n,) int64 (predecessor, -1 at
    sources and unreached nodes). Edge e leads to ``adj[e] >> shift`` at cost
    ``cost_table[adj[e] & mask]``. Nodes farther than ``max_cost`` stay unreached.

    The heap (``heap_key``, ``heap_node``) holds one entry per improvement; returns the number of
    nodes settled, or _OVERFLOW when the heap's capacity was too small (the caller grows it and
    runs again)."""
    n = dist.shape[0]
    capacity = heap_key.shape[0]
    for v in range(n):
        dist[v] = np.inf
        hop[v] = -1
    size = 0
    for s in sources:
        if dist[s] == 0.0:
            continue
        dist[s] = 0.0
        heap_key[size] = 0.0
        heap_node[size] = s
        size += 1  # every key is 0: already a heap
    settled = 0
    while size > 0:
        d = heap_key[0]
        u = heap_node[0]
        size -= 1
        if size > 0:  # sift the last entry down from the root
            key, node = heap_key[size], heap_node[size]
            i = 0
            while True:
                child = 2 * i + 1
                if child >= size:
                    break
                if child + 1 < size and heap_key[child + 1] < heap_key[child]:
                    child += 1
                if heap_key[child] >= key:
                    break
                heap_key[i] = heap_key[child]
                heap_node[i] = heap_node[child]
                i = child
            heap_key[i] = key
            heap_node[i] = node
        if d > dist[u]:
            continue  # stale: u was settled through a cheaper entry
        settled += 1
        for e in range(indptr[u], indptr[u + 1]):
            a = adj[e]
            v = a >> shift
            nd = d + cost_table[a & mask]
            if nd < dist[v] and nd <= max_cost:
                dist[v] = nd
                hop[v] = u
                if size == capacity:
                    return _OVERFLOW
                i = size
                size += 1
                while i > 0:  # sift up
                    parent = (i - 1) >> 1
                    if heap_key[parent] <= nd:
                        break
                    heap_key[i] = heap_key[parent]
                    heap_node[i] = heap_node[parent]
                    i = parent
                heap_key[i] = nd
                heap_node[i] = v
    return settled


@kernel
def _start_queues(sources, dist, hop, classes):
    """Every node unreached (dist inf, hop -1) but the sources (dist 0); empty queues:
    (head, tail) per cost class."""
    for v in range(dist.shape[0]):
        dist[v] = np.inf
        hop[v] = -1
    for s in sources:
        dist[s] = 0.0
    return np.zeros(classes, dtype=np.int64), np.zeros(classes, dtype=np.int64)


@kernel
def _next_to_settle(sources, k, head, tail, queue_key, queue_node, dist):
    """``(u, d, k)``: the next node to settle and its distance -- the sources first (``k``
    counts them), then the smallest queue head, stale entries skipped; u = -1 when all the
    queues are empty."""
    if k < sources.shape[0]:
        return sources[k], 0.0, k + 1
    while True:
        best = -1
        d = np.inf
        for j in range(head.shape[0]):
            if head[j] < tail[j] and queue_key[j, head[j]] < d:
                d = queue_key[j, head[j]]
                best = j
        if best < 0:
            return -1, 0.0, k
        u = queue_node[best, head[best]]
        head[best] += 1
        if d <= dist[u]:
            return u, d, k


@kernel
def _class_queue_kernel(indptr, adj, cost_table, shift, mask, sources, max_cost, dist, hop, queue_key, queue_node):
    """Multi-source Dijkstra for graphs with few distinct edge costs (an octile grid has two):
    one FIFO queue per cost class instead of a heap.

    Nodes are settled in nondecreasing distance d, and float addition is monotone, so the keys
    ``d + cost_table[j]`` pushed onto queue j never decrease: each queue is sorted as it is
    filled and the next node to settle is the smallest of the queue heads. A push happens only
    when it improves ``dist[v]``, so a node enters each queue at most once: queue j needs n
    slots (``queue_key`` / ``queue_node``: (classes, n)). Stale entries are skipped when popped.
    Same outputs as ``_dijkstra_kernel``; returns the number of nodes settled."""
    head, tail = _start_queues(sources, dist, hop, cost_table.shape[0])
    settled = 0
    k = 0
    while True:
        u, d, k = _next_to_settle(sources, k, head, tail, queue_key, queue_node, dist)
        if u < 0:
            break
        settled += 1
        for e in range(indptr[u], indptr[u + 1]):
            a = adj[e]
            v = a >> shift
            j = a & mask
            nd = d + cost_table[j]
            if nd < dist[v] and nd <= max_cost:
                dist[v] = nd
                hop[v] = u
                queue_key[j, tail[j]] = nd
                queue_node[j, tail[j]] = v
                tail[j] += 1
    return settled


class GridSteps(NamedTuple):  # (above the kernel whose argument types name it: ecs_nav.compile.aot)
    """A graph whose every edge is a grid step with one cost per direction, as the grid kernel
    reads it; index b = (d_row + 1) * 3 + (d_col + 1) as in ``NavGraph.step_mask``."""

    mask: np.ndarray  # (n,) uint16 step bits
    offset: np.ndarray  # (9,) int64 node-id offset of step b
    cost: np.ndarray  # (9,) float64 cost of step b
    cost_class: np.ndarray  # (9,) int64 queue of step b (one per distinct cost)
    classes: int


@kernel
def _grid_queue_kernel(steps, sources, max_cost, dist, hop, queue_key, queue_node):
    """``_class_queue_kernel`` for a graph whose every edge is a grid step with one cost per
    direction (``GridSteps``): a node's edges are the set bits of its step mask, so a
    relaxation reads 2 bytes per node instead of a CSR row (2-3x faster on grids)."""
    mask, offset, cost, cost_class = steps.mask, steps.offset, steps.cost, steps.cost_class
    head, tail = _start_queues(sources, dist, hop, steps.classes)
    settled = 0
    k = 0
    while True:
        u, d, k = _next_to_settle(sources, k, head, tail, queue_key, queue_node, dist)
        if u < 0:
            break
        settled += 1
        bits = mask[u]
        for b in range(9):
            if (bits >> b) & 1:
                v = u + offset[b]
                nd = d + cost[b]
                if nd < dist[v] and nd <= max_cost:
                    dist[v] = nd
                    hop[v] = u
                    j = cost_class[b]
                    queue_key[j, tail[j]] = nd
                    queue_node[j, tail[j]] = v
                    tail[j] += 1
    return settled


def grid_steps(graph: NavGraph) -> GridSteps | None:
    """The graph as GridSteps, or None when an edge is not a grid step or two edges of one
    direction cost differently. Cached on the graph until ``graph.cache_key()`` changes."""
    key = graph.cache_key()
    cached = graph.__dict__.get("_grid_steps")
    if cached is not None and cached[0] == key:
        return cached[1]
    mask, steps_only = graph.step_mask()
    steps = None
    if steps_only:
        cols = graph.grid.cols
        src = graph.edge_sources()
        dst = graph.indices.astype(np.int64)
        b = (dst // cols - src // cols + 1) * 3 + (dst % cols - src % cols + 1)
        low = np.full(9, np.inf)
        high = np.full(9, -np.inf)
        _cost_range_per_step(b, graph.costs, low, high)
        used = np.isfinite(low)
        if np.array_equal(low[used], high[used]):
            cost = np.where(used, low, 0.0)
            distinct = np.unique(cost[used])
            cost_class = np.searchsorted(distinct, cost).clip(max=max(len(distinct) - 1, 0)).astype(np.int64)
            offset = np.array([(i // 3 - 1) * cols + (i % 3 - 1) for i in range(9)], dtype=np.int64)
            steps = GridSteps(mask, offset, cost, cost_class, max(len(distinct), 1))
    graph.__dict__["_grid_steps"] = (key, steps)
    return steps


@kernel
def _cost_range_per_step(b, costs, low, high):
    """Lowest and highest cost of the edges of each step direction b."""
    for e in range(b.shape[0]):
        low[b[e]] = min(low[b[e]], costs[e])
        high[b[e]] = max(high[b[e]], costs[e])


@kernel
def _step_kernel(mask, cols, sources, steps, queue):
    """Breadth-first steps from ``sources`` into ``steps`` (n,) int32 (-1 unreached) over the
    orthogonal grid steps of ``mask`` (``NavGraph.step_mask`` bits 1, 3, 5, 7: down, left, right,
    up a row or column, grid ``cols`` wide); ``queue`` (n,) int32 scratch."""
    n = steps.shape[0]
    for v in range(n):
        steps[v] = -1
    tail = 0
    for s in sources:
        if steps[s] != 0:
            steps[s] = 0
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        u = queue[head]
        head += 1
        nxt = steps[u] + 1
        bits = mask[u]
        for b, offset in ((1, -cols), (3, -1), (5, 1), (7, cols)):
            if (bits >> b) & 1:
                v = u + offset
                if steps[v] < 0:
                    steps[v] = nxt
                    queue[tail] = v
                    tail += 1
    return tail


class FieldBuffers:
    """Heap buffers of one graph's field searches, kept between calls (grown, never shrunk)."""

    def __init__(self, node_count: int):
        self.heap_key = np.empty(node_count + 1, dtype=np.float64)
        self.heap_node = np.empty(node_count + 1, dtype=np.int32)
        self.queue = np.empty(node_count, dtype=np.int32)
        self.class_key = np.empty((0, node_count), dtype=np.float64)
        self.class_node = np.empty((0, node_count), dtype=np.int32)

    def class_queues(self, classes: int) -> tuple[np.ndarray, np.ndarray]:
        """(classes, n) key and node queues for ``_class_queue_kernel``."""
        if self.class_key.shape[0] < classes:
            n = self.queue.shape[0]
            self.class_key = np.empty((classes, n), dtype=np.float64)
            self.class_node = np.empty((classes, n), dtype=np.int32)
        return self.class_key, self.class_node

    def grow(self, edge_count: int) -> None:
        """Room for one heap entry per edge and node: more than any search can push."""
        capacity = min(2 * self.heap_key.shape[0], edge_count + self.queue.shape[0] + 1)
        self.heap_key = np.empty(capacity, dtype=np.float64)
        self.heap_node = np.empty(capacity, dtype=np.int32)


def field_buffers(graph: NavGraph) -> FieldBuffers:
    """The buffers kept on ``graph`` for its field searches (made on first use, or when the node
    count changed)."""
    buffers = graph.__dict__.get("_field_buffers")
    if buffers is None or buffers.queue.shape[0] != graph.node_count:
        if graph.node_count >= np.iinfo(np.int32).max:
            raise ValueError(f"graph too large for the field kernels ({graph.node_count} nodes)")
        buffers = FieldBuffers(graph.node_count)
        graph.__dict__["_field_buffers"] = buffers
    return buffers


def check_sources(graph: NavGraph, sources, what: str = "goal") -> np.ndarray:
    """``sources`` (one id or many) as a sorted, unique int64 array of walkable nodes; else a
    ValueError naming ``what`` they are and the first bad one."""
    try:
        ids = np.unique(np.asarray(sources, dtype=np.int64).reshape(-1))
    except (TypeError, ValueError):
        raise ValueError(f"{what}s must be node ids, got {sources!r}") from None
    if ids.size == 0:
        raise ValueError(f"needs at least one {what}")
    for end in (ids[0], ids[-1]):  # sorted: the ends tell whether all ids are in range
        check_node(graph, end, what)
    not_walkable = ids[~graph.walkable[ids]]
    if not_walkable.size:
        check_node(graph, not_walkable[0], what)
    return ids


def _outputs(graph: NavGraph, out, dtypes: tuple) -> tuple:
    n = graph.node_count
    if out is None:
        return tuple(np.empty(n, dtype=t) for t in dtypes)
    out = tuple(out)
    if len(out) != len(dtypes) or any(
        not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype != t or not a.flags.c_contiguous
        for a, t in zip(out, dtypes)
    ):
        names = " and ".join(f"({n},) {np.dtype(t).name}" for t in dtypes)
        raise ValueError(f"out must be {names} contiguous arrays")
    return out


def dijkstra_field(
    graph: NavGraph, sources, max_cost: float = math.inf, out: tuple | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Distance from the nearest of ``sources`` to every node along the graph's edges.

    Args:
        sources: one node id or an array of them (all walkable).
        max_cost: nodes farther than this stay unreached.
        out: optional ``(distance, predecessor)`` arrays to write into, (n,) float64 and (n,)
            int64 contiguous: a rebuild on an unchanged graph then allocates nothing of size n.

    Returns:
        ``(distance, predecessor)``: ``distance[v]`` float64 is the cost of the cheapest path
        from a source to v (0 at sources, inf when unreached); ``predecessor[v]`` int64 is the
        node before v on it (-1 at sources and unreached nodes).
    """
    return _dijkstra(graph, check_sources(graph, sources, "source"), max_cost, out)


def _dijkstra(graph: NavGraph, ids: np.ndarray, max_cost, out) -> tuple[np.ndarray, np.ndarray]:
    max_cost = float(max_cost)
    if math.isnan(max_cost):
        raise ValueError("max_cost must be a number, got nan")
    dist, hop = _outputs(graph, out, (np.float64, np.int64))
    buffers = field_buffers(graph)
    adjacency = graph.packed_adjacency()
    steps = grid_steps(graph)
    if steps is not None:
        _grid_queue_kernel(steps, ids, max_cost, dist, hop, *buffers.class_queues(steps.classes))
        return dist, hop
    if adjacency[1].shape[0] <= MAX_QUEUE_CLASSES and adjacency[0].dtype == np.uint32:
        queues = buffers.class_queues(len(adjacency[1]))
        _class_queue_kernel(graph.indptr, *adjacency, ids, max_cost, dist, hop, *queues)
        return dist, hop
    while True:
        done = _dijkstra_kernel(
            graph.indptr, *adjacency, ids, max_cost, dist, hop, buffers.heap_key, buffers.heap_node
        )
        if done != _OVERFLOW:
            return dist, hop
        buffers.grow(graph.edge_count)


def distance_field(
    graph: NavGraph, goals, max_cost: float = math.inf, out: tuple | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Distance of every node *to* the nearest goal, and the next node to step to.

    A multi-source Dijkstra over ``graph.reverse()``: one search serves every agent heading to
    the same goal(s).

    Args:
        goals: one node id or an array of them (all walkable).
        max_cost: nodes farther than this from every goal are left unreached.
        out: optional ``(distance, next_hop)`` arrays to write into, (n,) float64 and (n,) int64
            contiguous (no O(n) allocation then).

    Returns:
        ``(distance, next_hop)``, shape (n,) each: ``distance[v]`` float64 is the cost of the
        cheapest path v → nearest goal (0 at goals, inf when no goal is reachable within
        ``max_cost``); ``next_hop[v]`` int64 is the node after v on that path (-1 at goals and
        where distance is inf). Follow it with ``path_from_field``.
    """
    return _dijkstra(graph.reverse(), check_sources(graph, goals, "goal"), max_cost, out)


def step_field(graph: NavGraph, goals, out: np.ndarray | None = None) -> np.ndarray:
    """Seed 003's wavefront: how many steps each node needs to reach the nearest goal.

    A breadth-first "brushfire" from ``goals`` over the edges of ``graph.reverse()`` that join
    orthogonally adjacent node slots (left, right, up, down: diagonal edges and links between
    distant slots are not steps), so a one-way drop is walked only downwards.

    Args:
        goals: one node id or an array of them (all walkable).
        out: optional (n,) int32 contiguous array to write into.

    Returns:
        (n,) int32: 0 at goals, +1 per step, -1 where no goal can be reached (and on slots that
        are not walkable).
    """
    ids = check_sources(graph, goals, "goal")
    (steps,) = _outputs(graph, None if out is None else (out,), (np.int32,))
    reverse = graph.reverse()
    _step_kernel(reverse.step_mask()[0], graph.grid.cols, ids, steps, field_buffers(reverse).queue)
    return steps
