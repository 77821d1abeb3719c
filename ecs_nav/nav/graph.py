"""NavGraph: the navigation graph every planner searches.

Nodes sit on a regular grid in the ground plane (x, y) with an elevation each; edges are a
CSR adjacency (``indptr``, ``indices``) with a cost and a kind per edge. The grid index maps a
point to its cell in O(1), replacing the seed's linear ``GetNodeAtPosition`` scan.

Coordinates: the ground plane is (x, y); elevation is the third axis (the seed's Unity "y").
Grid cell (col, row) holds the node at ``origin + (col, row) * spacing``; ``row`` grows with
world y. Cell coordinates *as written in a map file* (``node_at_cell``) count rows from the top
line, so ASCII art and Moving AI ``.scen`` coordinates read the way they are written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ecs_nav.compile.aot import kernel

EDGE_WALK = 0
"""An ordinary two-way walkable link."""
EDGE_DROP = 1
"""A one-way link down a ledge that cannot be climbed back."""
EDGE_LINK = 2
"""An off-mesh link (jump, teleporter): one-way, its cost set by whoever adds it."""
_FAR_CELL = 2.0**62
"""A cell coordinate this far from the grid (or NaN) is no cell: ``nearest_walkable``."""


@dataclass(frozen=True)
class GridIndex:
    """The regular grid the nodes are laid on: node id = ``level * rows * cols + row * cols + col``.

    ``levels`` is how many surfaces over one grid point the graph holds (floors: a bridge over a
    road, a storey over another; see ``ecs_nav.nav.build``). Level 0 holds each point's highest
    surface, level 1 the one below it, and so on; a graph of one level is the plain grid."""

    origin: tuple[float, float]
    spacing: float
    rows: int
    cols: int
    levels: int = 1

    @property
    def slots(self) -> int:
        """Node slots per level: ``rows * cols``."""
        return self.rows * self.cols

    @property
    def node_count(self) -> int:
        """Node slots in all: ``levels * rows * cols``."""
        return self.levels * self.rows * self.cols

    def cells_of(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(col, row) integer cells nearest to each point of ``points`` (k, 2); may be outside."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        col = np.rint((p[:, 0] - self.origin[0]) / self.spacing).astype(np.int64)
        row = np.rint((p[:, 1] - self.origin[1]) / self.spacing).astype(np.int64)
        return col, row

    def cell_centres(self) -> np.ndarray:
        """(node_count, 2) ground-plane position of every node slot, in node-id order (the
        slots of one grid point on every level share it)."""
        col, row = np.meshgrid(np.arange(self.cols), np.arange(self.rows))
        x = self.origin[0] + col.ravel() * self.spacing
        y = self.origin[1] + row.ravel() * self.spacing
        return np.tile(np.stack([x, y], axis=1).astype(np.float64), (self.levels, 1))


_NO_ELEVATIONS = np.zeros(0)


@kernel
def nearest_walkable(positions, walkable, max_climb, ox, oy, spacing, cols, rows, levels, points, with_elevation,
                     elevations, search_cells, out):
    """``NavGraph.nearest_nodes`` over the points (k, 2), written to ``out`` (k,): a node of a
    point's own grid cell (``GridIndex.cells_of``: the nearest grid point) when one is walkable
    and, ``with_elevation``, within ``max_climb`` of ``elevations[k]`` (of several levels there,
    the nearest in elevation; without elevations, the highest level); else the nearest such node
    by ground distance among the cells up to ``search_cells`` away on any level, the lowest id of
    those equally near; else -1. ``positions`` (n, 3) and ``walkable`` (n,): the graph's; ``ox``,
    ``oy``, ``spacing``, ``cols``, ``rows``, ``levels``: its grid's."""
    slots = rows * cols
    for k in range(points.shape[0]):
        out[k] = -1
        px, py = points[k, 0], points[k, 1]
        fc, fr = np.rint((px - ox) / spacing), np.rint((py - oy) / spacing)
        if not (abs(fc) < _FAR_CELL and abs(fr) < _FAR_CELL):  # (NaN too) no window reaches the grid
            continue
        col, row = int(fc), int(fr)
        z = elevations[k] if with_elevation else 0.0
        if 0 <= col < cols and 0 <= row < rows:
            best_dz = np.inf
            for level in range(levels):
                node = level * slots + row * cols + col
                if not walkable[node]:
                    continue
                if not with_elevation:
                    out[k] = node
                    break
                dz = abs(positions[node, 2] - z)
                if dz <= max_climb and dz < best_dz:
                    out[k], best_dz = node, dz
            if out[k] >= 0:
                continue
        best_d2 = np.inf
        for level in range(levels):  # ascending ids: the first of equal distances is the lowest
            for r in range(max(row - search_cells, 0), min(row + search_cells + 1, rows)):
                for c in range(max(col - search_cells, 0), min(col + search_cells + 1, cols)):
                    node = level * slots + r * cols + c
                    if not walkable[node] or (with_elevation and not abs(positions[node, 2] - z) <= max_climb):
                        continue
                    dx, dy = positions[node, 0] - px, positions[node, 1] - py
                    d2 = dx * dx + dy * dy
                    if out[k] < 0 or d2 < best_d2:
                        out[k], best_d2 = node, d2


