"""What the viewer draws, as numpy vertex arrays: no pyglet, no GL, testable anywhere.

Every layer function turns world state into flat float32 arrays that the RenderSystem uploads
as they are (one buffer, one draw call per layer):

- *triangles* and *lines* are ``(k, 6)`` rows of ``x, y, r, g, b, a`` (world units, colour in
  0..1), three rows per triangle, two per segment;
- *agent instances* are ``(n, 9)`` rows of ``x, y, radius, heading_x, heading_y, r, g, b,
  selected`` — one row per table row, drawn as one instanced quad each.

The :class:`Camera` maps the ground plane (x, y; y up) to window pixels and to GL clip space.
Colours live in :data:`PALETTE` so tests can look for them in a captured frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ecs_nav.platformer.world import PLATFORMER
from ecs_nav.render.floors import faded_rgb

LAYERS = ("map", "heat_map", "graph_edges", "graph_nodes", "flow_field", "search", "paths", "steer_targets",
          "velocity", "agents", "avoidance", "labels", "hud")
"""Every drawable layer, in drawing order (later layers are drawn on top). "hud" is the side
panel: tick, time, events, the legend and the selected agent; "search" the nodes the selected
agent's last path search expanded (``ecs_nav.nav.search_trace``); "avoidance" the selected
agent's ORCA half-planes, preferred and chosen velocity (``ecs_nav.render.avoidance``)."""

DEFAULT_LAYERS = frozenset(LAYERS) - {"heat_map", "graph_edges", "graph_nodes", "flow_field", "search", "avoidance"}
"""Layers drawn unless the scene's ``[view] layers`` says otherwise: the map, paths, steering
targets, velocities, agents, their labels and the HUD. The nav graph and the flow field are
for scenes whose point they are (they cover the map); the search and avoidance layers are
debugging aids."""

PALETTE: dict[str, tuple[float, float, float, float]] = {
    "background": (0.07, 0.08, 0.10, 1.0),
    "floor": (0.20, 0.22, 0.25, 1.0),
    "low": (0.36, 0.34, 0.31, 1.0),  # a collider just above the floor
    "high": (0.88, 0.83, 0.72, 1.0),  # the tallest collider of the map
    "graph_edge": (1.0, 1.0, 1.0, 0.22),  # seed 000: white edges
    "graph_node": (0.95, 0.25, 0.25, 0.9),  # seed 000: red ticks
    "path": (1.0, 0.30, 0.35, 0.95),  # seed 000's drawPath: red
    "steer_target": (1.0, 0.85, 0.20, 0.8),
    "velocity": (0.92, 0.92, 0.92, 0.75),
    "graph_drop": (0.35, 0.80, 1.0, 0.8),  # a one-way drop off a ledge, with an arrowhead
    "graph_link": (1.0, 0.55, 0.95, 0.9),  # an off-mesh link (jump, teleporter), one-way
    "area_dear": (0.25, 0.55, 1.0, 1.0),  # an area that costs more to cross (mud, water); alpha by cost
    "area_cheap": (0.35, 0.90, 0.45, 1.0),  # one that costs less (a road to prefer)
    "goal": (1.0, 1.0, 1.0, 0.95),
    "flow_arrow": (0.30, 0.85, 1.0, 0.75),
    "search": (0.60, 0.35, 1.0, 0.45),  # a node the traced agent's last search expanded
    "orca_speed": (1.0, 1.0, 1.0, 0.35),  # the traced agent's maximum speed (the avoidance layer)
    "orca_agent": (1.0, 0.45, 0.75, 0.9),  # a half-plane of velocities an agent neighbour leaves it
    "orca_wall": (0.55, 0.70, 1.0, 0.9),  # a half-plane a wall leaves it
    "orca_preferred": (1.0, 0.85, 0.20, 1.0),  # its preferred velocity
    "orca_chosen": (0.40, 1.0, 0.45, 1.0),  # the velocity ORCA chose
    "agent": (0.95, 0.38, 0.22, 1.0),  # seed 000's NPC: red-orange
    "player": (0.25, 0.55, 1.0, 1.0),  # seed 000's player: blue
    "body": (0.62, 0.62, 0.66, 1.0),  # a table row that is not an Agent (a moving obstacle)
    "selection": (1.0, 0.95, 0.30, 1.0),
    "hud_panel": (0.0, 0.0, 0.0, 0.8),
    "label_backing": (0.0, 0.0, 0.0, 0.78),
}

