"""Colours the viewer gives to data: a perceptually uniform ramp for distances and a colour per
agent group. No pyglet, no GL, no matplotlib.

- :func:`viridis`: matplotlib's viridis colour map as a 16-entry lookup table, interpolated
  linearly (the ramp's lightness rises steadily, so near and far read the same in grey).
- :func:`group_colours`: as many group colours as asked for, each as far from the ones before
  it as it can be in OKLab (a perceptually uniform space: equal distances look equally
  different), within a band of lightness and chroma that reads on the dark floor and in a
  label: farthest-point sampling of the sRGB colours in that band, starting from seed 000's
  red-orange and kept away from the colours the viewer uses for other things (walls, the
  player, velocity lines, the floor). Any prefix is spread as well as the greedy choice
  allows: the first 8 are at least 0.15 apart in OKLab (CIE76 ΔE*ab 38), the first 24 at least
  0.09 (ΔE*ab 14), where 0.02 is about the least difference one sees.
- :func:`agent_groups`: every table row's group (the entities that share a scene ``name``: one
  agent, or a crowd) and its colour from :func:`group_colours`, given out in the order the
  groups' first entities were spawned, so a scene always gets the same colours. A path, its
  steering line, its label and the agent's disc all use the row's colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

VIRIDIS = np.array([
    [0.267, 0.005, 0.329], [0.283, 0.141, 0.458], [0.254, 0.265, 0.530], [0.207, 0.372, 0.553],
    [0.164, 0.471, 0.558], [0.128, 0.567, 0.551], [0.135, 0.659, 0.518], [0.267, 0.749, 0.441],
    [0.478, 0.821, 0.318], [0.741, 0.873, 0.150], [0.993, 0.906, 0.144],
])
"""viridis sampled at 11 evenly spaced points from 0 (dark violet) to 1 (yellow)."""

HEAT_ALPHA = 0.75
"""Opacity of the heat map over the floor (the map's walls stay readable under it)."""

GROUP_LIGHTNESS = (0.68, 0.88)
"""OKLab lightness range of group colours: light enough on the dark floor and label backing,
dark enough to tell from the walls' beige and the velocity lines' white."""

GROUP_MIN_CHROMA = 0.09
"""OKLab chroma a group colour has at least (greys are the map's)."""

FIRST_GROUP_COLOUR = (0.95, 0.38, 0.22)
"""The first group's colour: seed 000's NPC red-orange."""

RESERVED_COLOURS = ((0.88, 0.83, 0.72), (0.25, 0.55, 1.0), (0.92, 0.92, 0.92), (0.20, 0.22, 0.25))
"""Colours group colours keep away from: the tallest walls, the player, velocity lines, the
floor (``draw.PALETTE`` "high", "player", "velocity", "floor")."""

CANDIDATE_LEVELS = 21
"""Group colours are chosen from the sRGB grid of this many levels a channel (0, 0.05, ... 1)
that lies in the lightness and chroma band: 2,7xx colours. Past that many groups, colours repeat."""


def srgb_to_oklab(rgb: Any) -> np.ndarray:
    """(..., 3) sRGB colours in 0..1 → (..., 3) OKLab (L, a, b) (Björn Ottosson's 2020
    definition: L 0 black .. 1 white; distances approximate perceived differences)."""
    c = np.asarray(rgb, dtype=np.float64)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lms = np.cbrt(linear @ np.array([[0.4122214708, 0.5363325363, 0.0514459929],
                                     [0.2119034982, 0.6806995451, 0.1073969566],
                                     [0.0883024619, 0.2817188376, 0.6299787005]]).T)
    return lms @ np.array([[0.2104542553, 0.7936177850, -0.0040720468],
                           [1.9779984951, -2.4285922050, 0.4505937099],
                           [0.0259040371, 0.7827717662, -0.8086757660]]).T


class _GroupPalette:
    """The farthest-point sequence of group colours, extended on demand (deterministic)."""

    def __init__(self) -> None:
        levels = np.linspace(0.0, 1.0, CANDIDATE_LEVELS)
        rgb = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
        lab = srgb_to_oklab(rgb)
        keep = ((lab[:, 0] >= GROUP_LIGHTNESS[0]) & (lab[:, 0] <= GROUP_LIGHTNESS[1])
                & (np.hypot(lab[:, 1], lab[:, 2]) >= GROUP_MIN_CHROMA))
        self.rgb, self.lab = rgb[keep], lab[keep]
        first = np.asarray(FIRST_GROUP_COLOUR)
        self.chosen = [first]
        taken = srgb_to_oklab(np.vstack([RESERVED_COLOURS, first]))
        self.nearest = np.min(np.linalg.norm(self.lab[:, None, :] - taken[None, :, :], axis=2), axis=1)

    def colours(self, n: int) -> np.ndarray:
        while len(self.chosen) < n:
            i = int(np.argmax(self.nearest))  # the candidate farthest from every colour taken
            if self.nearest[i] <= 0.0:  # every candidate taken: repeat the sequence
                self.chosen.append(self.chosen[len(self.chosen) % (len(self.rgb) + 1)])
                continue
            self.chosen.append(self.rgb[i])
            self.nearest = np.minimum(self.nearest, np.linalg.norm(self.lab - self.lab[i], axis=1))
        return np.array(self.chosen[:n], dtype=np.float64).reshape(-1, 3)


_palette: _GroupPalette | None = None


def group_colours(n: int) -> np.ndarray:
    """(n, 4) RGBA colours (0..1, opaque) for ``n`` agent groups, the same for the same index
    whatever ``n`` (see the module docstring)."""
    global _palette
    if _palette is None:
        _palette = _GroupPalette()
    rgb = _palette.colours(int(n))
    return np.concatenate([rgb, np.ones((len(rgb), 1))], axis=1)


GROUP_COLOURS: tuple[tuple[float, float, float, float], ...] = tuple(
    tuple(float(v) for v in c) for c in group_colours(24))
"""The first 24 group colours (:func:`group_colours` gives more). The player keeps its own
blue (``draw.PALETTE["player"]``), unnamed agents ``PALETTE["agent"]``."""


def viridis(t: Any, alpha: float = HEAT_ALPHA) -> np.ndarray:
    """``t`` in 0..1 (k,) → (k, 4) viridis colours with ``alpha`` (values outside are clamped)."""
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0) * (len(VIRIDIS) - 1)
    i = np.minimum(t.astype(np.int64), len(VIRIDIS) - 2)
    f = (t - i)[..., None]
    rgb = VIRIDIS[i] * (1 - f) + VIRIDIS[i + 1] * f
    return np.concatenate([rgb, np.full(rgb.shape[:-1] + (1,), float(alpha))], axis=-1)


