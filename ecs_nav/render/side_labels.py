"""What the viewer says about a side view's characters (platformer): their colours, labels,
legend and the selected character's state. No pyglet, no GL.

The same treatment as a top-down scene: every named group of characters (a scene ``name``) has
one colour for its box, its path, its goal rings, its label and its legend line; the player is
blue. Bots take :data:`SIDE_BOT_COLOURS` (five colours without those a side view uses for
jumps and one-way platforms). A label says who a character is and what it is doing: "bot-left: chasing
player", "bot-high: reached player", "player: W A S D".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ecs_nav.platformer.bot import MOVE_TO
from ecs_nav.platformer.physics import GO_DOWN, GO_LEFT, GO_RIGHT, JUMP
from ecs_nav.render.labels import AgentLabel, place_labels
from ecs_nav.render.platformer import SIDE_PALETTE

SIDE_BOT_COLOURS = (
    (0.95, 0.38, 0.22, 1.0),  # orange-red
    (0.35, 0.85, 0.40, 1.0),  # green
    (0.80, 0.45, 1.00, 1.0),  # violet
    (1.00, 0.55, 0.78, 1.0),  # pink
    (0.70, 0.92, 0.25, 1.0),  # lime
)
"""Bot groups' colours in order: no yellow or amber (a side view's jumps are yellow) and no
cyan (its one-way platforms are light blue); after the last they repeat (a level has a few bots)."""

SIDE_LABEL_STACK = 2
"""A side-view label that would overlap another moves up to this many lines up (then down):
characters meet (bots catch the player), and a few characters never crowd the window."""

KEY_NAMES = ((GO_LEFT, "A"), (GO_RIGHT, "D"), (JUMP, "W"), (GO_DOWN, "S"))


@dataclass
class SideGroups:
    """The groups of a side view's characters.

    Attributes:
        names: (g,) group names, in entity order of their first member.
        colours: (g, 4) each group's colour.
        row_colour: (n, 4) each character row's colour (unnamed: "bot" or "player").
        row_group: (n,) each row's group, -1 without a name.
    """

    names: list[str]
    colours: np.ndarray
    row_colour: np.ndarray
    row_group: np.ndarray


def character_groups(world: Any, side: Any) -> SideGroups:
    """Group ``side``'s character rows by their entity's Name; a group holding a non-bot (the
    player) is blue, the bot groups take SIDE_BOT_COLOURS in order. Deterministic."""
    from ecs_nav.core.components import Name

    c = side.characters
    n = c.count
    row_colour = np.where(c.is_bot[:n, None], SIDE_PALETTE["bot"], SIDE_PALETTE["player"]).astype(np.float64)
    row_group = np.full(n, -1, np.int64)
    order: dict[str, int] = {}
    for row in np.argsort(side.entity[:n], kind="stable"):
        name = world.try_get(int(side.entity[row]), Name)
        if name is not None:
            row_group[row] = order.setdefault(name.value, len(order))
    names = list(order)
    colours = np.zeros((len(names), 4))
    bots = 0
    for group in range(len(names)):
        members = row_group == group
        if np.all(c.is_bot[:n][members]):
            colours[group] = SIDE_BOT_COLOURS[bots % len(SIDE_BOT_COLOURS)]
            bots += 1
        else:
            colours[group] = SIDE_PALETTE["player"]
    has = row_group >= 0
    row_colour[has] = colours[row_group[has]]
    return SideGroups(names, colours, row_colour, row_group)


def _name(world: Any, entity: int) -> str:
    from ecs_nav.core.components import Name

    name = world.try_get(int(entity), Name) if world.exists(int(entity)) else None
    return name.value if name is not None else f"#{int(entity)}"


def doing(world: Any, side: Any, row: int) -> str:
    """What the character of ``row`` is doing, in a few words: the player "W A S D"; a bot
    "chasing player" / "going to (x, y)" (a point goal, in tiles) while it follows a path,
    "reached ..." once there, "no path to ..." after a failed plan, else "waiting"."""
    from ecs_nav.core.components import PathRequest

    c = side.characters
    if not c.is_bot[row]:
        return "W A S D"
    request = world.try_get(int(side.entity[row]), PathRequest)
    if request is None:
        return "waiting"
    if request.target is not None:
        goal, verb = _name(world, request.target), "chasing"
    elif request.goal is not None:
        goal, verb = f"({request.goal[0]:.0f}, {request.goal[1]:.0f})", "going to"
    else:
        return "waiting"
    if side.failed[row]:
        return f"no path to {goal}"
    if c.state[row] == MOVE_TO:
        return f"{verb} {goal}"
    if side.arrived[row]:
        return f"reached {goal}"
    return "waiting"


def side_labels(world: Any, side: Any, camera: Any, groups: SideGroups, left: float = 0.0) -> list[AgentLabel]:
    """A label beside each named character, in its colour: "name: what it does" (see
    :func:`doing`), laid out like the top-down labels (``draw_labels.place_labels``), never
    over a character's box.
    Characters within a tile of each other that do the same share one label ("bot-left +
    bot-high: reached player"), so bots that caught the player are not hidden under its label."""
    c = side.characters
    wanted: list[list] = []  # [names, doing, centre, radius, colour]
    for row in np.argsort(side.entity[: c.count], kind="stable"):
        group = int(groups.row_group[row])
        if group < 0:
            continue
        centre = (float(c.x[row] + c.width[row] / 2), float(c.y[row] + c.height[row] / 2))
        what = doing(world, side, int(row))
        near = next((w for w in wanted if w[1] == what and np.hypot(w[2][0] - centre[0], w[2][1] - centre[1]) < 1.0),
                    None)
        if near is not None:
            near[0].append(groups.names[group])
            continue
        wanted.append([[groups.names[group]], what, centre, float(max(c.width[row], c.height[row]) / 2),
                       tuple(float(v) for v in groups.colours[group])])
    n = c.count
    low = np.stack([c.x[:n], c.y[:n]], axis=1)
    high = low + np.stack([c.width[:n], c.height[:n]], axis=1)
    corners = np.concatenate([camera.world_to_screen(low), camera.world_to_screen(high)], axis=1)
    boxes = corners + (-2.0, -2.0, 2.0, 2.0)  # every character's box: no label hides one
    return place_labels([(f"{' + '.join(names)}: {what}", centre, radius, colour)
                         for names, what, centre, radius, colour in wanted], camera, left,
                        stack=SIDE_LABEL_STACK, avoid=boxes)


SIDE_LEGEND = (("solid", "solid tile"), ("one_way", "one-way platform"), ("jump", "path: a jump"))
"""A side view's legend lines of the level: SIDE_PALETTE key, words."""


def side_legend(groups: SideGroups | None) -> list[tuple[str, tuple | None]]:
    """The side view's legend as (words, swatch) pairs: the level's colours, the paths and goal
    rings, then each group with its colour (or "bot" and "player" when none is named)."""
    lines: list[tuple[str, tuple | None]] = [(words, SIDE_PALETTE[key]) for key, words in SIDE_LEGEND]
    lines.append(("paths, goal rings: bot colour", None))
    if groups is None or not groups.names:
        return lines + [("bot", SIDE_PALETTE["bot"]), ("player", SIDE_PALETTE["player"])]
    return lines + [(name, tuple(float(v) for v in colour)) for name, colour in zip(groups.names, groups.colours)]


def character_state_lines(world: Any, side: Any, entity: int) -> list[str]:
    """The selected character's state: name, what it does, position (tiles), speed, ground
    contact, its path (node being walked to of how many, jumps ahead), goal tile, keys held."""
    row = side.row_of(int(entity))
    if row < 0:
        return []
    c = side.characters
    lines = [f"selected: {_name(world, entity)} #{int(entity)}", f"  {doing(world, side, row)}",
             f"  at ({c.x[row]:.1f}, {c.y[row]:.1f}) tiles, " + ("on ground" if c.on_ground[row] else "in the air"),
             f"  speed {float(np.hypot(c.vx[row], c.vy[row])):5.2f} tiles/s"]
    if c.is_bot[row]:
        if c.state[row] == MOVE_TO and c.path_len[row] > 0:
            k, i = int(c.path_len[row]), int(c.current[row])
            rises = np.diff(c.nodes[row, max(i - 1, 0):k, 1]) > 0  # legs ahead that go up
            jumps = int(np.count_nonzero(rises & ~np.concatenate([[False], rises[:-1]])))  # a run of rises: one jump
            lines.append(f"  node {i + 1}/{k}, {jumps} jump{'s' if jumps != 1 else ''} ahead")
        else:
            lines.append("  no path")
        if np.all(side.goal[row] >= 0):
            lines.append(f"  goal tile ({side.goal[row, 0]}, {side.goal[row, 1]})")
    keys = " ".join(name for bit, name in KEY_NAMES if c.inputs[row] & bit)
    lines.append(f"  keys {keys or '-'}")
    return lines
