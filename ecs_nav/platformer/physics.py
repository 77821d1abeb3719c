"""Platformer character physics: key inputs → motion of axis-aligned boxes against a tile level.

The rules are the tutorial series' (its Implementation part and the character controller it
builds on): no horizontal momentum — a character walks at full speed the frame a key is held and
stops the frame it is released; gravity pulls down to a capped fall speed; Jump on ground sets the
upward speed, and the longer Jump is held the higher the jump, because releasing it caps the
upward speed; for a few frames after walking off a ledge Jump still jumps. One-way platforms carry
a character that comes from above, let it jump up through them, and GoDown on one drops it
through.

**Units are tiles and seconds** (a tile is one scene unit). The series works in pixels with 16-px
tiles; ``SERIES`` holds its constants converted (divide by 16): gravity −1030 px/s² =
−64.375 tiles/s², fall speed cap −900 px/s = −56.25 tiles/s, walk 160 px/s = 10 tiles/s, jump
410 px/s = 25.625 tiles/s, release cap 200 px/s = 12.5 tiles/s. Every character carries its own.

Positions are the **bottom-left corner** of the character's box. Anything outside the level is
solid. All characters step in one compiled loop (``step_characters``), no Python per
character.

Changes from the series: collisions are swept per axis against the tile grid (x first, then y)
rather than the series' sensor lines; a character lands on a one-way platform only if its bottom
was at or above the platform's top the frame before (the series allows a 2-px threshold); the
series' 1-px nudge past a wall corner is not done.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ecs_nav.compile.aot import kernel
from ecs_nav.platformer.level import EMPTY, ONE_WAY, SOLID, tile_at

PIXELS_PER_TILE = 16.0
"""The series' tile size in pixels; its constants are divided by this."""

GO_LEFT = 1
GO_RIGHT = 2
GO_DOWN = 4
JUMP = 8
"""Input bits (the seed's KeyInput): an input mask is their sum."""

COYOTE_FRAMES = 4
"""Frames after walking off a ledge during which Jump still jumps (the series' threshold)."""

DROP_DISTANCE = 2.0 / PIXELS_PER_TILE
"""How far GoDown pushes a character into a one-way platform to drop it (tiles; series: 2 px)."""

_EPS = 1e-7


JUMP_TICK_LIMIT = 600
"""A jump rises for at most this many ticks (10 s at 60 Hz; the series' jump: 24)."""


class CharacterConstants(NamedTuple):
    """One character's physics constants, in tiles and seconds.

    Attributes:
        gravity: tiles/s², < 0.
        max_fall_speed: tiles/s, < 0 (the fall speed cap).
        walk_speed: tiles/s, > 0.
        jump_speed: upward speed a jump starts with, tiles/s, > 0.
        release_speed: upward speed cap once Jump is released, tiles/s, in (0, jump_speed].
    """

    gravity: float
    max_fall_speed: float
    walk_speed: float
    jump_speed: float
    release_speed: float

    def validate(self, where: str = "CharacterConstants") -> CharacterConstants:
        """Return self; raise ValueError naming the field if one is out of range."""
        checks = (
            ("gravity", self.gravity < 0, "< 0 (tiles/s², down)"),
            ("max_fall_speed", self.max_fall_speed < 0, "< 0 (tiles/s, down)"),
            ("walk_speed", self.walk_speed > 0, "> 0 (tiles/s)"),
            ("jump_speed", self.jump_speed > 0, "> 0 (tiles/s)"),
            ("release_speed", 0 < self.release_speed <= self.jump_speed,
             f"> 0 and at most jump_speed, {self.jump_speed!r} (tiles/s)"),
        )
        for name, ok, expected in checks:
            value = getattr(self, name)
            if not (math.isfinite(value) and ok):
                raise ValueError(f"{where}.{name}: must be a finite number {expected}, got {value!r}")
        return self

    def check_jump(self, dt: float, where: str = "CharacterConstants") -> CharacterConstants:
        """Return self; raise ValueError when a jump would rise for more than
        ``JUMP_TICK_LIMIT`` ticks of ``dt`` (the planner steps every jump frame by frame: a
        jump of 1e7 tiles/s against gravity of 1e-300 would never come down)."""
        ticks = self.jump_speed / (-self.gravity * dt)
        if not ticks <= JUMP_TICK_LIMIT:
            raise ValueError(f"{where}.jump_speed: a jump at {self.jump_speed:g} tiles/s against gravity "
                             f"{self.gravity:g} tiles/s² rises for {ticks:.3g} ticks of {dt:g} s; at most "
                             f"{JUMP_TICK_LIMIT} (raise gravity or lower jump_speed)")
        return self


SERIES = CharacterConstants(
    gravity=-1030.0 / PIXELS_PER_TILE,
    max_fall_speed=-900.0 / PIXELS_PER_TILE,
    walk_speed=160.0 / PIXELS_PER_TILE,
    jump_speed=410.0 / PIXELS_PER_TILE,
    release_speed=200.0 / PIXELS_PER_TILE,
)
"""The series' constants in tiles and seconds."""


@kernel
def _solid_in_rows(tiles, c, r0, r1):
    for r in range(r0, r1 + 1):
        if tile_at(tiles, c, r) == SOLID:
            return True
    return False


