"""A scene's crowds (``count > 1``): where their members would stand, and whether their discs
fit on the floor there. ``ecs_nav.scene.schema`` reports what these return.

* A crowd needs a ``spawn_area``. With a ``Position`` alone every member would stand on that
  one point: the scene is refused (``stacked_crowd``), not spread, because how far to spread
  them is the scene's to say (a spawn_area of the size it wants); the message offers one.
  ``World.spawn_many`` refuses ``positions=None`` for more than one placed member alike.
* A crowd whose discs cover more than the free floor of its spawn_area could hold at the
  densest packing cannot stand apart: it would start overlapped and stay so. The free floor is
  measured on the map itself (``free_floor``): the spawn_area widened by the member's radius
  (a member's disc may reach past it), within the map's bounds, less every place whose surface
  is higher than a member can climb from the floor (the solids it cannot stand on: walls,
  pillars, box tops; the rule ``scene.files`` places members by).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ecs_nav.core.components import Agent, Collider

HEXAGONAL_PACKING = math.pi / (2.0 * math.sqrt(3.0))
"""The densest packing of equal discs in the plane covers this fraction of it (about 0.907)."""

FREE_FLOOR_SAMPLES = 65_536
"""``free_floor`` tests the surface at most this many points, one per cell of a grid over the
region (on a 20 x 20 m area, cells of 8 cm: the area is right to about the perimeter of the
solids times 4 cm)."""

SUGGESTED_ROOM = 2.0
"""A stacked crowd's message suggests a square spawn_area with this many times the room its
discs need at the densest packing."""


def member_value(components: dict, component: str, field: str, default: float, low: float = 0.0) -> float | None:
    """A member's ``component.field`` as written (or the component's default), or None when
    it is not a finite number >= ``low`` (that is reported by the component's own check)."""
    fields = components.get(component, {})
    value = fields.get(field, default) if isinstance(fields, dict) else default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < math.inf:
        return None
    return float(value)


def disc_radius(components: dict) -> float | None:
    """The radius of a member's disc: its Collider's; None without a Collider (members then do
    not touch) or with a radius that fails its own check."""
    if "Collider" not in components:
        return None
    radius = member_value(components, "Collider", "radius", Collider().radius)
    return radius if radius else None


def stacked_crowd(count: int, components: dict) -> str:
    """Why a crowd of ``count`` with a Position and no spawn_area is refused, and a spawn_area
    that would hold it (``SUGGESTED_ROOM`` times the room its discs need, around the Position)."""
    x = member_value(components, "Position", "x", 0.0, low=-math.inf)
    y = member_value(components, "Position", "y", 0.0, low=-math.inf)
    at = f"({x:g}, {y:g})" if x is not None and y is not None else "its Position"
    radius = disc_radius(components) or Collider().radius
    half = math.ceil(math.sqrt(SUGGESTED_ROOM * count * math.pi * radius**2 / HEXAGONAL_PACKING) / 2.0)
    x, y = x or 0.0, y or 0.0
    return (f"{count} members with a Position and no spawn_area would all stand on one point {at}; give a "
            f"spawn_area to place them in, e.g. spawn_area = [{x - half:g}, {y - half:g}, {x + half:g}, {y + half:g}] "
            f"(room for {SUGGESTED_ROOM:g} times their discs)")


def free_floor(geometry, region: tuple[float, float, float, float], max_climb: float) -> float:
    """The area (m²) of ``region`` (xmin, ymin, xmax, ymax) a member can stand on: within the
    map's bounds, where the surface is at most ``max_climb`` above the floor (``geometry``: a
    ``MapGeometry``, or None: no map, the whole region). Sampled at the centres of a grid of at
    most ``FREE_FLOOR_SAMPLES`` cells."""
    x0, y0, x1, y1 = region
    if geometry is not None:
        bx0, by0, bx1, by1 = geometry.bounds
        x0, y0, x1, y1 = max(x0, bx0), max(y0, by0), min(x1, bx1), min(y1, by1)
    width, depth = x1 - x0, y1 - y0
    if not (width > 0 and depth > 0):
        return 0.0
    if geometry is None:
        return width * depth
    cols = int(min(max(round(math.sqrt(FREE_FLOOR_SAMPLES * width / depth)), 1), FREE_FLOOR_SAMPLES))
    rows = max(FREE_FLOOR_SAMPLES // cols, 1)
    xs = x0 + (np.arange(cols) + 0.5) * (width / cols)
    ys = y0 + (np.arange(rows) + 0.5) * (depth / rows)
    points = np.column_stack([np.tile(xs, rows), np.repeat(ys, cols)])
    surface = geometry.surface_height(points)
    free = np.count_nonzero(surface <= geometry.floor + max_climb)  # (NaN: off the map)
    return free * (width / cols) * (depth / rows)


def crowd_room(count: int, components: dict, area: list[float], geometry_of) -> str | None:
    """Why a crowd of ``count`` cannot stand apart in its spawn_area ``area``, or None when it
    can, or when its members do not touch (no Collider). ``geometry_of()`` gives the map's
    ``MapGeometry`` (or None: no map), asked only for a crowd of discs. The message names the
    floor the discs need, the free floor there and how many would fit."""
    radius = disc_radius(components)
    if radius is None:
        return None
    climb = member_value(components, "Agent", "max_climb", Agent().max_climb)
    need = count * math.pi * radius * radius / HEXAGONAL_PACKING
    region = (area[0] - radius, area[1] - radius, area[2] + radius, area[3] + radius)
    geometry = geometry_of()
    room = free_floor(geometry, region, Agent().max_climb if climb is None else climb)
    if need <= room:
        return None
    fits = int(room * HEXAGONAL_PACKING / (math.pi * radius * radius))
    floor = ("about {:.4g} m² (the spawn_area widened by the radius, within the map's bounds, less the solids they "
             "cannot stand on)" if geometry is not None else "{:.4g} m² (the spawn_area widened by the radius)")
    return (f"{count} discs of radius {radius:g} m need at least {need:.4g} m² (packed as densely as discs can "
            f"be), more than the free floor their spawn_area offers, {floor.format(room)}: at most {fits} fit")


def measured_map(scene: Any):
    """A function returning the ``MapGeometry`` of ``scene``'s map (built on its first call),
    or None without a map or when the map does not build (its problems are reported anyway)."""
    built: list = []

    def geometry():
        if not built:
            value = None
            if scene.map:
                from ecs_nav.scene.files import build_geometry

                try:
                    value = build_geometry(scene.map)[0]
                except Exception:  # (a map with problems: those are reported by its own checks)
                    value = None
            built.append(value)
        return built[0]

    return geometry
