"""Obstacles for ORCA as RVO2 holds them: polygons of linked vertices, and the map's walls as such
polygons.

RVO2 (``RVOSimulator::addObstacle``) keeps an obstacle as a ring of vertices; vertex ``i`` starts
the segment to ``next[i]``, with the segment's unit ``direction`` and whether the vertex is
``convex`` (the turn ``previous -> i -> next`` is not to the right). A polygon listed
counter-clockwise is solid inside; listed clockwise it is solid outside (a room's walls seen
from within). A polygon of two vertices is one segment, both vertices convex. An agent sees a
segment only from its right side (the free side), as RVO2's obstacle query does.

``map_obstacles`` makes the polygons of a ``MapGeometry``: its bounds (clockwise: the agents are
inside), every box whose top is more than ``wall_min_height`` above the floor (counter-clockwise;
a box with one side of length 0 is one segment) and every circle as a regular polygon drawn
round it (its sides touch the circle, so the polygon holds the whole circle). Ramps are walked
onto and are left out, as steering's wall avoidance leaves them out; so are low boxes (steps).

``pack_obstacles`` lays the polygons out as the flat arrays the kernels take (``Obstacles``), with
a uniform grid over the segments' boxes (``ecs_nav.motion.spatial.bin_into_grid``) for the
neighbour query.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ecs_nav.motion.spatial import bin_into_grid

OBSTACLE_CELL = 4.0
"""m. The wanted side of a cell of the obstacle grid."""

CIRCLE_TOLERANCE = 0.05
"""m. A circle's polygon reaches at most this far beyond the circle (more sides for a larger
circle), with at least ``CIRCLE_MIN_SIDES`` and at most ``CIRCLE_MAX_SIDES`` sides."""

CIRCLE_MIN_SIDES = 8
CIRCLE_MAX_SIDES = 64


class Obstacles(NamedTuple):
    """Obstacle vertices as RVO2 links them, and the grid over their segments.

    Attributes:
        point: (v, 2) float64 vertex positions, m.
        direction: (v, 2) unit direction of the segment from vertex i to ``next[i]``.
        convex: (v,) bool, RVO2's ``isConvex_``.
        next, previous: (v,) int64 the neighbouring vertices of the same polygon.
        origin_x, origin_y, inv_cell, cols, rows, cell_start, cell_items: the segments' grid
            (``ecs_nav.motion.spatial.UniformGrid.kernel_args``).
    """

    point: np.ndarray
    direction: np.ndarray
    convex: np.ndarray
    next: np.ndarray
    previous: np.ndarray
    origin_x: float
    origin_y: float
    inv_cell: float
    cols: int
    rows: int
    cell_start: np.ndarray
    cell_items: np.ndarray


def left_of(a, b, c) -> float:
    """RVO2's ``leftOf``: > 0 when ``c`` lies left of the line from ``a`` to ``b``."""
    return (a[0] - c[0]) * (b[1] - a[1]) - (a[1] - c[1]) * (b[0] - a[0])


def pack_obstacles(polygons, cell_size: float = OBSTACLE_CELL) -> Obstacles:
    """The polygons (each a sequence of (x, y) vertices, m; at least two, consecutive vertices
    distinct) linked as RVO2's ``addObstacle`` links them, in the order given."""
    points, directions, convex, nxt, prv = [], [], [], [], []
    for k, polygon in enumerate(polygons):
        vertices = np.asarray(polygon, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[1] != 2 or vertices.shape[0] < 2:
            raise ValueError(f"obstacle {k}: a polygon is at least two (x, y) vertices, got shape {vertices.shape}")
        if not np.all(np.isfinite(vertices)):
            raise ValueError(f"obstacle {k}: vertices must be finite")
        m = vertices.shape[0]
        first = len(points)
        for i in range(m):
            a, b = vertices[i], vertices[(i + 1) % m]
            length = math.hypot(b[0] - a[0], b[1] - a[1])
            if length == 0.0:
                raise ValueError(f"obstacle {k}: vertices {i} and {(i + 1) % m} coincide")
            points.append(a)
            directions.append((b - a) / length)
            convex.append(m == 2 or left_of(vertices[i - 1], a, b) >= 0.0)
            nxt.append(first + (i + 1) % m)
            prv.append(first + (i - 1) % m)
    v = len(points)
    point = np.array(points, dtype=np.float64).reshape(v, 2)
    following = point[np.array(nxt, dtype=np.int64)] if v else point
    lo, hi = np.minimum(point, following), np.maximum(point, following)
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(np.ascontiguousarray(lo), np.ascontiguousarray(hi),
                                                                     float(cell_size))
    return Obstacles(point, np.array(directions, dtype=np.float64).reshape(v, 2), np.array(convex, dtype=np.bool_),
                     np.array(nxt, dtype=np.int64), np.array(prv, dtype=np.int64), ox, oy, 1.0 / cell, cols, rows,
                     cell_start, cell_items)


NO_OBSTACLES = pack_obstacles(())
"""No obstacle at all (a world without a map)."""


def circle_polygon(center, radius: float) -> np.ndarray:
    """A regular polygon round the circle (counter-clockwise), its sides tangent to it: (k, 2)."""
    sides = CIRCLE_MAX_SIDES
    if radius > 0:
        # the corners lie radius / cos(pi / sides) from the centre
        half = math.acos(radius / (radius + CIRCLE_TOLERANCE))
        sides = min(max(int(math.ceil(math.pi / half)), CIRCLE_MIN_SIDES), CIRCLE_MAX_SIDES)
    reach = radius / math.cos(math.pi / sides)
    angles = 2.0 * math.pi * np.arange(sides) / sides
    return np.stack([center[0] + reach * np.cos(angles), center[1] + reach * np.sin(angles)], axis=1)


def map_polygons(gmap, wall_min_height: float = 0.5) -> list[np.ndarray]:
    """The obstacle polygons of a ``MapGeometry`` (see the module docstring), in this order: the
    bounds, the boxes, the circles."""
    x0, y0, x1, y1 = gmap.bounds
    polygons = [np.array([[x0, y0], [x0, y1], [x1, y1], [x1, y0]])]  # clockwise: solid outside
    for box in gmap.boxes:
        if box.top - gmap.floor <= wall_min_height:
            continue
        bx0, by0, bx1, by1 = box.aabb()
        if bx1 > bx0 and by1 > by0:
            polygons.append(np.array([[bx0, by0], [bx1, by0], [bx1, by1], [bx0, by1]]))
        elif bx1 > bx0 or by1 > by0:  # a box of no thickness: one segment
            polygons.append(np.array([[bx0, by0], [bx1, by1]]))
    for circle in gmap.circles:
        if circle.top - gmap.floor > wall_min_height and circle.radius > 0:
            polygons.append(circle_polygon(circle.center, circle.radius))
    return polygons


def map_obstacles(gmap, wall_min_height: float = 0.5) -> Obstacles:
    """``pack_obstacles(map_polygons(gmap, wall_min_height))``; ``NO_OBSTACLES`` without a map."""
    if gmap is None:
        return NO_OBSTACLES
    return pack_obstacles(map_polygons(gmap, wall_min_height))
