"""The open list of the grid and graph searches (A*, Dijkstra, jump point search): a binary heap
kept in three parallel arrays, inlined into the search kernels.

``heap_node`` (int), ``heap_f`` and ``heap_h`` (float) hold each entry's node, its f = g + h and
its h; ``records`` is the search's per-node record array, whose ``pos`` field the heap keeps equal
to the node's slot so that a node still open can have its cost lowered in place (``sift_up`` from
that slot). Order: lower f first, ties by lower h (nearer the goal), then by lower node id, so a
search expands the same nodes in the same order on every run.
"""

from __future__ import annotations

from ecs_nav.compile.aot import kernel


@kernel(inline="always")
def heap_before(fa, ha, na, fb, hb, nb):
    """Heap order: lower f, then lower h, then lower node id."""
    if fa != fb:
        return fa < fb
    if ha != hb:
        return ha < hb
    return na < nb


@kernel(inline="always")
def sift_up(heap_node, heap_f, heap_h, records, i):
    """Move the entry at slot ``i`` up to its place (after a push at ``i`` = size, or a lowered cost)."""
    node, f, h = heap_node[i], heap_f[i], heap_h[i]
    while i > 0:
        parent = (i - 1) >> 1
        if not heap_before(f, h, node, heap_f[parent], heap_h[parent], heap_node[parent]):
            break
        heap_node[i], heap_f[i], heap_h[i] = heap_node[parent], heap_f[parent], heap_h[parent]
        records[heap_node[i]].pos = i
        i = parent
    heap_node[i], heap_f[i], heap_h[i] = node, f, h
    records[node].pos = i


@kernel(inline="always")
def sift_down(heap_node, heap_f, heap_h, records, i, size):
    """Move the entry at slot ``i`` down to its place among the first ``size`` (after a pop: the
    last entry put at slot 0)."""
    node, f, h = heap_node[i], heap_f[i], heap_h[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and heap_before(
            heap_f[right], heap_h[right], heap_node[right], heap_f[child], heap_h[child], heap_node[child]
        ):
            child = right
        if not heap_before(heap_f[child], heap_h[child], heap_node[child], f, h, node):
            break
        heap_node[i], heap_f[i], heap_h[i] = heap_node[child], heap_f[child], heap_h[child]
        records[heap_node[i]].pos = i
        i = child
    heap_node[i], heap_f[i], heap_h[i] = node, f, h
    records[node].pos = i
