"""Off-mesh links: declared connections the walk scan cannot find (a jump, a drop, a ladder, a
door, a teleporter), as Detour's off-mesh connections, Unity's NavMeshLink and Godot's
NavigationLink.

A link joins its ``start`` point to its ``end`` point; the graph gets an ``EDGE_LINK`` edge from
the walkable node nearest ``start`` to the one nearest ``end`` (and back when
``bidirectional``), at the link's ``cost``. Agents cross it as a link, at its own ``speed`` and
along its own shape (``ecs_nav.motion.link_motion``), not by walking.

``NavLinks`` holds a map's links and which are enabled (a closed door is a disabled link);
``apply`` gives the graph with exactly the enabled links' edges, which the GraphBuildSystem
calls after every build and rebuild and whenever a link is enabled or disabled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.core.limits import COORDINATE_LIMIT
from ecs_nav.nav.graph import EDGE_LINK, NavGraph

LINK_KINDS = ("jump", "drop", "ladder", "door", "teleport")
"""What a link is; it decides the shape of a crossing (``ecs_nav.motion.link_motion``)."""


@dataclass(frozen=True)
class OffMeshLink:
    """One off-mesh link.

    Attributes:
        start: (x, y) or (x, y, elevation) m: where the link begins. Without an elevation the
            link's node is the walkable node nearest the point at the surface height there.
        end: (x, y) or (x, y, elevation) m: where it lands.
        bidirectional: False: start → end only (a drop, a one-way teleporter); True: both ways.
        cost: the edge's path cost (> 0, the units of the graph's costs, m of walking); None: the
            3D distance between the two nodes it joins.
        kind: one of ``LINK_KINDS``.
        width: m (>= 0): the width of the link's start and end (a wide door, a ledge); an agent
            keeps its sideways offset from the link's line, up to half the width, as it crosses.
        speed: m/s (> 0) along the crossing's path; None: the agent's ``max_speed``. A teleport
            is instant whatever its speed.
    """

    start: tuple[float, ...]
    end: tuple[float, ...]
    bidirectional: bool = False
    cost: float | None = None
    kind: str = "jump"
    width: float = 0.0
    speed: float | None = None

    def __post_init__(self):
        for name in ("start", "end"):
            value = getattr(self, name)
            try:
                point = tuple(float(v) for v in value)
            except (TypeError, ValueError):
                raise ValueError(f"OffMeshLink.{name}: expected [x, y] or [x, y, elevation] (m), "
                                 f"got {value!r}") from None
            if len(point) not in (2, 3) or not all(math.isfinite(v) and abs(v) <= COORDINATE_LIMIT for v in point):
                raise ValueError(f"OffMeshLink.{name}: expected [x, y] or [x, y, elevation], finite numbers at most "
                                 f"{COORDINATE_LIMIT:g} in magnitude (m), got {value!r}")
            object.__setattr__(self, name, point)
        if self.start[:2] == self.end[:2] and self.start[2:] == self.end[2:]:
            raise ValueError(f"OffMeshLink.end: must differ from start, both are {list(self.start)}")
        if self.kind not in LINK_KINDS:
            raise ValueError(f"OffMeshLink.kind: must be one of {', '.join(LINK_KINDS)}, got {self.kind!r}")
        if not isinstance(self.bidirectional, (bool, np.bool_)):
            raise ValueError(f"OffMeshLink.bidirectional: expected true or false, got {self.bidirectional!r}")
        object.__setattr__(self, "bidirectional", bool(self.bidirectional))
        for name, low_ok in (("cost", False), ("width", True), ("speed", False)):
            value = getattr(self, name)
            if value is None and name != "width":
                continue
            if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
                    or not math.isfinite(value) or value < 0 or (value == 0 and not low_ok)
                    or value > COORDINATE_LIMIT):
                need = ">= 0" if low_ok else "> 0"
                raise ValueError(f"OffMeshLink.{name}: must be a finite number {need} (at most {COORDINATE_LIMIT:g}), "
                                 f"got {value!r}")
            object.__setattr__(self, name, float(value))


class NavLinks:
    """A map's off-mesh links, which of them are enabled, and their graph nodes.

    ``version`` goes up at every ``set_enabled`` that changes something, so the GraphBuildSystem
    can tell when to re-apply them. ``nodes`` ((k, 2) int64: start node, end node; -1 where a
    link has no walkable node within reach) is set by ``apply``."""

    def __init__(self, links) -> None:
        self.links: tuple[OffMeshLink, ...] = tuple(links)
        for i, link in enumerate(self.links):
            if not isinstance(link, OffMeshLink):
                raise TypeError(f"NavLinks: link {i} is a {type(link).__name__}, not an OffMeshLink")
        self.enabled = np.ones(len(self.links), dtype=bool)
        self.bidirectional = np.array([link.bidirectional for link in self.links], dtype=bool)
        self.widths = np.array([link.width for link in self.links], dtype=np.float64)  # m
        self.nodes = np.full((len(self.links), 2), -1, dtype=np.int64)
        self.version = 0
        self.applied = np.zeros(0, np.int64)  # keys (src * 2**32 + dst) of the edges the last apply added
        self._steps: tuple | None = None  # (key, {(a, b): link}) for link_between

    def __len__(self) -> int:
        return len(self.links)

    def set_enabled(self, index: int, enabled: bool) -> None:
        """Enable or disable link ``index`` (a door opened or closed). Paths through a disabled
        link go stale and are re-planned on the next tick."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.links):
            raise IndexError(f"set_link_enabled: no link {index!r} (the map has {len(self.links)})")
        if bool(self.enabled[index]) != bool(enabled):
            self.enabled[index] = bool(enabled)
            self.version += 1

    def snap(self, graph: NavGraph, surface_height=None) -> None:
        """Find each link's start and end nodes on ``graph`` (``nodes``): the walkable node
        nearest each point at its elevation (given, else ``surface_height(points)``, else any)."""
        k = len(self.links)
        if k == 0:
            return
        for column, name in enumerate(("start", "end")):
            points = np.array([getattr(link, name)[:2] for link in self.links], dtype=np.float64)
            given = np.array([len(getattr(link, name)) == 3 for link in self.links])
            z = np.array([getattr(link, name)[2] if g else np.nan for link, g in zip(self.links, given)])
            if surface_height is not None and not given.all():
                z[~given] = surface_height(points[~given])
            known = np.isfinite(z)
            nodes = np.full(k, -1, dtype=np.int64)
            if known.any():
                nodes[known] = graph.nearest_nodes(points[known], z[known])
            if (~known).any():
                nodes[~known] = graph.nearest_nodes(points[~known])
            self.nodes[:, column] = nodes

    def edges(self, graph: NavGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The enabled links' edges on ``graph`` (after ``snap``): (src, dst, cost, link index),
        a bidirectional link giving two. Links without both nodes, or whose nodes coincide,
        give none."""
        src, dst, cost, owner = [], [], [], []
        for i, link in enumerate(self.links):
            a, b = (int(v) for v in self.nodes[i])
            if not self.enabled[i] or a < 0 or b < 0 or a == b:
                continue
            c = link.cost if link.cost is not None else float(np.linalg.norm(graph.positions[b] - graph.positions[a]))
            for u, v in ((a, b), (b, a)) if link.bidirectional else ((a, b),):
                src.append(u)
                dst.append(v)
                cost.append(c)
                owner.append(i)
        return (np.array(src, np.int64), np.array(dst, np.int64), np.array(cost, np.float64),
                np.array(owner, np.int64))

    def pairs(self) -> np.ndarray:
        """(m,) int64 keys ``src * 2**32 + dst`` of every link's node pairs, both ways, enabled
        or not: the edges ``apply`` owns."""
        a, b = self.nodes[:, 0], self.nodes[:, 1]
        ok = (a >= 0) & (b >= 0)
        return np.concatenate([a[ok] * 2**32 + b[ok], b[ok] * 2**32 + a[ok]])

    def apply(self, graph: NavGraph, surface_height=None, version: int | None = None) -> NavGraph:
        """``graph`` with the link edges of exactly the enabled links (edges of a link's node
        pair that it had, of any kind but walking, are replaced): a new graph of ``version``
        (default: ``graph.version + 1``), or ``graph`` itself when nothing changes."""
        self.snap(graph, surface_height)
        src_old = graph.edge_sources()
        dst_old = graph.indices.astype(np.int64)
        owned = (np.isin(src_old * 2**32 + dst_old, np.concatenate([self.pairs(), self.applied]))
                 & (graph.kinds == EDGE_LINK))
        src, dst, cost, _ = self.edges(graph)
        self.applied = src * 2**32 + dst
        if not owned.any() and src.size == 0:
            return graph
        walk = np.isin(src * 2**32 + dst, src_old[~owned] * 2**32 + dst_old[~owned])
        if walk.any():  # a link between nodes the scan already joins would be a second edge
            i = int(self.edges(graph)[3][walk][0])
            raise ValueError(f"OffMeshLink {i}: its start and end snap to nodes {list(self.nodes[i])}, which a walk "
                             f"edge already joins; a link joins places the scan does not")
        keep = ~owned
        out = NavGraph.from_edges(
            graph.positions, graph.walkable, np.concatenate([src_old[keep], src]),
            np.concatenate([dst_old[keep], dst]), np.concatenate([graph.costs[keep], cost]), graph.grid,
            kinds=np.concatenate([graph.kinds[keep], np.full(src.size, EDGE_LINK, np.uint8)]),
            max_climb=graph.max_climb, version=graph.version + 1 if version is None else version)
        return out

    def link_between(self, graph: NavGraph, a: int, b: int) -> int:
        """The index of the enabled link whose edge leads from node ``a`` to node ``b``, or -1
        (a dict look-up, rebuilt after an ``apply`` or ``set_enabled``)."""
        key = (self.version, id(self.nodes), self.nodes.tobytes())
        if self._steps is None or self._steps[0] != key:
            steps = {}
            for i, link in enumerate(self.links):
                if self.enabled[i]:
                    s, e = (int(v) for v in self.nodes[i])
                    steps.setdefault((s, e), i)
                    if link.bidirectional:
                        steps.setdefault((e, s), i)
            self._steps = (key, steps)
        return self._steps[1].get((int(a), int(b)), -1)

    def crosses_disabled(self, nodes: np.ndarray) -> bool:
        """Whether consecutive ``nodes`` (a path) use the node pair of a disabled link."""
        nodes = np.asarray(nodes, np.int64)
        if nodes.size < 2 or self.enabled.all():
            return False
        steps = nodes[:-1] * 2**32 + nodes[1:]
        off = ~self.enabled
        a, b = self.nodes[off, 0], self.nodes[off, 1]
        closed = np.concatenate([a * 2**32 + b, b * 2**32 + a])
        return bool(np.isin(steps, closed).any())
