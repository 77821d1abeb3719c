"""Shared flow fields: one field per goal, kept for every request that names that goal.

A World's ``resources[FIELDS]`` holds a ``FlowFields``: the PathfindSystem asks it for the field
of each flow-field ``PathRequest`` (``field_for``), builds and refreshes those fields, and drops
the ones nobody has used for a while (``evict``); the PathFollowSystem samples them. Requests
share a field when they name the same goal: the same point, the same set of points (exits), the
same zone, or the same target entity.

A field's life:
- built when first asked for;
- rebuilt at once when the nav graph changes under it (``FlowField.is_current``);
- toward a target entity, rebuilt when the target stands on another node, at most once per
  replan period (throttled like paths);
- evicted after ``unused_ticks`` ticks without a request naming it.

Goal nodes are chosen by the PathfindSystem, which knows the map: a point's node is the walkable
node nearest to it at its surface height; a zone's are the walkable nodes inside it (or the one
nearest its centre when none is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.nav.flowfield import FlowField

FIELDS = "flow_fields"
"""The key of a World's ``FlowFields`` in ``world.resources``."""

UNUSED_TICKS = 600
"""A field no request has named for this many ticks is dropped (10 s at 60 Hz)."""


@dataclass(frozen=True)
class FieldGoal:
    """What a field leads to: ``points`` (one or more goal points), a ``zone`` ([xmin, ymin,
    xmax, ymax]) or a target ``entity``, over the nav graph weighted by the area costs that
    ``area_filter`` sets (a ``NavFilter.key()``; None: the map's own costs). Equal goals share
    one field; requests with different filters get different fields."""

    points: tuple[tuple[float, float], ...] = ()
    zone: tuple[float, float, float, float] | None = None
    entity: int = -1
    area_filter: tuple | None = None

    @staticmethod
    def of(request, area_filter: tuple | None = None) -> FieldGoal:
        """The goal a ``PathRequest`` names, for an agent whose ``NavFilter`` key is ``area_filter``."""
        if request.target is not None:
            return FieldGoal(entity=int(request.target), area_filter=area_filter)
        if request.zone is not None:
            return FieldGoal(zone=tuple(float(v) for v in request.zone), area_filter=area_filter)
        points = (request.goal,) if request.goal is not None else request.goals
        return FieldGoal(points=tuple((float(x), float(y)) for x, y in points), area_filter=area_filter)

    def graph(self, graph, areas):
        """The graph this goal's field is built on: ``graph`` weighted by ``areas`` (a NavAreas,
        or None: ``graph`` itself) as the filter sets the costs. ValueError naming an area the
        map does not have."""
        if areas is None:
            return graph
        costs, excluded = self.area_filter if self.area_filter is not None else ((), ())
        try:
            return areas.graph_for(graph, dict(costs), excluded)
        except KeyError as exc:
            raise ValueError(f"flow field toward {self.describe()}: {exc.args[0]}") from None

    def describe(self) -> str:
        """The goal as a person would write it: ``(x, y)``, ``3 points``, ``zone [...]``, ``entity N``."""
        if self.entity >= 0:
            return f"entity {self.entity}"
        if self.zone is not None:
            return "zone [" + ", ".join(f"{v:g}" for v in self.zone) + "]"
        if len(self.points) == 1:
            return f"({self.points[0][0]:g}, {self.points[0][1]:g})"
        return "goals " + ", ".join(f"({x:g}, {y:g})" for x, y in self.points)

    def contains(self, points: np.ndarray) -> np.ndarray:
        """(k,) bool: which (k, 2) points lie in the zone (all False for other goals)."""
        if self.zone is None:
            return np.zeros(len(points), bool)
        x0, y0, x1, y1 = self.zone
        return (points[:, 0] >= x0) & (points[:, 0] <= x1) & (points[:, 1] >= y0) & (points[:, 1] <= y1)


