"""Colours the viewer gives to data: a perceptually uniform ramp for distances and a colour per
agent group. No pyglet, no GL, no matplotlib.

- :func:`viridis`: matplotlib's viridis colour map as a 16-entry lookup table, interpolated
  linearly (the ramp's lightness rises steadily, so near and far read the same in grey).
- :func:`agent_groups`: every table row's group (the entities that share a scene ``name``: one
  agent, or a crowd) and its colour from :data:`GROUP_COLOURS`, given out in the order the
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

GROUP_COLOURS: tuple[tuple[float, float, float, float], ...] = (
    (0.95, 0.38, 0.22, 1.0),  # orange-red (seed 000's NPC)
    (0.35, 0.85, 0.40, 1.0),  # green
    (0.98, 0.80, 0.18, 1.0),  # yellow
    (0.80, 0.45, 1.00, 1.0),  # violet
    (0.25, 0.88, 0.92, 1.0),  # cyan
    (1.00, 0.55, 0.78, 1.0),  # pink
    (0.70, 0.92, 0.25, 1.0),  # lime
    (1.00, 0.68, 0.30, 1.0),  # amber
)
"""Colours of named groups, in the order the groups appear; after the last they repeat. The
player keeps its own blue (``draw.PALETTE["player"]``), unnamed agents ``PALETTE["agent"]``."""


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
    colours = np.array([GROUP_COLOURS[i % len(GROUP_COLOURS)] for i in range(len(names))],
                       dtype=np.float64).reshape(-1, 4)
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
