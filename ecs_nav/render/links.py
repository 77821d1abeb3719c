"""What the viewer draws of off-mesh links (``world.nav_links``): GL-free line rows.

Each link is an arc from its start node to its end node (bulging to the left of its direction
by ``ARC_BULGE`` of its length, so a link over a wall stands out from the walk edges), with an
arrowhead at the end, and one at the start too when it is bidirectional; in PALETTE
"graph_link", greyed out while disabled. Drawn with the "paths" layer (ecs_nav.render.draw's row
format: ``(k, 6)`` rows of ``x, y, r, g, b, a``, two rows a segment).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.render.draw import PALETTE, arrows, empty_rows, segments

ARC_BULGE = 0.2
"""The arc's sideways offset at its middle, as a fraction of the link's length."""
ARC_SEGMENTS = 12
"""Straight segments an arc is drawn with."""
HEAD = 0.6
"""m: the length of an arrowhead's barbs."""
DISABLED = (0.55, 0.55, 0.55, 0.6)
"""The colour of a disabled link."""


def link_arcs(links: Any, graph: Any) -> np.ndarray:
    """Line rows of the arcs and arrowheads of ``links`` (a ``NavLinks`` after its ``apply`` to
    ``graph``, so its ``nodes`` are known); empty without links or graph."""
    if links is None or graph is None or len(links) == 0:
        return empty_rows()
    nodes = np.asarray(links.nodes)
    ok = (nodes[:, 0] >= 0) & (nodes[:, 1] >= 0) & (nodes[:, 0] != nodes[:, 1])
    if not ok.any():
        return empty_rows()
    a = graph.positions[nodes[ok, 0], :2]
    b = graph.positions[nodes[ok, 1], :2]
    enabled = np.asarray(links.enabled)[ok]
    two_way = np.array([link.bidirectional for link in links.links])[ok]
    colour = np.where(enabled[:, None], np.asarray(PALETTE["graph_link"]), np.asarray(DISABLED))
    d = b - a
    normal = np.stack([-d[:, 1], d[:, 0]], axis=1)
    t = np.linspace(0.0, 1.0, ARC_SEGMENTS + 1)
    # a quadratic Bézier through the control point a + d / 2 + 2 * ARC_BULGE * normal: its middle
    # lies ARC_BULGE * length to the side of the chord
    control = a + d / 2 + 2 * ARC_BULGE * normal
    w0, w1, w2 = (1 - t) ** 2, 2 * t * (1 - t), t**2
    points = (w0[None, :, None] * a[:, None] + w1[None, :, None] * control[:, None]
              + w2[None, :, None] * b[:, None])  # (k, s+1, 2)
    k = points.shape[0]
    chunks = [segments(points[:, :-1].reshape(-1, 2), points[:, 1:].reshape(-1, 2),
                       np.repeat(colour, ARC_SEGMENTS, axis=0))]
    last = np.hypot(*(points[:, -1] - points[:, -2]).T)
    head = HEAD / np.maximum(last, 1e-9)
    for i in range(k):
        ends = [(points[i, -2], points[i, -1])] + ([(points[i, 1], points[i, 0])] if two_way[i] else [])
        for tail, tip in ends:
            rows = arrows(tail, tip, colour[i], head=float(head[i]))
            chunks.append(rows[2:])  # the barbs only: the shaft is the arc's own segment
    return np.concatenate(chunks)