@kernel
def support_under(tiles, x, y, w):
    """What a box with bottom-left (x, y) and width w stands on: 0 nothing, 1 solid (possibly
    with one-way tiles too), 2 one-way platforms only. Needs y on a tile boundary."""
    fy = math.floor(y + 0.5)
    if abs(y - fy) > _EPS:
        return 0
    c0 = int(math.floor(x + _EPS))
    c1 = int(math.floor(x + w - _EPS))
    solid = False
    one_way = False
    for c in range(c0, c1 + 1):
        t = tile_at(tiles, c, int(fy) - 1)
        if t == SOLID:
            solid = True
        elif t == ONE_WAY:
            one_way = True
    if solid:
        return 1
    if one_way:
        return 2
    return 0


@kernel
def step_characters(
    tiles, dt, x, y, vx, vy, width, height, gravity, max_fall, walk, jump_speed, release,
    inputs, prev_x, prev_y, on_ground, on_one_way, at_ceiling, frames_from_jump_start,
):
    """Advance every character one tick of ``dt`` seconds.

    Arrays are ``(n,)``: positions/velocities/sizes/constants float64 (tiles, tiles/s, tiles/s²),
    ``inputs`` uint8 masks of GO_LEFT/GO_RIGHT/GO_DOWN/JUMP, flags bool, frame counter int64.
    Writes ``prev_x``/``prev_y`` (the position before the step), then updates the state in place.
    """
    n = x.shape[0]
    for i in range(n):
        prev_x[i] = x[i]
        prev_y[i] = y[i]
        keys = inputs[i]
        left = (keys & GO_LEFT) != 0
        right = (keys & GO_RIGHT) != 0
        down = (keys & GO_DOWN) != 0
        jump = (keys & JUMP) != 0
        vx[i] = 0.0
        if right and not left:
            vx[i] = walk[i]
        elif left and not right:
            vx[i] = -walk[i]
        was_on_ground = on_ground[i]
        if on_ground[i]:
            if jump:
                vy[i] = jump_speed[i]
                frames_from_jump_start[i] = 0
            else:
                vy[i] = 0.0
                if down and on_one_way[i]:
                    y[i] -= DROP_DISTANCE
        else:
            frames_from_jump_start[i] += 1
            if at_ceiling[i]:
                frames_from_jump_start[i] = 100
            vy[i] = max(vy[i] + gravity[i] * dt, max_fall[i])
            if not jump and vy[i] > 0.0:
                vy[i] = min(vy[i], release[i])
                frames_from_jump_start[i] = 100
            if jump and vy[i] < 0.0 and frames_from_jump_start[i] < COYOTE_FRAMES:
                vy[i] = jump_speed[i]
        w = width[i]
        h = height[i]
        # --- x: sweep the leading edge across columns, solid tiles stop it
        dx = vx[i] * dt
        r0 = int(math.floor(y[i] + _EPS))
        r1 = int(math.floor(y[i] + h - _EPS))
        if dx > 0.0:
            old_c = int(math.floor(x[i] + w - _EPS))
            new_right = x[i] + w + dx
            new_c = int(math.floor(new_right - _EPS))
            for c in range(old_c + 1, new_c + 1):
                if _solid_in_rows(tiles, c, r0, r1):
                    new_right = float(c)
                    break
            x[i] = new_right - w
        elif dx < 0.0:
            old_c = int(math.floor(x[i] + _EPS))
            new_left = x[i] + dx
            new_c = int(math.floor(new_left + _EPS))
            for c in range(old_c - 1, new_c - 1, -1):
                if _solid_in_rows(tiles, c, r0, r1):
                    new_left = float(c + 1)
                    break
            x[i] = new_left
        # --- y: falling lands on solid or (from above) one-way tops; rising stops under solid
        dy = vy[i] * dt
        c0 = int(math.floor(x[i] + _EPS))
        c1 = int(math.floor(x[i] + w - _EPS))
        at_ceiling[i] = False
        if dy < 0.0:
            new_bottom = y[i] + dy
            r = int(math.floor(y[i] + _EPS)) - 1
            while r + 1 > new_bottom:
                hit = False
                for c in range(c0, c1 + 1):
                    if tile_at(tiles, c, r) != EMPTY:
                        hit = True
                        break
                if hit:
                    new_bottom = float(r + 1)
                    vy[i] = 0.0
                    break
                r -= 1
            y[i] = new_bottom
        elif dy > 0.0:
            new_top = y[i] + h + dy
            r = int(math.floor(y[i] + h - _EPS)) + 1
            while r < new_top - _EPS:
                if _solid_in_rows_cols(tiles, c0, c1, r):
                    new_top = float(r)
                    vy[i] = 0.0
                    at_ceiling[i] = True
                    break
                r += 1
            y[i] = new_top - h
        # --- contact flags
        support = support_under(tiles, x[i], y[i], w)
        if support != 0:
            y[i] = math.floor(y[i] + 0.5)
        on_ground[i] = support != 0 and vy[i] <= 0.0
        on_one_way[i] = on_ground[i] and support == 2
        if not at_ceiling[i]:
            top = y[i] + h
            ft = math.floor(top + 0.5)
            if abs(top - ft) <= _EPS and _solid_in_rows_cols(tiles, c0, c1, int(ft)):
                at_ceiling[i] = True
        if was_on_ground and not on_ground[i] and not jump:
            frames_from_jump_start[i] = 0


@kernel
def _solid_in_rows_cols(tiles, c0, c1, r):
    for c in range(c0, c1 + 1):
        if tile_at(tiles, c, r) == SOLID:
            return True
    return False
