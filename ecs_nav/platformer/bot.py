"""The platformer bot of seed 002: a planned path → the key inputs GoLeft/GoRight/GoDown/Jump.

Every rule of the seed, compiled over all bots at once (``bot_update``):

- states ``NONE`` / ``MOVE_TO``; a path is copied into the bot's own buffer start first and the
  current node index starts at 1; on a new path the jump frames are set for node 0;
- context each frame: previous / current / next node in world space (tile centres), whether the
  current node is on ground (ground under any of the character's columns), reachedX / reachedY
  (passed the node in the direction of travel, or within ``max_error``); reachedY is false while
  the node is on ground and the bot is not;
- snap x onto the node when it overshot by more than ``max_error`` and less than 3 × that and
  neither left nor right was held last frame;
- GoDown when the node is lower and the bot stands on a one-way platform;
- on reaching a node go to the next (re-running the frame), past the end → ``NONE``; else steer
  in x; when x is reached but not y, the next node exists and the current one is in the air, and
  no solid tile stands in the column toward the next node (``any_solid_in_stripe``), already
  steer toward the next node — and skip ahead if it is reached first;
- Jump while jump frames remain and (in the air, or x reached and the node in the air, or both
  bot and node on ground); count the frames down only in the air;
- stuck (position unchanged) for more than ``MAX_STUCK_FRAMES`` = 20 frames → ask for a re-plan
  to the path's last node (``replan`` flag; the caller plans, as the seed's ``MoveTo``).

Jump frames by height come from ``jump_frames_table``, computed per character from its own
jump speed and gravity by integrating the physics (the seed's ideal case) instead of the seed's
fixed table ``SEED_JUMP_FRAMES``. Positions are the box's bottom-left corner in tiles; the
seed's *path position* is that corner plus half a tile.

Changes from the seed: the jump-height scan stops at the first node **with ground under it**
(the seed's prose; one code listing in the seed tests the opposite) and, when the path ends in the
air, uses the height found so far; the seed's ``checkedX != 0`` sentinel (which never checks
column 0) is a separate flag.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.platformer.level import any_solid_in_stripe, is_ground
from ecs_nav.platformer.physics import GO_DOWN, GO_LEFT, GO_RIGHT, JUMP, CharacterConstants

NONE = 0
MOVE_TO = 1
"""Bot states (the seed's BotState)."""

MAX_STUCK_FRAMES = 20
"""Frames without moving before a bot re-plans (the seed's ``cMaxStuckFrames``)."""

MAX_POSITION_ERROR = 1.0 / 16.0
"""How close counts as on a node, tiles (the seed's ``cBotMaxPositionError``: 1 px of 16)."""

SEED_JUMP_FRAMES = {1: 1, 2: 2, 3: 5, 4: 8, 5: 14, 6: 21}
"""The seed's hand-made table (height in tiles → frames to hold Jump); 30 for any other height."""

JUMP_TABLE_SIZE = 17
"""Columns of a jump-frames table: heights 0..15, and the last column for anything higher."""


def jump_apex(constants: CharacterConstants, held_frames: int, dt: float) -> float:
    """Highest rise (tiles) of a jump from the ground when Jump is held for the take-off frame and
    ``held_frames`` (≥ 0) frames in the air, stepping as ``step_characters`` does."""
    if held_frames < 0:
        raise ValueError(f"jump_apex: held_frames must be ≥ 0, got {held_frames}")
    v = constants.jump_speed
    y = v * dt
    top = y
    k = 0
    while True:
        k += 1
        v = max(v + constants.gravity * dt, constants.max_fall_speed)
        if k > held_frames and v > 0:
            v = min(v, constants.release_speed)
        if v <= 0:
            return top
        y += v * dt
        top = max(top, y)


def full_jump_frames(constants: CharacterConstants, dt: float) -> int:
    """Frames of holding Jump in the air after which holding longer gains no height (≥ 1)."""
    top = jump_apex(constants, 0, dt)
    f = 0
    while True:
        nxt = jump_apex(constants, f + 1, dt)
        if nxt <= top + 1e-12:
            return max(f, 1)
        top = nxt
        f += 1


def max_jump_height(constants: CharacterConstants, dt: float, clearance: float = 0.0) -> int:
    """Tiles a character can climb: the full jump's apex less ``clearance`` (tiles, ≥ 0), floored.
    The series' constants give 5, as the series says of a 410 px/s jump."""
    if not clearance >= 0:
        raise ValueError(f"max_jump_height: clearance must be ≥ 0 tiles, got {clearance!r}")
    apex = jump_apex(constants, full_jump_frames(constants, dt), dt)
    return int(math.floor(apex - clearance + 1e-9))


EDGE_FRAMES = 2
"""Frames added to a full jump: a jump taken off a ledge edge spends one held frame falling before
it starts (the seed's bot walks off and jumps in the air), plus one frame of margin."""


def jump_frames_table(constants: CharacterConstants, dt: float, clearance: float = 0.5) -> np.ndarray:
    """Frames to hold Jump in the air for each height, computed from the character's physics
    (the seed's ideal case): ``(JUMP_TABLE_SIZE,)`` int32 where entry ``h`` (tiles, 1..15) is the
    fewest frames (≥ 1) whose apex clears ``h + clearance`` tiles; a height no jump clears by
    that much — and the last entry, "anything higher" — gets the full jump plus
    ``EDGE_FRAMES``. Entry 0 is 0 (no jump). The series' constants at 60 Hz give the seed's
    table for heights 1–4 and a full jump for 5 and up, where the seed's 14, 21 and 30 are all
    past the 12 frames after which holding Jump adds nothing."""
    if not clearance >= 0:
        raise ValueError(f"jump_frames_table: clearance must be ≥ 0 tiles, got {clearance!r}")
    full = full_jump_frames(constants, dt)
    apexes = [jump_apex(constants, f, dt) for f in range(full + 1)]
    table = np.full(JUMP_TABLE_SIZE, full + EDGE_FRAMES, dtype=np.int32)
    table[0] = 0
    for h in range(1, JUMP_TABLE_SIZE - 1):
        for f in range(1, full + 1):
            if apexes[f] >= h + clearance:
                table[h] = f
                break
    return table


@kernel(inline="always")
def _reached(pos, prev, cur, max_error):
    return (prev <= cur and pos >= cur) or (prev >= cur and pos <= cur) or abs(pos - cur) <= max_error


@kernel
def jump_frames_for_node(tiles, nodes, length, prev_id, on_ground, table):
    """The seed's GetJumpFramesForNode: if the next node is higher and the bot is on ground,
    scan ahead while the nodes rise, stopping at a lower node or one with ground under it."""
    cur = prev_id + 1
    if cur >= length or not on_ground:
        return 0
    base = nodes[prev_id, 1]
    if nodes[cur, 1] - base <= 0:
        return 0
    height = 1
    last = table.shape[0] - 1
    for i in range(cur, length):
        rise = nodes[i, 1] - base
        if rise >= height:
            height = rise
        if rise < height or is_ground(tiles, nodes[i, 0], nodes[i, 1] - 1):
            return table[min(height, last)]
    return table[min(height, last)]


@kernel
def bot_update(
    tiles, x, y, width_tiles, on_ground, on_one_way, prev_x, prev_y, state, nodes, path_len,
    current, jump_frames, stuck_frames, inputs, prev_inputs, tables, replan, max_error,
):
    """One frame of every bot: reads the physics state, writes ``inputs`` (and may snap ``x``).

    Shapes: ``x, y, prev_x, prev_y`` (n,) float64 tiles; ``width_tiles`` (n,) int64;
    ``nodes`` (n, k, 2) int32 with ``path_len`` (n,) valid rows each; ``tables`` (n,
    JUMP_TABLE_SIZE) int32; ``replan`` (n,) bool is set for a bot stuck too long.
    """
    n = x.shape[0]
    for i in range(n):
        prev_inputs[i] = inputs[i]
        inputs[i] = 0
        if state[i] != MOVE_TO:
            continue
        length = path_len[i]
        w = width_tiles[i]
        for _ in range(4 * length + 4):
            cur = current[i]
            pcx = nodes[i, cur - 1, 0] + 0.5
            pcy = nodes[i, cur - 1, 1] + 0.5
            cx = nodes[i, cur, 0] + 0.5
            cy = nodes[i, cur, 1] + 0.5
            has_next = length > cur + 1
            nx, ny = cx, cy
            if has_next:
                nx = nodes[i, cur + 1, 0] + 0.5
                ny = nodes[i, cur + 1, 1] + 0.5
            dest_on_ground = False
            for k in range(w):
                if is_ground(tiles, nodes[i, cur, 0] + k, nodes[i, cur, 1] - 1):
                    dest_on_ground = True
                    break
            px = x[i] + 0.5
            py = y[i] + 0.5
            reached_x = _reached(px, pcx, cx, max_error)
            reached_y = _reached(py, pcy, cy, max_error)
            off = abs(px - cx)
            if (
                reached_x and max_error < off < 3.0 * max_error
                and (prev_inputs[i] & (GO_LEFT | GO_RIGHT)) == 0
            ):
                x[i] = cx - 0.5
                px = cx
            if dest_on_ground and not on_ground[i]:
                reached_y = False
            keys = 0
            if py - cy > max_error and on_one_way[i]:
                keys |= GO_DOWN
            if reached_x and reached_y:
                prev_id = cur
                current[i] = cur + 1
                if cur + 1 >= length:
                    current[i] = -1
                    state[i] = NONE
                    break
                if on_ground[i]:
                    jump_frames[i] = jump_frames_for_node(tiles, nodes[i], length, prev_id, True, tables[i])
                continue
            elif not reached_x:
                if cx - px > max_error:
                    keys |= GO_RIGHT
                elif px - cx > max_error:
                    keys |= GO_LEFT
            elif not reached_y and has_next and not dest_on_ground:
                tx = int(math.floor(px))
                ty = int(math.floor(py))
                nnx = nodes[i, cur + 1, 0]
                ccx = nodes[i, cur, 0]
                if nnx != ccx:
                    checked = tx + w if nnx > ccx else tx - 1
                    if not any_solid_in_stripe(tiles, checked, ty, nodes[i, cur + 1, 1]):
                        if nx - px > max_error:
                            keys |= GO_RIGHT
                        elif px - nx > max_error:
                            keys |= GO_LEFT
                        if _reached(px, cx, nx, max_error) and _reached(py, cy, ny, max_error):
                            current[i] = cur + 1
                            continue
            if jump_frames[i] > 0 and (
                not on_ground[i] or (reached_x and not dest_on_ground) or (on_ground[i] and dest_on_ground)
            ):
                keys |= JUMP
                if not on_ground[i]:
                    jump_frames[i] -= 1
            inputs[i] = keys
            if x[i] == prev_x[i] and y[i] == prev_y[i]:
                stuck_frames[i] += 1
                if stuck_frames[i] > MAX_STUCK_FRAMES:
                    replan[i] = True
            else:
                stuck_frames[i] = 0
            break
