"""GraphBuildSystem: builds the navigation graph once, and keeps it right under dynamic obstacles.

The graph (``world.nav_graph``) is built on the first tick, or whenever it is ``None``:

- a tile map (``world.resources["tile_grid"] = (blocked_text_order, {"cell_size", "origin"})``)
  becomes an octile grid with ``ecs_nav.nav.grid.grid_graph``, at the map floor's elevation;
- any other map is scanned with ``ecs_nav.nav.build.scan_heightfield`` (seed 000's AIGraph).
  The ``ScanParams`` come from ``world.navmap`` (scan_range, spacing, max_climb,
  clearance, max_drop, floors), centred on the centre of the map's bounds (the origin for the seed's map). Without
  a NavMap the scan covers the map's bounds with the default spacing, climb and clearance, and
  rays start 1 m above the map's highest point. The agent radius of the clearance rule is the
  **largest** collider radius among the agents present when the graph is built (one graph for
  all agents: a node clear for the widest agent is clear for every agent; agents spawned later
  do not trigger a rebuild). The parameters used are kept in ``world.resources["nav_params"]``.
- no map: no graph (``world.nav_graph`` stays ``None``; the PathfindSystem then waits).

Dynamic obstacles are entities with a ``Collider(shape="box", size=(w, d), height=h)``, a
``Position`` and no ``Agent``. They are found from the table's masks (``has_collider & ~is_agent``)
and tracked in three small arrays (entity, shape id, last position) over the obstacle rows only:

- a new one is added to ``world.map`` as a ``Box`` standing on the map's floor (so the physics
  collides with it too), a despawned one is removed, one whose position changed since the last
  tick is moved (``MapGeometry.add/remove/move``);
- each change gives an AABB; the graph is rebuilt in that region only
  (``ecs_nav.nav.build.rebuild_region``; on a tile map, the grid is rebuilt with the cells
  under the dynamic boxes blocked), and every ``Path`` whose nodes the region may change
  (``ecs_nav.nav.build.path_crosses_region``) gets ``status = "stale"``, which makes the
  PathfindSystem replan it on the same tick (it runs right after this system).

Off-mesh links (``world.nav_links``, a scene's ``[[map.link]]``: ``ecs_nav.nav.links``) are added
to the graph after every build and rebuild, the enabled ones only (``NavLinks.apply``); when one is
enabled or disabled (``World.set_link_enabled``) the graph gets a new version with exactly the
enabled links' edges, and every ``Path`` that steps along a disabled link gets ``status =
"stale"``, as one through a new obstacle does.

Obstacles present on the first tick are put into the map before the graph is built, so the
first graph already avoids them. Box colliders of agents, and circle colliders of non-agents,
are not obstacles here (agents avoid each other by steering and physics).
"""

from __future__ import annotations

import math

import numpy as np
from ecs_nav.systems.platformer_stage import build_level

from ecs_nav.core.components import Collider, Path
from ecs_nav.core.system import System
from ecs_nav.core.world import World
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.build import ScanParams, path_crosses_region, rebuild_region, scan_heightfield
from ecs_nav.nav.grid import grid_graph

_REPLAN = ("complete", "partial")
"""Path statuses that a region change can make stale (a stale/unreachable/none path is left)."""


def scan_params(world: World) -> ScanParams:
    """The heightfield scan parameters for ``world`` (see the module docstring)."""
    geometry = world.map
    xmin, ymin, xmax, ymax = geometry.bounds
    center = ((xmin + xmax) / 2.0, (ymin + ymax) / 2.0)
    table = world.table
    agents = table.live("is_agent") & table.live("has_collider")
    radius = float(table.live("radius")[agents].max()) if agents.any() else 0.0
    nav = world.navmap
    if nav is None:
        scan_range = ((xmax - xmin) / 2.0, geometry.max_top + 1.0, (ymax - ymin) / 2.0)
        return ScanParams(scan_range=scan_range, agent_radius=radius, center=center)
    return ScanParams(scan_range=tuple(nav.scan_range), spacing=nav.spacing, max_climb=nav.max_climb,
                      clearance=nav.clearance, agent_radius=radius, center=center, max_drop=nav.max_drop,
                      floors=nav.floors)


