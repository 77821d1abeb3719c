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

Where the work is done: this module decides which requests are served on a tick (change
detection, periods, the queue, stale paths without a request); ``systems/path_serve.py`` (a
``PathServer``, the system's ``server``) serves each batch (start and goal, searches, area
filters) and keeps the counters, which the system's attributes of the same names read and write;
``systems/path_write.py`` writes each route as a Path, with its events.
"""

from __future__ import annotations

import numpy as np
from ecs_nav.systems.field_requests import FieldRequests
from ecs_nav.systems.path_queue import PathQueue
from ecs_nav.systems.path_serve import PathServer
from ecs_nav.systems.platformer_stage import serve_requests

from ecs_nav.core.components import NavFilter, Path, PathRequest
from ecs_nav.core.system import System
from ecs_nav.core.world import World

_IMMEDIATE = ("stale", "none")
_QUEUE_CHUNK = 256
"""Queue entries handed to one ``PathServer.serve`` call (its per-call work is vectorised over them)."""


def _kept_by_server(name: str) -> property:
    """The system's attribute ``name``, kept by its ``PathServer`` (``server``)."""
    return property(lambda self: getattr(self.server, name), lambda self, value: setattr(self.server, name, value))


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
    heuristic = _kept_by_server("heuristic")
    searches = _kept_by_server("searches")
    field_searches = _kept_by_server("field_searches")
    served = _kept_by_server("served")
    last_served = _kept_by_server("last_served")
    last_searches = _kept_by_server("last_searches")
    last_expanded = _kept_by_server("last_expanded")

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
        # serves a batch of requests and keeps the counters (systems/path_serve.py)
        self.server = PathServer(heuristic)
        self._structure = (-1, -1)  # the World's structure versions of PathRequest and Path when last read
        self._despawn_cursor = 0
        self._ents = np.zeros(0, dtype=np.int64)
        self._reqs: list[PathRequest] = []
        self._periods = np.zeros(0, dtype=np.int64)
        self._quiet = (0, 0)  # ticks [from, until) on which no request falls due by its period
        self._requested: set[int] = set()
        self._pending: set[int] = set()  # entities to serve on this tick whatever their period
        self.fields = FieldRequests()  # the flow-field requests (systems/field_requests.py)

    def period_of(self, request: PathRequest) -> int:
        """The replan period that applies to ``request``."""
        return self.period if request.replan_period is None else request.replan_period

    # --- the tick --------------------------------------------------------------------------------

    def update(self, world: World) -> None:
        serve_requests(world, self.period)  # side-view bots' requests: systems/platformer_stage.py
        self.server.begin_tick()
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
            self.server.serve(world, graph, ents[serve], [reqs[i] for i in serve], path_of, forced)
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
        self.server.seen = {e: r for e, r in self.server.seen.items() if e in self._requested}
        self._periods = np.fromiter((self.period_of(r) for r in self._reqs), dtype=np.int64, count=len(self._reqs))
        self._quiet = (0, 0)
        seen = self.server.seen.get
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
            self.server.seen = {e: r for e, r in self.server.seen.items() if e in self._requested}
        self.fields.drop(world, gone)

    def _serve_queue(self, world: World, graph) -> None:
        """Serve the queue's entries oldest first within ``path_budget_per_tick`` (the module
        docstring's "Request queue"); the entries the budget could not serve keep their place."""
        server = self.server
        server.tick_budget = server.budget_left = self.path_budget_per_tick
        try:
            while len(self.queue) and (server.budget_left is None or server.budget_left > 0):
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
                deferred = server.serve(world, graph, ents_arr, reqs, path_of, np.array(forced, bool),
                                        remember=np.array(remember, bool))
                self.queue.remove(ents_arr[~deferred])
                if deferred.any():
                    break
        finally:
            server.tick_budget = server.budget_left = None

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
            self.server.serve(world, graph, np.array(ents, np.int64), reqs, path_of, np.ones(len(ents), bool),
                              remember=False)

    # --- determinism -----------------------------------------------------------------------------

    def state(self) -> bytes:
        """Which requests have been seen (that decides which are 'new' on a later tick), and the
        flow-field requests (what each field was built toward is the FlowFields' own digest)."""
        return np.array(sorted(self.server.seen), dtype=np.int64).tobytes() + self.fields.state() + self.queue.state()
