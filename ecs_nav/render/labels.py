"""Labels near agents, laid out in screen pixels: no pyglet, no GL, testable anywhere.

Each group (the agents that share a scene ``name``, see ``draw_colours.agent_groups``) gets
one label in its colour: a single agent's label names it and the behaviours it runs
("hunter: pursuit"; path following says where to: "npc: follow path to player", "guard:
patrol path"), a crowd's names it, counts it and says what its members run ("flock ×30:
flocking"), anchored at the member nearest the crowd's mean. Labels are placed in group
order by ``ecs_nav.render.label_layout``: the nearest place round the anchor where the label
covers no wall, no agent and no other label, with a leader line back to the agent when that
place is not beside it; one with no place in the window (or past LABEL_LIMIT) is left out.
The side view places its labels with :func:`place_labels` (beside the character, stacked).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.motion.steering import BEHAVIOURS
from ecs_nav.render.label_layout import AgentLabel, WantedLabel, backing_box, layout_labels, screen_clutter

LABEL_FONT_SIZE = 10
"""Points: the labels' font size."""

LABEL_CHAR_PIXELS = 8.0
"""Pixels per character of the monospaced label font at LABEL_FONT_SIZE (for the overlap test)."""

LABEL_HEIGHT_PIXELS = 14.0
"""Pixels from a label's baseline box bottom to its top (one line of LABEL_FONT_SIZE)."""

LABEL_LIMIT = 40
"""At most this many labels at once."""

LABEL_BEHAVIOURS = 2
"""A label lists at most this many behaviours (the largest weights)."""

SUPPORTING_BEHAVIOURS = frozenset({"wall_avoidance", "obstacle_avoidance", "separation"})
"""Behaviours a label leaves out when the agent runs another one (they keep it clear of walls
and others; the other says what it is doing)."""


def label_width(text: str) -> float:
    """Pixels a label of ``text`` takes (an estimate: LABEL_CHAR_PIXELS a character)."""
    return LABEL_CHAR_PIXELS * len(text)


def label_box(label: AgentLabel) -> tuple[float, float, float, float]:
    """The pixel box (x0, y0, x1, y1) ``label`` covers, its dark backing included."""
    return backing_box(label.x, label.y, label_width(label.text), LABEL_HEIGHT_PIXELS)


def behaviour_names(weights: np.ndarray, limit: int = LABEL_BEHAVIOURS, main_only: bool = False) -> list[str]:
    """The behaviours with a non-zero weight in one table row's ``weights``, largest weight
    first, at most ``limit``, in words ("wall avoidance"). ``main_only`` leaves out the
    SUPPORTING_BEHAVIOURS unless there is nothing else."""
    weights = np.asarray(weights, dtype=np.float64).reshape(-1)
    on = [BEHAVIOURS[i] for i in np.argsort(-weights, kind="stable") if weights[i] > 0]
    main = [b for b in on if b not in SUPPORTING_BEHAVIOURS]
    if main_only and main:
        on = main
    return [b.replace("_", " ") for b in on[:limit]]


def path_words(world: Any, entity: int) -> str:
    """"follow path" said with where it leads: "follow path to player" (a target entity's
    name), "to goal", "to nearest goal" (several), "to zone" ("follow field ..." for a flow-field
    request); for a path given without a request, "patrol path" or "loop path" by its mode."""
    from ecs_nav.core.components import Name, Path, PathRequest

    request = world.try_get(entity, PathRequest)
    if request is not None:
        verb = "follow field" if request.method == "flow_field" else "follow path"
        if request.target is not None:
            name = world.try_get(request.target, Name) if world.exists(request.target) else None
            return f"{verb} to {name.value if name is not None else f'#{request.target}'}"
        if request.goal is not None:
            return f"{verb} to goal"
        return f"{verb} to nearest goal" if request.goals is not None else f"{verb} to zone"
    path = world.try_get(entity, Path)
    if path is not None and path.mode in ("patrol", "loop"):
        return f"{path.mode} path"
    return "follow path"


def agent_labels(world: Any, camera: Any, groups: Any, left: float = 0.0, avoid: Any = ()) -> list[AgentLabel]:
    """The labels to draw for ``world`` seen through ``camera`` (``groups``: its
    ``AgentGroups``); ``left`` pixels at the left edge are covered by the side panel;
    ``avoid``: pixel boxes (x0, y0, x1, y1) of other things no label may cover (the scale bar)."""
    table = world.table
    if not len(groups.names) or table.n == 0:
        return []
    pos = table.live("pos")
    radius = table.live("radius")
    wanted: list[WantedLabel] = []
    for group, name in enumerate(groups.names):
        rows = np.flatnonzero(groups.row_group == group)
        if not len(rows):
            continue
        if len(rows) == 1:
            row = int(rows[0])
            text = name
        else:
            centre = pos[rows].mean(axis=0)
            row = int(rows[np.argmin(np.hypot(*(pos[rows] - centre).T))])
            text = f"{name} ×{len(rows)}"
        doing = behaviour_names(table.weights[row], main_only=True)
        if "follow path" in doing:
            doing[doing.index("follow path")] = path_words(world, int(table.entity[row]))
        texts = [text + f": {', '.join(doing)}"] if doing else []
        texts.append(text)  # (the name alone where the whole label finds no clear place)
        wanted.append(WantedLabel(tuple((t, label_width(t)) for t in texts), (float(pos[row, 0]), float(pos[row, 1])),
                                  float(radius[row]), tuple(float(c) for c in groups.colours[group]),
                                  LABEL_HEIGHT_PIXELS, (pos[rows], radius[rows]) if len(rows) > 1 else None))
    return layout_labels(wanted, camera, screen_clutter(world, camera), left, avoid, limit=LABEL_LIMIT)


def place_labels(wanted: list, camera: Any, left: float = 0.0, stack: int = 0,
                 avoid: Any = ()) -> list[AgentLabel]:
    """Lay out ``wanted`` labels, each ``(text, (x, y) world point, radius in world units,
    colour)``, in order: right of the point (left of it at the window's right edge), clear of
    the disc of ``radius``; where that overlaps a label placed before (or one of the ``avoid``
    pixel boxes ``(x0, y0, x1, y1)``: things a label must not hide), up to ``stack`` lines
    above it, then as many below; a label with no free place, or that would leave the window
    or fall under the ``left`` pixels of the side panel, is left out; at most LABEL_LIMIT."""
    placed: list[tuple[float, float, float, float]] = [tuple(box) for box in avoid]
    labels: list[AgentLabel] = []
    shifts = [0] + list(range(1, stack + 1)) + [-k for k in range(1, stack + 1)]
    for text, point, radius, colour in wanted:
        x, y = camera.world_to_screen(point)[0]
        offset = max(float(radius) * camera.scale, 3.0) + 3.0
        x0, y_base = x + offset, y + offset * 0.5
        if x0 + label_width(text) > camera.width:  # no room on the right: put it on the left
            x0 = x - offset - label_width(text)
        y_base = min(y_base, camera.height - LABEL_HEIGHT_PIXELS)  # an agent at the top edge: label below it
        for shift in shifts:
            y0 = y_base + shift * LABEL_HEIGHT_PIXELS
            box = (x0, y0, x0 + label_width(text), y0 + LABEL_HEIGHT_PIXELS)
            if box[0] < left or box[2] > camera.width or box[1] < 0 or box[3] > camera.height:
                continue
            if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                continue
            placed.append(box)
            labels.append(AgentLabel(text, x0, y0, colour))
            break
        if len(labels) >= LABEL_LIMIT:
            break
    return labels
