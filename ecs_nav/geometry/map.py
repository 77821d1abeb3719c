"""Map geometry: the static and dynamic shapes of a map, and the queries on them.

Coordinates. The ground plane is (x, y); elevation is the third axis (the seed's Unity "y").
A map is a flat floor at height ``floor`` inside ``bounds`` plus solid shapes standing on it:
boxes, ramps and circles (``ecs_nav.geometry.shapes``). ``MapGeometry`` holds them with stable ids,
packs them into flat arrays and answers every query with a compiled kernel over those arrays
(``ecs_nav.geometry.kernels``).

Walls. Whether a solid blocks an agent depends on where the agent stands: to an agent at
elevation ``e`` a solid is a *wall* where it occupies the body band ``(e + max_climb,
e + body_height)``, i.e. its top rises more than ``max_climb`` above ``e`` and its base is
below the agent's head. The part of a ramp below ``e + max_climb`` is not a wall: it is stepped
onto. A box of height 0.3 is a step; the same box is a wall to nobody standing on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ecs_nav.core.limits import COORDINATE_LIMIT, SHAPE_LIMIT, TILE_LIMIT
from ecs_nav.geometry.kernels import (
    penetrations_into,
    rect_row,
    resolve_circles_into,
    segments_blocked_into,
    surface_heights_into,
)
from ecs_nav.geometry.shapes import AABB, Box, Circle, Ramp, Shape, finite_pair, finite_scalar, union_aabb


def _as_points(points, name: str = "points") -> np.ndarray:
    p = np.asarray(points, dtype=np.float64)
    if p.ndim == 1 and p.shape[0] >= 2:
        p = p[None, :]
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"{name} must have shape (k, 2), got {np.shape(points)}")
    p = np.ascontiguousarray(p[:, :2])
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite")
    return p


def _per_point(value, k: int, name: str) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        return np.full(k, float(v))
    v = v.reshape(-1)
    if v.shape[0] != k:
        raise ValueError(f"{name} must be a scalar or have {k} values, got {v.shape[0]}")
    return np.ascontiguousarray(v)


class MapGeometry:
    """The solid shapes of a map, with stable ids, packed for the compiled queries.

    Args:
        bounds: ``(xmin, ymin, xmax, ymax)`` of the floor; outside it there is no ground.
        boxes, ramps, circles: the shapes; ids are given in this order (boxes first).
        floor: elevation of the floor.

    ``version`` counts changes (``add``, ``move``, ``remove``); the packed arrays are rebuilt
    lazily on the next query after a change (O(number of shapes)).
    """

    def __init__(
        self,
        bounds: Sequence[float],
        boxes: Iterable[Box] = (),
        ramps: Iterable[Ramp] = (),
        circles: Iterable[Circle] = (),
        floor: float = 0.0,
    ):
        try:
            xmin, ymin, xmax, ymax = (float(v) for v in bounds)
        except (TypeError, ValueError):
            raise ValueError(f"bounds must be (xmin, ymin, xmax, ymax), got {bounds!r}") from None
        if not all(math.isfinite(v) for v in (xmin, ymin, xmax, ymax)) or xmin >= xmax or ymin >= ymax:
            raise ValueError(f"bounds must be finite with xmin < xmax and ymin < ymax, got {bounds!r}")
        if max(abs(xmin), abs(ymin), abs(xmax), abs(ymax)) > COORDINATE_LIMIT:
            raise ValueError(f"bounds must be at most {COORDINATE_LIMIT:g} in magnitude, got {bounds!r}")
        self.bounds: AABB = (xmin, ymin, xmax, ymax)
        self.floor = finite_scalar("floor", floor)
        self._shapes: dict[int, Shape] = {}
        self._next_id = 0
        self.version = 0
        self._kernel_data: tuple | None = None
        for shape in (*boxes, *ramps, *circles):
            self._insert(shape)

    # --- shapes ----------------------------------------------------------------------------

    def _insert(self, shape: Shape) -> int:
        if not isinstance(shape, (Box, Ramp, Circle)):
            raise TypeError(f"expected a Box, Ramp or Circle, got {type(shape).__name__}")
        if len(self._shapes) >= SHAPE_LIMIT:
            raise ValueError(f"a map holds at most {SHAPE_LIMIT} shapes")
        sid = self._next_id
        self._next_id += 1
        self._shapes[sid] = shape
        self._kernel_data = None
        return sid

    def add(self, shape: Shape) -> int:
        """Add a shape; returns its id (its region is ``self.shape(id).aabb()``)."""
        sid = self._insert(shape)
        self.version += 1
        return sid

    def move(self, shape_id: int, new: Shape | Sequence[float]) -> AABB:
        """Replace shape ``shape_id`` by ``new`` (a shape, or a new centre (x, y) for the same
        shape); returns the ground-plane AABB that changed (old ∪ new)."""
        old = self.shape(shape_id)
        if not isinstance(new, (Box, Ramp, Circle)):
            new = old.moved_to(finite_pair("center", new))
        self._shapes[shape_id] = new
        self._kernel_data = None
        self.version += 1
        return union_aabb(old.aabb(), new.aabb())

    def remove(self, shape_id: int) -> AABB:
        """Remove shape ``shape_id``; returns its ground-plane AABB."""
        old = self.shape(shape_id)
        del self._shapes[shape_id]
        self._kernel_data = None
        self.version += 1
        return old.aabb()

    def shape(self, shape_id: int) -> Shape:
        try:
            return self._shapes[int(shape_id)]
        except KeyError:
            raise KeyError(f"no shape with id {shape_id} (ids: {sorted(self._shapes)})") from None

    @property
    def shapes(self) -> dict[int, Shape]:
        """id → shape, a copy."""
        return dict(self._shapes)

    @property
    def boxes(self) -> list[Box]:
        return [s for s in self._shapes.values() if isinstance(s, Box)]

    @property
    def ramps(self) -> list[Ramp]:
        return [s for s in self._shapes.values() if isinstance(s, Ramp)]

    @property
    def circles(self) -> list[Circle]:
        return [s for s in self._shapes.values() if isinstance(s, Circle)]

    @property
    def max_top(self) -> float:
        """Highest point of the map (the floor when there are no shapes)."""
        tops = [self.floor]
        for s in self._shapes.values():
            tops.append(max(s.low, s.high) if isinstance(s, Ramp) else s.top)
        return max(tops)

    @classmethod
    def from_grid(
        cls,
        blocked_text_order: np.ndarray,
        cell_size: float = 1.0,
        origin: Sequence[float] = (0.0, 0.0),
        height: float = 2.0,
        floor: float = 0.0,
    ) -> MapGeometry:
        """A tile grid as boxes: blocked cells merged into few rectangles.

        ``blocked_text_order`` is (rows, cols) bool with row 0 the top text line, as in
        ``ecs_nav.nav.grid``: text row r is world row ``rows - 1 - r`` and cell (c, row) spans
        ``[origin.x + c * cell_size, origin.x + (c + 1) * cell_size)`` (likewise in y). Runs of
        blocked cells in a row become one box; equal runs in consecutive rows merge."""
        blocked = np.asarray(blocked_text_order, dtype=bool)
        if blocked.ndim != 2 or 0 in blocked.shape:
            raise ValueError(f"blocked_text_order must be a non-empty 2-D array, got {blocked.shape}")
        if blocked.size > TILE_LIMIT:
            raise ValueError(f"a tile map has at most {TILE_LIMIT} tiles, got {blocked.shape[0]} x {blocked.shape[1]}")
        cell = finite_scalar("cell_size", cell_size)
        if cell <= 0:
            raise ValueError(f"cell_size must be > 0, got {cell_size}")
        ox, oy = finite_pair("origin", origin)
        height = finite_scalar("height", height, nonneg=True)
        floor = finite_scalar("floor", floor)
        rows, cols = blocked.shape
        world = blocked[::-1]
        padded = np.zeros((rows, cols + 2), dtype=np.int8)
        padded[:, 1:-1] = world
        edges = np.diff(padded, axis=1)
        open_runs: dict[tuple[int, int], int] = {}
        rects: list[tuple[int, int, int, int]] = []  # c0, c1, r0, r1 (half-open)
        for row in range(rows):
            starts = np.flatnonzero(edges[row] == 1)
            stops = np.flatnonzero(edges[row] == -1)
            current = {(int(a), int(b)) for a, b in zip(starts, stops, strict=True)}
            for run, r0 in list(open_runs.items()):
                if run not in current:
                    rects.append((run[0], run[1], r0, row))
                    del open_runs[run]
            for run in current:
                open_runs.setdefault(run, row)
        for run, r0 in open_runs.items():
            rects.append((run[0], run[1], r0, rows))
        rects.sort(key=lambda r: (r[2], r[0]))
        boxes = [
            Box(
                center=(ox + (c0 + c1) / 2 * cell, oy + (r0 + r1) / 2 * cell),
                size=((c1 - c0) * cell, (r1 - r0) * cell),
                height=height,
                base=floor,
            )
            for c0, c1, r0, r1 in rects
        ]
        return cls((ox, oy, ox + cols * cell, oy + rows * cell), boxes=boxes, floor=floor)

    # --- packing -----------------------------------------------------------------------------

    def kernel_data(self) -> tuple:
        """The packed tuple the numba kernels take (rebuilt after a change)."""
        if self._kernel_data is None:
            self._kernel_data = self._pack()
        return self._kernel_data

    def _pack(self) -> tuple:
        shapes = list(self._shapes.values())
        rect_shapes = [s for s in shapes if not isinstance(s, Circle)]
        circ_shapes = [s for s in shapes if isinstance(s, Circle)]
        rects = np.array([rect_row(s, self.floor) for s in rect_shapes], dtype=np.float64).reshape(-1, 9)
        circs = np.array(
            [[s.center[0], s.center[1], s.radius, s.base, s.top] for s in circ_shapes], dtype=np.float64
        ).reshape(-1, 5)
        aabbs = np.array([s.aabb() for s in rect_shapes + circ_shapes], dtype=np.float64).reshape(-1, 4)
        xmin, ymin, xmax, ymax = self.bounds
        width, depth = xmax - xmin, ymax - ymin
        n = max(len(shapes), 1)
        # about two buckets per shape, at most 2**20 buckets
        cell = max(math.sqrt(width * depth / (2.0 * n)), math.sqrt(width * depth / 2.0**20), 1e-6)
        nbx = max(1, math.ceil(width / cell))
        nby = max(1, math.ceil(depth / cell))
        i0 = np.clip(np.floor((aabbs[:, 0] - xmin) / cell), 0, nbx - 1).astype(np.int64)
        i1 = np.clip(np.floor((aabbs[:, 2] - xmin) / cell), 0, nbx - 1).astype(np.int64)
        j0 = np.clip(np.floor((aabbs[:, 1] - ymin) / cell), 0, nby - 1).astype(np.int64)
        j1 = np.clip(np.floor((aabbs[:, 3] - ymin) / cell), 0, nby - 1).astype(np.int64)
        ni, nj = i1 - i0 + 1, j1 - j0 + 1
        count = ni * nj
        total = int(count.sum())
        item = np.repeat(np.arange(len(shapes), dtype=np.int64), count)
        local = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        rep_ni = np.repeat(ni, count)
        bucket = (np.repeat(j0, count) + local // rep_ni) * nbx + np.repeat(i0, count) + local % rep_ni
        order = np.argsort(bucket, kind="stable")
        bitems = np.ascontiguousarray(item[order])
        bptr = np.zeros(nbx * nby + 1, dtype=np.int64)
        np.cumsum(np.bincount(bucket, minlength=nbx * nby), out=bptr[1:])
        meta = np.array([xmin, ymin, xmax, ymax, self.floor, xmin, ymin, cell], dtype=np.float64)
        dims = np.array([nbx, nby, rects.shape[0]], dtype=np.int64)
        return (rects, circs, meta, dims, bptr, bitems, aabbs)

    # --- queries ---------------------------------------------------------------------------

    def surface_height(self, points, from_height=np.inf) -> np.ndarray:
        """Cast a ray down at each point (k, 2) from ``from_height`` (scalar or (k,)).

        Returns (k,) the highest walkable top at or below ``from_height``: a box or circle top,
        a ramp surface (interpolated along the ramp), or the floor; NaN outside the bounds
        (the ray missed) or where nothing lies below ``from_height``."""
        p = _as_points(points)
        z = _per_point(from_height, p.shape[0], "from_height")
        out = np.empty(p.shape[0], dtype=np.float64)
        surface_heights_into(self.kernel_data(), p[:, 0].copy(), p[:, 1].copy(), z, out)
        return out

    def support_height(self, points, elevation, max_climb: float) -> np.ndarray:
        """(k,) the surface an agent at ``elevation`` stands on at each point: the highest top
        at or below ``elevation + max_climb``; NaN off the map."""
        p = _as_points(points)
        e = _per_point(elevation, p.shape[0], "elevation")
        return self.surface_height(p, e + finite_scalar("max_climb", max_climb, nonneg=True))

    def segment_blocked(self, a, b) -> np.ndarray:
        """(k,) bool: does the 3-D segment a[k] → b[k] ((k, 3) each) pass through a solid?

        Touching a surface (a segment lying on a box top, grazing a face) is not blocked."""
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1, 3))
        b = np.ascontiguousarray(np.asarray(b, dtype=np.float64).reshape(-1, 3))
        if a.shape != b.shape:
            raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("segment endpoints must be finite")
        out = np.empty(a.shape[0], dtype=np.bool_)
        segments_blocked_into(self.kernel_data(), a, b, out)
        return out

    def penetration(self, points, radius, elevation, max_climb, body_height: float = 2.0) -> np.ndarray:
        """(k,) how deep each disc (point, radius) at ``elevation`` overlaps a wall (0 = clear)."""
        p = _as_points(points)
        k = p.shape[0]
        out = np.empty(k, dtype=np.float64)
        penetrations_into(
            self.kernel_data(), p[:, 0].copy(), p[:, 1].copy(), _per_point(radius, k, "radius"),
            _per_point(elevation, k, "elevation"), _per_point(max_climb, k, "max_climb"),
            finite_scalar("body_height", body_height, nonneg=True), out,
        )  # fmt: skip
        return out

    def resolve_circles(
        self, prev_pos, new_pos, radius, elevation, max_climb, body_height: float = 2.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Move agents (discs) from ``prev_pos`` toward ``new_pos`` ((k, 2) each) against the map.

        A disc cannot enter a wall (a solid rising more than ``max_climb`` above its current
        surface and starting below ``elevation + body_height``); it slides along it (the push
        out removes only the normal component of the motion). Motion is sub-stepped in steps
        of at most half the collision radius (``max(radius, MIN_COLLISION_RADIUS)``): a disc
        never moves far enough in one sub-step to pass a wall, so no speed tunnels through one.
        Discs stay inside the bounds; elevation follows box tops and ramp surfaces (walking
        up a ramp ends on top of the wall it leans on) and drops where a ledge ends.

        Args:
            radius, elevation, max_climb: scalars or (k,).

        Returns:
            (pos (k, 2), elevation (k,)). Raises ValueError on non-finite input.
        """
        p0, p1 = _as_points(prev_pos, "prev_pos"), _as_points(new_pos, "new_pos")
        if p0.shape != p1.shape:
            raise ValueError(f"prev_pos and new_pos must have the same shape, got {p0.shape}, {p1.shape}")
        k = p0.shape[0]
        r = _per_point(radius, k, "radius")
        e = _per_point(elevation, k, "elevation")
        mc = _per_point(max_climb, k, "max_climb")
        for name, arr in (("prev_pos", p0), ("new_pos", p1), ("radius", r), ("elevation", e),
                          ("max_climb", mc)):  # fmt: skip
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} must be finite")
        if np.any(r < 0) or np.any(mc < 0):
            raise ValueError("radius and max_climb must be >= 0")
        out_x, out_y, out_e = np.empty(k), np.empty(k), np.empty(k)
        resolve_circles_into(
            self.kernel_data(), p0[:, 0].copy(), p0[:, 1].copy(), p1[:, 0].copy(), p1[:, 1].copy(),
            r, e, mc, finite_scalar("body_height", body_height, nonneg=True), out_x, out_y, out_e,
        )  # fmt: skip
        return np.stack([out_x, out_y], axis=1), out_e

    def __repr__(self) -> str:
        return (f"MapGeometry(bounds={self.bounds}, boxes={len(self.boxes)}, ramps={len(self.ramps)}, "
                f"circles={len(self.circles)}, floor={self.floor}, version={self.version})")  # fmt: skip