@dataclass
class AgentGroups:
    """The groups of a World's table rows.

    Attributes:
        names: (g,) group names, in the order their first entity was spawned.
        sizes: (g,) how many live table rows each group has.
        colours: (g, 4) each group's colour.
        row_group: (n,) each table row's group index, -1 for a row without a name.
        row_colour: (n, 4) each row's colour: its group's, the player's blue, PALETTE "agent"
            for an unnamed agent, PALETTE "body" for a row that is not an Agent.
    """

    names: list[str]
    sizes: np.ndarray
    colours: np.ndarray
    row_group: np.ndarray
    row_colour: np.ndarray


def agent_groups(world: Any, palette: dict, player_rows: Any = ()) -> AgentGroups:
    """Group ``world``'s table rows by their entity's Name (``palette``: ``draw.PALETTE``, for
    the player, unnamed-agent and body colours). Deterministic: groups are numbered by their
    smallest entity id."""
    from ecs_nav.core.components import Name

    table = world.table
    n = table.n
    named = sorted((int(e), c[0].value) for e, c in world.query(Name))
    order: dict[str, int] = {}
    for _, name in named:
        order.setdefault(name, len(order))
    names = list(order)
    row_group = np.full(n, -1, np.int64)
    if named:
        ids = np.fromiter((e for e, _ in named), np.int64, len(named))
        groups = np.fromiter((order[name] for _, name in named), np.int64, len(named))
        rows = table.rows_of(ids)
        ok = (rows >= 0) & (rows < n)
        row_group[rows[ok]] = groups[ok]
    colours = group_colours(len(names))
    row_colour = np.where(table.live("is_agent")[:, None], palette["agent"], palette["body"]).astype(np.float64)
    has = row_group >= 0
    row_colour[has] = colours[row_group[has]]
    player_rows = np.asarray(player_rows, dtype=np.int64).reshape(-1)
    player_rows = player_rows[(player_rows >= 0) & (player_rows < n)]
    row_colour[player_rows] = palette["player"]
    for group in np.unique(row_group[player_rows]):  # a player's group is drawn (and listed) in its blue
        if group >= 0:
            colours[group] = palette["player"]
    sizes = np.bincount(row_group[has], minlength=len(names)) if len(names) else np.zeros(0, np.int64)
    return AgentGroups(names, sizes, colours, row_group, row_colour)
