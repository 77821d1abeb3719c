"""Where agent labels go: clear of walls, agents and each other, in screen pixels (no GL).

A label is placed near its group's anchor agent where its box (with its dark backing) covers
no wall and no agent, the nearest such place winning; a label moved away from its agent gets a
leader line back to it. The search:

1. :class:`Clutter` marks the screen cells (CELL_PIXELS square) that hold a map shape (its
   bounding box on screen) or an agent's disc (drawn at least ``draw.MIN_AGENT_PIXELS`` in
   radius): a summed-area table then counts the marked cells under any box in O(1). Marking
   is conservative (a cell a shape only touches is marked), so a box that counts 0 cells
   covers no wall and no agent.
2. Candidate boxes stand on rings round the anchor's disc, the gap growing from 3 pixels in
   steps of RING_STEP_PIXELS, then by RING_GROWTH a ring out to the window's diagonal, with
   candidates every RING_SPACING_PIXELS along each ring; each box touches its ring from
   outside in its direction.
3. Boxes off the window, under the side panel or over a label already placed are dropped; of
   the rest the one covering the fewest marked cells wins, then the nearest to the disc. So a
   label covers something only where every place in the window would.
4. A crowd's label stands round the member nearest the crowd's mean; its leader line runs to
   the member nearest the label (none where it stands beside one). It tries its name alone too
   ("flock ×30" for "flock ×30: alignment, cohesion"): the whole text wins where it covers as
   little and stands beside the anchor less than SHORTER_TEXT_PIXELS farther than the name
   would; moved away, the nearer of the two wins (a long label with a leader line fences off
   the margins the labels after it need).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecs_nav.render.draw import MIN_AGENT_PIXELS, PALETTE, quads

CELL_PIXELS = 4
"""Side of a clutter cell, in pixels."""

BACKING_PIXELS = (2.0, 3.0, 2.0, 1.0)
"""How far a label's dark backing reaches past its text: left, below, right, and how much
short of the top of LABEL_HEIGHT_PIXELS it stops (pixels)."""

LABEL_GAP_PIXELS = 3.0
"""The least gap between a label's box and its agent's disc."""

RING_STEP_PIXELS = 5.0
RING_NEAR = 10
"""The first RING_NEAR rings step out by RING_STEP_PIXELS; the rest by RING_GROWTH."""
RING_GROWTH = 1.12
RING_SPACING_PIXELS = 12.0
"""Candidates along a ring are this far apart, at least 8 and at most RING_MOST a ring."""
RING_MOST = 96

SHORTER_TEXT_PIXELS = 60.0
"""Beside its agent, a label's whole text is kept over its name alone unless the name stands
this much nearer (both covering nothing)."""

LEADER_AFTER_PIXELS = 12.0
"""A label whose box stands farther than this from its agent's disc gets a leader line."""

LEADER_WIDTH_PIXELS = 1.5

LEADER_TRIES = 64
"""Places (best first) tried for one whose leader line crosses no label already placed."""
LEADER_BATCH = 8


@dataclass(frozen=True)
class AgentLabel:
    """One label: ``text`` with its bottom-left corner at pixel (``x``, ``y``) (origin bottom
    left) in ``colour`` (RGBA 0..1). ``leader``: the point (pixels) on its agent's disc a leader
    line runs to from the label's box, when the label was moved away from its agent."""

    text: str
    x: float
    y: float
    colour: tuple[float, float, float, float]
    leader: tuple[float, float] | None = None


def backing_box(x: float, y: float, width: float, height: float) -> tuple[float, float, float, float]:
    """The box (x0, y0, x1, y1) in pixels a label of text ``width`` x ``height`` with its
    bottom-left corner at (``x``, ``y``) covers with its backing."""
    left, below, right, short = BACKING_PIXELS
    return (x - left, y - below, x + width + right, y + height - short)


