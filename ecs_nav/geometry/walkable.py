"""The walkable area of a World's map as a 2-D polygon (WKT), for the geometry table of a
JuPedSim-style recording and for drawing plots over the map.

A top-down map is the floor within its bounds, less every box or circle taller than an agent
can climb from the floor (``Agent``'s default ``max_climb``). Ramps are walkable, and so is the
top of a box that a ramp reaches (the middle of the ramp's high edge on or against the box's
footprint, and within ``max_climb`` of its top): a platform up a ramp is floor too, seen from above. Without a map it is
the box around the placed entities grown by 1 m (JuPedSim's files always hold a geometry).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.core.components import Agent

TOUCH = 0.05
"""Footprints closer than this (m) touch (a ramp laid against a platform's edge)."""


def walkable_area(world) -> tuple[str, tuple[float, float, float, float]]:
    """The walkable area as WKT and its extent ``(xmin, ymin, xmax, ymax)``."""
    import shapely
    from shapely.geometry import Point, box

    geometry = world.map
    if geometry is None:
        pos = world.table.live("pos")
        lo, hi = (pos.min(axis=0) - 1.0, pos.max(axis=0) + 1.0) if len(pos) else (np.full(2, -1.0), np.ones(2))
        area = box(lo[0], lo[1], hi[0], hi[1])
        return area.wkt, tuple(float(v) for v in area.bounds)
    climb = Agent().max_climb
    ramps = [(Point(r.end if r.high >= r.low else r.start), max(r.low, r.high)) for r in geometry.ramps]
    solids = []
    for b in geometry.boxes:
        if b.top <= geometry.floor + climb:
            continue
        footprint = box(*b.aabb())
        reached = any(abs(b.top - high) <= climb and footprint.distance(top) <= TOUCH for top, high in ramps)
        if not reached:
            solids.append(footprint)
    solids += [Point(c.center).buffer(c.radius, quad_segs=8) for c in geometry.circles
               if c.top > geometry.floor + climb]
    area = box(*geometry.bounds)
    if solids:
        area = area.difference(shapely.union_all(solids))
    return area.wkt, tuple(float(v) for v in geometry.bounds)
