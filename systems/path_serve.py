"""The PathfindSystem's serving of a batch of path requests: searches, and the Paths they give.

``systems/pathfind.py`` decides which requests are served on a tick (new, stale, due by their
period, waiting in the queue); a ``PathServer`` serves them, as that module's docstring says
under "Start and goal", "Searches", "The Path written", "Events", "Search trace", "Area costs"
and, for the budget, "Request queue":

- the start and goal of each request snapped to nodes (an agent crossing an off-mesh link plans
  from where it lands: ``world.resources[LINK_LANDINGS]``, ``systems/link_crossing.py``);
- the requests grouped by area filter (``serve``: one weighted graph per ``NavFilter``,
  ``ecs_nav.nav.areas``), then by goal: two or more without a budget share one reverse search
  (``ecs_nav.nav.field_cache``), any other gets its own (``ecs_nav.nav.jump.find_path``, or
  ``dijkstra``), within ``budget_left`` while a tick's budget applies;
- each result handed to ``systems/path_write.py`` (``write_route``), which writes it as the
  entity's ``Path`` with its events, or keeps the route a periodic replan finds still as good.

The server keeps the counters the PathfindSystem reports (``searches``, ``field_searches``,
``served``, ``last_served``, ``last_searches``, ``last_expanded``) and which request each entity
was last served for (``seen``).
"""

from __future__ import annotations

import numpy as np
from ecs_nav.systems.path_write import mark_pending, own_nodes, write_route

from ecs_nav.core.components import NavFilter, PathRequest
from ecs_nav.core.resource_names import LINK_LANDINGS, SEARCH_TRACE
from ecs_nav.core.world import World
from ecs_nav.nav.field_cache import RecentFields
from ecs_nav.nav.jump import find_path
from ecs_nav.nav.search import STATUS_COMPLETE, STATUS_UNREACHABLE, dijkstra, paths_from_field
from ecs_nav.nav.search_trace import KIND_ASTAR, KIND_DIJKSTRA, KIND_SHARED


