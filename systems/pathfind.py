"""PathfindSystem: serves PathRequests with Paths (seed 000's PathFinder, throttled and shared).

When a request is served
    - at once when it is new (first seen, or a different PathRequest object was put on the
      entity), when the entity has no ``Path`` yet, or when its Path's status is ``"stale"``
      (the GraphBuildSystem changed a region the path crosses, or a follower asked again) or
      ``"none"``;
    - otherwise every ``period`` ticks, **staggered**: entity ``e`` is due on the ticks where
      ``(tick + e) % period == 0``, so N requesters with consecutive ids spread evenly over the
      period (N / period searches per tick) instead of all replanning on one tick (the seed's
      ``frameCount % 30 == 0`` replans every NPC on the same frame).
    - ``period``: the request's own ``replan_period`` when it sets one; otherwise (None) the
      system's ``period`` (the scene's ``[world] pathfind_period``, default 30).
    - a target entity is followed as it moves: its current position is read whenever the
      request is served, so the path follows it at the replan period (as in the seed).

Start and goal
    Both snap to the nearest walkable node with ``graph.nearest_nodes(points, elevations)``: the
    start at the agent's own elevation (table column), a target entity's goal at the target's
    elevation, a point goal at the surface height under the point. A goal with no node within
    ``max_climb`` of that elevation (a point inside a blocked tile, on a box top too small to
    hold nodes) falls back to the nearest node at any height. A start or goal with no node
    within 3 cells at all gives status ``"unreachable"`` and a PathFailed event.

Searches
    Requests served on the same tick whose goals snap to the same node, and that have no search
    budget, share one reverse search (``distance_field`` + ``paths_from_field``) when there are
    at least two of them; the field is kept for that goal node while the graph is unchanged
    (``ecs_nav.nav.field_cache``), so a crowd replanning a few agents a tick searches once. Any
    other request gets its own A* (``ecs_nav.nav.jump.find_path``: jump point search on a
    uniform octile grid without a budget or trace; ``algorithm="dijkstra"``: Dijkstra) with
    its ``max_expanded`` budget and ``allow_partial`` flag: a budget is the
    contract of one query (as in Detour and Godot), so budgeted requests never share. A member
    of a shared group whose start cannot reach the goal falls back to its own search, which
    gives the partial path (or ``"unreachable"``) it asked for. Costs are exact either way;
    among equally cheap routes the two searches may choose different ones.

The Path written
    ``nodes``: the node ids from the start node to the goal node (or to the reachable node
    closest to the goal: status ``"partial"``); ``waypoints``: their positions (x, y, elevation),
    plus the exact goal point as the last waypoint when the path is complete and the goal point
    can be walked to from the goal node's surface (elevation within ``max_climb`` and the
    segment between them, lifted 0.2, blocked by nothing): the agent ends on the goal, not on
    the node next to it. ``index`` is 1 when the agent stands in nodes[0]'s grid cell (seed:
    path[0] is the node it stands on), else 0 (walk to the start node first); a replan that
    finds the same node list keeps the follower's index. ``request.smooth`` string-pulls the
    waypoints over ``world.map`` (``ecs_nav.nav.smooth.smooth_path``, with the agent's
    max_climb, and its radius widened by the Path's ``radius``) from the agent's position, which
    is the first waypoint then (``index`` 1); ``nodes`` keeps the full route (staleness is judged
    on it), and a periodic replan keeps a pulled route only while the agent can walk straight to
    the waypoint it walks to. The entity's existing Path keeps its ``radius`` and ``mode``; a new
    Path gets the defaults.
    An unreachable request gets an empty Path (no nodes, no waypoints).

Events
    ``PathChanged`` when a served request's route changed: not when the new node list is the rest
    of the old one (the agent moved along it), which also keeps the follower's waypoint index;
    status complete or partial. ``PathFailed`` when a serve's status becomes partial or
    unreachable (once per failure, not on every replan that fails again), with ``remaining`` =
    the distance from the end of the partial path to the goal (inf when unreachable). Never an
    exception for an unreachable goal, a missing target or an empty graph.

Stale paths without a request
    A once-path given without a PathRequest whose status is set to ``"stale"`` (the
    PathFollowSystem does this when its agent is stuck) is re-planned to its last waypoint on
    the next tick (seed 002), keeping its radius and mode.

Change detection
    The request arrays (which are path requests and which flow-field requests, their periods,
    which are new) are re-read from esper only when a PathRequest or Path is given or taken
    (``World.structure_version``) or a request is edited (``World.take_changed_requests``: an
    edited request is served on the next tick); despawned requesters are dropped from the
    arrays (``World.despawned_since``) without an esper query, which esper rebuilds in
    O(entities) after any change. A Path set to ``"stale"`` is reported by the World
    (``World.take_stale_paths``). The periodic test over the requesters runs on the ticks
    where some request falls due (the system keeps the ticks until the next one) or one waits
    to be served at once; another tick costs a comparison, no per-request work.

Flow fields
    Requests with ``method = "flow_field"`` get no Path: ``systems/field_requests.py`` gives
    each the shared field of its goal and builds, refreshes and evicts the fields.

Search trace
    With a ``SearchTrace`` in ``world.resources[SEARCH_TRACE]`` (the viewer's "search" layer),
    each serve of the traced entity records the nodes its search expanded (``astar(...,
    trace=True)``; for a shared reverse search, the nodes that search settled). Only that
    entity's search is asked for them; no other search does extra work, and the paths written
    are the same with or without the trace.

Request queue (a per-tick budget)
    ``path_budget_per_tick`` (the scene's ``[world] path_budget_per_tick``; None, the default:
    unlimited) bounds the nodes expanded by all of a tick's searches together. The requests that
    fall due join a queue (``systems/path_queue.py``) and are served oldest first; each search is
    run with ``max_expanded`` = the budget left this tick (or the request's own ``max_expanded``
    when smaller). A search stopped by the tick's budget is not served: its request stays at the
    head of the queue, and so does every younger one, until a later tick; its expansions count
    against this tick's budget. A waiting agent's Path has ``pending`` True (an agent with no
    Path yet gets an empty one) and keeps its old route, which the follower keeps walking; an
    agent without a route holds still. A search that needs more than the whole budget, started
    on a full one, is served with the budget as its ``max_expanded``: a partial path (status
    ``"partial"``, or ``"unreachable"`` without ``allow_partial``), as a request's own budget
    gives. Under a budget, requests do not share reverse searches (a distance field's search
    cannot be bounded): each is its own A*, so its path is the one the same request gets from
    ``astar`` without a budget.

Area costs
    With areas on the map (``world.nav_areas``, a scene's ``[[map.area]]``), each request is
    searched on the graph weighted by the areas' costs as the entity's ``NavFilter`` (if any)
    sets them (``ecs_nav.nav.areas``: a multiplier per area, excluded areas not walkable); the
    weighted graph keeps the nav graph's node ids and version. Requests share a reverse search
    only with requests of the same filter. Flow-field requests get the field of their goal on
    their filter's weighted graph (``systems/field_requests.py``).

Counters (for tests and benchmarks): ``searches`` (single A*/Dijkstra searches so far),
``field_searches`` (shared reverse searches so far), ``served`` (requests served so far),
``last_served`` (entities served on the last tick), ``last_searches`` (searches of both
kinds on the last tick) and ``last_expanded`` (nodes expanded by the last tick's A*/Dijkstra
searches, each search's own ``PathResult.expanded``; not those of shared reverse searches).
"""