class Clutter:
    """Which CELL_PIXELS cells of a ``width`` x ``height`` pixel screen hold something a label
    must not cover. Add boxes and discs, then ask :meth:`covered`."""

    def __init__(self, width: int, height: int, cell: int = CELL_PIXELS):
        self.cell = int(cell)
        self.nx = max(math.ceil(width / self.cell), 1)
        self.ny = max(math.ceil(height / self.cell), 1)
        self._diff = np.zeros((self.ny + 1, self.nx + 1), dtype=np.int32)
        self._sums: np.ndarray | None = None

    def add_boxes(self, boxes: Any) -> None:
        """Mark every cell that (k, 4) pixel boxes ``x0, y0, x1, y1`` touch."""
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        boxes = boxes[np.all(np.isfinite(boxes), axis=1)]
        if not len(boxes):
            return
        x0, y0 = np.floor(boxes[:, 0] / self.cell), np.floor(boxes[:, 1] / self.cell)
        x1, y1 = np.floor(boxes[:, 2] / self.cell), np.floor(boxes[:, 3] / self.cell)
        on = (x1 >= 0) & (y1 >= 0) & (x0 < self.nx) & (y0 < self.ny) & (x1 >= x0) & (y1 >= y0)
        x0, x1 = np.clip(x0[on], 0, self.nx - 1).astype(np.int64), np.clip(x1[on], 0, self.nx - 1).astype(np.int64)
        y0, y1 = np.clip(y0[on], 0, self.ny - 1).astype(np.int64), np.clip(y1[on], 0, self.ny - 1).astype(np.int64)
        # a 2-D difference array: +1 at a box's first cell, -1 past its ends, +1 past both
        stride = self.nx + 1
        corners = np.concatenate([y0 * stride + x0, y0 * stride + x1 + 1, (y1 + 1) * stride + x0,
                                  (y1 + 1) * stride + x1 + 1])
        signs = np.repeat([1, -1, -1, 1], len(x0))
        self._diff += np.bincount(corners, weights=signs, minlength=self._diff.size).astype(np.int32).reshape(
            self._diff.shape)
        self._sums = None

    def add_discs(self, centres: Any, radii: Any) -> None:
        """Mark the cells that (n, 2) pixel discs' bounding squares touch."""
        centres = np.asarray(centres, dtype=np.float64).reshape(-1, 2)
        radii = np.broadcast_to(np.asarray(radii, dtype=np.float64), (len(centres),))
        self.add_boxes(np.column_stack([centres - radii[:, None], centres + radii[:, None]]))

    def covered(self, boxes: Any) -> np.ndarray:
        """(m,) int: how many marked cells each of (m, 4) pixel boxes touches (0: it covers
        nothing that was added)."""
        if self._sums is None:
            marked = (np.cumsum(np.cumsum(self._diff, axis=0), axis=1)[:self.ny, :self.nx] > 0).astype(np.int32)
            self._sums = np.zeros((self.ny + 1, self.nx + 1), dtype=np.int32)
            self._sums[1:, 1:] = np.cumsum(np.cumsum(marked, axis=0), axis=1)
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        x0 = np.clip(np.floor(boxes[:, 0] / self.cell), 0, self.nx).astype(np.int64)
        y0 = np.clip(np.floor(boxes[:, 1] / self.cell), 0, self.ny).astype(np.int64)
        x1 = np.clip(np.floor(boxes[:, 2] / self.cell) + 1, 0, self.nx).astype(np.int64)
        y1 = np.clip(np.floor(boxes[:, 3] / self.cell) + 1, 0, self.ny).astype(np.int64)
        x1, y1 = np.maximum(x1, x0), np.maximum(y1, y0)
        s = self._sums
        return s[y1, x1] - s[y0, x1] - s[y1, x0] + s[y0, x0]


