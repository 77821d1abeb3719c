"""Which floor the viewer shows in full, on a map of several floors: GL-free masks and fades.

On a nav graph of several levels (a road under a bridge deck, a room under an upper storey:
``ecs_nav.nav.build``'s ``floors``) the nodes of every level over one grid point would be drawn
on top of each other, and a crowd under the bridge would read as the crowd on it. The viewer
draws one floor as always and shades the rest:

- *the viewed floor* is the selected agent's: a node or agent is on it when its elevation is
  less than a body height from the selected agent's (``|e - e_selected| < body_height``, the
  rule by which the physics lets two bodies touch: ``ecs_nav.systems.physics``). So a ramp's
  lower half is on the road's floor, the deck 3.5 m over the road is not.
- with *nothing selected*, nodes of level 0 (each grid point's highest surface, what is seen
  from above) are on the viewed floor and lower levels are shaded; agents are shaded where a
  surface of the map lies over their head (``MapGeometry.surface_height`` at their position
  above ``elevation + body_height``: under the deck, in the room under the upper floor).

Shading applies only to a *map of floors*: a nav graph of more than one level, or a map with
a shape that floats (``base`` above the map's floor). Elsewhere every mask below is None and the layers are
drawn exactly as on a single floor. A shaded line, tick or square keeps ``SHADED_ALPHA`` of its
opacity; a shaded agent's disc moves ``1 - SHADED_AGENT`` of the way from its colour to the
background. ``body_height`` is the PhysicsSystem's (m, > 0), else the scan's ``agent_height``,
else 2 m.
"""

from __future__ import annotations

from typing import Any

import numpy as np

SHADED_ALPHA = 0.3
"""The fraction of its opacity a node, edge, heat-map square, flow arrow or area tint of
another floor keeps (0..1)."""

SHADED_AGENT = 0.4
"""The fraction of its colour's distance from the background a shaded agent's fill keeps (0..1)."""

DEFAULT_BODY_HEIGHT = 2.0
"""m: the body height used when the World has neither a PhysicsSystem nor scan parameters."""


def body_height(world: Any) -> float:
    """The agents' body height, m (> 0): the PhysicsSystem's ``body_height``, else the scan's
    ``agent_height`` (``world.resources["nav_params"]``), else ``DEFAULT_BODY_HEIGHT``."""
    system = world.system("PhysicsSystem") if hasattr(world, "system") else None
    for value in (getattr(system, "body_height", None),
                  getattr(getattr(world, "resources", {}).get("nav_params"), "agent_height", None)):
        if isinstance(value, (int, float)) and np.isfinite(value) and value > 0:
            return float(value)
    return DEFAULT_BODY_HEIGHT


def has_floors(world: Any) -> bool:
    """Whether ``world``'s map has floors: its nav graph holds more than one level, or one of
    its boxes or circles floats (``base`` above the map's ``floor``)."""
    graph = getattr(world, "nav_graph", None)
    if graph is not None and int(getattr(graph.grid, "levels", 1)) > 1:
        return True
    geometry = getattr(world, "map", None)
    if geometry is None:
        return False
    return any(shape.base > geometry.floor for shape in (*geometry.boxes, *geometry.circles))


def viewed_elevation(world: Any, selected_rows: Any = ()) -> float | None:
    """m: the elevation of the first selected table row (the viewed floor), or None when no row
    in ``selected_rows`` is live or its elevation is not finite."""
    table = world.table
    rows = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
    rows = rows[(rows >= 0) & (rows < table.n)]
    if rows.size == 0:
        return None
    elevation = float(table.live("elevation")[rows[0]])
    return elevation if np.isfinite(elevation) else None


def node_shade(graph: Any, elevation: float | None, height: float) -> np.ndarray | None:
    """(n,) bool: the nodes of ``graph`` drawn shaded when the viewed floor is at ``elevation``
    (m; None: nothing selected) for bodies ``height`` m tall; see the module doc. None on a graph
    of one level (nothing shaded). A slot that is not walkable counts as shaded."""
    if graph is None or int(graph.grid.levels) <= 1:
        return None
    if elevation is None:
        return np.arange(graph.node_count) >= graph.grid.slots
    z = graph.positions[:, 2]
    with np.errstate(invalid="ignore"):
        return ~(np.abs(z - float(elevation)) < float(height))


def agent_shade(world: Any, elevation: float | None, height: float) -> np.ndarray | None:
    """(n,) bool over the table's live rows: agents drawn shaded when the viewed floor is at
    ``elevation`` (m; None: nothing selected, then those under a surface of the map) for
    bodies ``height`` m tall; see the module doc. None when nothing is shaded."""
    table = world.table
    if table.n == 0:
        return None
    own = table.live("elevation")
    if elevation is not None:
        with np.errstate(invalid="ignore"):
            shade = ~(np.abs(own - float(elevation)) < float(height))
    else:
        geometry = getattr(world, "map", None)
        if geometry is None:
            return None
        over = geometry.surface_height(table.live("pos"))
        with np.errstate(invalid="ignore"):
            shade = over > own + float(height)
    return shade if shade.any() else None


def view_shades(world: Any, selected_rows: Any = (), nodes: bool = True,
                agents: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(node shade, agent shade) of ``world`` viewed from its first selected row
    (:func:`node_shade`, :func:`agent_shade`; each None when not asked for by ``nodes`` /
    ``agents``); (None, None) on a map without floors."""
    if not has_floors(world):
        return None, None
    elevation, height = viewed_elevation(world, selected_rows), body_height(world)
    return (node_shade(getattr(world, "nav_graph", None), elevation, height) if nodes else None,
            agent_shade(world, elevation, height) if agents else None)


def shade_key(shade: np.ndarray | None) -> int | None:
    """A cache key of a node shade: equal for equal masks (None for None)."""
    return None if shade is None else hash(np.packbits(shade).tobytes())


def shaded_alpha(colours: Any, shade: np.ndarray) -> np.ndarray:
    """(k, 4) RGBA ``colours`` (one RGBA is broadcast) with the alpha of the rows where
    ``shade`` (k,) is set scaled by ``SHADED_ALPHA``."""
    shade = np.asarray(shade, dtype=bool).reshape(-1)
    out = np.array(np.broadcast_to(np.asarray(colours, dtype=np.float64), (shade.size, 4)))
    out[shade, 3] *= SHADED_ALPHA
    return out


def faded_rgb(rgb: Any, background: Any) -> np.ndarray:
    """(k, 3) ``rgb`` moved toward ``background`` (RGB), keeping ``SHADED_AGENT`` of the way."""
    rgb = np.asarray(rgb, dtype=np.float64)
    back = np.asarray(background, dtype=np.float64)[:3]
    return back + (rgb - back) * SHADED_AGENT


def shaded_first(shade: np.ndarray) -> np.ndarray:
    """Indices of ``shade`` (k,) that put the shaded items first, each group in its order, so
    the viewed floor is drawn over the others."""
    return np.argsort(~np.asarray(shade, dtype=bool), kind="stable")
