"""The viewer's side panel as lines of text, each with an optional colour swatch: no pyglet.

The panel is a strip at the left edge of the window (:func:`side_panel_width` pixels; the
camera fits the map into the rest, so it never covers the map). From the top:

- the HUD (:func:`hud_lines`): tick, simulated time, agents, frames per second, time per system;
- the events so far (:func:`event_lines`, from ``world.event_counts``);
- the legend (:func:`legend_lines`): each layer that is on, with its colour, and each agent
  group with its colour;
- the selected agent's state (:func:`agent_state_lines`): name, speed, path status, current
  waypoint, distance left, behaviours (with each one's force when the caller has them) and
  the steering force.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecs_nav.core.events import event_count_table
from ecs_nav.core.resource_names import AVOIDANCE_TRACE, SEARCH_TRACE
from ecs_nav.platformer.world import PLATFORMER
from ecs_nav.render.areas import area_colours
from ecs_nav.render.colours import viridis
from ecs_nav.render.draw import PALETTE
from ecs_nav.render.floors import has_floors
from ecs_nav.render.labels import behaviour_names
from ecs_nav.render.side_labels import SideGroups, character_state_lines, side_legend

SIDE_PANEL_PIXELS = 270
"""The side panel's width in pixels (at most a third of the window)."""

PANEL_FONT_SIZE = 9
"""Points: the side panel's font size."""

PANEL_MIN_FONT_SIZE = 6
"""Points: the smallest font the panel shrinks to so that all its lines (every group of the
legend among them) fit the window's height; past that the last lines are cut."""

PANEL_LINE_PIXELS_PER_POINT = 1.45
"""Pixels between the panel's lines per point of font size (DejaVu Sans Mono: 13 px at 9 pt)."""

LEGEND: dict[str, tuple[str, tuple[float, float, float, float] | None]] = {
    "map": ("map (lighter: taller)", PALETTE["high"]),
    "heat_map": ("heat map: distance near..far", tuple(viridis(0.6, 1.0))),
    "graph_edges": ("graph edges", PALETTE["graph_edge"][:3] + (0.9,)),
    "graph_nodes": ("graph nodes", PALETTE["graph_node"]),
    "flow_field": ("flow field", PALETTE["flow_arrow"]),
    "search": ("search: nodes expanded", PALETTE["search"]),
    "avoidance": ("ORCA: agents' half-planes", PALETTE["orca_agent"]),
    "paths": ("paths, goal rings: agent colour", None),
    "steer_targets": ("steering targets: same", None),
    "velocity": ("velocity (0.5 s ahead)", PALETTE["velocity"]),
}
"""The legend's line for each layer that has one: its words and its swatch (None: drawn in
each agent's colour, listed under the groups)."""

GRAPH_KIND_LEGEND = (("  one-way drop (arrow)", PALETTE["graph_drop"]), ("  off-mesh link", PALETTE["graph_link"]))
AVOIDANCE_LEGEND = (("  walls' half-planes", PALETTE["orca_wall"]),
                    ("  preferred velocity (1 s)", PALETTE["orca_preferred"]),
                    ("  chosen velocity (1 s)", PALETTE["orca_chosen"]))
"""The avoidance layer's other colours, under its legend line."""

@dataclass(frozen=True)
class PanelLine:
    """One line of the side panel and the colour of the swatch before it (None: no swatch)."""

    text: str
    swatch: tuple[float, float, float, float] | None = None


def panel_font_size(lines: int, height: float, pixels_per_point: float = PANEL_LINE_PIXELS_PER_POINT) -> int:
    """The panel's font size (points) for ``lines`` lines in ``height`` pixels: PANEL_FONT_SIZE
    when they fit, else the largest size at which they do, at least PANEL_MIN_FONT_SIZE."""
    fits = int(height / (max(lines, 1) * pixels_per_point))
    return int(np.clip(fits, PANEL_MIN_FONT_SIZE, PANEL_FONT_SIZE))


