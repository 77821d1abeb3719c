"""Side-view (platformer) entities in a World: their components and the level resource.

A World is a side view when it holds a ``PlatformerMap`` in ``world.resources[PLATFORMER]``
(a scene's ``[level]`` table makes one). Its characters are entities with a
``PlatformerBody`` (size and physics constants, where it starts); a ``Bot`` tag
makes one follow planned paths with the seed-002 bot, anything else (the ``Player``) keeps
the key inputs set from outside (``PlatformerMap.set_inputs``, the viewer's WASD). A
``PathRequest`` (a goal point in tiles, or a target entity) on a Bot is served by the
Pathfind stage. None of these need ``Position``/``Agent``/``Path`` and the top-down systems
never see them: characters get no row in the agent table. Their hot state lives in the
columns of one ``PlatformerBots`` driver, one row per
character, rows in entity order when they are first seen.

Units are tiles (one tile = one scene unit, y up) and seconds; a position is the bottom-left
corner of the character's box.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.core.resource_names import PLATFORMER
from ecs_nav.platformer.bots import PlatformerBots, tiles_spanned
from ecs_nav.platformer.level import EMPTY, SOLID, TileLevel
from ecs_nav.platformer.physics import SERIES, CharacterConstants
from ecs_nav.platformer.planner import MAX_JUMP_HEIGHT


@dataclass
class PlatformerBody:
    """A side-view character: where it starts, its box and its physics.

    Attributes:
        x, y: bottom-left corner of the box at the start, tiles (finite); give both, or
            ``spawn`` (a prefab may leave the start to its entities; a body without one cannot
            be placed).
        spawn: index (≥ 0) of the level's ``@`` spawn point the character starts on (its
            bottom-left tile), instead of ``x, y``.
        width, height: the box, tiles, in (0, 16]; planned as these rounded up (default 0.75:
            the series' 12 × 12 px in a 16-px tile).
        gravity: tiles/s², < 0 (series: −1030 px/s² = −64.375).
        max_fall_speed: tiles/s, < 0 (series: −900 px/s = −56.25).
        walk_speed: tiles/s, > 0 (series: 160 px/s = 10).
        jump_speed: tiles/s, > 0 (series: 410 px/s = 25.625).
        release_speed: upward speed cap once Jump is released, tiles/s, in (0, jump_speed]
            (series: 200 px/s = 12.5).
        max_jump: tiles the planner lets it climb in one jump, integer from 1 to 64
            (``MAX_JUMP_HEIGHT``; None: what a full jump reaches, floored, at most 64: 5 with
            the series' constants).

    The fields describe the character as it was placed; its state while the World runs is
    read from the ``PlatformerMap`` (``position(entity)``, ``inputs``).
    """

    x: float | None = None
    y: float | None = None
    spawn: int | None = None
    width: float = 0.75
    height: float = 0.75
    gravity: float = SERIES.gravity
    max_fall_speed: float = SERIES.max_fall_speed
    walk_speed: float = SERIES.walk_speed
    jump_speed: float = SERIES.jump_speed
    release_speed: float = SERIES.release_speed
    max_jump: int | None = None

    def __post_init__(self):
        if self.spawn is not None:
            if self.x is not None or self.y is not None:
                raise ValueError("PlatformerBody.spawn: give either spawn or x and y, not both")
            if isinstance(self.spawn, bool) or not isinstance(self.spawn, int) or self.spawn < 0:
                raise ValueError(f"PlatformerBody.spawn: must be an integer >= 0, got {self.spawn!r}")
        elif (self.x is None) != (self.y is None):
            raise ValueError("PlatformerBody.x: give both x and y (tiles), or spawn (an @ of the level)")
        elif self.x is not None:
            for name in ("x", "y"):
                value = getattr(self, name)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise ValueError(f"PlatformerBody.{name}: must be a finite number of tiles, got {value!r}")
                setattr(self, name, float(value))
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 16:
                raise ValueError(f"PlatformerBody.{name}: must be in (0, 16] tiles, got {value!r}")
        constants = self.constants()
        for name in CharacterConstants._fields:
            value = getattr(constants, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"PlatformerBody.{name}: must be a number, got {value!r}")
        constants.validate("PlatformerBody")
        if self.max_jump is not None and (isinstance(self.max_jump, bool) or not isinstance(self.max_jump, int)
                                          or not 1 <= self.max_jump <= MAX_JUMP_HEIGHT):
            raise ValueError(f"PlatformerBody.max_jump: must be an integer from 1 to {MAX_JUMP_HEIGHT} tiles, "
                             f"got {self.max_jump!r}")

    def constants(self) -> CharacterConstants:
        """The physics constants as the kernels take them."""
        return CharacterConstants(self.gravity, self.max_fall_speed, self.walk_speed, self.jump_speed,
                                  self.release_speed)

    def size_tiles(self) -> tuple[int, int]:
        """The box rounded up to whole tiles (what the planner and the level masks use)."""
        return tiles_spanned(self.width), tiles_spanned(self.height)

    def start(self, level: TileLevel) -> tuple[float, float]:
        """The bottom-left corner it starts at on ``level`` (tiles)."""
        if self.spawn is None:
            if self.x is None:
                raise ValueError("PlatformerBody: no start given (spawn, or x and y)")
            return float(self.x), float(self.y)
        if self.spawn >= len(level.spawns):
            raise ValueError(f"PlatformerBody.spawn: the level has {len(level.spawns)} spawn point(s) (@), "
                             f"got index {self.spawn}")
        point = level.spawns[self.spawn]
        return float(point.x), float(point.y)


@dataclass
class Bot:
    """Tag: a side-view character driven by the seed-002 bot (path → key inputs)."""


class PlatformerMap:
    """The side-view level of a World and the state of its characters.

    Args:
        level: the tile level (``toggle_tile`` changes it; the GraphBuild stage then rebuilds
            the masks and the bots re-plan).
        dt: the World's tick, seconds.
        clearance: tiles a bot's jump should clear above the node it aims at, ≥ 0.

    Attributes:
        characters: the driver whose columns hold every character's state, row by row.
        entity: ``(n,)`` int64, the entity of each row.
        version: bumped by every tile change; ``built_version`` is the version the masks were
            built for (the GraphBuild stage's).
        goal: ``(n, 2)`` int64, the goal tile of each bot's last plan (-1: none).
        served_target: ``(n,)`` bool, the last plan was for a target entity (else a point).
        pending: ``(n,)`` bool, re-plan on the next Pathfind stage (a new request, a tile
            change, a bot stuck or done short of a moving target).
        failed: ``(n,)`` bool, the last plan found no path (PathFailed was sent).
        arrived: ``(n,)`` bool, TargetReached was sent for the current plan.
        stuck_reported: ``(n,)`` bool, Stuck was sent for the current re-plan flag.
        following: ``(n,)`` int8, the bot's state at the end of the last PathFollow stage.
    """

    _ROW_ARRAYS = ("entity", "goal", "served_target", "pending", "failed", "arrived", "stuck_reported",
                   "following")

    def __init__(self, level: TileLevel, dt: float = 1.0 / 60.0, clearance: float = 0.5):
        self.level = level
        self.characters = PlatformerBots(level, dt=dt, clearance=clearance)
        self.version = 0
        self.built_version = -1
        self.entity = np.zeros(0, np.int64)
        self.goal = np.zeros((0, 2), np.int64)
        self.served_target = np.zeros(0, bool)
        self.pending = np.zeros(0, bool)
        self.failed = np.zeros(0, bool)
        self.arrived = np.zeros(0, bool)
        self.stuck_reported = np.zeros(0, bool)
        self.following = np.zeros(0, np.int8)
        self.bodies_seen: object = None  # esper's PlatformerBody list at the last sync (identity)
        # the Pathfind stage's view of the bots' requests, derived from esper's list when it changes
        self.requests_seen: object = None
        self.request_rows = np.zeros(0, np.int64)  # rows of bots with a PathRequest, in entity order
        self.requests: list = []  # their PathRequests, aligned with request_rows
        self.request_period = np.zeros(0, np.int64)  # their replan periods, ticks
        self.served: dict[int, object] = {}  # entity -> the PathRequest last served

    # --- rows ---------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return self.characters.count

    def add(self, entity: int, body: PlatformerBody, bot: bool) -> int:
        """Give ``entity`` a row for ``body`` (a bot or not); returns the row."""
        x, y = body.start(self.level)
        row = self.characters.add(x, y, body.width, body.height, body.constants(), body.max_jump, bot=bot)
        self.entity = np.append(self.entity, np.int64(entity))
        self.goal = np.vstack([self.goal, np.full((1, 2), -1, np.int64)])
        for name in ("served_target", "pending", "failed", "arrived", "stuck_reported"):
            setattr(self, name, np.append(getattr(self, name), False))
        self.following = np.append(self.following, np.int8(0))
        return row

    def remove(self, entity: int) -> None:
        """Drop ``entity``'s row (the last row moves into its place)."""
        row = self.row_of(entity)
        if row < 0:
            return
        self.characters.remove(row)
        last = self.count
        for name in self._ROW_ARRAYS:
            column = getattr(self, name)
            column[row] = column[last]
            setattr(self, name, column[:last].copy())

    def row_of(self, entity: int) -> int:
        """The row of ``entity``, or -1 when it has none."""
        found = np.flatnonzero(self.entity == entity)
        return int(found[0]) if found.size else -1

    # --- reading and driving -----------------------------------------------------------------

    def position(self, entity: int) -> tuple[float, float]:
        """Bottom-left corner of ``entity``'s box, tiles; KeyError when it has no row."""
        row = self.row_of(entity)
        if row < 0:
            raise KeyError(f"entity {entity} is not a side-view character of this World")
        return float(self.characters.x[row]), float(self.characters.y[row])

    def tile_of(self, entity: int) -> tuple[int, int]:
        """The tile a character stands in (its path tile: bottom-left corner plus half a tile)."""
        return self.characters.tile_of(self.row_of_or_raise(entity))

    def row_of_or_raise(self, entity: int) -> int:
        row = self.row_of(entity)
        if row < 0:
            raise KeyError(f"entity {entity} is not a side-view character of this World")
        return row

    def set_inputs(self, entity: int, keys: int) -> None:
        """Hold ``keys`` (a sum of GO_LEFT, GO_RIGHT, GO_DOWN, JUMP) for a character that is not
        a bot, from the next tick on; a bot's inputs are its own."""
        if not 0 <= int(keys) <= 15:
            raise ValueError(f"set_inputs: keys must be a sum of the input bits (0..15), got {keys!r}")
        self.characters.inputs[self.row_of_or_raise(entity)] = int(keys)

    def pick(self, point: tuple[float, float], slack: float = 0.25) -> int:
        """The entity whose box (grown by ``slack`` tiles) holds ``point``, nearest box centre
        first; -1 when none does."""
        c = self.characters
        n = c.count
        if n == 0:
            return -1
        px, py = float(point[0]), float(point[1])
        inside = ((c.x[:n] - slack <= px) & (px <= c.x[:n] + c.width[:n] + slack)
                  & (c.y[:n] - slack <= py) & (py <= c.y[:n] + c.height[:n] + slack))
        if not inside.any():
            return -1
        rows = np.flatnonzero(inside)
        d = np.hypot(c.x[rows] + c.width[rows] / 2 - px, c.y[rows] + c.height[rows] / 2 - py)
        return int(self.entity[rows[np.argmin(d)]])

    def toggle_tile(self, x: int, y: int) -> int:
        """Turn tile (x, y) solid if it is empty or one-way, else empty; the masks and every
        bot's plan are renewed on the next tick. Refused (ValueError) where the new solid tile
        would overlap a character. Returns the new tile code."""
        code = EMPTY if self.level.tile(x, y) == SOLID else SOLID
        if code == SOLID:
            c = self.characters
            n = c.count
            eps = 1e-7
            overlap = ((np.floor(c.x[:n] + eps) <= x) & (x <= np.floor(c.x[:n] + c.width[:n] - eps))
                       & (np.floor(c.y[:n] + eps) <= y) & (y <= np.floor(c.y[:n] + c.height[:n] - eps)))
            if overlap.any():
                raise ValueError(f"toggle_tile: a character stands in tile ({x}, {y})")
        self.level.set_tile(x, y, code)
        self.version += 1
        return code

    # --- determinism --------------------------------------------------------------------------

    def digest_bytes(self) -> bytes:
        """The simulation state held here (level, characters, plan bookkeeping) as bytes, for
        ``World.state_digest``."""
        c = self.characters
        parts = [self.level.tiles.tobytes(), np.int64(self.version).tobytes()]
        names = (*PlatformerBots.FLOAT_COLUMNS, *PlatformerBots.BOOL_COLUMNS, *PlatformerBots.INT_COLUMNS,
                 "inputs", "prev_inputs")
        for name in names:
            parts.append(np.ascontiguousarray(getattr(c, name)[: c.count]).tobytes())
        for row in range(c.count):
            parts.append(c.nodes[row, : c.path_len[row]].tobytes())
        for name in self._ROW_ARRAYS:
            parts.append(np.ascontiguousarray(getattr(self, name)).tobytes())
        return b"".join(parts)


__all__ = ["PLATFORMER", "Bot", "PlatformerBody", "PlatformerMap"]
