"""The viewer's controls in a side view (platformer), apart from pyglet: keys → input bits,
clicks → selection, goals and tile toggles. The viewer passes its key constants and calls these.

- W A S D: the Player's keys, as in the series' demo: A GoLeft, D GoRight, W Jump (held
  longer, higher), S GoDown (drop through a one-way platform);
- click a character: select it (Shift: add or remove it);
- click the level: send the selected bots there (a PathRequest to that point; the Pathfind
  stage lowers it onto the ground);
- right-click a tile: make it solid, or empty if it is solid; the bots re-plan.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ecs_nav.core.components import PathRequest
from ecs_nav.platformer.physics import GO_DOWN, GO_LEFT, GO_RIGHT, JUMP
from ecs_nav.platformer.world import Bot, PlatformerMap

KEY_INPUTS = (("A", GO_LEFT), ("D", GO_RIGHT), ("W", JUMP), ("S", GO_DOWN))
"""Viewer key name → the input bit it holds for the Player."""


def held_inputs(held: set[int], key: Any) -> int:
    """The input mask for the held key symbols (``key``: pyglet's ``window.key`` module)."""
    return sum(bit for name, bit in KEY_INPUTS if getattr(key, name) in held)


def selected_rows(side: PlatformerMap, selected: list[int]) -> np.ndarray:
    """Rows of the selected entities among the side view's characters (-1 for others)."""
    return np.asarray([side.row_of(e) for e in selected], dtype=np.int64)


def click(world, side: PlatformerMap, point, left: bool, add: bool, selected: list[int]) -> tuple[list[int], str]:
    """A click at ``point`` (tiles): returns the new selection and a status line ("" if none).
    Left on a character selects it (``add``: toggles it in the selection); left elsewhere sends
    the selected bots there; right toggles the tile under the cursor."""
    x, y = float(point[0]), float(point[1])
    if left:
        entity = side.pick((x, y))
        if entity >= 0:
            if not add:
                return [entity], ""
            return ([e for e in selected if e != entity] if entity in selected else [*selected, entity]), ""
        bots = [e for e in selected if world.exists(e) and world.try_get(e, Bot) is not None]
        for bot in bots:
            world.add_component(bot, PathRequest(goal=(x, y)))
        return selected, "" if bots else "select a bot first (click it), then click where it should go"
    tx, ty = math.floor(x), math.floor(y)
    if not (0 <= tx < side.level.width and 0 <= ty < side.level.height):
        return selected, ""
    try:
        side.toggle_tile(tx, ty)
    except ValueError as exc:
        return selected, str(exc)
    return selected, ""
