"""The seed's AIGraph: a heightfield scan of the map geometry into a NavGraph, vectorised.

Axes. Our ground plane is (x, y) and elevation is the third axis; the seed's Unity scene has
the ground plane (x, z) and height y. ``ScanParams`` keeps the seed's tuple order for
``scan_range`` so a scene can copy the seed's ``(40, 10, 40)`` literally:

    scan_range = (half extent in x, ray start height, half extent in y)
                 (seed: scan.x,     scan.y,           scan.z)

Nodes. Grid points start at ``center - (half_x, half_y)`` and step by ``spacing``:
``cols = 2 * half_x / spacing`` by ``rows = 2 * half_y / spacing`` (the seed's node count; the
far edge itself gets no column, as in the seed). Node id = ``row * cols + col`` (NavGraph's
row-major order; the seed's ``i * nodesPerCol + j`` is the same grid column-major). At each
point a ray is cast down from the ray start height; a hit is a candidate node at the walkable
top (box top, ramp surface, circle top, floor), a miss (off the map) is an invalid node.

Clearance: how we read the seed's 1.25 rule. Read literally ("the distance to the nearest
x-edge AND to the nearest z-edge of some box both below 1.25") the rule rejects only the
2.5 x 2.5 squares centred on box corners, and lets a node stand 0.1 from the middle of a wall.
Its stated purpose is to keep nodes off walls, corners and ledges, so we read it as a distance:
with ``r = max(clearance, agent_radius)`` a candidate at elevation h is rejected when

- *wall*: some solid that is a wall to an agent standing at h (it occupies the body band
  ``(h + max_climb, h + agent_height)``; see ``ecs_nav.geometry.map``) lies closer than ``r`` in the
  ground plane (exact distance to the wall part of the shape: for a ramp only the part whose
  surface is out of reach counts, so a ramp is not a wall to the nodes at its foot or on it);
- *ledge*: within ``r`` the ground drops by more than ``max_climb`` below h, or ends (the map's
  bounds). Tested on 16 rays at radial steps of at most 0.25: a trench narrower than that
  step between samples may go unseen.

Shapes that adjoin at the same height (a ramp's top edge against the wall it leans on, merged
tile boxes) make no edge, so nodes on ramps and wall tops survive. Gentle slopes pass: within
``r`` a slope rises at most ``slope * r``, fine while ``slope < max_climb / r`` (0.4 by default).

Floors (``floors`` > 1): a bridge over a road, a room under a balcony, a second storey. The scan
then records, under each grid point, the highest walkable top (level 0) and below it each next
top with at least ``agent_height`` of room under the solid above it (the shape whose top is
above, down to its underside and through whatever it stands on: nothing under a wall or a ramp,
a room under a floating slab), down to ``floors`` surfaces; each is tested for walls and
ledges as above, with walls taken for the body band of its own elevation, so a deck overhead is
walked under. Node id = ``level * rows *
cols + row * cols + col`` (``GridIndex``): the level counts surfaces from the top at that grid
point, so the road is level 1 under the bridge and level 0 beside it, and links join whatever
levels of neighbouring points are within a climb. With one floor (the default) this is the
seed's scan of the highest surface.

Links (the seed's ConnectNodes): each valid node to its 8 neighbours (their slots on every
level) when both are valid, ``|dh| <= max_climb`` (+1e-9 for rounding), and the segment between
them, both ends lifted by ``link_lift`` (seed: 0.2), passes through no solid (no cutting a box
corner or a stair edge). Straight links cost ``spacing``, diagonal links ``sqrt(2) * spacing``; links are two-way.
Note the seed's 0.2 lift also refuses a climbable step (0.2 < step <= max_climb) whose edge lies
near the lower node; raise ``link_lift`` to ``max_climb`` to link such steps wherever they are.

Drops (the one-way links seed 000 leaves room for), only when ``max_drop > max_climb``: each
valid node gets a one-way ``EDGE_DROP`` down to the first valid slot beyond a ledge in each grid
direction, within ``2 * (r + spacing)``, lower by more than ``max_climb`` and at most
``max_drop`` (the rules and costs: ``ecs_nav.nav.drops``). No edge leads back up unless a climb does.

Dynamic obstacles: ``rebuild_region`` re-scans the node slots near a changed AABB and
re-links only the walk links touching them; everything else is kept (off-mesh links too, while
both their ends stay walkable), node ids do not change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.limits import MAX_FLOORS, NAV_NODE_LIMIT
from ecs_nav.geometry.kernels import (
    bucket_range,
    segment_blocked_by,
    solid_bottom,
    top_among,
    top_at,
    wall_distance,
)
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import AABB, finite_scalar
from ecs_nav.nav.drops import drop_sources, find_drops, scan_drops
from ecs_nav.nav.graph import EDGE_DROP, EDGE_WALK, GridIndex, NavGraph

LEDGE_RAYS = 16
"""Directions sampled by the ledge test."""
LEDGE_STEP = 0.25
"""Largest radial step between ledge samples."""
CLIMB_TOL = 1e-9
"""Rounding allowance on ``max_climb`` in every climb and ledge test (links, the scan's ledge
rays, ``nav.smooth``'s line walk)."""


@dataclass(frozen=True)
class ScanParams:
    """Parameters of the heightfield scan (the seed's AIGraph fields and the NavMap component).

    Attributes:
        scan_range: ``(half_x, ray_height, half_y)``, the seed's ``(scan.x, scan.y, scan.z)``
            order: half extents of the scanned area around ``center`` in x and y, and the
            elevation the rays start from (above the highest point of the map).
        spacing: grid spacing of candidate nodes (seed ``minimumNodeDistance``).
        max_climb: largest height step between linked nodes (seed ``maxVerticalDistance``).
        clearance: distance nodes keep from walls and ledges (seed: 1.25).
        agent_radius: the clearance actually used is ``max(clearance, agent_radius)``.
        agent_height: body height: a solid whose base is above ``h + agent_height`` is walked
            under, not into.
        link_lift: links are tested lifted this much above the nodes (seed: 0.2).
        max_drop: largest height, m, of a one-way drop off a ledge found by the scan (>= 0;
            only drops higher than ``max_climb`` are drops, so 0 or anything up to ``max_climb``:
            none, the default). See the module docstring.
        center: centre (x, y) of the scanned area (seed: the origin).
        floors: how many walkable surfaces over one grid point the graph holds, from the highest
            down (1 to ``MAX_FLOORS``; 1, the default, is the seed's scan). See the module docstring.
    """

    scan_range: tuple[float, float, float] = (40.0, 10.0, 40.0)
    spacing: float = 2.0
    max_climb: float = 0.5
    clearance: float = 1.25
    agent_radius: float = 0.0
    agent_height: float = 2.0
    link_lift: float = 0.2
    center: tuple[float, float] = (0.0, 0.0)
    max_drop: float = 0.0
    floors: int = 1

    def __post_init__(self):
        try:
            hx, ray, hy = self.scan_range
        except (TypeError, ValueError):
            raise ValueError(
                f"scan_range must be (half_x, ray_height, half_y), got {self.scan_range!r}"
            ) from None
        scan = (finite_scalar("scan_range[0]", hx, positive=True), finite_scalar("scan_range[1]", ray),
                finite_scalar("scan_range[2]", hy, positive=True))
        object.__setattr__(self, "scan_range", scan)
        object.__setattr__(self, "spacing", finite_scalar("spacing", self.spacing, positive=True))
        object.__setattr__(self, "max_climb", finite_scalar("max_climb", self.max_climb, nonneg=True))
        object.__setattr__(self, "clearance", finite_scalar("clearance", self.clearance, nonneg=True))
        object.__setattr__(self, "agent_radius", finite_scalar("agent_radius", self.agent_radius, nonneg=True))
        object.__setattr__(self, "agent_height", finite_scalar("agent_height", self.agent_height, positive=True))
        object.__setattr__(self, "link_lift", finite_scalar("link_lift", self.link_lift, nonneg=True))
        object.__setattr__(self, "max_drop", finite_scalar("max_drop", self.max_drop, nonneg=True))
        try:
            cx, cy = self.center
        except (TypeError, ValueError):
            raise ValueError(f"center must be (x, y), got {self.center!r}") from None
        object.__setattr__(self, "center", (finite_scalar("center[0]", cx), finite_scalar("center[1]", cy)))
        if isinstance(self.floors, (bool, np.bool_)) or not isinstance(self.floors, (int, np.integer)) \
                or not 1 <= self.floors <= MAX_FLOORS:
            raise ValueError(f"floors must be an integer from 1 to {MAX_FLOORS}, got {self.floors!r}")
        object.__setattr__(self, "floors", int(self.floors))
        if self.cols < 1 or self.rows < 1:
            raise ValueError(f"spacing {self.spacing} is larger than the scan range {self.scan_range}")
        if self.floors * self.cols * self.rows > NAV_NODE_LIMIT:
            floors = f" on {self.floors} floors" if self.floors > 1 else ""
            raise ValueError(f"spacing {self.spacing} over the scan range {self.scan_range}{floors} makes "
                             f"{self.floors * self.cols * self.rows} node slots, more than the {NAV_NODE_LIMIT} "
                             "allowed")

    @property
    def half_x(self) -> float:
        return self.scan_range[0]

    @property
    def ray_height(self) -> float:
        return self.scan_range[1]

    @property
    def half_y(self) -> float:
        return self.scan_range[2]

    @property
    def radius(self) -> float:
        """The clearance applied: ``max(clearance, agent_radius)``."""
        return max(self.clearance, self.agent_radius)

    @property
    def drops(self) -> bool:
        """Does the scan look for drops (``max_drop > max_climb``)?"""
        return self.max_drop > self.max_climb + CLIMB_TOL

    @property
    def drop_reach(self) -> float:
        """Horizontal reach of a drop, m: ``2 * (radius + spacing)``."""
        return 2.0 * (self.radius + self.spacing)

    @property
    def cols(self) -> int:
        return int(math.floor(2 * self.half_x / self.spacing + 1e-9))

    @property
    def rows(self) -> int:
        return int(math.floor(2 * self.half_y / self.spacing + 1e-9))

    def grid(self) -> GridIndex:
        origin = (self.center[0] - self.half_x, self.center[1] - self.half_y)
        return GridIndex(origin=origin, spacing=self.spacing, rows=self.rows, cols=self.cols, levels=self.floors)


# --- kernels -------------------------------------------------------------------------------------


@kernel
def _shape_aabb_hits(G, item, x0, y0, x1, y1):
    """Does shape ``item``'s ground-plane AABB (packed in ``G[6]``) meet the box [x0, x1] x [y0, y1]?"""
    box = G[6][item]
    return box[2] >= x0 and box[0] <= x1 and box[3] >= y0 and box[1] <= y1


@kernel
def _scan_nodes(G, xs, ys, todo, ray_height, max_climb, radius, agent_height, levels, out_h):
    """Elevations of the node slots of each grid point in ``todo`` (point ids ``row * cols +
    col``), on every level, into ``out_h`` ((levels * points,), NaN: invalid or no surface)."""
    n_rays = LEDGE_RAYS
    n_rings = max(2, int(math.ceil(radius / LEDGE_STEP))) if radius > 0.0 else 0
    cos_t = np.empty(n_rays)
    sin_t = np.empty(n_rays)
    for d in range(n_rays):
        cos_t[d] = math.cos(2.0 * math.pi * d / n_rays)
        sin_t[d] = math.sin(2.0 * math.pi * d / n_rays)
    cand = np.empty(64, dtype=np.int64)
    # typed int64, not the literal 0: a literal argument makes numba compile top_among again
    # for it (three specialisations, about 1.4 s of CPU more on a first run); n_cand too
    first_cand = np.int64(0)
    slots = xs.shape[0]
    floor = G[2][4]
    for k in range(todo.shape[0]):
        point = todo[k]
        x, y = xs[point], ys[point]
        for level in range(1, levels):
            out_h[level * slots + point] = np.nan
        z = ray_height
        for level in range(levels):
            h = top_at(G, x, y, z)
            if h != h:
                out_h[level * slots + point] = h
                break
            top = _valid_top(G, x, y, h, max_climb, radius, agent_height, cand, cos_t, sin_t, n_rings, first_cand)
            while top == -np.inf:
                cand = np.empty(2 * cand.shape[0], dtype=np.int64)
                top = _valid_top(G, x, y, h, max_climb, radius, agent_height, cand, cos_t, sin_t, n_rings,
                                 first_cand)
            out_h[level * slots + point] = top
            # a lower surface has a body's height of room under the solid this one tops
            z = solid_bottom(G, x, y, h) - agent_height
            if z < floor:
                break  # (nothing lies under the floor)


@kernel
def _valid_top(G, x, y, h, max_climb, radius, agent_height, cand, cos_t, sin_t, n_rings, first_cand):
    """``h`` when the walkable top at elevation ``h`` under (x, y) keeps ``radius`` from every wall
    and ledge (the module docstring), else NaN; -inf when the shapes near (x, y) outnumber
    ``cand`` (scratch for their ids): the caller grows it and asks again."""
    meta, dims, bptr, bitems = G[2], G[3], G[4], G[5]
    n_rays = cos_t.shape[0]
    if radius <= 0.0:
        return h
    zlo, zhi = h + max_climb, h + agent_height
    # the map's edge is a ledge
    ok = meta[0] <= x - radius and x + radius <= meta[2] and meta[1] <= y - radius and y + radius <= meta[3]
    # the shapes near the node (duplicates from several buckets are harmless)
    x0, y0, x1, y1 = x - radius, y - radius, x + radius, y + radius
    n_cand = np.int64(0)  # not the literal 0 either (see first_cand)
    i0, i1, j0, j1 = bucket_range(meta, dims, x0, y0, x1, y1)
    for j in range(j0, j1 + 1):
        for i in range(i0, i1 + 1):
            b = j * dims[0] + i
            for q in range(bptr[b], bptr[b + 1]):
                it = bitems[q]
                if _shape_aabb_hits(G, it, x0, y0, x1, y1):
                    if n_cand == cand.shape[0]:
                        return -np.inf  # the caller grows cand and asks again
                    cand[n_cand] = it
                    n_cand += 1
    # wall: exact distance to the wall part of every nearby shape
    for q in range(n_cand):
        if not ok:
            break
        if wall_distance(G, cand[q], x, y, zlo, zhi) < radius:
            ok = False
    # ledge: the ground within radius may not drop by more than max_climb. The floor lies
    # under every point of the map, so a node within max_climb of it has no ledge.
    floor_min = h - max_climb - CLIMB_TOL
    if ok and n_cand > 0 and meta[4] < floor_min:
        for ring in range(1, n_rings + 1):
            if not ok:
                break
            rho = radius * ring / n_rings
            for d in range(n_rays):
                g = top_among(G, cand, first_cand, n_cand, x + rho * cos_t[d], y + rho * sin_t[d], zlo)
                if not (g >= floor_min):
                    ok = False
                    break
    return h if ok else np.nan


# (d_col, d_row) of the 8 neighbours
_NEIGHBOURS = np.array([(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)], dtype=np.int64)


@kernel
def _link_nodes(G, xs, ys, hs, todo, in_region, cols, rows, levels, max_climb, lift, spacing, nbrs):
    """Links touching the node slots in ``todo`` (both directions; each pair tested once), from
    each to the slots of its 8 neighbouring grid points on every level. ``xs``, ``ys``: each
    grid point's; ``hs``: each node slot's."""
    slots = rows * cols
    valid = 0
    for k in range(todo.shape[0]):
        if hs[todo[k]] == hs[todo[k]]:
            valid += 1
    cap = valid * 16 * levels  # each valid node, each way, each level, both directions
    src = np.empty(cap, dtype=np.int64)
    dst = np.empty(cap, dtype=np.int64)
    cost = np.empty(cap, dtype=np.float64)
    diag = math.sqrt(2.0) * spacing
    m = 0
    for k in range(todo.shape[0]):
        a = todo[k]
        ha = hs[a]
        if ha != ha:
            continue
        pa = a % slots
        row, col = pa // cols, pa % cols
        for d in range(8):
            c2, r2 = col + nbrs[d, 0], row + nbrs[d, 1]
            if c2 < 0 or c2 >= cols or r2 < 0 or r2 >= rows:
                continue
            pb = r2 * cols + c2
            for level in range(levels):
                b = level * slots + pb
                if in_region[b] and b < a:
                    continue  # the pair is tested from b
                hb = hs[b]
                if hb != hb or abs(ha - hb) > max_climb + CLIMB_TOL:
                    continue
                # test each pair in one orientation (low id → high id) so links stay symmetric
                lo, hi = (a, b) if a < b else (b, a)
                plo, phi = lo % slots, hi % slots
                if segment_blocked_by(G, xs[plo], ys[plo], hs[lo] + lift, xs[phi], ys[phi], hs[hi] + lift):
                    continue
                w = diag if nbrs[d, 0] != 0 and nbrs[d, 1] != 0 else spacing
                src[m], dst[m], cost[m] = a, b, w
                src[m + 1], dst[m + 1], cost[m + 1] = b, a, w
                m += 2
    return src[:m], dst[:m], cost[:m]


# --- API ---------------------------------------------------------------------------------------


def _slots(grid: GridIndex) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of each grid point (one level's slots)."""
    centres = grid.cell_centres()[: grid.slots]
    return np.ascontiguousarray(centres[:, 0]), np.ascontiguousarray(centres[:, 1])


def _drops(geometry: MapGeometry, params: ScanParams, grid: GridIndex, hs: np.ndarray,
           sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The drop links from the slots ``sources`` (none unless ``params.drops``)."""
    if not params.drops:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return find_drops(geometry, grid, hs, sources, max_climb=params.max_climb,
                      max_drop=params.max_drop, lift=params.link_lift, reach=params.drop_reach,
                      agent_height=params.agent_height)


def _scan(geometry: MapGeometry, params: ScanParams, grid: GridIndex, hs: np.ndarray,
          points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Re-scan the grid points ``points`` (ids ``row * cols + col``) into ``hs`` (in place, every
    level); returns the links touching their node slots."""
    G = geometry.kernel_data()
    xs, ys = _slots(grid)
    _scan_nodes(G, xs, ys, points, params.ray_height, params.max_climb, params.radius,
                params.agent_height, grid.levels, hs)
    todo = level_slots(grid, points)
    in_region = np.zeros(hs.shape[0], dtype=np.bool_)
    in_region[todo] = True
    return _link_nodes(G, xs, ys, hs, todo, in_region, grid.cols, grid.rows, grid.levels, params.max_climb,
                       params.link_lift, params.spacing, _NEIGHBOURS)


def level_slots(grid: GridIndex, points: np.ndarray) -> np.ndarray:
    """The node slots of the grid points ``points`` (ids ``row * cols + col``) on every level,
    level by level."""
    points = np.asarray(points, dtype=np.int64)
    return (np.arange(grid.levels, dtype=np.int64)[:, None] * grid.slots + points[None, :]).reshape(-1)


def scan_heightfield(geometry: MapGeometry, params: ScanParams | None = None) -> NavGraph:
    """Scan ``geometry`` into a NavGraph (the seed's AIGraph.Awake).

    Returns a NavGraph with ``params.floors * params.rows * params.cols`` node slots; invalid slots have
    elevation NaN and no edges; ``max_climb`` = ``params.max_climb``; edges EDGE_WALK, and the
    one-way EDGE_DROP drops off ledges when ``params.max_drop`` exceeds ``max_climb``."""
    params = ScanParams() if params is None else params
    grid = params.grid()
    hs = np.full(grid.node_count, np.nan)
    src, dst, cost = _scan(geometry, params, grid, hs, np.arange(grid.slots, dtype=np.int64))
    d_src, d_dst, d_cost = _drops(geometry, params, grid, hs, np.arange(grid.node_count, dtype=np.int64))
    if d_src.size == 0:
        return _graph(grid, hs, src, dst, cost, params, version=0)
    kinds = np.concatenate([np.full(src.shape, EDGE_WALK, np.uint8), np.full(d_src.shape, EDGE_DROP, np.uint8)])
    return _graph(grid, hs, np.concatenate([src, d_src]), np.concatenate([dst, d_dst]),
                  np.concatenate([cost, d_cost]), params, 0, kinds)


def _graph(grid, hs, src, dst, cost, params, version, kinds=None) -> NavGraph:
    positions = np.column_stack([grid.cell_centres(), hs])
    return NavGraph.from_edges(positions, ~np.isnan(hs), src, dst, cost, grid, kinds=kinds,
                               max_climb=params.max_climb, version=version)


def region_nodes(graph: NavGraph, params: ScanParams, aabb: AABB) -> np.ndarray:
    """Node slots whose node or links may change when the shapes inside ``aabb`` change.

    A node's validity depends on the shapes within the clearance radius; a link's on the
    shapes its segment crosses (at most ``sqrt(2) * spacing`` from either end). So: the slots
    within ``max(radius, sqrt(2) * spacing)`` of ``aabb``."""
    xmin, ymin, xmax, ymax = (float(v) for v in aabb)
    margin = max(params.radius, math.sqrt(2.0) * params.spacing) + 1e-6
    g = graph.grid
    c0 = max(int(math.ceil((xmin - margin - g.origin[0]) / g.spacing)), 0)
    c1 = min(int(math.floor((xmax + margin - g.origin[0]) / g.spacing)), g.cols - 1)
    r0 = max(int(math.ceil((ymin - margin - g.origin[1]) / g.spacing)), 0)
    r1 = min(int(math.floor((ymax + margin - g.origin[1]) / g.spacing)), g.rows - 1)
    if c0 > c1 or r0 > r1:
        return np.zeros(0, dtype=np.int64)
    rr, cc = np.meshgrid(np.arange(r0, r1 + 1), np.arange(c0, c1 + 1), indexing="ij")
    return level_slots(g, (rr * g.cols + cc).ravel())


def rebuild_region(graph: NavGraph, geometry: MapGeometry, params: ScanParams, aabb: AABB) -> NavGraph:
    """Rebuild only the part of ``graph`` that a change of the shapes inside ``aabb`` touches.

    Re-scans the slots of ``region_nodes``, re-links the walk links touching them and keeps
    every other link as it was (kinds included). A link of another kind (``EDGE_LINK``,
    ``EDGE_DROP``: added to the graph, not found by the scan) is kept even in the region, as
    long as both its ends are still walkable; with ``params.max_drop`` above ``max_climb``, the
    scan's own drops (``ecs_nav.nav.drops.scan_drops``) from slots within a drop's reach of the
    region (``drop_sources``) are found again instead. Node ids are unchanged; the result's
    ``version`` is ``graph.version + 1``. Equal to a full ``scan_heightfield`` of the
    changed geometry, plus the surviving links, when ``aabb`` covers the change
    (``MapGeometry.move``/``remove`` return it)."""
    grid = params.grid()
    if grid != graph.grid:
        raise ValueError(f"params describe grid {grid}, the graph was built on {graph.grid}")
    todo = region_nodes(graph, params, aabb)
    hs = graph.positions[:, 2].copy()
    if todo.size == 0:
        return _graph(grid, hs, graph.edge_sources(), graph.indices, graph.costs, params,
                      graph.version + 1, graph.kinds)
    src_new, dst_new, cost_new = _scan(geometry, params, grid, hs, todo[todo < grid.slots])
    in_region = np.zeros(graph.node_count, dtype=bool)
    in_region[todo] = True
    src_old = graph.edge_sources()
    dst_old = graph.indices
    walkable = ~np.isnan(hs)
    # walk links touching the region are re-derived by the scan; the others (off-mesh links,
    # added by hand) are not the scan's to remake: kept while both their ends stand
    keep = ~(in_region[src_old] | in_region[dst_old]) | (
        (graph.kinds != EDGE_WALK) & walkable[src_old] & walkable[dst_old]
    )
    kinds_new = np.full(src_new.shape, EDGE_WALK, np.uint8)
    if params.drops:  # the scan's drops from slots within a drop's reach of the region are re-derived
        sources = drop_sources(grid, params.drop_reach, in_region)
        keep &= ~(np.isin(src_old, sources) & scan_drops(graph, params.drop_reach))
        d_src, d_dst, d_cost = _drops(geometry, params, grid, hs, sources)
        src_new, dst_new = np.concatenate([src_new, d_src]), np.concatenate([dst_new, d_dst])
        cost_new = np.concatenate([cost_new, d_cost])
        kinds_new = np.concatenate([kinds_new, np.full(d_src.shape, EDGE_DROP, np.uint8)])
    src = np.concatenate([src_old[keep], src_new])
    dst = np.concatenate([dst_old[keep].astype(np.int64), dst_new])
    cost = np.concatenate([graph.costs[keep], cost_new])
    kinds = np.concatenate([graph.kinds[keep], kinds_new])
    return _graph(grid, hs, src, dst, cost, params, graph.version + 1, kinds)


def path_crosses_region(graph: NavGraph, params: ScanParams, path_nodes, aabb: AABB) -> bool:
    """Does a path (node ids) use a node or link that ``rebuild_region`` may change for
    ``aabb``? A path for which this is False is still valid on the rebuilt graph (though a
    removed obstacle may have opened a shorter one)."""
    nodes = np.asarray(path_nodes, dtype=np.int64).reshape(-1)
    if nodes.size == 0:
        return False
    return bool(np.isin(nodes, region_nodes(graph, params, aabb)).any())