def side_panel_width(window_width: int) -> int:
    """Pixels of the side panel in a window ``window_width`` wide."""
    return int(min(SIDE_PANEL_PIXELS, window_width // 3))


def hud_lines(world: Any, fps: float | None = None, ms_per_tick: dict[str, float] | None = None,
              paused: bool = False, speed: float = 1.0, selected: int = 0) -> list[str]:
    """The HUD text: tick, simulated time, agent count, frames per second and milliseconds per
    tick of each system (``ms_per_tick``; default: the World's average since it started)."""
    agents = int(np.count_nonzero(world.table.live("is_agent")))
    lines = [f"tick {world.tick}   time {world.time:.2f} s", f"agents {agents}"]
    side = getattr(world, "resources", {}).get(PLATFORMER)
    if side is not None:
        lines[1] = f"characters {side.count}"
    if selected:
        lines[1] += f"   selected {selected}"
    state = "paused" if paused else f"speed x{speed:g}"
    if fps is not None:
        lines.append(f"fps {fps:5.1f}   {state}")
    elif paused or speed != 1.0:  # a capture: no clock to report
        lines.append(state)
    if ms_per_tick is None:
        ticks = max(world.tick, 1)
        ms_per_tick = {s.name: world.timings_ms[s.name] / ticks for s in world.systems}
    for name, ms in ms_per_tick.items():
        lines.append(f"{name.removesuffix('System'):<12}{ms:8.3f} ms/tick")
    return lines


def event_lines(world: Any) -> list[str]:
    """``events`` and one line per event type, as the run summary lists them
    (``ecs_nav.core.events.event_count_table``: the five built-in ones always, others once counted)."""
    counts = event_count_table(dict(getattr(world, "event_counts", {})))
    return ["events"] + [f"  {name:<16}{count:>7}" for name, count in counts.items()]


def legend_lines(layers: Any, groups: Any = None, graph: Any = None, trace: Any = None,
                 avoidance: Any = None, areas: Any = None, floor: str | None = None) -> list[PanelLine]:
    """``legend``, then a line per layer that is on and has a LEGEND entry (under "map", each
    area of ``areas``, a NavAreas, with its cost and tint; the graph's edge
    kinds when its edges are on and it has one-way edges; under "search", whose search it
    shows: ``trace``, an ``ecs_nav.nav.search_trace.SearchTrace``, or a hint to select an agent;
    under "avoidance", its other colours and whose choice it shows: ``avoidance``, an
    ``ecs_nav.motion.avoidance_trace.AvoidanceTrace``, or the same hint),
    then every agent group with its colour and size (the renderer sets the panel's font smaller
    when its lines would not fit the window's height, see ``panel_font_size``). On a map of
    several floors, ``floor`` names the floor drawn in full ("the selected agent's", "the top")
    in a line under the header saying the others are faded (``ecs_nav.render.floors``)."""
    lines = [PanelLine("legend")]
    if floor is not None:
        lines.append(PanelLine(f"faded: off {floor} floor"))
    for layer, (words, swatch) in LEGEND.items():
        if layer in layers:
            lines.append(PanelLine(f"{words}", swatch))
            if layer == "map" and areas is not None and areas.areas:
                tints = area_colours(areas)
                for name in areas.names:  # one line a name (several shapes may share it)
                    i = next(k for k, a in enumerate(areas.areas) if a.name == name)
                    lines.append(PanelLine(f"  area {name} ×{areas.areas[i].cost:g}", (*tints[i, :3], 1.0)))
            if layer == "search":
                lines.append(PanelLine("  " + (trace.describe() if trace is not None and trace.entity >= 0
                                               else "select an agent to see its")))
            if layer == "avoidance":
                lines.extend(PanelLine(w, c) for w, c in AVOIDANCE_LEGEND)
                lines.append(PanelLine("  " + (avoidance.describe() if avoidance is not None and avoidance.entity >= 0
                                               else "select an agent to see its")))
            if layer == "graph_edges" and graph is not None and np.any(np.asarray(getattr(graph, "kinds", ())) > 0):
                lines.extend(PanelLine(w, c) for w, c in GRAPH_KIND_LEGEND)
    if groups is not None and ("agents" in layers or "paths" in layers) and len(groups.names):
        for name, colour, size in zip(groups.names, groups.colours, groups.sizes, strict=True):
            lines.append(PanelLine(f"{name}" + (f" ×{size}" if size > 1 else ""), tuple(float(c) for c in colour)))
    return lines


def remaining_distance(position: Any, path: Any) -> float:
    """Metres left along ``path`` from ``position``: to its current waypoint, then along the
    waypoints to the end of this leg (for a patrol walking back, to the first; for a loop, to
    the last before it closes)."""
    xy = np.asarray(path.waypoints, dtype=np.float64)[:, :2]
    if not len(xy):
        return 0.0
    i = int(np.clip(path.index, 0, len(xy) - 1))
    rest = xy[i::-1] if path.mode == "patrol" and path.direction < 0 else xy[i:]
    legs = np.hypot(*np.diff(rest, axis=0).T).sum() if len(rest) > 1 else 0.0
    return float(np.hypot(*(xy[i] - np.asarray(position, dtype=np.float64)[:2])) + legs)


def agent_state_lines(world: Any, entity: int, forces: Mapping[str, Any] | None = None) -> list[str]:
    """The selected agent's state: name, speed, path status and mode, current waypoint,
    distance left, behaviours with their weights, and the steering force it applied.

    ``forces`` (behaviour name, as in ``ecs_nav.motion.steering.BEHAVIOURS`` or in words -> its force
    ``(fx, fy)`` in N on this tick): each behaviour's line also shows its force's magnitude,
    and a behaviour in ``forces`` without a weight gets a line of its own. Without it (None)
    the lines show weights only: the panel shows no force it was not given."""
    from ecs_nav.core.components import Name, Path

    table = world.table
    if not table.has(entity):
        return []
    row = table.row_of(entity)
    name = world.try_get(entity, Name)
    speed = float(np.hypot(*table.vel[row]))
    lines = [f"selected: {name.value if name else 'entity'} #{entity}",
             f"  speed {speed:5.2f} / {table.max_speed[row]:.2f} m/s"]
    path = world.try_get(entity, Path)
    if path is not None and len(path.waypoints):
        i = int(np.clip(path.index, 0, len(path.waypoints) - 1))
        x, y = np.asarray(path.waypoints, dtype=np.float64)[i, :2]
        lines += [f"  path {path.status}, {path.mode}",
                  f"  waypoint {i + 1}/{len(path.waypoints)} ({x:.1f}, {y:.1f})",
                  f"  left {remaining_distance(table.pos[row], path):.1f} m"]
    else:
        lines.append("  no path")
    weights = table.weights[row]
    from ecs_nav.motion.steering import BEHAVIOURS

    given = {str(name).replace(" ", "_"): force for name, force in (forces or {}).items()}
    names = [words.replace(" ", "_") for words in behaviour_names(weights, limit=len(weights))]
    names += [name for name in given if name not in names]
    for name in names:
        weight = f"w {weights[BEHAVIOURS.index(name)]:.2f}" if name in BEHAVIOURS else ""
        line = f"  {name.replace('_', ' '):<17}{weight:<7}"
        if name in given:
            fx, fy = (float(v) for v in given[name])
            line += f"{np.hypot(fx, fy):6.1f} N"
        lines.append(line.rstrip())
    fx, fy = table.force[row]
    lines.append(f"  force ({fx:.1f}, {fy:.1f}) |{np.hypot(fx, fy):.1f}| N")
    return lines


def panel_lines(world: Any, hud: list[str], layers: Any, groups: Any = None,
                selected: Any = (), forces: Mapping[str, Any] | None = None) -> list[PanelLine]:
    """Every line of the side panel: ``hud`` (see :func:`hud_lines`), the events, the legend
    and the first of the ``selected`` entities' state (``forces``: its behaviours' forces, see
    :func:`agent_state_lines`). In a side view ``groups`` are its ``SideGroups`` and the
    legend and state are the side view's (``ecs_nav.render.side_labels``)."""
    lines = [PanelLine(text) for text in hud]
    lines += [PanelLine("")] + [PanelLine(text) for text in event_lines(world)]
    side = getattr(world, "resources", {}).get(PLATFORMER)
    if side is not None:
        lines += [PanelLine(""), PanelLine("legend")]
        lines += [PanelLine(words, swatch) for words, swatch in
                  side_legend(groups if isinstance(groups, SideGroups) else None)]
    else:
        lines += [PanelLine("")] + legend_lines(layers, groups, getattr(world, "nav_graph", None),
                                                world.resources.get(SEARCH_TRACE), world.resources.get(AVOIDANCE_TRACE),
                                                getattr(world, "nav_areas", None),
                                                (("the selected agent's" if len(selected) else "the top")
                                                 if has_floors(world) else None))
    for entity in list(selected)[:1]:
        state = (character_state_lines(world, side, int(entity)) if side is not None
                 else agent_state_lines(world, int(entity), forces))
        if state:
            lines += [PanelLine("")] + [PanelLine(text) for text in state]
    return lines
