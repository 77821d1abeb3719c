"""Platformer characters on one level, as columns: the bot (seed 002) and the physics, stepped
together without the ECS — what tests, benchmarks and the ECS systems drive.

``PlatformerBots.step()`` runs, for all characters at once, the compiled bot update (path →
inputs) and then the compiled physics (inputs → motion); only a bot that asked for a path (a
``move_to`` or a re-plan after being stuck) costs Python work, in ``serve_plans``.

Units: tiles and seconds; positions are the bottom-left corner of each character's box.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.platformer.bot import (
    JUMP_TABLE_SIZE,
    MAX_POSITION_ERROR,
    MOVE_TO,
    NONE,
    bot_update,
    jump_frames_for_node,
    jump_frames_table,
    max_jump_height,
)
from ecs_nav.platformer.level import TileLevel
from ecs_nav.platformer.physics import SERIES, CharacterConstants, step_characters, support_under
from ecs_nav.platformer.planner import MAX_JUMP_HEIGHT, SizeMasks, build_masks, find_path


def lower_onto_ground(level: TileLevel, tile: tuple[int, int]) -> tuple[int, int]:
    """The seed's clamp of a clicked tile: lower it until the tile is ground, then take the tile
    above it. Tiles above the level are lowered from its top row."""
    x, y = int(tile[0]), min(int(tile[1]), level.height - 1)
    while not level.is_ground(x, y):
        y -= 1
    return x, y + 1


def tiles_spanned(length: float) -> int:
    """Whole tiles a box side of ``length`` tiles takes (at least one: a sliver of a character
    still occupies the tile it stands in)."""
    return max(1, math.ceil(length - 1e-9))


def planned_jump(constants: CharacterConstants, dt: float, max_jump: int | None = None, bot: bool = True) -> int:
    """The highest jump (tiles) the planner lets a character climb: ``max_jump`` when given, an
    integer from 1 to ``MAX_JUMP_HEIGHT``; else what a full jump of ``constants`` reaches,
    floored, at most ``MAX_JUMP_HEIGHT`` (and 1 for a character the player drives, which plans
    nothing). ValueError for a bot whose full jump climbs under a tile: it could plan no climb."""
    if max_jump is None:
        max_jump = min(max_jump_height(constants, dt), MAX_JUMP_HEIGHT)
        if max_jump < 1 and bot:
            raise ValueError("a full jump of its constants climbs less than one tile, so a bot could plan no "
                             "climb: raise jump_speed (or lower gravity), or give max_jump")
        return max(max_jump, 1)
    if isinstance(max_jump, bool) or int(max_jump) != max_jump or not 1 <= max_jump <= MAX_JUMP_HEIGHT:
        raise ValueError(f"max_jump must be an integer from 1 to {MAX_JUMP_HEIGHT} tiles, got {max_jump!r}")
    return int(max_jump)


class PlatformerBots:
    """Characters (players and bots) on a ``TileLevel``, stepped with a fixed ``dt`` (s).

    Args:
        level: the level (its tiles may change; call ``level_changed`` after).
        dt: tick length in seconds, > 0 (default 1/60, the frame rate the seed assumes).
        clearance: tiles a bot's jump should clear above the node it aims at, ≥ 0 (sets its
            jump frames; see ``jump_frames_table``).
    """

    def __init__(self, level: TileLevel, dt: float = 1.0 / 60.0, clearance: float = 0.5):
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"PlatformerBots.dt: must be a positive number of seconds, got {dt!r}")
        if not clearance >= 0:
            raise ValueError(f"PlatformerBots.clearance: must be ≥ 0 tiles, got {clearance!r}")
        self.level = level
        self.dt = float(dt)
        self.clearance = float(clearance)
        self._masks: dict[tuple[int, int], SizeMasks] = {}
        self.count = 0
        self._alloc(0, 16)

    # --- storage ---------------------------------------------------------------------------

    # the per-character columns, by dtype (float64 tiles and seconds, bool flags, int64 counters)
    FLOAT_COLUMNS = ("x", "y", "vx", "vy", "width", "height", "gravity", "max_fall", "walk", "jump_speed",
                     "release", "prev_x", "prev_y")
    BOOL_COLUMNS = ("on_ground", "on_one_way", "at_ceiling", "replan", "is_bot")
    INT_COLUMNS = ("frames_from_jump_start", "width_tiles", "height_tiles", "max_jump", "state", "path_len",
                   "current", "jump_frames", "stuck_frames")

    def _alloc(self, n: int, nodes: int) -> None:
        for name in self.FLOAT_COLUMNS:
            self.__dict__[name] = np.zeros(n, np.float64)
        for name in self.BOOL_COLUMNS:
            self.__dict__[name] = np.zeros(n, np.bool_)
        for name in self.INT_COLUMNS:
            self.__dict__[name] = np.zeros(n, np.int64)
        self.inputs = np.zeros(n, np.uint8)
        self.prev_inputs = np.zeros(n, np.uint8)
        self.tables = np.zeros((n, JUMP_TABLE_SIZE), np.int32)
        self.nodes = np.zeros((n, nodes, 2), np.int32)

    def _grow(self, nodes: int) -> None:
        n = self.count
        for name in (*self.FLOAT_COLUMNS, *self.BOOL_COLUMNS, *self.INT_COLUMNS, "inputs", "prev_inputs", "tables"):
            old = self.__dict__[name]
            new = np.zeros((n + 1, *old.shape[1:]), old.dtype)
            new[:n] = old
            self.__dict__[name] = new
        k = max(self.nodes.shape[1], nodes)
        new_nodes = np.zeros((n + 1, k, 2), np.int32)
        new_nodes[:n, : self.nodes.shape[1]] = self.nodes
        self.nodes = new_nodes

    def add(
        self,
        x: float,
        y: float,
        width: float = 0.75,
        height: float = 0.75,
        constants: CharacterConstants = SERIES,
        max_jump: int | None = None,
        bot: bool = True,
    ) -> int:
        """Add a character with its box's bottom-left at (x, y) tiles, ``width`` × ``height``
        tiles (> 0; planned as the sizes rounded up — the seed advises a box a little smaller
        than its tiles, and the default 12 × 12 px of a 16-px tile is what the arrival figures
        use), its physics ``constants`` and max jump height (``planned_jump``). Returns its row."""
        constants.validate("PlatformerBots.add constants").check_jump(self.dt, "PlatformerBots.add constants")
        for name, v in (("x", x), ("y", y)):
            if not math.isfinite(v):
                raise ValueError(f"PlatformerBots.add: {name} must be finite, got {v!r}")
        for name, v in (("width", width), ("height", height)):
            if not (math.isfinite(v) and 0 < v <= 16):
                raise ValueError(f"PlatformerBots.add: {name} must be in (0, 16] tiles, got {v!r}")
        try:
            max_jump = planned_jump(constants, self.dt, max_jump, bot)
        except ValueError as exc:
            raise ValueError(f"PlatformerBots.add: {exc}") from None
        i = self.count
        self._grow(self.nodes.shape[1])
        self.count += 1
        self.x[i], self.y[i] = x, y
        self.width[i], self.height[i] = width, height
        self.width_tiles[i] = tiles_spanned(width)
        self.height_tiles[i] = tiles_spanned(height)
        self.gravity[i], self.max_fall[i] = constants.gravity, constants.max_fall_speed
        self.walk[i], self.jump_speed[i], self.release[i] = (
            constants.walk_speed, constants.jump_speed, constants.release_speed)
        self.max_jump[i] = int(max_jump)
        self.tables[i] = jump_frames_table(constants, self.dt, self.clearance)
        self.is_bot[i] = bot
        self.current[i] = -1
        support = support_under(self.level.tiles, float(x), float(y), float(width))
        self.on_ground[i] = support != 0
        self.on_one_way[i] = support == 2
        return i

    def remove(self, i: int) -> int:
        """Remove character ``i``: the last row moves into its place (rows stay dense, O(1) per
        column). Returns the row that moved into ``i`` (``i`` itself when it was the last)."""
        if not 0 <= i < self.count:
            raise ValueError(f"remove: no character {i}")
        last = self.count - 1
        columns = (*self.FLOAT_COLUMNS, *self.BOOL_COLUMNS, *self.INT_COLUMNS, "inputs", "prev_inputs", "tables",
                   "nodes")
        for name in columns:
            column = self.__dict__[name]
            column[i] = column[last]
            self.__dict__[name] = column[:last].copy()
        self.count = last
        return last

    # --- planning --------------------------------------------------------------------------

    def masks(self, width_tiles: int, height_tiles: int) -> SizeMasks:
        """The level masks for a character size, built once per size (GraphBuild's job)."""
        key = (int(width_tiles), int(height_tiles))
        if key not in self._masks:
            self._masks[key] = build_masks(self.level, *key)
        return self._masks[key]

    def level_changed(self) -> None:
        """Forget the masks after the level's tiles changed; paths are re-planned when stuck."""
        self._masks.clear()

    def start_tile(self, i: int) -> tuple[int, int]:
        """The seed's start tile: the tile under the bottom-left corner plus half a tile; on a
        ledge edge (on ground but that tile has no ground under it) one tile right if the
        character fits and stands there, else one left."""
        sx = int(math.floor(self.x[i] + 0.5))
        sy = int(math.floor(self.y[i] + 0.5))
        m = self.masks(self.width_tiles[i], self.height_tiles[i])

        def grounded_fit(tx: int, ty: int) -> bool:
            rows, cols = m.fits.shape
            return 0 <= tx < cols and 0 <= ty < rows and bool(m.fits[ty, tx] and m.on_ground[ty, tx])

        if self.on_ground[i] and not grounded_fit(sx, sy):
            sx = sx + 1 if grounded_fit(sx + 1, sy) else sx - 1
        return sx, sy

    def move_to(self, i: int, destination: tuple[int, int]) -> bool:
        """The seed's MoveTo: plan from the start tile to ``destination`` (tiles; already on the
        ground — see ``lower_onto_ground``) and follow it. False (state NONE) if no path."""
        if not 0 <= i < self.count:
            raise ValueError(f"move_to: no character {i}")
        self.stuck_frames[i] = 0
        self.replan[i] = False
        wt, ht = int(self.width_tiles[i]), int(self.height_tiles[i])
        path = find_path(self.level, self.start_tile(i), destination, wt, ht, int(self.max_jump[i]),
                         masks=self.masks(wt, ht))
        nodes = path.nodes
        if not path.found or len(nodes) < 2:
            self.state[i] = NONE
            self.current[i] = -1
            self.path_len[i] = 0
            return path.found
        if len(nodes) > self.nodes.shape[1]:
            grown = np.zeros((self.count, len(nodes), 2), np.int32)
            grown[:, : self.nodes.shape[1]] = self.nodes
            self.nodes = grown
        self.nodes[i, : len(nodes)] = nodes
        self.path_len[i] = len(nodes)
        self.current[i] = 1
        self.state[i] = MOVE_TO
        self.jump_frames[i] = jump_frames_for_node(
            self.level.tiles, self.nodes[i], len(nodes), 0, bool(self.on_ground[i]), self.tables[i])
        return True

    def path(self, i: int) -> np.ndarray:
        """Bot ``i``'s current path nodes, ``(k, 2)`` int32 tiles, start first."""
        return self.nodes[i, : self.path_len[i]].copy()

    def serve_plans(self) -> int:
        """Re-plan every bot that was stuck too long to its path's last node; returns how many."""
        stuck = np.flatnonzero(self.replan[: self.count])
        for i in stuck:
            goal = tuple(int(v) for v in self.nodes[i, self.path_len[i] - 1])
            self.move_to(int(i), goal)
        return len(stuck)

    # --- the tick --------------------------------------------------------------------------

    def think(self) -> None:
        """The bot update for every bot (players keep the inputs set from outside)."""
        bots = self.is_bot
        saved = self.inputs[~bots].copy()
        bot_update(
            self.level.tiles, self.x, self.y, self.width_tiles, self.on_ground, self.on_one_way,
            self.prev_x, self.prev_y, self.state, self.nodes, self.path_len, self.current,
            self.jump_frames, self.stuck_frames, self.inputs, self.prev_inputs, self.tables,
            self.replan, MAX_POSITION_ERROR,
        )
        self.inputs[~bots] = saved

    def move(self) -> None:
        """The physics for every character: inputs → motion against the level."""
        step_characters(
            self.level.tiles, self.dt, self.x, self.y, self.vx, self.vy, self.width, self.height,
            self.gravity, self.max_fall, self.walk, self.jump_speed, self.release, self.inputs,
            self.prev_x, self.prev_y, self.on_ground, self.on_one_way, self.at_ceiling,
            self.frames_from_jump_start,
        )

    def step(self) -> None:
        """One tick: bots think, stuck bots re-plan, everyone moves."""
        self.think()
        if self.replan.any():
            self.serve_plans()
        self.move()

    def tile_of(self, i: int) -> tuple[int, int]:
        """The tile under character ``i``'s bottom-left corner plus half a tile (its path tile)."""
        return int(math.floor(self.x[i] + 0.5)), int(math.floor(self.y[i] + 0.5))

    def inside_solid(self, i: int) -> bool:
        """True if character ``i``'s box overlaps a solid tile (it never should)."""
        eps = 1e-7
        c0, c1 = math.floor(self.x[i] + eps), math.floor(self.x[i] + self.width[i] - eps)
        r0, r1 = math.floor(self.y[i] + eps), math.floor(self.y[i] + self.height[i] - eps)
        return any(self.level.tile(c, r) == 1 for c in range(c0, c1 + 1) for r in range(r0, r1 + 1))


__all__ = ["PlatformerBots", "lower_onto_ground"]
