"""What the viewer draws of a side view (platformer), as numpy vertex arrays: no pyglet, no GL.

The same row formats as :mod:`ecs_nav.render.draw` (``(k, 6)`` rows of ``x, y, r, g, b, a``: three per
triangle, two per segment), in tiles with y up, so the top-down camera shows a level as it is
written (the first text line at the top):

- :func:`level_triangles`: solid tiles as squares, one-way platforms as a thin slab on the top
  of their tile;
- :func:`path_lines`: each bot's path from the node it walks to, node centres joined, a rise
  (a jump) in the "jump" colour, the rest in the bot's colour, and a + on every node still ahead;
- :func:`goal_rings`: two rings on each bot's goal tile (the end of its last plan), in its colour;
- :func:`character_triangles`: every character's box in its colour (the selected ones with a
  rim);
- :func:`input_lines`: the keys each character holds, as arrows on its box (left, right, up
  for Jump, down for GoDown).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.platformer.bot import MOVE_TO
from ecs_nav.platformer.level import ONE_WAY, SOLID
from ecs_nav.platformer.physics import GO_DOWN, GO_LEFT, GO_RIGHT, JUMP
from ecs_nav.render.draw import PALETTE, arrows, crosses, rectangles, rings, segments

SIDE_PALETTE: dict[str, tuple[float, float, float, float]] = {
    "solid": (0.55, 0.50, 0.44, 1.0),
    "one_way": (0.35, 0.75, 0.95, 1.0),
    "jump": (1.0, 0.80, 0.15, 0.95),
    "bot": PALETTE["agent"],
    "player": PALETTE["player"],
    "input": (1.0, 1.0, 1.0, 0.95),
}
"""Side-view colours (the rest come from ``draw.PALETTE``: "path", "selection", "background")."""

ONE_WAY_THICKNESS = 0.2
"""Tiles: how thick a one-way platform is drawn, at the top of its tile."""


def empty_rows() -> np.ndarray:
    """No rows: a layer with nothing to draw."""
    return np.zeros((0, 6), dtype=np.float32)


def level_triangles(level) -> np.ndarray:
    """Triangle rows for every solid tile (a unit square) and every one-way tile (a slab
    ``ONE_WAY_THICKNESS`` thick at the top of its tile)."""
    tiles = level.tiles
    ys, xs = np.nonzero(tiles == SOLID)
    solid = np.stack([xs, ys], axis=1).astype(np.float64)
    ys, xs = np.nonzero(tiles == ONE_WAY)
    one_way = np.stack([xs, ys], axis=1).astype(np.float64)
    pieces = [rectangles(solid, solid + 1.0, SIDE_PALETTE["solid"])]
    if one_way.size:
        low = one_way + (0.0, 1.0 - ONE_WAY_THICKNESS)
        pieces.append(rectangles(low, one_way + 1.0, SIDE_PALETTE["one_way"]))
    return np.concatenate(pieces) if pieces else empty_rows()


def row_colours(side, colours: np.ndarray | None) -> np.ndarray:
    """(n, 4) a colour per character row: ``colours`` when given, else "bot" for bots and
    "player" for the rest."""
    n = side.characters.count
    if colours is not None:
        return np.asarray(colours, dtype=np.float64).reshape(n, 4)
    return np.where(side.characters.is_bot[:n, None], SIDE_PALETTE["bot"], SIDE_PALETTE["player"])


def path_lines(side, colours: np.ndarray | None = None) -> np.ndarray:
    """Each following bot's path from its current node on: a line from the bot's path point
    (box corner + half a tile) to the node, then node centre to node centre — rises (jumps)
    in "jump", the rest in the bot's colour (``colours``: (n, 4) per row; default "path") —
    and a + on each node ahead. Vectorised over all bots."""
    c = side.characters
    n = c.count
    rows = np.flatnonzero((c.state[:n] == MOVE_TO) & (c.path_len[:n] > 0) & (c.current[:n] >= 0))
    if rows.size == 0:
        return empty_rows()
    k = c.nodes.shape[1]
    index = np.arange(k)
    centres = c.nodes[rows].astype(np.float64) + 0.5  # (b, k, 2)
    ahead = (index[None, :] >= c.current[rows, None]) & (index[None, :] < c.path_len[rows, None])
    legs = ahead[:, :-1] & ahead[:, 1:]
    starts, ends = centres[:, :-1][legs], centres[:, 1:][legs]
    own = (np.broadcast_to(np.asarray(PALETTE["path"], np.float64), (n, 4)) if colours is None
           else np.asarray(colours, np.float64).reshape(n, 4))[rows]  # (b, 4)
    leg_owner = np.broadcast_to(own[:, None, :], (rows.size, k - 1, 4))[legs]
    rise = ends[:, 1] > starts[:, 1]
    leg_colours = np.where(rise[:, None], SIDE_PALETTE["jump"], leg_owner)
    here = np.stack([c.x[rows] + 0.5, c.y[rows] + 0.5], axis=1)
    target = centres[np.arange(rows.size), c.current[rows]]
    return np.concatenate([
        segments(here, target, own),
        segments(starts, ends, leg_colours),
        crosses(centres[ahead], 0.2, np.broadcast_to(own[:, None, :], (rows.size, k, 4))[ahead]),
    ])


GOAL_RING_TILES = 0.6
"""Tiles: the radius of a goal marker's outer ring (the inner one is half of it)."""