from __future__ import annotations

import numpy as np
from ecs_nav.systems.field_requests import FieldRequests
from ecs_nav.systems.path_queue import PathQueue
from ecs_nav.systems.platformer_stage import serve_requests

from ecs_nav.core.components import NavFilter, Path, PathRequest
from ecs_nav.core.events import PathChanged, PathFailed
from ecs_nav.core.resource_names import LINK_LANDINGS, SEARCH_TRACE
from ecs_nav.core.world import System, World
from ecs_nav.nav.corridor import ROUTE_SLACK, route_kept, still_as_good
from ecs_nav.nav.field_cache import RecentFields
from ecs_nav.nav.jump import find_path
from ecs_nav.nav.search import (
    STATUS_COMPLETE,
    STATUS_PARTIAL,
    STATUS_UNREACHABLE,
    dijkstra,
    paths_from_field,
)
from ecs_nav.nav.search_trace import KIND_ASTAR, KIND_DIJKSTRA, KIND_SHARED
from ecs_nav.nav.smooth import line_walkable, smooth_path

_IMMEDIATE = ("stale", "none")
_QUEUE_CHUNK = 256
"""Queue entries handed to one ``_serve`` call (its per-call work is vectorised over them)."""
_GOAL_LIFT = 0.2
"""Lift of the goal-node → goal-point segment test (the seed's link lift)."""