def boxes_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, m) bool: whether box i of (n, 4) ``a`` and box j of (m, 4) ``b`` (x0, y0, x1, y1)
    overlap (share more than an edge)."""
    a, b = a[:, None, :], b[None, :, :]
    return (a[..., 0] < b[..., 2]) & (b[..., 0] < a[..., 2]) & (a[..., 1] < b[..., 3]) & (b[..., 1] < a[..., 3])


def segments_cross(segments: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(s, b) bool: whether segment i of (s, 4) ``segments`` (x0, y0, x1, y1) passes through the
    inside of box j of (b, 4) ``boxes`` (the slab test: the parameter ranges where the segment
    is within each axis' slab overlap within [0, 1])."""
    start, delta = segments[:, None, :2], segments[:, None, 2:] - segments[:, None, :2]
    low, high = boxes[None, :, :2], boxes[None, :, 2:]
    with np.errstate(divide="ignore", invalid="ignore"):
        t0, t1 = (low - start) / delta, (high - start) / delta
    flat = delta == 0.0  # parallel to a slab: inside it for all t, or never
    inside = (start > low) & (start < high)
    enter = np.where(flat, np.where(inside, -np.inf, np.inf), np.minimum(t0, t1)).max(axis=-1)
    leave = np.where(flat, np.where(inside, np.inf, -np.inf), np.maximum(t0, t1)).min(axis=-1)
    return (enter < leave) & (leave > 0.0) & (enter < 1.0)


def wall_boxes(geometry: Any, camera: Any) -> np.ndarray:
    """(k, 4) pixel boxes ``x0, y0, x1, y1`` of every shape of a map (an
    ``ecs_nav.geometry.map.MapGeometry``; None: none): boxes, ramps and circles, by their
    bounding boxes."""
    if geometry is None:
        return np.zeros((0, 4))
    world = [np.asarray(b.aabb(), dtype=np.float64) for b in geometry.boxes]
    for ramp in geometry.ramps:
        corners = np.asarray(ramp.corners(), dtype=np.float64).reshape(-1, 2)
        world.append(np.concatenate([corners.min(axis=0), corners.max(axis=0)]))
    for circle in geometry.circles:
        c, r = np.asarray(circle.center, dtype=np.float64), float(circle.radius)
        world.append(np.concatenate([c - r, c + r]))
    if not world:
        return np.zeros((0, 4))
    world = np.asarray(world).reshape(-1, 4)
    low, high = camera.world_to_screen(world[:, :2]), camera.world_to_screen(world[:, 2:])
    return np.column_stack([np.minimum(low, high), np.maximum(low, high)])


def agent_discs(table: Any, camera: Any) -> tuple[np.ndarray, np.ndarray]:
    """(n, 2) pixel centres and (n,) pixel radii of the table's live rows as drawn (a radius at
    least MIN_AGENT_PIXELS)."""
    centres = camera.world_to_screen(table.live("pos"))
    radii = np.maximum(np.asarray(table.live("radius"), dtype=np.float64) * camera.scale, MIN_AGENT_PIXELS)
    return centres, radii


def screen_clutter(world: Any, camera: Any) -> Clutter:
    """The Clutter of ``world`` seen through ``camera``: its map's shapes and its agents."""
    clutter = Clutter(camera.width, camera.height)
    clutter.add_boxes(wall_boxes(getattr(world, "map", None), camera))
    clutter.add_discs(*agent_discs(world.table, camera))
    return clutter


@functools.lru_cache(maxsize=64)
def ring_candidates(radius: float, reach: float) -> tuple[np.ndarray, np.ndarray]:
    """(m,) gaps (pixels from the disc's edge) and (m, 2) unit directions of the candidates
    round a disc of ``radius`` pixels, out to ``reach`` pixels (read-only arrays, cached)."""
    gaps = [LABEL_GAP_PIXELS + RING_STEP_PIXELS * k for k in range(RING_NEAR)]
    while gaps[-1] < reach:
        gaps.append(gaps[-1] * RING_GROWTH)
    gaps = np.asarray(gaps)
    counts = np.clip((2 * math.pi * (radius + gaps) / RING_SPACING_PIXELS).astype(np.int64), 8, RING_MOST)
    ring = np.repeat(np.arange(len(gaps)), counts)
    step = np.arange(len(ring)) - np.repeat(np.cumsum(counts) - counts, counts)
    angle = step * (2 * math.pi) / counts[ring]  # (0 first on every ring: right of the agent, as labels read)
    out = (gaps[ring], np.column_stack([np.cos(angle), np.sin(angle)]))
    for array in out:
        array.flags.writeable = False
    return out