@dataclass
class SharedField:
    """One field and its bookkeeping.

    Attributes:
        id: its number (>= 0), as written in the agent table's ``field_id`` column.
        goal: what it leads to.
        flow: the FlowField (None until first built).
        goal_nodes: (k,) int64 goal nodes it was built for.
        goal_points: (k, 2) float64 the points those nodes stand for (where agents end up).
        built_tick: the tick of its last build (-1: never).
        checked_tick: the tick its goal was last looked at (a moving target: once a period).
        users: how many requests named it at the last count.
        unused_since: the tick it lost its last user (-1: in use).
        arrivals: (k,) int64 arrivals counted at each goal point (the nearest one to the agent).
    """

    id: int
    goal: FieldGoal
    flow: FlowField | None = None
    goal_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    goal_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    built_tick: int = -1
    checked_tick: int = -1
    users: int = 0
    unused_since: int = -1
    arrivals: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def build(self, graph, nodes: np.ndarray, points: np.ndarray, tick: int) -> bool:
        """(Re)build toward ``nodes`` standing for ``points``; returns whether anything changed
        (a rebuild with the same graph, nodes and points keeps the field as it is)."""
        nodes = np.asarray(nodes, np.int64)
        points = np.asarray(points, np.float64).reshape(-1, 2)
        if self.flow is None:
            self.flow = FlowField(graph, nodes, points)
        else:
            before = (self.flow.graph_key, self.flow.goals.copy(), self.flow.goal_points.copy())
            self.flow.rebuild(graph, nodes, points)
            if (before[0] == self.flow.graph_key and np.array_equal(before[1], self.flow.goals)
                    and np.array_equal(before[2], self.flow.goal_points)):
                return False
        self.goal_nodes = self.flow.goals
        self.goal_points = self.flow.goal_points
        if self.arrivals.shape[0] != self.goal_points.shape[0]:
            self.arrivals = np.zeros(self.goal_points.shape[0], np.int64)
        self.built_tick = self.checked_tick = tick
        return True

    def node_directions(self, graph) -> np.ndarray:
        """(n, 2) the field's direction at every node slot (zero where no goal is reachable), for
        drawing its arrows; computed once per build."""
        if self.flow is None:
            return np.zeros((graph.node_count, 2))
        cached = self.__dict__.get("_node_directions")
        if cached is None or cached[0] != (self.built_tick, self.flow.graph_key):
            out = np.zeros((graph.node_count, 2))
            ok = np.flatnonzero(np.isfinite(self.flow.distance))
            if ok.size:
                out[ok] = self.flow.sample(graph.positions[ok, :2])[0]
            cached = (self.built_tick, self.flow.graph_key), out
            self.__dict__["_node_directions"] = cached
        return cached[1]

    def count_arrivals(self, points: np.ndarray) -> None:
        """Count arrivals at (k, 2) ``points``, each at its nearest goal point."""
        if points.shape[0] == 0 or self.goal_points.shape[0] == 0:
            return
        d = ((points[:, None, :] - self.goal_points[None, :, :]) ** 2).sum(axis=2)
        self.arrivals += np.bincount(np.argmin(d, axis=1), minlength=self.goal_points.shape[0])


