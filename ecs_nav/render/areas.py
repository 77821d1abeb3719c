"""What the viewer draws of area costs (``world.nav_areas``, a scene's ``[[map.area]]``): GL-free
triangle rows.

An area is drawn as what the searches see of it: the cell of every graph node whose area it is
(``NavAreas.node_areas``: the last area listed wins where they overlap), a square one node
spacing wide centred on the node, tinted by the area's own ``cost``: PALETTE "area_dear" for a
multiplier above 1, "area_cheap" below, more opaque the further the multiplier is from 1
(``area_alpha``). Drawn with the "map" layer, over the floor and under every shape
(``ecs_nav.render.draw.map_triangles``'s ``under``). Row format: ``(k, 6)`` rows of
``x, y, r, g, b, a``, three rows a triangle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.render.draw import PALETTE, empty_rows, rectangles
from ecs_nav.render.floors import shaded_alpha, shaded_first

MAX_ALPHA = 0.6
"""The opacity of an area whose multiplier is ``FULL_TINT`` times (or 1 / ``FULL_TINT`` of) the floor's."""
FULL_TINT = 10.0
"""A multiplier this far from 1 (a factor, either way) or further is drawn at ``MAX_ALPHA``."""


def area_alpha(cost: Any) -> np.ndarray:
    """Opacity of the tint of areas of multiplier ``cost`` (> 0): ``MAX_ALPHA * min(|log cost| /
    log FULL_TINT, 1)``, at least 0.15 for any cost other than 1, and 0 at 1 (a plain floor)."""
    cost = np.asarray(cost, np.float64)
    share = np.minimum(np.abs(np.log(cost)) / np.log(FULL_TINT), 1.0)
    return np.where(cost == 1.0, 0.0, np.maximum(MAX_ALPHA * share, 0.15))


def area_colours(areas: Any) -> np.ndarray:
    """(len(areas.areas), 4) the tint of each area of a NavAreas (see the module doc)."""
    cost = np.array([a.cost for a in areas.areas], np.float64)
    rgb = np.where((cost > 1.0)[:, None], np.asarray(PALETTE["area_dear"][:3]), np.asarray(PALETTE["area_cheap"][:3]))
    return np.concatenate([rgb, area_alpha(cost)[:, None]], axis=1)


def area_cells(areas: Any, graph: Any, bounds: Any = None, shade: np.ndarray | None = None) -> np.ndarray:
    """Triangle rows of the node cells of each area of ``areas`` (a NavAreas) on ``graph``, cut
    to ``bounds`` ([xmin, ymin, xmax, ymax], m; the map's) when given; empty without areas or
    graph, and for an area whose cost is 1. ``shade`` (n,) bool: nodes of another floor
    (``ecs_nav.render.floors.node_shade``), drawn first, their alpha scaled by ``SHADED_ALPHA``."""
    if areas is None or graph is None or not areas.areas:
        return empty_rows()
    node_area = areas.node_areas(graph)
    nodes = np.flatnonzero(node_area >= 0)
    colours = area_colours(areas)[node_area[nodes]]
    nodes = nodes[colours[:, 3] > 0]
    if nodes.size == 0:
        return empty_rows()
    colours = colours[colours[:, 3] > 0]
    if shade is not None:
        order = shaded_first(shade[nodes])
        nodes, colours = nodes[order], shaded_alpha(colours[order], shade[nodes[order]])
    half = float(graph.grid.spacing) / 2
    xy = graph.positions[nodes, :2]
    low, high = xy - half, xy + half
    if bounds is not None:
        xmin, ymin, xmax, ymax = (float(v) for v in bounds)
        low, high = np.maximum(low, [xmin, ymin]), np.minimum(high, [xmax, ymax])
        inside = np.all(low < high, axis=1)  # a cell wholly outside is left out
        low, high, colours = low[inside], high[inside], colours[inside]
    return rectangles(low, high, colours)
