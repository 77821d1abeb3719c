"""The navigation components an entity may carry, plain objects that live in esper only: a
``PathRequest`` (where to go), the ``Path`` the PathfindSystem writes for it, a ``NavFilter``
(which areas its searches avoid or pay for) and the map's ``NavMap`` (the scan's parameters).
``ecs_nav.core.components`` gathers them with the table-bound ones."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from ecs_nav.core.field_checks import check_coordinate, check_length, check_length_or_zero
from ecs_nav.core.limits import (
    COORDINATE_LIMIT,
    INTEGER_LIMIT,
    MAX_FLOORS,
    NAV_NODE_LIMIT,
    WAYPOINT_LIMIT,
    CheckedFields,
    check_value,
)

PATH_STATUSES = ("none", "complete", "partial", "unreachable", "stale")
PATH_MODES = ("once", "patrol", "loop")


PATH_METHODS = ("path", "flow_field")
"""How a PathRequest is served: a Path of its own, or a flow field shared by every request
with the same goal (seed 003)."""


@dataclass
class PathRequest(CheckedFields):
    """Ask the PathfindSystem for a way to a goal: ``goal`` (a point), ``target`` (an entity,
    followed as it moves), ``goals`` (several points: the nearest one counts, e.g. exits) or
    ``zone`` (``[xmin, ymin, xmax, ymax]``, m: anywhere inside counts). Exactly one of them.

    ``method`` "path" (a ``Path`` of the entity's own, seed 000) or "flow_field" (seed 003: one
    field per goal, shared by every request that names the same goal; the entity gets no Path,
    the PathFollowSystem steers it along the field). ``goals`` and ``zone`` need a flow field.
    ``replan_period`` ticks between refreshes (None: the world's ``pathfind_period``, seed
    000's 30): a path is re-planned, a field toward a moving target rebuilt. ``algorithm``
    "astar" or "dijkstra"; ``smooth`` string-pulls a path; ``allow_partial`` returns a path to
    the closest reachable node when the goal is cut off; ``max_expanded`` is a path search's
    budget (None: unlimited). ``despawn_on_arrival`` removes the entity at the end of the tick
    it arrives (an evacuation's exits). ``goal_elevation`` (m, with ``goal`` and a path only):
    which surface over the goal point is meant where there are several (a nav graph of several
    ``floors``: the room under a balcony, the road under a bridge); None, the default: the
    highest.

    Assigning a field of a request that belongs to an entity is reported to its World
    (``World.take_changed_requests``): the PathfindSystem serves it again on its next tick."""

    goal: tuple[float, float] | None = None
    target: int | None = None
    goals: tuple[tuple[float, float], ...] | None = None
    zone: tuple[float, float, float, float] | None = None
    method: str = "path"
    replan_period: int | None = None
    algorithm: str = "astar"
    smooth: bool = False
    allow_partial: bool = True
    max_expanded: int | None = None
    despawn_on_arrival: bool = False
    goal_elevation: float | None = None

    def __post_init__(self):
        given = [name for name in ("goal", "target", "goals", "zone") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("PathRequest: give exactly one of goal (a point), target (an entity), goals (points) "
                             f"or zone ([xmin, ymin, xmax, ymax]); got {', '.join(given) or 'none'}")
        if self.goal is not None:
            x, y = self.goal[0], self.goal[1]
            self.goal = (check_coordinate("PathRequest", "goal", x), check_coordinate("PathRequest", "goal", y))
        if self.goals is not None:
            if len(self.goals) == 0:
                raise ValueError("PathRequest.goals: give at least one point")
            self.goals = tuple((check_coordinate("PathRequest", "goals", x),
                                check_coordinate("PathRequest", "goals", y)) for x, y in self.goals)
        if self.goal_elevation is not None:
            if self.goal is None or self.method != "path":
                raise ValueError("PathRequest.goal_elevation: only with a goal point and method = \"path\"")
            self.goal_elevation = check_coordinate("PathRequest", "goal_elevation", self.goal_elevation)
        if self.zone is not None:
            zone = tuple(check_coordinate("PathRequest", "zone", v) for v in self.zone)
            if not (zone[0] <= zone[2] and zone[1] <= zone[3]):
                raise ValueError(f"PathRequest.zone: must be [xmin, ymin, xmax, ymax] with min <= max, "
                                 f"got {list(zone)}")
            self.zone = zone
        if self.method not in PATH_METHODS:
            raise ValueError(f"PathRequest.method: must be one of {', '.join(PATH_METHODS)}, got {self.method!r}")
        if self.method == "path" and (self.goals is not None or self.zone is not None):
            raise ValueError("PathRequest.method: goals and zone are served by a flow field: "
                             "set method = \"flow_field\"")
        if self.replan_period is not None:
            if isinstance(self.replan_period, bool) or int(self.replan_period) < 1:
                raise ValueError(f"PathRequest.replan_period: must be >= 1, got {self.replan_period!r}")
            self.replan_period = int(self.replan_period)
        if self.algorithm not in ("astar", "dijkstra"):
            raise ValueError(f"PathRequest.algorithm: must be astar or dijkstra, got {self.algorithm!r}")
        if self.max_expanded is not None and int(self.max_expanded) < 1:
            raise ValueError(f"PathRequest.max_expanded: must be >= 1, got {self.max_expanded!r}")

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        owner = self.__dict__.get("_owner")
        if owner is not None and not name.startswith("_"):
            owner[0].add(owner[1])

    def report_to(self, changed: set, entity: int) -> None:
        """From now on, add ``entity`` to ``changed`` whenever a field is assigned (the World
        calls this)."""
        object.__setattr__(self, "_owner", (changed, entity))


@dataclass
class NavFilter(CheckedFields):
    """Which areas of the map (``[[map.area]]``, ``ecs_nav.nav.areas``) an agent's path searches
    avoid or pay for: Detour's ``dtQueryFilter``, Unity's area mask and costs.

    Fields:
        costs: area name → cost multiplier (> 0, at most 1e6) overriding the area's own ``cost``
            for this agent (an agent that pays double on stairs: ``{"stairs": 2.0}``).
        excluded: area names the agent never enters: their nodes are not walkable for its
            searches (an agent standing in one has no start node: its path is unreachable).

    Read when the agent's request is served (a change takes effect at its next re-plan); a name
    that no area of the map has is an error then."""

    costs: dict[str, float] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)

    def __post_init__(self):
        for name, value in self.costs.items():
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not 0 < value <= 1e6):
                raise ValueError(f"NavFilter.costs: the cost of {name!r} must be a number > 0 and at most 1e6, "
                                 f"got {value!r}")

    def key(self) -> tuple:
        """What tells two filters apart (equal keys: the same weighted graph)."""
        return tuple(sorted(self.costs.items())), tuple(sorted(set(self.excluded)))


_PATH_FIELDS = ("nodes", "waypoints", "index", "status", "radius", "mode", "direction", "graph_version")
_PATH_CHECKED = frozenset(_PATH_FIELDS)
_PATH_RELOADED = frozenset(("waypoints", "radius", "mode"))
"""Path fields whose assignment the PathFollowSystem must see (``World.take_rewritten_paths``)."""


def _numbers_only(value, integer: bool = False) -> bool:
    """Whether ``value`` (an array, or lists and tuples of them) holds numbers only (integers
    with ``integer``): no booleans, no text."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in ("iu" if integer else "iuf")
    if isinstance(value, (list, tuple)):
        return all(_numbers_only(v, integer) for v in value)
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    return isinstance(value, kinds) and not isinstance(value, (bool, np.bool_))


def _path_field(name: str, value):
    """``value`` checked (and converted) as Path's field ``name``; ValueError naming it."""
    if name == "nodes":
        try:
            if not _numbers_only(value, integer=True):  # (asarray would take True as 1 and truncate 1.5)
                raise ValueError
            return np.asarray(value, dtype=np.int64).reshape(-1)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"Path.nodes: expected an array of node ids, got {value!r:.80}") from None
    if name == "waypoints":
        try:
            if not _numbers_only(value):  # (asarray would take True as 1.0 and "2" as 2.0)
                raise ValueError
            wp = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise ValueError("Path.waypoints: expected an array of [x, y] or [x, y, elevation] points, got "
                             f"{value!r:.80}") from None
        if wp.size == 0:
            wp = np.zeros((0, 3))
        if wp.ndim == 2 and wp.shape[1] == 2:
            wp = np.hstack([wp, np.zeros((wp.shape[0], 1))])
        if wp.ndim != 2 or wp.shape[1] != 3:
            raise ValueError(f"Path.waypoints: expected an array of [x, y] or [x, y, elevation] points, got shape "
                             f"{wp.shape}")
        if wp.shape[0] > WAYPOINT_LIMIT:
            raise ValueError(f"Path.waypoints: at most {WAYPOINT_LIMIT} waypoints, got {wp.shape[0]}")
        if not np.isfinite(wp).all() or (wp.size and np.abs(wp).max() > COORDINATE_LIMIT):
            raise ValueError(f"Path.waypoints: must be finite numbers at most {COORDINATE_LIMIT:g} in magnitude")
        return wp
    if name in ("index", "direction", "graph_version"):
        if type(value) is not int or abs(value) > INTEGER_LIMIT:  # (a plain int, the followers' writes: as is)
            value = check_value("Path", name, int, value)
        if name == "direction" and value not in (-1, 1):
            raise ValueError(f"Path.direction: must be 1 or -1, got {value!r}")
        return value
    if name in ("status", "mode"):
        allowed = PATH_STATUSES if name == "status" else PATH_MODES
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(f"Path.{name}: must be one of {', '.join(allowed)}, got {value!r}")
        return value
    return check_length("Path", "radius", value)


@dataclass(eq=False)
class Path:
    """A planned route: graph node ids, waypoint positions (k, 3: x, y, elevation), the index
    of the waypoint being walked to, and the plan's status. ``radius`` is seed 004's path
    radius (a waypoint counts as reached within it); ``mode`` once / patrol (ping-pong) / loop.

    Every field assigned is checked as the constructor checks it (a NaN waypoint or radius
    raises, naming the field). Replacing ``waypoints`` with a new array (or list of points) is
    how a route changes: once the Path belongs to an entity of a World, every such assignment,
    and every one of ``radius`` or ``mode``, is reported to that World
    (``World.take_rewritten_paths``), so the PathFollowSystem reloads exactly those paths
    instead of looking at every path every tick. Editing the array in place is not reported.
    Likewise setting ``status = "stale"`` is reported (``World.take_stale_paths``): the
    PathfindSystem re-plans exactly those paths on its next tick.

    ``pending`` (bool, not a constructor argument; False on a new Path) is True while the
    entity's request waits in the PathfindSystem's queue for a search (a per-tick budget, its
    ``path_budget_per_tick``: Unity's ``pathPending``); the route already held is kept meanwhile.
    The PathfindSystem sets it; it is not saved in a scene."""

    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    waypoints: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    index: int = 0
    status: str = "none"
    radius: float = 1.0
    mode: str = "once"
    direction: int = 1
    graph_version: int = -1

    def __post_init__(self):
        for name in _PATH_FIELDS:
            object.__setattr__(self, name, _path_field(name, self.__dict__[name]))
        object.__setattr__(self, "pending", False)
        object.__setattr__(self, "_checked", True)

    def __setattr__(self, name, value):
        if name in _PATH_CHECKED and self.__dict__.get("_checked"):
            value = _path_field(name, value)  # checked where it is set, as the constructor checks it
        object.__setattr__(self, name, value)
        if name in _PATH_RELOADED or (name == "status" and value == "stale"):
            owner = self.__dict__.get("_owner")
            if owner is not None:
                owner[1 if name == "status" else 0].add(owner[2])

    def report_to(self, rewritten: set, stale: set, entity: int) -> None:
        """From now on, add ``entity`` to ``rewritten`` at every ``waypoints``, ``radius`` or
        ``mode`` assignment and to ``stale`` whenever ``status`` is set to ``"stale"`` (the World
        calls this)."""
        self._owner = (rewritten, stale, entity)

    def detached_copy(self) -> Path:
        """A copy with its own arrays, belonging to no entity yet (a crowd member's own Path)."""
        twin = copy.copy(self)
        twin.__dict__.pop("_owner", None)
        object.__setattr__(twin, "nodes", self.nodes.copy())
        object.__setattr__(twin, "waypoints", self.waypoints.copy())
        return twin

    def __eq__(self, other):
        if not isinstance(other, Path):
            return NotImplemented
        return (np.array_equal(self.nodes, other.nodes) and np.array_equal(self.waypoints, other.waypoints)
                and (self.index, self.status, self.radius, self.mode, self.direction)
                == (other.index, other.status, other.radius, other.mode, other.direction))


@dataclass
class NavMap(CheckedFields):
    """Scan parameters of a map (seed 000's AIGraph): half extents and ray height of the scan,
    node spacing, the largest climbable step, the clearance kept from box edges, and the highest
    ledge the scan makes a one-way drop off (m, >= 0; at most ``max_climb``, the default 0: no
    drops), and ``floors``, how many walkable surfaces over one spot the graph holds (1 to ``MAX_FLOORS``, 8; 1,
    the default: the highest only; 2 for a road under a bridge; see ``ecs_nav.nav.build``)."""

    scan_range: tuple[float, float, float] = (40.0, 10.0, 40.0)
    spacing: float = 2.0
    max_climb: float = 0.5
    clearance: float = 1.25
    max_drop: float = 0.0
    floors: int = 1

    def __post_init__(self):
        self.scan_range = tuple(check_length("NavMap", "scan_range", v) for v in self.scan_range)
        self.spacing = check_length("NavMap", "spacing", self.spacing)
        self.max_climb = check_length_or_zero("NavMap", "max_climb", self.max_climb)
        self.clearance = check_length_or_zero("NavMap", "clearance", self.clearance)
        self.max_drop = check_length_or_zero("NavMap", "max_drop", self.max_drop)
        if isinstance(self.floors, bool) or not isinstance(self.floors, int) or not 1 <= self.floors <= MAX_FLOORS:
            raise ValueError(f"NavMap.floors: must be an integer from 1 to {MAX_FLOORS}, got {self.floors!r}")
        if self.spacing > 2 * min(self.scan_range[0], self.scan_range[2]):
            raise ValueError(f"NavMap.spacing: must be at most the scanned width and depth (twice scan_range's x "
                             f"and z, {2 * min(self.scan_range[0], self.scan_range[2]):g}), got {self.spacing!r}")
        nodes = self.node_slots()
        if nodes > NAV_NODE_LIMIT:
            floors = f" on {self.floors} floors" if self.floors > 1 else ""
            raise ValueError(f"NavMap.spacing: {self.spacing:g} over scan_range {list(self.scan_range)}{floors} makes "
                             f"{nodes:.3g} node slots, more than the {NAV_NODE_LIMIT} allowed (raise the spacing)")

    def node_slots(self) -> float:
        """How many node slots the scan has, every floor's (as the nav graph counts them)."""
        return self.floors * nav_node_slots(2 * self.scan_range[0], 2 * self.scan_range[2], self.spacing)


def nav_node_slots(width: float, depth: float, spacing: float) -> float:
    """Node slots of a scan ``width`` x ``depth`` at ``spacing`` (a float: it may be huge)."""
    return float(math.floor(width / spacing + 1e-9)) * float(math.floor(depth / spacing + 1e-9))
