"""Area costs: parts of the floor that cost more (or less) to cross, and per-agent filters.

Detour's area ids with ``dtQueryFilter`` costs and exclude flags, Unity's area mask and area
costs, Godot's ``navigation_layers``. An area (``NavArea``: a box or a polygon in the ground
plane, with a ``name`` and a ``cost`` multiplier) marks every graph node whose (x, y) lies in it;
where areas overlap, the one listed last wins; a node in none has multiplier 1. An area is thus
the cells of its nodes: an agent walking by it on outside nodes, anywhere in their cells, may
have its centre up to half a node spacing inside it.

An agent's ``NavFilter`` (``ecs_nav.core.components``) overrides multipliers by area name and
excludes areas. Its searches run on ``weighted_graph``: each walk or drop edge a → b costs its
length times the mean of its two nodes' multipliers, ``cost * (m[a] + m[b]) / 2`` (half the step
lies in each node's cell); an off-mesh link keeps its own cost; a node of an excluded area is
not walkable and loses its edges. The A* heuristic stays consistent whatever the multipliers:
``ecs_nav.nav.search.admissibility_factor`` scales it to the cheapest edge per metre, so a
multiplier below 1 (a road to prefer) keeps paths exact but lets A* expand more nodes (up to
Dijkstra's count when it approaches 0); at 1 or above A* is as quick as on the plain graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.core.limits import COORDINATE_LIMIT
from ecs_nav.nav.graph import EDGE_LINK, NavGraph

COST_LIMIT = 1e6
"""The largest area cost multiplier."""


def _point(value, where: str) -> tuple[float, float]:
    try:
        x, y = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected [x, y] (m), got {value!r}") from None
    if not (math.isfinite(x) and math.isfinite(y) and max(abs(x), abs(y)) <= COORDINATE_LIMIT):
        raise ValueError(f"{where}: expected finite numbers at most {COORDINATE_LIMIT:g} in magnitude, got {value!r}")
    return x, y


def check_cost(value, where: str) -> float:
    """``value`` as an area cost multiplier (a number > 0, at most COST_LIMIT); ValueError naming ``where``."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(value) or not 0 < value <= COST_LIMIT):
        raise ValueError(f"{where}: must be a number > 0 and at most {COST_LIMIT:g}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class NavArea:
    """One area of the floor.

    Attributes:
        name: the area's name, which ``NavFilter`` uses (several shapes may share one name).
        cost: the multiplier of the cost of walking in it (> 0, at most 1e6; 1: as the plain
            floor). Below 1 paths stay exact but A* expands more nodes (see the module docstring).
        center, size: [x, y] and [w, d], m: an axis-aligned box (with ``size`` > 0);
        polygon: [[x, y], ...], m: a simple polygon of at least 3 corners (even-odd rule);
            give a box or a polygon, not both.
    """

    name: str
    cost: float = 1.0
    center: tuple[float, ...] | None = None
    size: tuple[float, ...] | None = None
    polygon: tuple[tuple[float, ...], ...] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"NavArea.name: expected a non-empty string, got {self.name!r}")
        object.__setattr__(self, "cost", check_cost(self.cost, "NavArea.cost"))
        box = self.center is not None or self.size is not None
        if box == (self.polygon is not None):
            raise ValueError("NavArea.polygon: give either center and size (a box) or polygon, not both nor neither")
        if box:
            if self.center is None or self.size is None:
                raise ValueError("NavArea.size: a box needs both center and size")
            object.__setattr__(self, "center", _point(self.center, "NavArea.center"))
            size = _point(self.size, "NavArea.size")
            if min(size) <= 0:
                raise ValueError(f"NavArea.size: must be > 0, got {list(size)}")
            object.__setattr__(self, "size", size)
        else:
            corners = tuple(_point(p, f"NavArea.polygon[{i}]") for i, p in enumerate(self.polygon))
            if len(corners) < 3:
                raise ValueError(f"NavArea.polygon: needs at least 3 corners, got {len(corners)}")
            object.__setattr__(self, "polygon", corners)

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """(k,) bool: which of the (k, 2) points lie in the area (a box's edges included)."""
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        if self.polygon is None:
            (cx, cy), (w, d) = self.center, self.size
            return (np.abs(xy[:, 0] - cx) <= w / 2) & (np.abs(xy[:, 1] - cy) <= d / 2)
        poly = np.asarray(self.polygon)
        x, y = xy[:, 0:1], xy[:, 1:2]
        x0, y0 = poly[:, 0], poly[:, 1]
        x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
        crosses = (y0 > y) != (y1 > y)  # edges that straddle each point's horizontal line (even-odd rule)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
        return (np.count_nonzero(crosses & (x < at), axis=1) % 2) == 1