VELOCITY_SECONDS = 0.5
"""Velocity arrows show where an agent will be this many seconds ahead."""

MIN_AGENT_PIXELS = 4.0
"""Screen pixels: an agent's disc is drawn at least this radius (8 pixels across) however far
the view zooms out, so a crowd seen whole is dots, not specks."""

VELOCITY_MIN_PIXELS = 4.0
"""Screen pixels: agents whose radius shows smaller than this get no velocity line (at crowd
scale the lines would be a noise texture)."""

CIRCLE_SEGMENTS = 32

FLOATING_ALPHA = 0.45
"""The opacity of the fill of a map shape that floats (a box or circle with ``base`` above the
floor: a bridge deck, an upper storey), so the road or room under it shows through."""

FLOATING_RIM = 0.25
"""m: the width of the opaque rim round a floating box (at most a quarter of its smaller side)."""


# --- camera ---------------------------------------------------------------------------------


@dataclass
class Camera:
    """A top-down orthographic camera: ``scale`` pixels per world unit, ``center`` in world units
    at the middle of a ``width`` x ``height`` pixel viewport. Screen pixels count from the
    bottom-left corner (pyglet's convention); world y grows upward on screen."""

    center: tuple[float, float] = (0.0, 0.0)
    scale: float = 10.0
    width: int = 1280
    height: int = 720
    min_scale: float = 0.05
    max_scale: float = 2000.0

    def fit(self, bounds: tuple[float, float, float, float], margin: float = 0.04, left: float = 0.0) -> None:
        """Centre on ``bounds`` (xmin, ymin, xmax, ymax) and zoom so all of it shows, leaving
        ``margin`` (a fraction of the viewport) free on each side and ``left`` pixels free at
        the left edge (the side panel's strip)."""
        xmin, ymin, xmax, ymax = (float(v) for v in bounds)
        w, h = max(xmax - xmin, 1e-6), max(ymax - ymin, 1e-6)
        usable = 1.0 - 2.0 * margin
        left = float(np.clip(left, 0.0, self.width * 0.5))
        self.scale = float(np.clip(min((self.width - left) * usable / w, self.height * usable / h),
                                   self.min_scale, self.max_scale))
        self.center = ((xmin + xmax) / 2.0 - left / 2.0 / self.scale, (ymin + ymax) / 2.0)

    def resize(self, width: int, height: int) -> None:
        self.width, self.height = max(int(width), 1), max(int(height), 1)

    def world_to_screen(self, points: Any) -> np.ndarray:
        """(k, 2) world points → (k, 2) float pixel coordinates (origin bottom-left)."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        return (p - self.center) * self.scale + (self.width / 2.0, self.height / 2.0)

    def screen_to_world(self, points: Any) -> np.ndarray:
        """(k, 2) pixel coordinates (origin bottom-left) → (k, 2) world points."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        return (p - (self.width / 2.0, self.height / 2.0)) / self.scale + self.center

    def pan(self, dx_pixels: float, dy_pixels: float) -> None:
        """Move the view with a mouse drag of (dx, dy) pixels: the ground follows the cursor."""
        self.center = (self.center[0] - dx_pixels / self.scale, self.center[1] - dy_pixels / self.scale)

    def zoom_at(self, x_pixels: float, y_pixels: float, factor: float) -> None:
        """Multiply the scale by ``factor`` keeping the world point under (x, y) where it is."""
        anchor = self.screen_to_world((x_pixels, y_pixels))[0]
        self.scale = float(np.clip(self.scale * factor, self.min_scale, self.max_scale))
        after = self.screen_to_world((x_pixels, y_pixels))[0]
        self.center = (self.center[0] + anchor[0] - after[0], self.center[1] + anchor[1] - after[1])

    def visible_bounds(self) -> tuple[float, float, float, float]:
        (x0, y0), (x1, y1) = self.screen_to_world([(0, 0), (self.width, self.height)])
        return float(x0), float(y0), float(x1), float(y1)

    def matrix(self) -> np.ndarray:
        """(16,) float32 world → clip-space matrix in column-major order (for a GL uniform)."""
        sx, sy = 2.0 * self.scale / self.width, 2.0 * self.scale / self.height
        m = np.array([
            [sx, 0.0, 0.0, -self.center[0] * sx],
            [0.0, sy, 0.0, -self.center[1] * sy],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ])
        return np.ascontiguousarray(m.T, dtype=np.float32).reshape(-1)

    @classmethod
    def pixels(cls, width: int, height: int) -> Camera:
        """A camera whose world units are the viewport's pixels (for overlays)."""
        return cls(center=(width / 2.0, height / 2.0), scale=1.0, width=width, height=height)


