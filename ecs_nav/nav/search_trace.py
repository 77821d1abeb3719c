"""Which entity's path searches to record, and the last one recorded: the viewer's "search" layer.

The viewer puts a ``SearchTrace`` naming the selected agent into
``world.resources[SEARCH_TRACE]``; the PathfindSystem then asks the search kernels for the
expanded nodes of that entity's searches only (``astar(..., trace=True)``), so the other
searches of a tick cost nothing extra, and a World without the resource records nothing. The
record is an observation: no system reads it, and it is not part of ``state_digest``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ecs_nav.core.resource_names import SEARCH_TRACE

KIND_ASTAR = "A*"
KIND_DIJKSTRA = "Dijkstra"
KIND_SHARED = "shared field"
"""The entity's path came from a reverse search shared by every requester of its goal: the
nodes are every node that search settled (all it could reach)."""


@dataclass
class SearchTrace:
    """The entity whose searches are recorded and its last recorded search.

    Attributes:
        entity: the entity to trace (-1: none).
        nodes: (k,) int64 ids of the nodes its last search expanded, increasing.
        kind: KIND_ASTAR, KIND_DIJKSTRA or KIND_SHARED; "" before the first record.
        status: the search's path status ("complete", "partial", "unreachable").
        tick: the tick it was recorded on (-1: none yet; a request is served at its replan
            period, so a new trace fills in at the entity's next replan).
        graph_version: the NavGraph version the node ids belong to.
    """

    entity: int = -1
    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kind: str = ""
    status: str = ""
    tick: int = -1
    graph_version: int = -1

    def record(self, nodes, kind: str, status: str, tick: int, graph_version: int) -> None:
        """Keep one search's expanded ``nodes``."""
        self.nodes = np.asarray(nodes, dtype=np.int64).reshape(-1)
        self.kind, self.status, self.tick, self.graph_version = kind, status, int(tick), int(graph_version)

    def describe(self) -> str:
        """One line for the viewer's panel."""
        if self.tick < 0:
            return f"#{self.entity}: waits for its next replan"
        verb = "settled" if self.kind == KIND_SHARED else "expanded"
        return f"#{self.entity}: {self.kind}, {self.nodes.size} {verb}, tick {self.tick}"


def trace_entity(world, entity: int | None) -> SearchTrace | None:
    """Record ``entity``'s searches from now on (None: stop recording; the resource is removed).
    Keeps the record when the entity is already the one traced. Returns the trace."""
    resources = world.resources
    if entity is None:
        resources.pop(SEARCH_TRACE, None)
        return None
    trace = resources.get(SEARCH_TRACE)
    if trace is None or trace.entity != int(entity):
        trace = resources[SEARCH_TRACE] = SearchTrace(int(entity))
    return trace