class NavAreas:
    """A map's areas, the area of each graph node, and the weighted graphs of the filters in use
    (both cached until the graph changes: ``NavGraph.cache_key``)."""

    def __init__(self, areas) -> None:
        self.areas: tuple[NavArea, ...] = tuple(areas)
        for i, area in enumerate(self.areas):
            if not isinstance(area, NavArea):
                raise TypeError(f"NavAreas: area {i} is a {type(area).__name__}, not a NavArea")
        self.names = tuple(dict.fromkeys(a.name for a in self.areas))
        self._key: tuple | None = None
        self._node_area: np.ndarray | None = None
        self._graphs: dict[tuple, NavGraph] = {}

    def node_areas(self, graph: NavGraph) -> np.ndarray:
        """(n,) int64: the index (into ``areas``) of each node's area, -1 where it is in none."""
        key = graph.cache_key()
        if key != self._key or self._node_area is None:
            node_area = np.full(graph.node_count, -1, np.int64)
            xy = graph.positions[:, :2]
            for i, area in enumerate(self.areas):
                node_area[area.contains(xy)] = i
            self._key, self._node_area, self._graphs = key, node_area, {}
        return self._node_area

    def multipliers(self, costs: dict | None = None, excluded=()) -> np.ndarray:
        """(len(areas) + 1,) the multiplier of each area (its ``cost``, or ``costs[name]``), inf
        for an excluded one; the last entry, 1, is for nodes in no area. KeyError naming an area
        that no area has."""
        costs = dict(costs or {})
        for name in list(costs) + list(excluded):
            if name not in self.names:
                raise KeyError(f"NavFilter: no area named {name!r} "
                               f"(the map's areas: {', '.join(self.names) or 'none'})")
        out = np.ones(len(self.areas) + 1)
        for i, area in enumerate(self.areas):
            out[i] = np.inf if area.name in excluded else costs.get(area.name, area.cost)
        return out

    def graph_for(self, graph: NavGraph, costs: dict | None = None, excluded=()) -> NavGraph:
        """``graph`` weighted by the areas' costs as the filter (``costs``, ``excluded``) sets
        them (``weighted_graph``); the same object while ``graph`` and the filter are."""
        node_area = self.node_areas(graph)
        key = (tuple(sorted((costs or {}).items())), tuple(sorted(excluded)))
        out = self._graphs.get(key)
        if out is None:
            out = self._graphs[key] = weighted_graph(graph, self.multipliers(costs, excluded)[node_area])
        return out


def weighted_graph(graph: NavGraph, node_multiplier: np.ndarray) -> NavGraph:
    """``graph`` with each walk or drop edge a → b costing ``cost * (m[a] + m[b]) / 2`` (``m`` =
    ``node_multiplier``, (n,) > 0 or inf); off-mesh links keep their cost; nodes with an infinite
    multiplier are not walkable and have no edges. Same node ids, positions and ``version``; the
    result's ``node_multiplier`` is ``m``."""
    m = np.asarray(node_multiplier, np.float64).reshape(-1)
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    keep = np.isfinite(m[src]) & np.isfinite(m[dst])
    scale = np.where(graph.kinds == EDGE_LINK, 1.0, (m[src] + m[dst]) / 2)
    walkable = graph.walkable & np.isfinite(m)
    out = NavGraph.from_edges(graph.positions, walkable, src[keep], dst[keep], (graph.costs * scale)[keep],
                              graph.grid, kinds=graph.kinds[keep], max_climb=graph.max_climb, version=graph.version)
    out.node_multiplier = m
    return out