@dataclass(frozen=True)
class WantedLabel:
    """A label to place: ``texts`` to try in turn (the full one first, then shorter ones), each
    with its width in pixels, all ``height`` pixels tall; placed round the agent at ``point``
    (world units) of ``radius`` (world units); in ``colour``."""

    texts: tuple[tuple[str, float], ...]
    point: tuple[float, float]
    radius: float
    colour: tuple[float, float, float, float]
    height: float
    members: Any = None
    """A crowd's (m, 2) member positions and (m,) radii (world units), or None: its leader line
    runs to the member nearest the label, and a label beside any member needs none."""


def _candidate_boxes(anchor: np.ndarray, disc: float, width: float, height: float,
                     reach: float) -> tuple[np.ndarray, np.ndarray]:
    """(m, 4) candidate backing boxes round the disc and (m,) their distances from it (pixels:
    from the disc's edge to the box's nearest point)."""
    gaps, directions = ring_candidates(round(disc * 2) / 2, reach)
    x0, y0, x1, y1 = backing_box(0.0, 0.0, width, height)
    half = np.array([(x1 - x0) / 2, (y1 - y0) / 2])
    extent = np.abs(directions) @ half  # (the box touches the ring from outside, in its direction)
    centres = anchor + directions * (disc + gaps + extent)[:, None]
    boxes = np.column_stack([centres - half, centres + half])
    nearest = np.clip(anchor, boxes[:, :2], boxes[:, 2:]) - anchor
    return boxes, np.hypot(nearest[:, 0], nearest[:, 1]) - disc


def layout_labels(wanted: list[WantedLabel], camera: Any, clutter: Clutter, left: float = 0.0, avoid: Any = (),
                  limit: int | None = None) -> list[AgentLabel]:
    """Place ``wanted`` labels in order (see the module docstring): for each, of its texts and
    their places, the one covering the fewest cells, then the nearest (beside its agent, a
    longer text counting SHORTER_TEXT_PIXELS nearer for each text after it), whose leader line
    crosses no label placed before (of the LEADER_TRIES best; else the best), and whose box no
    leader line placed before crosses. ``avoid``: more
    pixel boxes no label may overlap; ``left``: pixels at the left edge under the side panel.
    A label with no place in the window is left out; at most ``limit``."""
    placed = np.asarray(avoid, dtype=np.float64).reshape(-1, 4)  # the labels' boxes so far, and ``avoid``
    leaders = np.zeros((0, 4))  # their leader lines: x0, y0, x1, y1
    labels: list[AgentLabel] = []
    reach = math.hypot(camera.width, camera.height)
    for want in wanted:
        if limit is not None and len(labels) >= limit:
            break
        anchor = camera.world_to_screen(want.point)[0]
        disc = max(float(want.radius) * camera.scale, MIN_AGENT_PIXELS)
        if want.members is None:
            discs = (anchor[None, :], np.array([disc]))
        else:
            positions, radii = want.members
            discs = (camera.world_to_screen(positions),
                     np.maximum(np.asarray(radii, dtype=np.float64) * camera.scale, MIN_AGENT_PIXELS))
        options = []  # per text: (boxes, gaps, cells covered, text index)
        for k, (_, width) in enumerate(want.texts):
            boxes, gaps = _candidate_boxes(anchor, disc, width, want.height, reach)
            ok = ((boxes[:, 0] >= left) & (boxes[:, 1] >= 0) & (boxes[:, 2] <= camera.width)
                  & (boxes[:, 3] <= camera.height))
            index = np.flatnonzero(ok)
            free = ~boxes_overlap(boxes[index], placed).any(axis=1) & ~segments_cross(leaders, boxes[index]).any(axis=0)
            index = index[free]
            options.append((boxes[index], gaps[index], clutter.covered(boxes[index]), np.full(len(index), k)))
        boxes, gaps, cover, text_index = (np.concatenate(parts) for parts in zip(*options, strict=True))
        if not len(boxes):
            continue
        # a longer text counts SHORTER_TEXT_PIXELS nearer for each text after it, but only beside
        # its agent: moved away, its leader would fence the margins off from the labels after it
        longer = (len(want.texts) - 1 - text_index) * np.where(gaps > LEADER_AFTER_PIXELS, 0.0, SHORTER_TEXT_PIXELS)
        tries = np.lexsort((gaps - longer, cover))[:LEADER_TRIES]
        chosen = None
        for first in range(0, len(tries), LEADER_BATCH):  # (the first batch mostly holds the answer)
            batch = tries[first:first + LEADER_BATCH]
            ends, apart = _leaders(discs, boxes[batch])
            starts = np.clip(ends, boxes[batch, :2], boxes[batch, 2:])
            crossing = (segments_cross(np.column_stack([starts, ends]), placed).any(axis=1)
                        & (apart > LEADER_AFTER_PIXELS))
            if chosen is None or not crossing.all():  # the best of all when every leader crosses
                pick = int(np.argmin(crossing))  # the first whose leader crosses no label
                chosen = (batch[pick], ends[pick], starts[pick], apart[pick])
            if not crossing.all():
                break
        i, end, start, gap = chosen
        box = boxes[i]
        leader = end if gap > LEADER_AFTER_PIXELS else None
        placed = np.vstack([placed, box])
        if leader is not None:
            leaders = np.vstack([leaders, np.concatenate([start, leader])])
        text = want.texts[int(text_index[i])][0]
        x, y = box[0] + BACKING_PIXELS[0], box[1] + BACKING_PIXELS[1]
        labels.append(AgentLabel(text, float(x), float(y), want.colour,
                                 None if leader is None else (float(leader[0]), float(leader[1]))))
    return labels