class PathServer:
    """Serves batches of path requests for a PathfindSystem (see the module docstring).

    Args:
        heuristic: A*'s heuristic ("octile", "euclidean" or "zero").

    Attributes:
        budget_left: nodes the searches may still expand on this tick, while the queue is served
            under a per-tick budget (``tick_budget``); None (outside such a serve): unlimited.
        tick_budget: the whole per-tick budget while ``budget_left`` applies, else None.
        seen: the request each entity was last served for (a ``PathRequest`` by entity id).
        recent_fields: the shared searches' distance fields, by goal node.
    """

    def __init__(self, heuristic: str = "octile"):
        self.heuristic = heuristic
        self.searches = 0
        self.field_searches = 0
        self.served = 0
        self.last_served = np.zeros(0, dtype=np.int64)
        self.last_searches = 0
        self.last_expanded = 0
        self.budget_left: int | None = None
        self.tick_budget: int | None = None
        self.seen: dict[int, PathRequest] = {}
        self.recent_fields = RecentFields()

    def begin_tick(self) -> None:
        """Clear the last tick's counters (``last_served``, ``last_searches``, ``last_expanded``)."""
        self.last_served = np.zeros(0, dtype=np.int64)
        self.last_searches = 0
        self.last_expanded = 0

    def serve(self, world: World, graph, ents: np.ndarray, reqs: list[PathRequest], path_of: dict,
              forced: np.ndarray, remember=True) -> np.ndarray:
        """Serve the requests ``reqs`` of entities ``ents`` ((k,) int64, in serving order; under a
        budget oldest first) on ``graph`` weighted by the map's areas (``world.nav_areas``) as each
        entity's ``NavFilter`` sets them (``ecs_nav.nav.areas``): one ``_serve_graph`` call per
        filter, in the order given; without areas, ``_serve_graph`` on ``graph``. ``path_of``: each
        entity's Path (or None); ``forced`` and ``remember``: as ``_serve_graph`` takes them.
        Returns (k,) bool: which entities wait (only under a budget)."""
        areas = world.nav_areas
        if areas is None:
            return self._serve_graph(world, graph, ents, reqs, path_of, forced, remember)
        remember = np.broadcast_to(np.asarray(remember, bool), (ents.size,))
        filters = [world.try_get(int(e), NavFilter) for e in ents.tolist()]
        keys = [None if f is None else f.key() for f in filters]
        deferred = np.zeros(ents.size, dtype=bool)
        # under a budget, runs of one filter in queue order (nothing younger goes first); else one
        # call per filter, so requests with one filter and goal still share a search
        if self.budget_left is None:
            groups = [[i for i, k in enumerate(keys) if k == key] for key in dict.fromkeys(keys)]
        else:
            groups, start = [], 0
            for end in range(1, ents.size + 1):
                if end == ents.size or keys[end] != keys[start]:
                    groups.append(list(range(start, end)))
                    start = end
        for n, idx in enumerate(groups):
            f = filters[idx[0]]
            try:
                weighted = areas.graph_for(graph, None if f is None else f.costs, () if f is None else f.excluded)
            except KeyError as exc:
                raise ValueError(f"entity {int(ents[idx[0]])}: {exc.args[0]}") from None
            at = np.array(idx, np.int64)
            deferred[at] = self._serve_graph(world, weighted, ents[at], [reqs[i] for i in idx], path_of,
                                             forced[at], remember[at])
            if deferred[at].any():  # the budget ran out: the rest wait too
                for i in (j for later in groups[n + 1:] for j in later):
                    deferred[i] = True
                    mark_pending(world, int(ents[i]), path_of.get(int(ents[i])))
                break
        return deferred

    def _serve_graph(self, world: World, graph, ents: np.ndarray, reqs: list[PathRequest], path_of: dict,
                     forced: np.ndarray, remember=True) -> np.ndarray:
        """Plan for ``ents`` on ``graph``; ``forced``: a new, stale or unplanned request (always rewritten),
        else a periodic replan (which keeps a route that is still as good); ``remember`` (a bool
        or one per entity): note the request as seen. Under a budget (``budget_left`` not None: the
        queue's serve, ``ents`` oldest first) returns which entities the budget left waiting
        (their Paths marked ``pending``); else none."""
        table = world.table
        k = ents.size
        rows = table.rows_of(ents)
        start_xy = np.zeros((k, 2))
        start_z = np.zeros(k)
        has_row = rows >= 0
        start_xy[has_row] = table.pos[rows[has_row]]
        start_z[has_row] = table.elevation[rows[has_row]]
        landings = world.resources.get(LINK_LANDINGS)
        if landings:  # an agent crossing an off-mesh link plans from where it lands (systems/link_crossing.py)
            for i, e in enumerate(ents.tolist()):
                if e in landings:
                    start_xy[i], start_z[i] = landings[e][:2], landings[e][2]
        # goals: a point, or the target entity's current position (a loop over the served few)
        goal_xy = np.zeros((k, 2))
        goal_z = np.full(k, np.nan)
        goal_ok = np.ones(k, dtype=bool)
        point_goal = np.zeros(k, dtype=bool)
        for i, req in enumerate(reqs):
            if req.goal is not None and req.goal_elevation is not None:
                goal_xy[i], goal_z[i] = req.goal, req.goal_elevation
            elif req.goal is not None:
                goal_xy[i] = req.goal
                point_goal[i] = True
            elif req.target is not None and world.exists(req.target) and table.has(req.target):
                trow = table.row_of(req.target)
                goal_xy[i] = table.pos[trow]
                goal_z[i] = table.elevation[trow]
            else:
                goal_ok[i] = False
        if point_goal.any() and world.map is not None:
            goal_z[point_goal] = world.map.surface_height(goal_xy[point_goal])
        starts = graph.nearest_nodes(start_xy, start_z)
        starts[~has_row] = -1
        goals = graph.nearest_nodes(goal_xy, np.where(np.isfinite(goal_z), goal_z, 0.0))
        retry = np.flatnonzero(goal_ok & ((goals < 0) | ~np.isfinite(goal_z)))
        if retry.size:  # no node at the goal's height (or no height known): any height will do
            goals[retry] = graph.nearest_nodes(goal_xy[retry])
        goal_ok &= goals >= 0

        results: list[tuple[np.ndarray, str] | None] = [None] * k
        trace = world.resources.get(SEARCH_TRACE)
        traced = trace.entity if trace is not None else -1
        searchable = np.flatnonzero((starts >= 0) & goal_ok)
        single: list[int] = []
        groups: dict[int, list[int]] = {}
        budgeted = self.budget_left is not None
        deferred = np.zeros(k, dtype=bool)
        remember = np.broadcast_to(np.asarray(remember, bool), (k,))
        for i in searchable:
            if reqs[i].max_expanded is None and not budgeted:
                groups.setdefault(int(goals[i]), []).append(int(i))
            else:
                single.append(int(i))
        for goal in sorted(groups):
            idx = groups[goal]
            if len(idx) < 2:
                single.extend(idx)
                continue
            searched = self.recent_fields.computed
            distance, next_hop = self.recent_fields.field(graph, goal)
            if self.recent_fields.computed > searched:
                self.field_searches += 1
                self.last_searches += 1
            offsets, nodes = paths_from_field(next_hop, starts[idx])
            for j, i in enumerate(idx):
                if np.isfinite(distance[starts[i]]):
                    results[i] = (nodes[offsets[j] : offsets[j + 1]].copy(), STATUS_COMPLETE,
                                  float(distance[starts[i]]))
                    if ents[i] == traced:
                        trace.record(np.flatnonzero(np.isfinite(distance)), KIND_SHARED, STATUS_COMPLETE,
                                     world.tick, graph.version)
                else:
                    single.append(i)  # cut off from the goal: its own search finds the partial path
        for i in sorted(single):
            req = reqs[i]
            search = dijkstra if req.algorithm == "dijkstra" else find_path
            kwargs = {} if search is dijkstra else {"heuristic": self.heuristic}
            cap = req.max_expanded
            if budgeted:
                if self.budget_left <= 0 or deferred.any():  # oldest first: nothing younger goes ahead
                    deferred[i] = True
                    continue
                cap = self.budget_left if cap is None else min(cap, self.budget_left)
            res = search(graph, int(starts[i]), int(goals[i]), max_expanded=cap,
                         allow_partial=req.allow_partial, trace=bool(ents[i] == traced), **kwargs)
            self.searches += 1
            self.last_searches += 1
            self.last_expanded += res.expanded
            if budgeted:
                self.budget_left -= res.expanded
                cut = (res.status != STATUS_COMPLETE and res.expanded >= cap
                       and (req.max_expanded is None or cap < req.max_expanded))
                if cut and cap < self.tick_budget:  # stopped by the tick's budget: wait for a fuller one
                    deferred[i] = True
                    continue
            results[i] = (res.nodes, res.status, res.cost)
            if res.expanded_nodes is not None:
                trace.record(res.expanded_nodes, KIND_DIJKSTRA if search is dijkstra else KIND_ASTAR, res.status,
                             world.tick, graph.version)

        own = own_nodes(graph, start_xy, start_z)
        for i in range(k):
            entity = int(ents[i])
            if deferred[i]:
                mark_pending(world, entity, path_of.get(entity))
                continue
            route = (results[i] if results[i] is not None
                     else (np.zeros(0, np.int64), STATUS_UNREACHABLE, np.inf))
            written = write_route(world, graph, entity, path_of.get(entity), reqs[i], route, bool(forced[i]),
                                  int(rows[i]), np.array([start_xy[i, 0], start_xy[i, 1], start_z[i]]),
                                  np.array([goal_xy[i, 0], goal_xy[i, 1], goal_z[i]]), bool(goal_ok[i]),
                                  int(own[i]))
            if remember[i] or not written:  # (a route kept by a periodic replan is always noted)
                self.seen[entity] = reqs[i]
        self.served += int(k - deferred.sum())
        self.last_served = np.concatenate([self.last_served, ents[~deferred]])
        return deferred