@kernel
def edge_order(src, dst, n, indptr):
    """The order that sorts edges (``src``, ``dst``: (m,) int64 node ids in ``0..n-1``) by source,
    then target, equal edges kept in their order (as ``np.lexsort((dst, src))``); writes the CSR
    row starts into ``indptr`` ((n + 1,) int64). A counting sort by source, then an insertion sort
    of each node's few edges by target: O(m) for a grid's edges, where a lexsort of two million
    took 0.22 s."""
    m = src.shape[0]
    for i in range(n + 1):
        indptr[i] = 0
    for e in range(m):
        indptr[src[e] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    order = np.empty(m, np.int64)
    for e in range(m):
        s = src[e]
        order[fill[s]] = e
        fill[s] += 1
    for i in range(n):
        for j in range(indptr[i] + 1, indptr[i + 1]):
            e = order[j]
            d = dst[e]
            k = j - 1
            while k >= indptr[i] and dst[order[k]] > d:
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = e
    return order


@dataclass
class NavGraph:
    """A directed graph over the node slots of a grid, with CSR adjacency.

    Every grid cell is a node slot (id ``row * cols + col``) whether or not it is walkable, so
    ids stay stable when a dynamic obstacle changes a region (the seed marks invalid nodes too).
    A slot that is not walkable has no edges.

    Attributes:
        positions: (n, 3) float64 node positions: x, y, elevation (elevation is NaN where the
            slot is not walkable).
        walkable: (n,) bool.
        indptr: (n + 1,) int64; the out-edges of node i are ``indptr[i]:indptr[i+1]``.
        indices: (m,) int32 target node of each edge, ascending within a node.
        costs: (m,) float64 cost of each edge (> 0).
        kinds: (m,) uint8 one of EDGE_WALK, EDGE_DROP, EDGE_LINK.
        grid: the grid the nodes are laid on.
        max_climb: the largest elevation step an agent may take onto a node.
        version: bumped by every change, so paths planned on an older graph can tell.
    """

    positions: np.ndarray
    walkable: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    costs: np.ndarray
    kinds: np.ndarray
    grid: GridIndex
    max_climb: float = float("inf")
    version: int = 0
    _reverse: tuple | None = field(default=None, repr=False, compare=False)  # (cache_key, graph)
    _packed: tuple | None = field(default=None, repr=False, compare=False)  # (cache_key, adjacency)
    _steps: tuple | None = field(default=None, repr=False, compare=False)  # (cache_key, mask, all_steps)
    node_multiplier: np.ndarray | None = field(default=None, repr=False, compare=False)
    """(n,) float64 each node's area cost multiplier when the graph is one weighted by area costs
    (``ecs_nav.nav.areas.weighted_graph``); None on a plain graph. Line of sight
    (``ecs_nav.nav.sight``) does not cross from one multiplier to another."""

    @classmethod
    def from_edges(
        cls,
        positions: np.ndarray,
        walkable: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        costs: np.ndarray,
        grid: GridIndex,
        kinds: np.ndarray | None = None,
        max_climb: float = float("inf"),
        version: int = 0,
    ) -> NavGraph:
        """Build the CSR graph from edge lists (any order; sorted by source, then target)."""
        positions = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
        walkable = np.ascontiguousarray(walkable, dtype=bool).reshape(-1)
        n = positions.shape[0]
        if n != grid.node_count or walkable.shape[0] != n:
            raise ValueError(f"expected {grid.node_count} node slots, got {n}")
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        costs = np.asarray(costs, dtype=np.float64)
        kinds = np.zeros(src.shape, np.uint8) if kinds is None else np.asarray(kinds, np.uint8)
        if not (src.shape == dst.shape == costs.shape == kinds.shape):
            raise ValueError("src, dst, costs and kinds must have the same length")
        if src.size and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
            raise ValueError(f"edge endpoint outside 0..{n - 1}")
        if src.size and not (walkable[src].all() and walkable[dst].all()):
            raise ValueError("an edge touches a node that is not walkable")
        if costs.size and not (np.all(np.isfinite(costs)) and np.all(costs > 0)):
            raise ValueError("edge costs must be finite and > 0")
        indptr = np.empty(n + 1, dtype=np.int64)
        order = edge_order(src, dst, n, indptr)
        return cls(
            positions=positions,
            walkable=walkable,
            indptr=indptr,
            indices=np.ascontiguousarray(dst[order], dtype=np.int32),
            costs=np.ascontiguousarray(costs[order]),
            kinds=np.ascontiguousarray(kinds[order]),
            grid=grid,
            max_climb=float(max_climb),
            version=version,
        )

    def edge_sources(self) -> np.ndarray:
        """(m,) source node of each edge (the COO row of the CSR)."""
        return np.repeat(np.arange(self.node_count, dtype=np.int64), np.diff(self.indptr))

    def cache_key(self) -> tuple:
        """Changes whenever the graph may have: ``version`` bumped or an array replaced. Caches
        derived from the graph (its reverse, search buffers) are rebuilt when it differs."""
        return (self.version, id(self.indptr), id(self.indices), id(self.costs), id(self.positions),
                id(self.walkable))

    def reverse(self) -> NavGraph:
        """The graph with every edge turned round (cached until ``cache_key`` changes):
        searches *to* a goal run on it."""
        key = self.cache_key()
        if self._reverse is None or self._reverse[0] != key:
            reverse = NavGraph.from_edges(
                self.positions, self.walkable, self.indices, self.edge_sources(), self.costs,
                self.grid, self.kinds, self.max_climb, self.version,
            )
            self._reverse = (key, reverse)
        return self._reverse[1]

    def path_costs(self, nodes) -> np.ndarray:
        """(k - 1,) cost of each edge along ``nodes`` ((k,) node ids): inf where two consecutive
        nodes are not linked (or an id is out of range). O(k log m), over a sorted edge-key
        array cached until ``cache_key`` changes."""
        nodes = np.asarray(nodes, dtype=np.int64).reshape(-1)
        if nodes.size < 2:
            return np.zeros(0)
        n = self.node_count
        key = self.cache_key()
        cached = self.__dict__.get("_edge_keys")
        if cached is None or cached[0] != key:
            cached = (key, self.edge_sources() * n + self.indices.astype(np.int64))
            self.__dict__["_edge_keys"] = cached
        keys = cached[1]
        inside = (nodes[:-1] >= 0) & (nodes[:-1] < n) & (nodes[1:] >= 0) & (nodes[1:] < n)
        want = nodes[:-1] * n + nodes[1:]
        if keys.size == 0:
            return np.full(want.size, np.inf)
        at = np.minimum(np.searchsorted(keys, want), keys.size - 1)
        return np.where(inside & (keys[at] == want), self.costs[at], np.inf)

    def path_cost(self, nodes) -> float:
        """Sum of the edge costs along ``nodes``: 0 for fewer than two nodes, inf when two
        consecutive nodes are not linked (see ``path_costs``)."""
        return float(self.path_costs(nodes).sum())

    def packed_adjacency(self) -> tuple:
        """The CSR targets and costs packed into one word per edge: ``(adj, cost_table, shift, mask)``.

        A grid graph has a handful of distinct edge costs: edge e becomes ``target << shift | class``
        with ``cost_table[class]`` the exact float64 cost, so a search's relaxation reads 4 bytes
        instead of 12 (about 20% faster on the 512x512 and 768x768 maps). With more than 256
        distinct costs, or too many nodes for the bits left, the class is the edge itself (uint64
        words, the costs array as the table). Edge e leads to ``adj[e] >> shift`` at cost
        ``cost_table[adj[e] & mask]``. Cached until ``cache_key`` changes; O(m) to build."""
        key = self.cache_key()
        if self._packed is None or self._packed[0] != key:
            self._packed = (key, _pack_adjacency(self))
        return self._packed[1]

    def step_mask(self) -> tuple[np.ndarray, bool]:
        """Which grid steps each node has an edge for: ``(mask, steps_only)``.

        ``mask`` (n,) uint16 has bit ``(d_row + 1) * 3 + (d_col + 1)`` set when node i has an edge
        to the slot ``d_row`` rows and ``d_col`` columns away (|d_row|, |d_col| <= 1; bit 4, the
        node itself, is never set). ``steps_only`` tells whether every edge is such a step (no
        off-mesh link to a farther slot, no edge from one level to another: the kernels that read
        the mask walk one level's grid). Cached until ``cache_key`` changes; O(m) to build."""
        key = self.cache_key()
        if self._steps is None or self._steps[0] != key:
            cols, slots = self.grid.cols, self.grid.slots
            src = self.edge_sources()
            dst = self.indices.astype(np.int64)
            d_row = dst % slots // cols - src % slots // cols
            d_col = dst % cols - src % cols
            step = (np.abs(d_row) <= 1) & (np.abs(d_col) <= 1) & (dst // slots == src // slots)
            bits = np.left_shift(1, (d_row[step] + 1) * 3 + d_col[step] + 1).astype(np.float64)
            mask = np.bincount(src[step], weights=bits, minlength=self.node_count).astype(np.uint16)
            self._steps = (key, mask, bool(step.all()))
        return self._steps[1], self._steps[2]

    # --- the seed's query API -------------------------------------------------------------

    @property
    def node_count(self) -> int:
        """Number of node slots (walkable or not), as the seed's GetNodeCount."""
        return int(self.positions.shape[0])

    @property
    def edge_count(self) -> int:
        return int(self.indices.shape[0])

    def _check(self, node: int) -> int:
        i = int(node)
        if not 0 <= i < self.node_count:
            raise IndexError(f"node {node} is not in the graph (valid ids: 0..{self.node_count - 1})")
        return i

    def node_position(self, node: int) -> np.ndarray:
        """(3,) position of ``node``: x, y, elevation.

        Raises IndexError for an id outside the graph and ValueError for a slot that is not
        walkable (the seed's invalid node)."""
        i = self._check(node)
        if not self.walkable[i]:
            col, row = self.cell_of_node(i)
            raise ValueError(f"node {i} (cell col={col}, row={row}) is not walkable")
        return self.positions[i].copy()

    def neighbours(self, node: int) -> np.ndarray:
        """Node ids reachable from ``node`` by one edge."""
        i = self._check(node)
        return self.indices[self.indptr[i] : self.indptr[i + 1]].astype(np.int64)

    def distance(self, a: int, b: int) -> float:
        """Cost of the edge a → b: 0 when a == b, inf when they are not linked."""
        i, j = self._check(a), self._check(b)
        if i == j:
            return 0.0
        lo, hi = self.indptr[i], self.indptr[i + 1]
        k = lo + int(np.searchsorted(self.indices[lo:hi], j))
        return float(self.costs[k]) if k < hi and self.indices[k] == j else float("inf")

    # --- cells --------------------------------------------------------------------------------

    def cell_of_node(self, node: int) -> tuple[int, int]:
        """(col, row) grid cell of ``node``, rows growing with world y (whatever its level)."""
        row, col = divmod(self._check(node) % self.grid.slots, self.grid.cols)
        return col, row

    def level_of_node(self, node: int) -> int:
        """The level of ``node``: 0 for its grid point's highest surface, 1 for the next below..."""
        return self._check(node) // self.grid.slots

    def node_at_cell(self, x: int, y: int) -> int | None:
        """The node of the cell at column ``x`` and row ``y`` counted from the map's top line
        (as in Moving AI ``.scen`` files and ASCII grids); None when the cell is blocked or
        outside the map."""
        row, col = self.grid.rows - 1 - int(y), int(x)
        if not (0 <= row < self.grid.rows and 0 <= col < self.grid.cols):
            return None
        node = row * self.grid.cols + col
        return node if self.walkable[node] else None

    # --- point → node ---------------------------------------------------------------------------

    def nearest_nodes(
        self, points: np.ndarray, elevations: np.ndarray | None = None, search_cells: int = 3
    ) -> np.ndarray:
        """Nearest walkable node to each point (k, 2) reachable from its surface, or -1.

        A node qualifies when its elevation is within ``max_climb`` of the point's elevation
        (when given): a point on a wall top snaps to a wall-top node, not to the floor below, and
        on a graph of several levels a point under a bridge to the road, not to the deck.
        Without elevations, a point's own cell gives its highest walkable level.
        O(1) per point in the common case (the point's own cell); otherwise the
        ``(2 * search_cells + 1)²`` cells around it are searched (``nearest_walkable``).
        """
        # (C order and writable, as the kernel was compiled for: a read-only array compiles it again)
        p = np.require(np.asarray(points, dtype=np.float64).reshape(-1, 2), requirements="CW")
        if elevations is None:
            z = _NO_ELEVATIONS
        else:
            z = np.require(np.asarray(elevations, dtype=np.float64).reshape(-1), requirements="CW")
            if z.size != p.shape[0]:
                raise ValueError(f"nearest_nodes: {z.size} elevations for {p.shape[0]} points")
        g = self.grid
        if self.positions.shape[0] < g.node_count or self.walkable.shape[0] < g.node_count:
            raise ValueError(f"nearest_nodes: a graph of {self.positions.shape[0]} positions and "
                             f"{self.walkable.shape[0]} walkable flags for a grid of {g.node_count} slots")
        out = np.empty(p.shape[0], np.int64)
        nearest_walkable(self.positions, self.walkable, float(self.max_climb), float(g.origin[0]),
                         float(g.origin[1]), float(g.spacing), int(g.cols), int(g.rows), int(g.levels), p,
                         elevations is not None, z, int(search_cells), out)
        return out

    def cell_nodes(self, points: np.ndarray, elevations: np.ndarray | None = None,
                   max_dz: float = float("inf")) -> np.ndarray:
        """The node of each point's own grid cell (``GridIndex.cells_of``), or -1: of the cell's
        walkable levels, the one nearest in elevation to ``elevations[k]`` and at most ``max_dz``
        (m) from it, or without elevations the highest. -1 outside the grid or with no such level.
        Unlike ``nearest_nodes`` it never looks beyond the cell. ``points`` (k, 2), finite."""
        g = self.grid
        col, row = g.cells_of(points)
        inside = (col >= 0) & (col < g.cols) & (row >= 0) & (row < g.rows)
        slot = np.where(inside, row * g.cols + col, 0)
        best = np.full(slot.shape, -1, np.int64)
        best_dz = np.full(slot.shape, np.inf)
        for level in range(g.levels - 1, -1, -1):  # upward: a tie goes to the higher level
            node = level * g.slots + slot
            ok = inside & self.walkable[node]
            if elevations is not None:
                dz = np.abs(self.positions[node, 2] - np.asarray(elevations, np.float64).reshape(-1))
                ok &= (dz <= max_dz) & (dz <= best_dz)
                best_dz = np.where(ok, dz, best_dz)
            best = np.where(ok, node, best)
        return best

    def nearest_node(self, point, elevation: float | None = None, search_cells: int = 3) -> int | None:
        """The seed's GetNodeAtPosition: nearest node reachable from the point's surface, or None."""
        p = np.asarray(point, dtype=np.float64).reshape(-1)[:2]
        z = None if elevation is None else np.array([elevation])
        node = int(self.nearest_nodes(p[None, :], z, search_cells)[0])
        return node if node >= 0 else None

    # --- interop ----------------------------------------------------------------------------

    def to_scipy(self):
        """The graph as a ``scipy.sparse.csr_array`` of edge costs (for reference checks)."""
        from scipy.sparse import csr_array

        n = self.node_count
        return csr_array((self.costs, self.indices, self.indptr), shape=(n, n))


def check_node(graph: NavGraph, node, what: str) -> int:
    """``node`` as an int when it is a walkable node of ``graph``; else a ValueError that says
    ``what`` the node was for (``"start"``, ``"goal"``) and why it is not valid."""
    try:
        i = int(node)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a node id, got {node!r}") from None
    if isinstance(node, (bool, np.bool_)) or i != node:  # (1.5 is no node, and int() would make it 1)
        raise ValueError(f"{what} must be a node id (an integer), got {node!r}")
    if not 0 <= i < graph.node_count:
        raise ValueError(f"{what} node {i} is not in the graph (valid ids: 0..{graph.node_count - 1})")
    if not graph.walkable[i]:
        col, row = graph.cell_of_node(i)
        raise ValueError(f"{what} node {i} (cell col={col}, row={row}) is not walkable")
    return i


_MAX_COST_CLASSES = 256


def _pack_adjacency(graph: NavGraph) -> tuple:
    """``NavGraph.packed_adjacency`` without the cache."""
    costs, m, n = graph.costs, graph.edge_count, graph.node_count
    table = np.unique(costs[:: max(1, m // 4096)]) if m else np.zeros(1)
    idx = np.zeros(m, dtype=np.int64)
    missing = np.zeros(0, dtype=bool)
    for _ in range(2):  # the sample may miss a rare cost: add what is missing, once
        idx = np.searchsorted(table, costs).clip(max=len(table) - 1)
        missing = table[idx] != costs
        if not missing.any() or len(table) > _MAX_COST_CLASSES:
            break
        table = np.union1d(table, costs[missing][: _MAX_COST_CLASSES + 1])
    shift = max(1, (len(table) - 1).bit_length())
    if not missing.any() and len(table) <= _MAX_COST_CLASSES and n <= 1 << (32 - shift):
        adj = (graph.indices.astype(np.uint32) << np.uint32(shift)) | idx.astype(np.uint32)
        return adj, table, np.uint32(shift), np.uint32((1 << shift) - 1)
    adj = (graph.indices.astype(np.uint64) << np.uint64(32)) | np.arange(m, dtype=np.uint64)
    return adj, costs, np.uint64(32), np.uint64(0xFFFFFFFF)
