"""Random platformer levels for the platformer tests (numpy RNG, so a failing seed replays)."""

from __future__ import annotations

import numpy as np

from ecs_nav.platformer.level import EMPTY, ONE_WAY, SOLID, TileLevel


def random_level(seed: int, width: int = 20, height: int = 12, solid: float = 0.22, one_way: float = 0.06):
    """A level with a solid floor row, scattered solid tiles and short one-way platforms."""
    rng = np.random.default_rng(seed)
    tiles = np.full((height, width), EMPTY, np.uint8)
    tiles[0, :] = SOLID
    draw = rng.random((height, width))
    tiles[1:][draw[1:] < solid] = SOLID
    tiles[1:][(draw[1:] >= solid) & (draw[1:] < solid + one_way)] = ONE_WAY
    return TileLevel(tiles)


def standing_cells(fits: np.ndarray, ground: np.ndarray, tiles: np.ndarray | None = None) -> np.ndarray:
    """``(k, 2)`` (x, y) of the cells a character fits in with ground under it; given the
    ``tiles``, not cells inside a one-way tile (a clicked destination is lowered onto the top of
    the platform, never into it)."""
    ok = fits & ground
    if tiles is not None:
        ok &= tiles != ONE_WAY
    ys, xs = np.nonzero(ok)
    return np.stack([xs, ys], axis=1)