def goal_rings(side, colours: np.ndarray | None = None) -> np.ndarray:
    """Line rows: two rings (GOAL_RING_TILES and half of it) centred on each bot's goal tile
    (``side.goal``, the end of its last plan; none for a bot without one), in the bot's colour."""
    n = side.characters.count
    rows = np.flatnonzero(side.characters.is_bot[:n] & np.all(side.goal[:n] >= 0, axis=1))
    if rows.size == 0:
        return empty_rows()
    centres = side.goal[rows].astype(np.float64) + 0.5
    own = row_colours(side, colours)[rows]
    return np.concatenate([rings(centres, np.full(rows.size, GOAL_RING_TILES), own),
                           rings(centres, np.full(rows.size, GOAL_RING_TILES / 2), own)])


def character_triangles(side, selected_rows=(), colours: np.ndarray | None = None) -> np.ndarray:
    """Every character's box in its colour (``colours``: (n, 4) per row; default bots in
    "bot", the rest, players, in "player"); a selected one sits on a slightly larger
    "selection" rim."""
    c = side.characters
    n = c.count
    if n == 0:
        return empty_rows()
    lo = np.stack([c.x[:n], c.y[:n]], axis=1)
    hi = lo + np.stack([c.width[:n], c.height[:n]], axis=1)
    colour = row_colours(side, colours)
    selected = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
    selected = selected[(selected >= 0) & (selected < n)]
    pieces = []
    if selected.size:
        pieces.append(rectangles(lo[selected] - 0.12, hi[selected] + 0.12, PALETTE["selection"]))
    pieces.append(rectangles(lo, hi, colour))
    return np.concatenate(pieces)


def input_lines(side) -> np.ndarray:
    """Arrows for the keys each character holds: GoLeft / GoRight from the box's middle out of
    its side, Jump up from its top, GoDown down from its bottom (each 0.6 tiles long)."""
    c = side.characters
    n = c.count
    if n == 0:
        return empty_rows()
    keys = c.inputs[:n]
    mid = np.stack([c.x[:n] + c.width[:n] / 2, c.y[:n] + c.height[:n] / 2], axis=1)
    half = np.stack([c.width[:n] / 2, c.height[:n] / 2], axis=1)
    tails, tips = [], []
    for bit, direction in ((GO_LEFT, (-1.0, 0.0)), (GO_RIGHT, (1.0, 0.0)), (JUMP, (0.0, 1.0)), (GO_DOWN, (0.0, -1.0))):
        held = (keys & bit) != 0
        if not held.any():
            continue
        d = np.asarray(direction)
        tail = mid[held] + d * half[held]
        tails.append(tail)
        tips.append(tail + d * 0.6)
    if not tails:
        return empty_rows()
    return arrows(np.concatenate(tails), np.concatenate(tips), SIDE_PALETTE["input"], head=0.35)
