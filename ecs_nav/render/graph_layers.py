"""The nav graph's layers of the viewer as vertex arrays (the conventions of ``ecs_nav.render.draw``):
its edges and node ticks, and a flow field's heat map and arrows. On a graph of several floors
each takes an optional ``shade`` (n,) bool, the nodes off the floor in view
(``ecs_nav.render.floors.node_shade``): those are drawn first, their alpha scaled by
``floors.SHADED_ALPHA``, so the floor in view covers them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.render.colours import viridis
from ecs_nav.render.draw import PALETTE, arrows, crosses, empty_rows, rectangles, segments
from ecs_nav.render.floors import shaded_alpha, shaded_first


def graph_edge_lines(graph: Any, shade: np.ndarray | None = None) -> np.ndarray:
    """One segment per undirected edge of the NavGraph (a two-way pair is drawn once, in
    PALETTE "graph_edge"); a one-way edge with an arrowhead at its far end, in "graph_drop"
    (a drop off a ledge) or "graph_link" (an off-mesh link). ``shade`` (n,) bool: nodes of
    another floor (``ecs_nav.render.floors.node_shade``); an edge touching one is drawn first,
    with its alpha scaled by ``floors.SHADED_ALPHA``."""
    if graph is None or not len(graph.indices):
        return empty_rows()
    from ecs_nav.nav.graph import EDGE_LINK

    src = graph.edge_sources()
    dst = np.asarray(graph.indices, dtype=np.int64)
    key_fwd = src * graph.node_count + dst
    key_back = dst * graph.node_count + src
    has_back = np.isin(key_fwd, key_back, assume_unique=False)
    xy = graph.positions[:, :2]
    two_way = has_back & (src < dst)
    if shade is None:
        chunks = [segments(xy[src[two_way]], xy[dst[two_way]], PALETTE["graph_edge"])]
    else:
        a, b = src[two_way], dst[two_way]
        off = shade[a] | shade[b]
        order = shaded_first(off)
        chunks = [segments(xy[a[order]], xy[b[order]], shaded_alpha(PALETTE["graph_edge"], off[order]))]
    one_way = ~has_back
    if one_way.any():
        kinds = np.asarray(graph.kinds)[one_way]
        colour = np.where((kinds == EDGE_LINK)[:, None], PALETTE["graph_link"], PALETTE["graph_drop"])
        tails, tips = xy[src[one_way]], xy[dst[one_way]]
        if shade is not None:
            off = shade[src[one_way]] | shade[dst[one_way]]
            order = shaded_first(off)
            colour, tails, tips = shaded_alpha(colour[order], off[order]), tails[order], tips[order]
        head = float(graph.grid.spacing) * 0.35 / np.maximum(np.hypot(*(tips - tails).T), 1e-9)
        chunks.append(arrows_each(tails, tips, colour, np.minimum(head, 0.5)))
    return np.concatenate(chunks)


def arrows_each(tails: np.ndarray, tips: np.ndarray, colours: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Like :func:`arrows`, one colour (k, 4) and one head fraction (k,) per arrow."""
    back = (tails - tips) * head[:, None]
    c, s = np.cos(0.5), np.sin(0.5)
    left = np.stack([back[:, 0] * c - back[:, 1] * s, back[:, 0] * s + back[:, 1] * c], 1)
    right = np.stack([back[:, 0] * c + back[:, 1] * s, -back[:, 0] * s + back[:, 1] * c], 1)
    return segments(np.concatenate([tails, tips, tips]), np.concatenate([tips, tips + left, tips + right]),
                    np.concatenate([colours, colours, colours]))


def graph_node_ticks(graph: Any, shade: np.ndarray | None = None) -> np.ndarray:
    """A small red + on every walkable node (the seed's node ticks); with ``shade`` (n,) bool
    (nodes of another floor), those first, their alpha scaled by ``floors.SHADED_ALPHA``."""
    if graph is None:
        return empty_rows()
    walkable = np.asarray(graph.walkable, dtype=bool)
    if shade is None:
        return crosses(graph.positions[walkable, :2], float(graph.grid.spacing) * 0.12, PALETTE["graph_node"])
    nodes = np.flatnonzero(walkable)
    nodes = nodes[shaded_first(shade[nodes])]
    return crosses(graph.positions[nodes, :2], float(graph.grid.spacing) * 0.12,
                   shaded_alpha(PALETTE["graph_node"], shade[nodes]))


def heat_map_triangles(graph: Any, flow: dict | None, shade: np.ndarray | None = None) -> np.ndarray:
    """A coloured square on each reachable node, by the flow field's ``distance`` on the viridis
    ramp (near: dark violet, far: yellow); unreachable (inf) and unwalkable nodes stay clear.
    With ``shade`` (n,) bool (nodes of another floor), those first, their alpha scaled by
    ``floors.SHADED_ALPHA``, so the viewed floor's squares cover theirs."""
    if graph is None or not flow or flow.get("distance") is None:
        return empty_rows()
    distance = np.asarray(flow["distance"], dtype=np.float64).reshape(-1)
    if distance.shape[0] != graph.node_count:
        return empty_rows()
    ok = np.isfinite(distance) & np.asarray(graph.walkable, dtype=bool)
    if not ok.any():
        return empty_rows()
    far = float(distance[ok].max()) or 1.0
    half = float(graph.grid.spacing) / 2.0
    if shade is None:
        xy = graph.positions[ok, :2]
        return rectangles(xy - half, xy + half, viridis(distance[ok] / far))
    nodes = np.flatnonzero(ok)
    nodes = nodes[shaded_first(shade[nodes])]
    xy = graph.positions[nodes, :2]
    return rectangles(xy - half, xy + half, shaded_alpha(viridis(distance[nodes] / far), shade[nodes]))


def flow_field_arrows(graph: Any, flow: dict | None, shade: np.ndarray | None = None) -> np.ndarray:
    """An arrow on each node with a non-zero flow ``direction``, 0.8 spacing long; with
    ``shade`` (n,) bool (nodes of another floor), those first, their alpha scaled by
    ``floors.SHADED_ALPHA``."""
    if graph is None or not flow or flow.get("direction") is None:
        return empty_rows()
    direction = np.asarray(flow["direction"], dtype=np.float64).reshape(-1, 2)
    if direction.shape[0] != graph.node_count:
        return empty_rows()
    length = np.hypot(direction[:, 0], direction[:, 1])
    ok = (length > 1e-9) & np.asarray(graph.walkable, dtype=bool) & np.isfinite(length)
    if shade is None:
        unit = direction[ok] / length[ok, None]
        half = unit * float(graph.grid.spacing) * 0.4
        xy = graph.positions[ok, :2]
        return arrows(xy - half, xy + half, PALETTE["flow_arrow"])
    nodes = np.flatnonzero(ok)
    nodes = nodes[shaded_first(shade[nodes])]
    half = direction[nodes] / length[nodes, None] * float(graph.grid.spacing) * 0.4
    xy = graph.positions[nodes, :2]
    return arrows_each(xy - half, xy + half, shaded_alpha(PALETTE["flow_arrow"], shade[nodes]),
                        np.full(nodes.size, 0.3))