def goal_nodes(goal: FieldGoal, graph, table, geometry=None) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, points): the walkable goal nodes of ``goal`` on ``graph`` and the (k, 2) points
    they stand for. A point's node is the walkable node nearest to it at its surface height on
    ``geometry`` (a MapGeometry; floor 0 without one), else the nearest at any height; a zone's
    are the walkable nodes inside it, else the one nearest its centre; a target entity's is the
    node nearest where it stands (``table``: the agent table), none when it has no row."""
    if goal.entity >= 0:
        if not table.has(goal.entity):
            return np.zeros(0, np.int64), np.zeros((0, 2))
        row = table.row_of(goal.entity)
        points = table.pos[row : row + 1].copy()
        heights = table.elevation[row : row + 1].copy()
    elif goal.zone is not None:
        x0, y0, x1, y1 = goal.zone
        xy = graph.positions[:, :2]
        inside = graph.walkable & (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
        nodes = np.flatnonzero(inside).astype(np.int64)
        if nodes.size:
            return nodes, graph.positions[nodes, :2].copy()
        points = np.array([[(x0 + x1) / 2, (y0 + y1) / 2]])
        heights = None
    else:
        points = np.array(goal.points, dtype=np.float64).reshape(-1, 2)
        heights = None
    if heights is None:
        heights = geometry.surface_height(points) if geometry is not None else np.zeros(len(points))
        heights = np.where(np.isfinite(heights), heights, 0.0)
    nodes = graph.nearest_nodes(points, heights)
    retry = nodes < 0
    if retry.any():
        nodes[retry] = graph.nearest_nodes(points[retry])
    keep = nodes >= 0
    return nodes[keep].astype(np.int64), points[keep]


class FlowFields:
    """The shared fields of one World (``world.resources[FIELDS]``); see the module doc.

    Attributes:
        fields: field id -> SharedField, in the order they were made.
        builds: how many builds and rebuilds have run (for tests and benchmarks).
    """

    def __init__(self, unused_ticks: int = UNUSED_TICKS):
        if int(unused_ticks) < 1:
            raise ValueError(f"FlowFields.unused_ticks: must be >= 1, got {unused_ticks!r}")
        self.unused_ticks = int(unused_ticks)
        self.fields: dict[int, SharedField] = {}
        self._by_goal: dict[FieldGoal, int] = {}
        self._next_id = 0
        self.builds = 0

    def field_for(self, goal: FieldGoal) -> SharedField:
        """The field leading to ``goal``, made (not yet built) when there is none."""
        fid = self._by_goal.get(goal)
        if fid is None:
            fid = self._next_id
            self._next_id += 1
            self.fields[fid] = SharedField(fid, goal)
            self._by_goal[goal] = fid
        return self.fields[fid]

    def get(self, field_id: int) -> SharedField | None:
        return self.fields.get(int(field_id))

    def shown(self, field_ids=()) -> SharedField | None:
        """The field to draw: the first built one of ``field_ids`` (a selected agent's), else
        the built field with the most users."""
        for fid in field_ids:
            shared = self.fields.get(int(fid))
            if shared is not None and shared.flow is not None:
                return shared
        built = [s for s in self.fields.values() if s.flow is not None]
        return max(built, key=lambda s: (s.users, -s.id)) if built else None

    def count_users(self, field_ids: np.ndarray, tick: int) -> None:
        """Record how many requests name each field (``field_ids``: one entry per request)."""
        ids, counts = np.unique(np.asarray(field_ids, np.int64), return_counts=True)
        users = dict(zip(ids.tolist(), counts.tolist()))
        for fid, shared in self.fields.items():
            shared.users = users.get(fid, 0)
            if shared.users:
                shared.unused_since = -1
            elif shared.unused_since < 0:
                shared.unused_since = tick

    def evict(self, tick: int) -> list[int]:
        """Drop the fields unused for ``unused_ticks``; returns their ids."""
        gone = [fid for fid, s in self.fields.items()
                if s.users == 0 and s.unused_since >= 0 and tick - s.unused_since >= self.unused_ticks]
        for fid in gone:
            del self._by_goal[self.fields.pop(fid).goal]
        return gone

    def digest_bytes(self) -> bytes:
        """Bytes of what the simulation depends on (``World.state_digest`` hashes the
        ``digest_bytes`` of every resource): each field's id, build tick, users, goal nodes."""
        parts = []
        for fid, s in self.fields.items():
            parts.append(np.array([fid, s.built_tick, s.users], np.int64).tobytes())
            parts.append(s.goal_nodes.tobytes())
        return b"".join(parts)


@kernel
def steer_along(rows, pos, direction, dist, goal_dist, follow_state, despawn_on_arrival, stopping_distance,
                min_ahead, max_ahead, steer_target, has_steer_target):
    """The flow-field follower's per-row step over the agent table's ``rows`` (k,), from each
    row's field sample (``direction`` (k, 2), ``dist`` and ``goal_dist`` (k,)): a row that
    reaches a goal and is not STOPPED walks: ``steer_target = pos + direction * ahead`` with
    ``ahead`` = ``dist`` clamped to [``min_ahead``, ``max_ahead``], ``follow_state`` SEEK (it
    leaves on arrival) or ARRIVE; ``has_steer_target`` = walking or stopped. Columns updated in
    place. Returns (reach, stopped, walking, arrive) (k,) bool, ``arrive`` = walking and
    ``goal_dist <= stopping_distance``."""
    k = rows.size
    reach = np.empty(k, np.bool_)
    stopped = np.empty(k, np.bool_)
    walking = np.empty(k, np.bool_)
    arrive = np.empty(k, np.bool_)
    for m in range(k):
        i = rows[m]
        reach[m] = math.isfinite(dist[m])
        stopped[m] = follow_state[i] == FOLLOW_STOPPED
        walking[m] = reach[m] and not stopped[m]
        has_steer_target[i] = walking[m] or stopped[m]
        arrive[m] = False
        if walking[m]:
            ahead = min(max(dist[m], min_ahead), max_ahead)
            steer_target[i, 0] = pos[i, 0] + direction[m, 0] * ahead
            steer_target[i, 1] = pos[i, 1] + direction[m, 1] * ahead
            follow_state[i] = FOLLOW_SEEK if despawn_on_arrival[i] else FOLLOW_ARRIVE
            arrive[m] = goal_dist[m] <= stopping_distance[i]
    return reach, stopped, walking, arrive