# --- small builders ---------------------------------------------------------------------------


def _with_colour(xy: np.ndarray, colour: Any) -> np.ndarray:
    """(k, 2) points + one RGBA or (k, 4) colours → (k, 6) float32 rows."""
    out = np.empty((xy.shape[0], 6), dtype=np.float32)
    out[:, :2] = xy
    out[:, 2:] = colour
    return out


def empty_rows() -> np.ndarray:
    """No rows: a layer with nothing to draw."""
    return np.zeros((0, 6), dtype=np.float32)


def quads(corners: np.ndarray, colours: Any) -> np.ndarray:
    """(q, 4, 2) quad corners (in order round the quad) and one colour, (q, 4) per-quad or
    (q, 4, 4) per-corner colours → (6q, 6) triangle rows."""
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2)
    q = corners.shape[0]
    colours = np.asarray(colours, dtype=np.float64)
    if colours.ndim == 1:
        colours = np.broadcast_to(colours, (q, 4, 4))
    elif colours.ndim == 2:
        colours = np.broadcast_to(colours[:, None, :], (q, 4, 4))
    order = np.array([0, 1, 2, 0, 2, 3])
    return _with_colour(corners[:, order].reshape(-1, 2), colours[:, order].reshape(-1, 4))


def rectangles(mins: np.ndarray, maxs: np.ndarray, colours: Any) -> np.ndarray:
    """Axis-aligned rectangles from (q, 2) corners → triangle rows."""
    mins = np.asarray(mins, dtype=np.float64).reshape(-1, 2)
    maxs = np.asarray(maxs, dtype=np.float64).reshape(-1, 2)
    corners = np.stack([mins, np.stack([maxs[:, 0], mins[:, 1]], 1), maxs,
                        np.stack([mins[:, 0], maxs[:, 1]], 1)], axis=1)
    return quads(corners, colours)


def discs(centers: np.ndarray, radii: np.ndarray, colours: Any, segments: int = CIRCLE_SEGMENTS) -> np.ndarray:
    """Filled circles as triangle fans: (c, 2) centres, (c,) radii, one colour or (c, 4)."""
    centers = np.asarray(centers, dtype=np.float64).reshape(-1, 2)
    radii = np.asarray(radii, dtype=np.float64).reshape(-1)
    c = centers.shape[0]
    angles = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (s+1, 2)
    rim = centers[:, None, :] + radii[:, None, None] * ring[None]  # (c, s+1, 2)
    tris = np.empty((c, segments, 3, 2))
    tris[:, :, 0] = centers[:, None, :]
    tris[:, :, 1] = rim[:, :-1]
    tris[:, :, 2] = rim[:, 1:]
    colours = np.asarray(colours, dtype=np.float64)
    per = np.broadcast_to(colours if colours.ndim == 1 else colours[:, None, None, :], (c, segments, 3, 4))
    return _with_colour(tris.reshape(-1, 2), per.reshape(-1, 4))


def segments(starts: np.ndarray, ends: np.ndarray, colours: Any) -> np.ndarray:
    """(k, 2) starts and ends, one colour or (k, 4) → (2k, 6) line rows."""
    starts = np.asarray(starts, dtype=np.float64).reshape(-1, 2)
    ends = np.asarray(ends, dtype=np.float64).reshape(-1, 2)
    xy = np.stack([starts, ends], axis=1).reshape(-1, 2)
    colours = np.asarray(colours, dtype=np.float64)
    if colours.ndim == 2:
        colours = np.repeat(colours, 2, axis=0)
    return _with_colour(xy, colours)


