"""The distance fields of recent goals, kept while the graph is unchanged.

A crowd sent to one point replans a few agents every tick (staggered), and each tick's group
shares one reverse search to that goal: the same ``distance_field`` every tick, on the same
graph. ``RecentFields`` keeps the fields it computed, keyed by goal node, until the graph
changes (``NavGraph.cache_key``: a new version, or an array replaced), and drops the least
recently used beyond its budget of nodes. A field read from it is the one ``distance_field``
would compute: the searches and their results do not change, only how often they run.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ecs_nav.nav.distance import distance_field
from ecs_nav.nav.graph import NavGraph

FIELD_BUDGET_NODES = 4_000_000
"""The fields kept hold at most this many node entries in all (16 bytes each: a distance and a
next hop), and at least one field whatever its size."""

MAX_FIELDS = 16
"""At most this many goals' fields are kept."""


class RecentFields:
    """``field(graph, goal)``: ``distance_field(graph, goal)``, computed once per goal node while
    ``graph`` is unchanged. ``computed`` counts the fields computed (not read back)."""

    def __init__(self) -> None:
        self._graph: NavGraph | None = None  # (held: the ids in its cache key stay its arrays')
        self._key: tuple | None = None
        self._fields: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.computed = 0

    def field(self, graph: NavGraph, goal: int) -> tuple[np.ndarray, np.ndarray]:
        """``(distance, next_hop)`` to the goal node ``goal`` (see ``distance_field``). The arrays
        are shared with later calls: read them, do not write them (they are left writable: the
        kernels that read them are compiled for writable arrays)."""
        key = graph.cache_key()
        if graph is not self._graph or key != self._key:
            self._graph, self._key, self._fields = graph, key, OrderedDict()
        goal = int(goal)
        kept = self._fields.get(goal)
        if kept is not None:
            self._fields.move_to_end(goal)
            return kept
        kept = distance_field(graph, goal)
        self.computed += 1
        self._fields[goal] = kept
        most = max(1, min(MAX_FIELDS, FIELD_BUDGET_NODES // max(graph.node_count, 1)))
        while len(self._fields) > most:
            self._fields.popitem(last=False)
        return kept
