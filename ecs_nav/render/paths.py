"""What the viewer draws of paths, goals and steering targets, as numpy vertex arrays (the row
formats of :mod:`ecs_nav.render.draw`: ``(k, 6)`` rows of ``x, y, r, g, b, a``). No pyglet, no GL.

Each path is drawn in its agent's colour (``colours``, one RGBA per path; see
:func:`ecs_nav.render.colours.agent_groups`):

- :func:`path_lines`: the polyline, the part already walked on this leg faint, a + on each
  waypoint still ahead, a loop's closing segment, and a line from the agent to its waypoint;
- :func:`path_bands`: seed 004's path radius as a translucent band round the polyline;
- :func:`goal_markers`: a ring on the end of each one-way path and on each requested goal;
- :func:`steer_target_lines`: a line from each agent to its steering target with a ring on
  it, and a faint line to the entity it pursues, evades or flees;
- :func:`searched_nodes`: a square on each node a traced search expanded (the "search" layer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.render.draw import PALETTE, crosses, discs, empty_rows, quads, rectangles, rings, segments

WALKED_ALPHA = 0.3
"""A path's walked part is drawn at this fraction of its colour's opacity."""

BAND_ALPHA = 0.13
"""Opacity of the path-radius band."""

BAND_PATH_LIMIT = 24
"""Above this many paths no bands are drawn (a crowd's bands would cover the map)."""

GOAL_RING_RADIUS = 0.9
"""World units: the radius of a goal marker's outer ring (the inner one is half of it)."""


def _faded(colours: np.ndarray, factor: float) -> np.ndarray:
    out = np.array(colours, dtype=np.float64, copy=True)
    out[..., 3] *= factor
    return out


def _route(path: Any) -> np.ndarray:
    """(k, 2) waypoints of ``path``, with the first repeated at the end for a loop."""
    xy = np.asarray(path.waypoints, dtype=np.float64)[:, :2]
    if path.mode == "loop" and len(xy) > 2:
        xy = np.concatenate([xy, xy[:1]])
    return xy


def path_colours(paths: list[tuple[int, Any]], table: Any, row_colour: np.ndarray | None) -> np.ndarray:
    """(count, 4) the colour of each (entity, Path): its row's colour, else PALETTE "path"."""
    out = np.tile(np.asarray(PALETTE["path"], dtype=np.float64), (len(paths), 1))
    if row_colour is None or table is None or not paths:
        return out
    rows = table.rows_of(np.fromiter((e for e, _ in paths), np.int64, len(paths)))
    ok = (rows >= 0) & (rows < len(row_colour))
    out[ok, :3] = np.asarray(row_colour)[rows[ok], :3]
    return out


def path_lines(paths: list[tuple[int, Any]], table: Any = None, colours: Any = None) -> np.ndarray:
    """Every Path as a polyline in its colour (``colours`` (count, 4); default PALETTE "path"):
    the segments already walked on the current leg faint (for a patrol walking back, the ones
    behind it towards the end), the rest bright, a + on each waypoint still ahead, a loop's
    closing segment and, given the ``table``, a line from the agent to its next waypoint.
    ``paths`` is a list of (entity, Path) pairs."""
    keep = [i for i, (_, p) in enumerate(paths) if len(p.waypoints)]
    if not keep:
        return empty_rows()
    colours = (np.tile(PALETTE["path"], (len(paths), 1)) if colours is None
               else np.asarray(colours, dtype=np.float64).reshape(len(paths), 4))[keep]
    paths = [paths[i] for i in keep]
    count = len(paths)
    routes = [_route(p) for _, p in paths]
    xy = np.concatenate(routes)
    lengths = np.fromiter((len(r) for r in routes), np.int64, count)
    waypoints = np.fromiter((len(p.waypoints) for _, p in paths), np.int64, count)
    index = np.clip(np.fromiter((p.index for _, p in paths), np.int64, count), 0, waypoints - 1)
    backward = np.fromiter((p.mode == "patrol" and p.direction < 0 for _, p in paths), bool, count)
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    owner = np.repeat(np.arange(count), lengths)
    local = np.arange(xy.shape[0]) - first[owner]
    seg = np.flatnonzero(local < lengths[owner] - 1)
    o = owner[seg]
    done = np.where(backward[o], local[seg] >= index[o], local[seg] < index[o])
    seg_colour = np.where(done[:, None], _faded(colours[o], WALKED_ALPHA), colours[o])
    is_waypoint = local < waypoints[owner]
    ahead = is_waypoint & np.where(backward[owner], local <= index[owner], local >= index[owner])
    chunks = [segments(xy[seg], xy[seg + 1], seg_colour), crosses(xy[ahead], 0.25, colours[owner[ahead]])]
    if table is not None:
        rows = table.rows_of(np.fromiter((e for e, _ in paths), np.int64, count))
        ok = rows >= 0
        chunks.append(segments(table.pos[rows[ok]], xy[first[ok] + index[ok]], colours[ok]))
    return np.concatenate(chunks)


def path_bands(paths: list[tuple[int, Any]], colours: Any = None) -> np.ndarray:
    """Triangle rows: each path's radius as a band (a quad 2 × radius wide along each segment
    and a disc on each waypoint) in its colour at BAND_ALPHA; nothing above BAND_PATH_LIMIT
    paths."""
    if len(paths) > BAND_PATH_LIMIT:
        return empty_rows()
    colours = (np.tile(PALETTE["path"], (len(paths), 1)) if colours is None
               else np.asarray(colours, dtype=np.float64).reshape(len(paths), 4))
    chunks = []
    for (_, path), colour in zip(paths, colours, strict=True):
        radius = float(path.radius)
        if not len(path.waypoints) or radius <= 0:
            continue
        band = _faded(colour, 0.0)
        band[3] = BAND_ALPHA
        xy = _route(path)
        a, b = xy[:-1], xy[1:]
        d = b - a
        length = np.hypot(d[:, 0], d[:, 1])
        ok = length > 1e-9
        side = np.stack([-d[ok, 1], d[ok, 0]], axis=1) / length[ok, None] * radius
        corners = np.stack([a[ok] + side, b[ok] + side, b[ok] - side, a[ok] - side], axis=1)
        chunks += [quads(corners, band), discs(xy, np.full(len(xy), radius), band, segments=16)]
    return np.concatenate(chunks) if chunks else empty_rows()


def goal_markers(paths: list[tuple[int, Any]], requests: list[tuple[int, Any]], table: Any = None,
                 row_colour: np.ndarray | None = None) -> np.ndarray:
    """Line rows: two rings (GOAL_RING_RADIUS and half of it) on every point goal of each
    (entity, PathRequest) in ``requests`` and on the last waypoint of each one-way ("once")
    path of an entity without a request (a partial path's end is not its goal), in the
    entity's colour; a goal shared by many agents is marked once."""
    points, owners = [], []
    requested = {entity for entity, _ in requests}
    for entity, path in paths:
        if path.mode == "once" and len(path.waypoints) and entity not in requested:
            points.append(np.asarray(path.waypoints, dtype=np.float64)[-1, :2])
            owners.append(entity)
    for entity, request in requests:
        for goal in ([request.goal] if request.goal is not None else []) + list(request.goals or ()):
            points.append(np.asarray(goal, dtype=np.float64)[:2])
            owners.append(entity)
    if not points:
        return empty_rows()
    xy = np.round(np.array(points), 3)
    xy, first = np.unique(xy, axis=0, return_index=True)
    colours = np.tile(np.asarray(PALETTE["goal"], dtype=np.float64), (len(xy), 1))
    if row_colour is not None and table is not None:
        rows = table.rows_of(np.asarray(owners, dtype=np.int64)[first])
        ok = (rows >= 0) & (rows < len(row_colour))
        colours[ok, :3] = np.asarray(row_colour)[rows[ok], :3]
    return np.concatenate([rings(xy, np.full(len(xy), GOAL_RING_RADIUS), colours),
                           rings(xy, np.full(len(xy), GOAL_RING_RADIUS / 2), colours)])


def steer_target_lines(table: Any, row_colour: np.ndarray | None = None) -> np.ndarray:
    """For each row with a steering target: a line from the agent to it and a + and a ring on
    it; for each row with a target entity (pursue, evade, flee), a faint line to that entity.
    In the row's colour (``row_colour`` (n, 4); default PALETTE "steer_target")."""
    n = table.n
    colour = (np.tile(PALETTE["steer_target"], (n, 1)) if row_colour is None
              else np.asarray(row_colour, dtype=np.float64).reshape(n, 4))
    colour = _faded(colour, 0.8)
    pos = table.live("pos")
    chunks = []
    mask = table.live("has_steer_target")
    if mask.any():
        target = table.live("steer_target")[mask]
        c = colour[mask]
        chunks += [segments(pos[mask], target, c), crosses(target, 0.3, c),
                   rings(target, np.full(len(target), 0.45), c, sides=12)]
    target_rows = table.rows_of(table.live("target_entity"))
    has_target = (table.live("target_entity") >= 0) & (target_rows >= 0)
    if has_target.any():
        chunks.append(segments(pos[has_target], pos[target_rows[has_target]], _faded(colour[has_target], 0.5)))
    return np.concatenate(chunks) if chunks else empty_rows()


SEARCH_SQUARE = 0.7
"""A searched node's square is this fraction of the graph's node spacing wide."""


def searched_nodes(graph: Any, trace: Any) -> np.ndarray:
    """Triangle rows: a square in PALETTE "search" on each node of ``trace.nodes`` (a
    ``SearchTrace``) that is a node of ``graph``; none when the trace is of another graph
    version (its node ids may mean other places now) or there is no graph."""
    if graph is None or trace is None or trace.graph_version != getattr(graph, "version", 0):
        return empty_rows()
    nodes = np.asarray(trace.nodes, dtype=np.int64)
    nodes = nodes[(nodes >= 0) & (nodes < graph.node_count)]
    if not nodes.size:
        return empty_rows()
    half = 0.5 * SEARCH_SQUARE * float(graph.grid.spacing)
    xy = graph.positions[nodes, :2]
    return rectangles(xy - half, xy + half, PALETTE["search"])