class PathfindSystem(System):
    """Serves ``PathRequest`` components with ``Path`` components (see the module docstring).

    Args:
        period: the replan period in ticks of requests that set no ``replan_period``.
        heuristic: A*'s heuristic ("octile", "euclidean" or "zero").
        path_budget_per_tick: nodes all of a tick's searches may expand together (integer
            >= 1), the requests beyond it waiting in a queue; None: unlimited. The attribute
            may be changed between ticks.
    """

    name = "PathfindSystem"

    def __init__(self, period: int = 30, heuristic: str = "octile", path_budget_per_tick: int | None = None):
        if int(period) < 1:
            raise ValueError(f"PathfindSystem.period: must be >= 1, got {period!r}")
        if path_budget_per_tick is not None and (isinstance(path_budget_per_tick, bool)
                                                 or int(path_budget_per_tick) != path_budget_per_tick
                                                 or int(path_budget_per_tick) < 1):
            raise ValueError(f"PathfindSystem.path_budget_per_tick: must be an integer >= 1 or None, "
                             f"got {path_budget_per_tick!r}")
        self.period = int(period)
        self.path_budget_per_tick = None if path_budget_per_tick is None else int(path_budget_per_tick)
        self.queue = PathQueue()  # requests waiting under path_budget_per_tick (systems/path_queue.py)
        self.last_expanded = 0
        self._left: int | None = None  # budget left on this tick (None: unlimited)
        self.heuristic = heuristic
        self.searches = 0
        self.field_searches = 0
        self.served = 0
        self.last_served = np.zeros(0, dtype=np.int64)
        self.last_searches = 0
        self._seen: dict[int, PathRequest] = {}
        self._structure = (-1, -1)  # the World's structure versions of PathRequest and Path when last read
        self._despawn_cursor = 0
        self._ents = np.zeros(0, dtype=np.int64)
        self._reqs: list[PathRequest] = []
        self._periods = np.zeros(0, dtype=np.int64)
        self._quiet = (0, 0)  # ticks [from, until) on which no request falls due by its period
        self._requested: set[int] = set()
        self._pending: set[int] = set()  # entities to serve on this tick whatever their period
        self.fields = FieldRequests()  # the flow-field requests (systems/field_requests.py)
        self._fields = RecentFields()  # the shared searches' distance fields, by goal node

    def period_of(self, request: PathRequest) -> int:
        """The replan period that applies to ``request``."""
        return self.period if request.replan_period is None else request.replan_period

    # --- the tick --------------------------------------------------------------------------------

    def update(self, world: World) -> None:
        serve_requests(world, self.period)  # side-view bots' requests: systems/platformer_stage.py
        self.last_served = np.zeros(0, dtype=np.int64)
        self.last_searches = 0
        self.last_expanded = 0
        stale = world.take_stale_paths()
        graph = world.nav_graph
        if graph is None:
            return
        changed = world.take_changed_requests()
        gone, self._despawn_cursor = world.despawned_since(self._despawn_cursor)
        structure = (world.structure_version(PathRequest), world.structure_version(Path),
                     world.structure_version(NavFilter))
        if structure != self._structure or changed.size:  # requests or paths given or taken, or edited
            self._structure = structure
            self._refresh(world, world.query(PathRequest))
            self._pending.update(int(e) for e in changed if int(e) in self._requested)
        elif gone.size:  # only despawns (an evacuation loses agents every tick): drop their rows
            self._forget(world, gone)
        self.fields.update(world, graph)
        if stale.size:
            self._pending.update(stale.tolist())
        ents, reqs = self._ents, self._reqs
        serve = np.zeros(0, np.int64)
        tick = world.tick
        quiet_from, quiet_until = self._quiet
        if ents.size and (self._pending or not quiet_from <= tick < quiet_until):
            due = (tick + ents) % self._periods == 0
            if self._pending:
                due |= np.isin(ents, np.fromiter(self._pending, np.int64, len(self._pending)))
            serve = due.nonzero()[0]
            # no request falls due before the first tick after this one that some request does
            wait = int(((-(tick + 1 + ents)) % self._periods).min())
            self._quiet = (tick + 1, tick + 1 + wait)
        orphans = [e for e in sorted(self._pending) if e not in self._requested]
        if self.path_budget_per_tick is not None or len(self.queue):
            forced = np.fromiter((int(e) in self._pending for e in ents[serve]), bool, serve.size)
            self._pending.clear()
            self.queue.push(ents[serve], forced, tick)
            self.queue.push(orphans, True, tick, orphan=True)
            self._serve_queue(world, graph)
            return
        if serve.size:
            forced = np.fromiter((int(e) in self._pending for e in ents[serve]), bool, serve.size)
            self._pending.clear()
            path_of = {int(e): world.try_get(int(e), Path) for e in ents[serve]}
            self._serve_filtered(world, graph, ents[serve], [reqs[i] for i in serve], path_of, forced)
        self._pending.clear()
        if orphans:
            self._replan_orphans(world, graph, orphans)

    def _refresh(self, world: World, requests) -> None:
        """The request list changed: re-sort it, hand the flow-field requests to ``fields``,
        recompute the periods of the path requests, and queue for at once those that are new
        (another object than last served), have no Path, or whose Path still waits for a plan
        (status none or stale)."""
        ents = np.fromiter((e for e, _ in requests), dtype=np.int64, count=len(requests))
        order = np.argsort(ents, kind="stable")
        ents = ents[order]
        reqs = [requests[i][1][0] for i in order]
        flow = np.fromiter((r.method == "flow_field" for r in reqs), bool, len(reqs))
        self.fields.assign(world, ents[flow], [r for r, f in zip(reqs, flow) if f], self.period)
        self._ents = ents[~flow]
        self._reqs = [r for r, f in zip(reqs, flow) if not f]
        self._requested = set(self._ents.tolist())
        self._seen = {e: r for e, r in self._seen.items() if e in self._requested}
        self._periods = np.fromiter((self.period_of(r) for r in self._reqs), dtype=np.int64, count=len(self._reqs))
        self._quiet = (0, 0)
        seen = self._seen.get
        for e, r in zip(self._ents.tolist(), self._reqs):
            path = world.try_get(e, Path)
            if seen(e) is not r or path is None or path.status in _IMMEDIATE:
                self._pending.add(e)

    def _forget(self, world: World, gone: np.ndarray) -> None:
        """Drop the despawned entities ``gone`` from the cached request arrays, without a pass
        over every request in Python (and without an esper query, rebuilt in O(entities))."""
        keep = ~np.isin(self._ents, gone)
        if not keep.all():
            self._ents = self._ents[keep]
            self._reqs = [r for r, k in zip(self._reqs, keep) if k]
            self._periods = self._periods[keep]
            self._quiet = (0, 0)
            self._requested = set(self._ents.tolist())
            self._seen = {e: r for e, r in self._seen.items() if e in self._requested}
        self.fields.drop(world, gone)

    def _serve_queue(self, world: World, graph) -> None:
        """Serve the queue's entries oldest first within ``path_budget_per_tick`` (the module
        docstring's "Request queue"); the entries the budget could not serve keep their place."""
        budget = self.path_budget_per_tick
        self._left = budget
        try:
            while len(self.queue) and (self._left is None or self._left > 0):
                entries = self.queue.head(_QUEUE_CHUNK)
                gone, ents, reqs, forced, remember = [], [], [], [], []
                for e, force, orphan in entries:
                    if orphan:
                        req = self._orphan_request(world, e)
                    else:
                        at = int(np.searchsorted(self._ents, e))
                        req = self._reqs[at] if at < self._ents.size and self._ents[at] == e else None
                    if req is None:
                        gone.append(e)  # no longer asking (request taken, entity despawned, path replaced)
                        continue
                    ents.append(e)
                    reqs.append(req)
                    forced.append(force)
                    remember.append(not orphan)
                self.queue.remove(gone)
                if not ents:
                    continue
                ents_arr = np.array(ents, np.int64)
                path_of = {e: world.try_get(e, Path) for e in ents}
                deferred = self._serve_filtered(world, graph, ents_arr, reqs, path_of, np.array(forced, bool),
                                       remember=np.array(remember, bool))
                self.queue.remove(ents_arr[~deferred])
                if deferred.any():
                    break
        finally:
            self._left = None

    @staticmethod
    def _orphan_request(world: World, entity: int) -> PathRequest | None:
        """The request that re-plans a stale once-path given without a PathRequest (to its last
        waypoint), or None when the entity has no such path (any more)."""
        path = world.try_get(entity, Path)
        if (path is None or path.mode != "once" or path.waypoints.shape[0] == 0 or path.status != "stale"
                or not world.table.has(entity)):
            return None
        return PathRequest(goal=tuple(path.waypoints[-1, :2]))

    def _replan_orphans(self, world: World, graph, entities: list[int]) -> None:
        """Stale once-paths given without a PathRequest: re-plan each to its last point (seed
        002: when stuck, re-plan to the path's last node), keeping its radius."""
        ents, reqs = [], []
        for e in entities:
            req = self._orphan_request(world, e)
            if req is None:
                continue
            ents.append(e)
            reqs.append(req)
        if ents:
            path_of = {e: world.try_get(e, Path) for e in ents}
            self._serve_filtered(world, graph, np.array(ents, np.int64), reqs, path_of, np.ones(len(ents), bool),
                        remember=False)

    # --- serving ---------------------------------------------------------------------------------

    def _serve_filtered(self, world: World, graph, ents: np.ndarray, reqs: list[PathRequest], path_of: dict,
                        forced: np.ndarray, remember=True) -> np.ndarray:
        """``_serve``, on the graph weighted by the map's areas (``world.nav_areas``) as each
        entity's ``NavFilter`` sets them (``ecs_nav.nav.areas``): one call per filter, in the
        order given; without areas, ``_serve`` on ``graph``. Returns which entities wait."""
        areas = world.nav_areas
        if areas is None:
            return self._serve(world, graph, ents, reqs, path_of, forced, remember)
        remember = np.broadcast_to(np.asarray(remember, bool), (ents.size,))
        filters = [world.try_get(int(e), NavFilter) for e in ents.tolist()]
        keys = [None if f is None else f.key() for f in filters]
        deferred = np.zeros(ents.size, dtype=bool)
        # under a budget, runs of one filter in queue order (nothing younger goes first); else one
        # call per filter, so requests with one filter and goal still share a search
        if self._left is None:
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
            deferred[at] = self._serve(world, weighted, ents[at], [reqs[i] for i in idx], path_of, forced[at],
                                       remember[at])
            if deferred[at].any():  # the budget ran out: the rest wait too
                for i in (j for later in groups[n + 1:] for j in later):
                    deferred[i] = True
                    self._mark_pending(world, int(ents[i]), path_of.get(int(ents[i])))
                break
        return deferred

    def _serve(self, world: World, graph, ents: np.ndarray, reqs: list[PathRequest], path_of: dict,
               forced: np.ndarray, remember=True) -> np.ndarray:
        """Plan for ``ents``; ``forced``: a new, stale or unplanned request (always rewritten),
        else a periodic replan (which keeps a route that is still as good); ``remember`` (a bool
        or one per entity): note the request as seen. Under a budget (``_left`` not None: the
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
            if req.goal is not None:
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
        budgeted = self._left is not None
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
            searched = self._fields.computed
            distance, next_hop = self._fields.field(graph, goal)
            if self._fields.computed > searched:
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
                if self._left <= 0 or deferred.any():  # oldest first: nothing younger goes ahead
                    deferred[i] = True
                    continue
                cap = self._left if cap is None else min(cap, self._left)
            res = search(graph, int(starts[i]), int(goals[i]), max_expanded=cap,
                         allow_partial=req.allow_partial, trace=bool(ents[i] == traced), **kwargs)
            self.searches += 1
            self.last_searches += 1
            self.last_expanded += res.expanded
            if budgeted:
                self._left -= res.expanded
                cut = (res.status != STATUS_COMPLETE and res.expanded >= cap
                       and (req.max_expanded is None or cap < req.max_expanded))
                if cut and cap < self.path_budget_per_tick:  # stopped by the tick's budget: wait for a fuller one
                    deferred[i] = True
                    continue
            results[i] = (res.nodes, res.status, res.cost)
            if res.expanded_nodes is not None:
                trace.record(res.expanded_nodes, KIND_DIJKSTRA if search is dijkstra else KIND_ASTAR, res.status,
                             world.tick, graph.version)

        own = self._own_nodes(graph, start_xy)
        for i in range(k):
            entity = int(ents[i])
            if deferred[i]:
                self._mark_pending(world, entity, path_of.get(entity))
                continue
            nodes, status, cost = (results[i] if results[i] is not None
                                   else (np.zeros(0, np.int64), STATUS_UNREACHABLE, np.inf))
            path = path_of.get(entity)
            if (not forced[i] and status in (STATUS_COMPLETE, STATUS_PARTIAL) and path is not None
                    and path.status == status
                    and self._still_good(world, graph, path, reqs[i], nodes, cost, int(rows[i]), start_xy[i])):
                self._seen[entity] = reqs[i]
                path.pending = False
                continue
            waypoints = graph.positions[nodes].copy()
            if status == STATUS_COMPLETE and nodes.size:
                goal_point = np.array([goal_xy[i, 0], goal_xy[i, 1],
                                       goal_z[i] if np.isfinite(goal_z[i]) else waypoints[-1, 2]])
                if self._walkable_to_goal(world, graph, waypoints[-1], goal_point):
                    waypoints = np.vstack([waypoints, goal_point])
            pulled = bool(reqs[i].smooth and world.map is not None and waypoints.shape[0] > 1 and has_row[i])
            if pulled:
                # from where the agent stands, its first waypoint (seed 000's path[0]: the follower
                # starts at index 1), each leg clear for the agent's disc widened by the Path's
                # radius: where the follower takes a waypoint as reached within that radius of it,
                # every straight line from there to the next waypoint is clear for the agent (where
                # it took one as reached by crossing the line square to the leg, further out, the
                # periodic replan's line of sight, _in_sight, catches a blocked one)
                here = np.array([[start_xy[i, 0], start_xy[i, 1], start_z[i]]])
                reach = path.radius if path is not None else Path.radius
                waypoints = smooth_path(np.vstack([here, waypoints]), world.map,
                                        radius=float(table.radius[rows[i]]) + float(reach),
                                        max_climb=float(table.max_climb[rows[i]]))
            remaining = np.inf
            if nodes.size and goal_ok[i] and status != STATUS_COMPLETE:
                remaining = float(np.hypot(*(goal_xy[i] - waypoints[-1, :2])))
            # (an agent on a link's start node walks to it first: the link is crossed from there)
            stands = bool(nodes.size and own[i] == nodes[0]) and not (
                world.nav_links is not None and nodes.size > 1
                and world.nav_links.link_between(graph, int(nodes[0]), int(nodes[1])) >= 0)
            self._write(world, entity, path, nodes, waypoints, status, stands, graph.version, remaining, pulled)
            if remember[i]:
                self._seen[entity] = reqs[i]
        self.served += int(k - deferred.sum())
        self.last_served = np.concatenate([self.last_served, ents[~deferred]])
        return deferred

    @staticmethod
    def _mark_pending(world: World, entity: int, path: Path | None) -> None:
        """The entity's request waits in the queue: its Path (an empty one when it has none) says
        so; its route, if any, is kept."""
        if path is None:
            path = world.try_get(entity, Path)
        if path is None:
            path = Path()
            world.add_component(entity, path)
        path.pending = True

    def _still_good(self, world: World, graph, path: Path | None, request: PathRequest, nodes: np.ndarray,
                    cost: float, row: int, agent_xy: np.ndarray) -> bool:
        """Whether a periodic replan keeps the route being walked: it has the new plan's status
        (the caller's test), is on this graph version, is still as good as the new plan
        (``ecs_nav.nav.corridor.still_as_good``, within ``ROUTE_SLACK`` node spacings), and, pulled
        (``request.smooth``), leaves the agent in sight of its waypoint (``_in_sight``)."""
        if path is None or path.graph_version != graph.version or nodes.size == 0:
            return False
        good = still_as_good(graph.indptr, graph.indices, graph.costs, graph.positions,
                             np.asarray(path.nodes, np.int64), np.asarray(path.waypoints, np.float64),
                             int(path.index), int(nodes[0]), int(nodes[-1]), float(cost), float(agent_xy[0]),
                             float(agent_xy[1]), ROUTE_SLACK * graph.grid.spacing)
        return bool(good) and (not request.smooth or self._in_sight(world, path, row))

    @staticmethod
    def _in_sight(world: World, path: Path, row: int) -> bool:
        """Whether the agent of table row ``row`` can walk straight to the waypoint it walks to
        (``ecs_nav.nav.smooth.line_walkable``, with its radius and max_climb): a string-pulled leg
        is long, and an agent pushed off it (over a railing, round a wall's end) may have a wall
        between it and its waypoint, which the length of the route does not show."""
        table = world.table
        if world.map is None or row < 0 or path.waypoints.shape[0] == 0:
            return True
        target = path.waypoints[min(max(int(path.index), 0), path.waypoints.shape[0] - 1)]
        here = (table.pos[row, 0], table.pos[row, 1], table.elevation[row])
        return line_walkable(world.map, here, target, radius=float(table.radius[row]),
                             max_climb=float(table.max_climb[row]))

    @staticmethod
    def _own_nodes(graph, points: np.ndarray) -> np.ndarray:
        """The node slot of the grid cell each point lies in (-1 outside the grid)."""
        g = graph.grid
        col, row = g.cells_of(points)
        inside = (col >= 0) & (col < g.cols) & (row >= 0) & (row < g.rows)
        return np.where(inside, row * g.cols + col, -1)

    @staticmethod
    def _walkable_to_goal(world: World, graph, node_pos: np.ndarray, goal: np.ndarray) -> bool:
        if np.all(np.abs(node_pos - goal) <= 1e-9):
            return False  # the goal is the node itself: no extra waypoint
        if abs(goal[2] - node_pos[2]) > graph.max_climb + 1e-9:
            return False
        if world.map is None:
            return True
        lift = np.array([0.0, 0.0, _GOAL_LIFT])
        return not bool(world.map.segment_blocked(node_pos + lift, goal + lift)[0])

    def _write(self, world: World, entity: int, path: Path | None, nodes: np.ndarray, waypoints: np.ndarray,
               status: str, stands_on_start: bool, version: int, remaining: float, pulled: bool = False) -> None:
        if path is None:
            path = world.try_get(entity, Path)
        previous = None if path is None else path.nodes
        previous_status = None if path is None else path.status
        kept = -1 if previous is None else route_kept(previous, nodes)
        if path is None:
            path = Path()
            world.add_component(entity, path)
        count = waypoints.shape[0]
        if pulled:  # (pulled from the agent's position, its first waypoint: it walks to the second)
            index = 1
        elif kept >= 0 and path.waypoints.shape[0] > 0:
            # the same route from further along: the waypoint being walked keeps its place
            index = min(max(int(path.index) - kept, 0), max(count - 1, 0))
        else:
            index = 1 if stands_on_start and count > 1 else 0
        path.nodes = np.asarray(nodes, dtype=np.int64)
        path.waypoints = np.ascontiguousarray(waypoints, dtype=np.float64).reshape(-1, 3)
        path.index = index
        path.status = status
        path.direction = 1
        path.graph_version = int(version)
        path.pending = False
        if status in (STATUS_COMPLETE, STATUS_PARTIAL) and kept < 0:
            world.emit(PathChanged(entity, status, world.tick))
        if status in (STATUS_PARTIAL, STATUS_UNREACHABLE) and status != previous_status:
            world.emit(PathFailed(entity, status, world.tick, remaining=remaining))

    # --- determinism -----------------------------------------------------------------------------

    def state(self) -> bytes:
        """Which requests have been seen (that decides which are 'new' on a later tick), and the
        flow-field requests (what each field was built toward is the FlowFields' own digest)."""
        return np.array(sorted(self._seen), dtype=np.int64).tobytes() + self.fields.state() + self.queue.state()
