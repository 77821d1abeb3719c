"""The distance fields of recent goals, kept while the graph is unchanged.

A crowd sent to one point replans a few agents every tick (staggered), and each tick's group
shares one reverse search to that goal: the same ``distance_field`` every tick, on the same
graph. ``RecentFields`` keeps the fields it computed, keyed by graph and goal node: requests
with different area filters search different weighted graphs (``ecs_nav.nav.areas``), each with
its own fields. A graph's fields are dropped when a graph of a newer version is seen (the nav
graph changed; a weighted graph keeps its nav graph's version) and otherwise when they hold an
array no longer the graph's (``NavGraph.cache_key``); the least recently used go beyond the
budget of nodes. A field read from it is the one ``distance_field``
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
    """``field(graph, goal)``: ``distance_field(graph, goal)``, computed once per graph and goal
    node while the graph is unchanged. ``computed`` counts the fields computed (not read back)."""

    def __init__(self) -> None:
        # (graph.cache_key(), goal) -> (graph, (distance, next_hop)); the graph is held so the ids
        # in its key stay its arrays'
        self._fields: OrderedDict[tuple, tuple[NavGraph, tuple[np.ndarray, np.ndarray]]] = OrderedDict()
        self._version: int | None = None
        self.computed = 0

    def field(self, graph: NavGraph, goal: int) -> tuple[np.ndarray, np.ndarray]:
        """``(distance, next_hop)`` to the goal node ``goal`` (see ``distance_field``). The arrays
        are shared with later calls: read them, do not write them (they are left writable: the
        kernels that read them are compiled for writable arrays)."""
        if graph.version != self._version:
            self._version, self._fields = graph.version, OrderedDict()
        goal = int(goal)
        key = (graph.cache_key(), goal)
        kept = self._fields.get(key)
        if kept is not None and kept[0] is graph:
            self._fields.move_to_end(key)
            return kept[1]
        field = distance_field(graph, goal)
        self.computed += 1
        self._fields[key] = (graph, field)
        most = max(1, min(MAX_FIELDS, FIELD_BUDGET_NODES // max(graph.node_count, 1)))
        while len(self._fields) > most:
            self._fields.popitem(last=False)
        return field