def rings(centers: np.ndarray, radii: Any, colours: Any, sides: int = 24) -> np.ndarray:
    """Circle outlines: (c, 2) centres, (c,) radii, one colour or (c, 4) → line rows."""
    centers = np.asarray(centers, dtype=np.float64).reshape(-1, 2)
    radii = np.broadcast_to(np.asarray(radii, dtype=np.float64), (centers.shape[0],))
    angles = np.linspace(0.0, 2.0 * np.pi, sides + 1)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    rim = centers[:, None, :] + radii[:, None, None] * ring[None]  # (c, s+1, 2)
    colours = np.asarray(colours, dtype=np.float64)
    if colours.ndim == 2:
        colours = np.repeat(colours, sides, axis=0)
    return segments(rim[:, :-1].reshape(-1, 2), rim[:, 1:].reshape(-1, 2), colours)


def crosses(centers: np.ndarray, half_size: float, colour: Any) -> np.ndarray:
    """A small + at each of (k, 2) centres, one colour or (k, 4) → line rows."""
    c = np.asarray(centers, dtype=np.float64).reshape(-1, 2)
    dx, dy = np.array([half_size, 0.0]), np.array([0.0, half_size])
    starts = np.concatenate([c - dx, c - dy])
    ends = np.concatenate([c + dx, c + dy])
    colour = np.asarray(colour, dtype=np.float64)
    return segments(starts, ends, np.concatenate([colour, colour]) if colour.ndim == 2 else colour)


def arrows(tails: np.ndarray, tips: np.ndarray, colour: Any, head: float = 0.3) -> np.ndarray:
    """Shafts from (k, 2) tails to tips with two barbs ``head`` × length long → line rows."""
    tails = np.asarray(tails, dtype=np.float64).reshape(-1, 2)
    tips = np.asarray(tips, dtype=np.float64).reshape(-1, 2)
    back = (tails - tips) * head
    c, s = np.cos(0.5), np.sin(0.5)
    left = np.stack([back[:, 0] * c - back[:, 1] * s, back[:, 0] * s + back[:, 1] * c], 1)
    right = np.stack([back[:, 0] * c + back[:, 1] * s, -back[:, 0] * s + back[:, 1] * c], 1)
    return segments(np.concatenate([tails, tips, tips]),
                    np.concatenate([tips, tips + left, tips + right]), colour)


def height_colour(height: Any, max_height: float) -> np.ndarray:
    """Colour of a surface at ``height`` (k,) → (k, 4): from PALETTE "low" (0) to "high"
    (``max_height``); the floor itself keeps PALETTE "floor"."""
    t = np.clip(np.asarray(height, dtype=np.float64) / max(float(max_height), 1e-9), 0.0, 1.0)
    low, high = np.array(PALETTE["low"]), np.array(PALETTE["high"])
    return low + t[..., None] * (high - low)


# --- layers -----------------------------------------------------------------------------------