class GraphBuildSystem(System):
    """Builds ``world.nav_graph`` and rebuilds the regions that dynamic box obstacles change.

    Attributes:
        rebuilds: number of regional rebuilds done so far (one per changed obstacle).
        last_changes: the AABBs that changed on the last tick (empty when none did).
    """

    name = "GraphBuildSystem"

    def __init__(self):
        self.params: ScanParams | None = None
        self.rebuilds = 0
        self.last_changes: list[tuple[float, float, float, float]] = []
        # obstacle bookkeeping, sorted by entity id
        self._ob_entity = np.zeros(0, dtype=np.int64)
        self._ob_shape = np.zeros(0, dtype=np.int64)
        self._ob_pos = np.zeros((0, 2), dtype=np.float64)
        self._tile_base: np.ndarray | None = None  # tile maps: the static blocked cells
        self._links_version = -1  # the NavLinks version last applied

    # --- the tick ---------------------------------------------------------------------------------

    def update(self, world: World) -> None:
        build_level(world)  # side-view characters and level masks: systems/platformer_stage.py
        changes = self._sync_obstacles(world) if world.map is not None else []
        if world.nav_graph is None:
            self._build(world)
            self.last_changes = []
            return
        self.last_changes = changes
        if changes and world.nav_graph is not None:
            self._rebuild(world, changes)
        links = world.nav_links
        if links is not None and links.version != self._links_version and world.nav_graph is not None:
            world.nav_graph = self._with_links(world, world.nav_graph, world.nav_graph.version + 1)
            for _, (path,) in world.query(Path):
                if path.status in _REPLAN and links.crosses_disabled(path.nodes):
                    path.status = "stale"

    def _with_links(self, world: World, graph, version: int):
        """``graph`` with the enabled off-mesh links' edges, as ``version`` (no links: as it is)."""
        links = world.nav_links
        if links is None:
            return graph
        self._links_version = links.version
        surface = world.map.surface_height if world.map is not None else None
        return links.apply(graph, surface, version=version)

    def _build(self, world: World) -> None:
        tile = world.resources.get("tile_grid")
        if tile is not None:
            blocked, placement = tile
            self._tile_base = np.asarray(blocked, dtype=bool)
            self.params = None
            world.nav_graph = self._with_links(world, self._tile_graph(world, self._tile_blocked(world), version=0), 0)
            return
        if world.map is None:
            return
        self.params = scan_params(world)
        world.resources["nav_params"] = self.params
        world.nav_graph = self._with_links(world, scan_heightfield(world.map, self.params), 0)

    # --- dynamic obstacles ---------------------------------------------------------------------------

    def _sync_obstacles(self, world: World) -> list[tuple[float, float, float, float]]:
        """Bring the map's dynamic boxes up to date; returns the AABBs that changed."""
        table = world.table
        n = table.n
        rows = (table.has_collider[:n] & ~table.is_agent[:n]).nonzero()[0]
        if rows.size == 0 and self._ob_entity.size == 0:
            return []  # no obstacle now nor before (a chase, a crowd): nothing to compare
        ents = table.entity[rows]
        order = np.argsort(ents, kind="stable")
        rows, ents = rows[order], ents[order]
        known = np.isin(ents, self._ob_entity)
        # a newly seen non-agent collider: keep it when it is a box (a look-up per new row only)
        fresh_rows = []
        for row, entity in zip(rows[~known], ents[~known]):
            collider = world.try_get(int(entity), Collider)
            if collider is not None and collider.shape == "box":
                fresh_rows.append(row)
        gone = ~np.isin(self._ob_entity, ents)
        changes: list[tuple[float, float, float, float]] = []
        geometry = world.map
        for shape_id in self._ob_shape[gone]:
            changes.append(geometry.remove(int(shape_id)))
        keep = ~gone
        ob_entity, ob_shape, ob_pos = self._ob_entity[keep], self._ob_shape[keep], self._ob_pos[keep]
        # moved: compare the tracked rows' positions with last tick's, all at once
        if ob_entity.size:
            cur_rows = rows[np.searchsorted(ents, ob_entity)]
            cur = table.pos[cur_rows]
            moved = np.flatnonzero(np.any(cur != ob_pos, axis=1))
            for k in moved:
                changes.append(geometry.move(int(ob_shape[k]), (float(cur[k, 0]), float(cur[k, 1]))))
            ob_pos = cur.copy()
        if fresh_rows:
            fresh = np.asarray(fresh_rows, dtype=np.int64)
            new_ids = []
            for row in fresh:
                entity = int(table.entity[row])
                collider = world.get(entity, Collider)
                box = Box(center=(float(table.pos[row, 0]), float(table.pos[row, 1])), size=tuple(collider.size),
                          height=float(collider.height), base=geometry.floor)
                new_ids.append(geometry.add(box))
                changes.append(box.aabb())
            ob_entity = np.concatenate([ob_entity, table.entity[fresh]])
            ob_shape = np.concatenate([ob_shape, np.asarray(new_ids, dtype=np.int64)])
            ob_pos = np.concatenate([ob_pos, table.pos[fresh]])
            order = np.argsort(ob_entity, kind="stable")
            ob_entity, ob_shape, ob_pos = ob_entity[order], ob_shape[order], ob_pos[order]
        self._ob_entity, self._ob_shape, self._ob_pos = ob_entity, ob_shape, ob_pos
        return changes

    def _rebuild(self, world: World, changes) -> None:
        old = world.nav_graph
        if self._tile_base is not None:
            graph = self._tile_graph(world, self._tile_blocked(world), version=old.version + 1)
            regions = [self._tile_region(old, aabb) for aabb in changes]
        else:
            graph = old
            for aabb in changes:
                graph = rebuild_region(graph, world.map, self.params, aabb)
            regions = None
        self.rebuilds += len(changes)
        graph = self._with_links(world, graph, graph.version)
        world.nav_graph = graph
        # the paths that use a node or link the change may have touched go stale
        for _, (path,) in world.query(Path):
            if path.status not in _REPLAN or path.nodes.size == 0:
                continue
            if regions is not None:
                crossed = any(np.isin(path.nodes, r).any() for r in regions)
            else:
                crossed = any(path_crosses_region(old, self.params, path.nodes, aabb) for aabb in changes)
            if crossed:
                path.status = "stale"

    # --- tile maps ------------------------------------------------------------------------------------

    def _tile_graph(self, world: World, blocked: np.ndarray, version: int):
        _, placement = world.resources["tile_grid"]
        floor = world.map.floor if world.map is not None else 0.0
        graph = grid_graph(blocked, placement.get("cell_size", 1.0), tuple(placement.get("origin", (0.0, 0.0))),
                           elevation=floor)
        graph.version = version
        return graph

    def _tile_blocked(self, world: World) -> np.ndarray:
        """The static blocked cells plus every cell a dynamic box overlaps (text order)."""
        blocked = self._tile_base.copy()
        if self._ob_entity.size == 0:
            return blocked
        _, placement = world.resources["tile_grid"]
        cs = float(placement.get("cell_size", 1.0))
        ox, oy = placement.get("origin", (0.0, 0.0))
        rows, cols = blocked.shape
        for shape_id in self._ob_shape:
            xmin, ymin, xmax, ymax = world.map.shape(int(shape_id)).aabb()
            c0, c1 = max(math.floor((xmin - ox) / cs), 0), min(math.ceil((xmax - ox) / cs), cols)
            r0, r1 = max(math.floor((ymin - oy) / cs), 0), min(math.ceil((ymax - oy) / cs), rows)
            if c0 < c1 and r0 < r1:
                blocked[rows - r1 : rows - r0, c0:c1] = True  # world rows → text rows
        return blocked

    @staticmethod
    def _tile_region(graph, aabb) -> np.ndarray:
        """Node slots whose cell meets ``aabb``, grown by one cell (diagonals beside a blocked
        cell lose their corner-cutting links too)."""
        g = graph.grid
        xmin, ymin, xmax, ymax = aabb
        c0 = max(math.floor((xmin - g.origin[0]) / g.spacing) - 1, 0)
        c1 = min(math.ceil((xmax - g.origin[0]) / g.spacing) + 1, g.cols - 1)
        r0 = max(math.floor((ymin - g.origin[1]) / g.spacing) - 1, 0)
        r1 = min(math.ceil((ymax - g.origin[1]) / g.spacing) + 1, g.rows - 1)
        if c0 > c1 or r0 > r1:
            return np.zeros(0, dtype=np.int64)
        rr, cc = np.meshgrid(np.arange(r0, r1 + 1), np.arange(c0, c1 + 1), indexing="ij")
        return (rr * g.cols + cc).ravel()

    # --- determinism ----------------------------------------------------------------------------------

    def state(self) -> bytes:
        return b"".join((self._ob_entity.tobytes(), self._ob_shape.tobytes(), self._ob_pos.tobytes(),
                         np.int64(self.rebuilds).tobytes()))