def _leaders(discs: tuple[np.ndarray, np.ndarray], boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of (t, 4) pixel ``boxes``, the disc of ``discs`` ((m, 2) centres, (m,) radii)
    nearest it: (t, 2) the point of that disc a leader line from the box runs to (where the
    line from the box's point nearest the centre meets the disc) and (t,) the gap between the
    box and the disc."""
    centres, radii = discs
    lower, upper = boxes[:, None, :2], boxes[:, None, 2:]
    toward = np.clip(centres[None, :, :], lower, upper) - centres[None, :, :]  # (t, m, 2)
    gap = np.hypot(toward[..., 0], toward[..., 1]) - radii[None, :]
    nearest = np.argmin(gap, axis=1)
    rows = np.arange(len(boxes))
    toward = toward[rows, nearest]
    length = np.maximum(np.hypot(toward[:, 0], toward[:, 1]), 1e-9)
    return centres[nearest] + toward / length[:, None] * radii[nearest][:, None], gap[rows, nearest]


def leader_triangles(labels: list[AgentLabel], width: float, height: float) -> np.ndarray:
    """Triangle rows (pixels) of the leader lines of ``labels`` that have one: from the point of
    the label's box (text ``width(text)`` x ``height`` pixels, a function and a number) nearest
    its agent to the agent's disc, LEADER_WIDTH_PIXELS wide, in the label's colour over a dark
    casing a pixel wider each side."""
    rows = []
    for label in labels:
        if label.leader is None:
            continue
        box = np.asarray(backing_box(label.x, label.y, width(label.text), height))
        end = np.asarray(label.leader, dtype=np.float64)
        start = np.clip(end, box[:2], box[2:])
        along = end - start
        length = float(np.hypot(*along))
        if length < 1e-9:
            continue
        across = np.array([-along[1], along[0]]) / length
        for thickness, colour in ((LEADER_WIDTH_PIXELS + 2.0, PALETTE["label_backing"]),
                                  (LEADER_WIDTH_PIXELS, tuple(label.colour[:3]) + (0.9,))):
            side = across * thickness / 2  # (a dark casing under the line: it shows over its own crowd)
            rows.append(quads(np.array([start - side, end - side, end + side, start + side]), colour))
    return np.concatenate(rows) if rows else np.zeros((0, 6), dtype=np.float32)