def rim_quads(aabb: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Triangle rows of a rim ``FLOATING_RIM`` wide (at most a quarter of the smaller side)
    inside each of the (q, 4) boxes (xmin, ymin, xmax, ymax), in its (q, 4) colour: four
    rectangles a box (24 rows), bottom, top, left, right."""
    aabb = np.asarray(aabb, dtype=np.float64).reshape(-1, 4)
    x0, y0, x1, y1 = aabb.T
    w = np.minimum(FLOATING_RIM, np.minimum(x1 - x0, y1 - y0) / 4.0)
    mins = np.stack([np.stack([x0, y0], 1), np.stack([x0, y1 - w], 1),
                     np.stack([x0, y0 + w], 1), np.stack([x1 - w, y0 + w], 1)], axis=1)
    maxs = np.stack([np.stack([x1, y0 + w], 1), np.stack([x1, y1], 1),
                     np.stack([x0 + w, y1 - w], 1), np.stack([x1, y1 - w], 1)], axis=1)
    return rectangles(mins.reshape(-1, 2), maxs.reshape(-1, 2), np.repeat(np.asarray(colours), 4, axis=0))


def map_bounds(world: Any) -> tuple[float, float, float, float]:
    """The rectangle to fit the camera to: the map's bounds, else the nav graph's, else the
    agents' (padded), else a 20 x 20 square round the origin; a side view's level."""
    side = getattr(world, "resources", {}).get(PLATFORMER)
    if side is not None:
        return 0.0, 0.0, float(side.level.width), float(side.level.height)
    m = getattr(world, "map", None)
    if m is not None and getattr(m, "bounds", None) is not None:
        return tuple(float(v) for v in m.bounds)
    g = getattr(world, "nav_graph", None)
    if g is not None and g.node_count:
        xy = g.positions[:, :2]
        return float(xy[:, 0].min()), float(xy[:, 1].min()), float(xy[:, 0].max()), float(xy[:, 1].max())
    pos = world.table.live("pos")
    if len(pos):
        lo, hi = pos.min(axis=0) - 2.0, pos.max(axis=0) + 2.0
        return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])
    return -10.0, -10.0, 10.0, 10.0


def map_max_height(geometry: Any) -> float:
    """Height of the map's tallest point above its floor (1 for a flat map)."""
    top = float(geometry.max_top) - float(geometry.floor)
    return top if top > 1e-9 else 1.0


def map_triangles(geometry: Any, under: np.ndarray | None = None) -> np.ndarray:
    """Triangle rows for the map (an ``ecs_nav.geometry.map.MapGeometry``): the floor over its
    bounds, then ``under`` (triangle rows drawn on the floor: the area tints of
    ``ecs_nav.render.areas``), then every shape shaded by its top's height above the floor
    (PALETTE "low" → "high"), lower tops first so taller pieces draw over them; ramps as a
    gradient from their low edge to their high edge. A box or circle that floats (``base`` above
    the floor) is filled at ``FLOATING_ALPHA`` so what is under it shows, a box with an opaque
    rim ``FLOATING_RIM`` wide. Vectorised per shape kind."""
    if geometry is None:
        return empty_rows()
    floor, hmax = float(geometry.floor), map_max_height(geometry)
    xmin, ymin, xmax, ymax = geometry.bounds
    pieces, tops = [rectangles([xmin, ymin], [xmax, ymax], PALETTE["floor"])], [np.full(6, -np.inf)]
    if under is not None and len(under):
        pieces.append(np.asarray(under, np.float32))
        tops.append(np.full(len(under), -np.inf))
    boxes = geometry.boxes
    if boxes:
        aabb = np.array([b.aabb() for b in boxes], dtype=np.float64)
        top = np.array([b.top for b in boxes], dtype=np.float64)
        colour = height_colour(top - floor, hmax)
        floating = np.array([b.base > floor for b in boxes])
        rim = colour[floating]
        colour[floating, 3] = FLOATING_ALPHA
        pieces.append(rectangles(aabb[:, :2], aabb[:, 2:], colour))
        tops.append(np.repeat(top, 6))
        if floating.any():
            pieces.append(rim_quads(aabb[floating], rim))
            tops.append(np.repeat(top[floating], 24))
    ramps = geometry.ramps
    if ramps:
        corners = np.stack([r.corners() for r in ramps])  # start edge first, then end edge
        low = height_colour(np.array([r.low for r in ramps]) - floor, hmax)
        high = height_colour(np.array([r.high for r in ramps]) - floor, hmax)
        pieces.append(quads(corners, np.stack([low, low, high, high], axis=1)))
        tops.append(np.repeat([max(r.low, r.high) for r in ramps], 6))
    circles = geometry.circles
    if circles:
        top = np.array([c.top for c in circles], dtype=np.float64)
        colour = height_colour(top - floor, hmax)
        colour[[c.base > floor for c in circles], 3] = FLOATING_ALPHA
        pieces.append(discs(np.array([c.center for c in circles]), np.array([c.radius for c in circles]), colour))
        tops.append(np.repeat(top, CIRCLE_SEGMENTS * 3))
    rows, key = np.concatenate(pieces), np.concatenate(tops)
    triangle_order = np.argsort(key[::3], kind="stable")
    return rows.reshape(-1, 3, 6)[triangle_order].reshape(-1, 6)


VELOCITY_ARROW_HEADS = 2000
"""Above this many moving rows velocities are plain segments: a software rasteriser pays per
line, and barbs triple the count."""


def velocity_lines(table: Any, seconds: float = VELOCITY_SECONDS, pixels_per_unit: float | None = None) -> np.ndarray:
    """For each moving row, an arrow from its rim along its velocity, as long as the distance
    the velocity covers in ``seconds`` (no arrow heads above VELOCITY_ARROW_HEADS rows). Given
    the camera's ``pixels_per_unit``, rows whose radius shows below VELOCITY_MIN_PIXELS get none."""
    pos, vel = table.live("pos"), table.live("vel")
    speed = np.hypot(vel[:, 0], vel[:, 1])
    moving = speed > 0.0
    if pixels_per_unit is not None:
        moving &= table.live("radius") * float(pixels_per_unit) >= VELOCITY_MIN_PIXELS
    if not moving.any():
        return empty_rows()
    radius = table.live("radius")[moving]
    v = vel[moving]
    rim = pos[moving] + v * (radius / speed[moving])[:, None]
    if len(v) > VELOCITY_ARROW_HEADS:
        return segments(rim, rim + v * seconds, PALETTE["velocity"])
    return arrows(rim, rim + v * seconds, PALETTE["velocity"], head=0.25)


def agent_instances(table: Any, player_rows: Any = (), selected_rows: Any = (),
                    row_colour: np.ndarray | None = None, shaded: np.ndarray | None = None) -> np.ndarray:
    """(n, 9) float32 per-row instance data: x, y, radius, heading_x, heading_y, r, g, b,
    selected (0/1). Colours: ``row_colour`` (n, 4) when given (``draw_colours.agent_groups``),
    else agents PALETTE "agent", players "player", other rows "body"; a row with no radius is
    drawn 0.5 wide. Rows where ``shaded`` (n,) bool is set (on another floor:
    ``ecs_nav.render.floors.agent_shade``) have their colour faded toward PALETTE "background"
    (``floors.faded_rgb``)."""
    n = table.n
    out = np.empty((n, 9), dtype=np.float32)
    out[:, 0:2] = table.live("pos")
    radius = table.live("radius")
    out[:, 2] = np.where(radius > 0, radius, 0.5)
    out[:, 3:5] = table.live("heading")
    colour = np.where(table.live("is_agent")[:, None], PALETTE["agent"][:3], PALETTE["body"][:3])
    out[:, 5:8] = colour
    player_rows = np.asarray(player_rows, dtype=np.int64).reshape(-1)
    player_rows = player_rows[(player_rows >= 0) & (player_rows < n)]
    out[player_rows, 5:8] = PALETTE["player"][:3]
    if row_colour is not None:
        out[:, 5:8] = np.asarray(row_colour)[:n, :3]
    if shaded is not None:
        rows = np.flatnonzero(np.asarray(shaded, dtype=bool).reshape(-1)[:n])
        out[rows, 5:8] = faded_rgb(out[rows, 5:8], PALETTE["background"])
    out[:, 8] = 0.0
    selected_rows = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
    out[selected_rows[(selected_rows >= 0) & (selected_rows < n)], 8] = 1.0
    return out


def pick_row(table: Any, point: Any, slack: float = 0.25) -> int:
    """The table row whose circle (radius + ``slack``) contains ``point`` and whose centre is
    nearest to it; -1 when none does."""
    if table.n == 0:
        return -1
    d = np.hypot(*(table.live("pos") - np.asarray(point, dtype=np.float64).reshape(2)).T)
    radius = np.where(table.live("radius") > 0, table.live("radius"), 0.5)
    inside = d <= radius + slack
    if not inside.any():
        return -1
    return int(np.flatnonzero(inside)[np.argmin(d[inside])])


def default_layers(world: Any) -> frozenset[str]:
    """The layers a World starts with: its scene's ``[view] layers`` when it has them, else
    DEFAULT_LAYERS."""
    scene = getattr(world, "resources", {}).get("scene")
    layers = getattr(scene, "view", {}).get("layers") if scene is not None else None
    return frozenset(DEFAULT_LAYERS if layers is None else layers)
