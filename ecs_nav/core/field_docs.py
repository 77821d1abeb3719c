"""What every component's fields mean: a row per field, or per fields that share it (``x``,
``y``), with the unit, the values it takes and its meaning. The docs' tables of the fields -- one
per component in the user guide (Components and units), and one of every field in the
reference -- are made from these rows and the classes' own defaults (their signatures) when the
site is built (``docs/hooks/field_tables.py``, ``field_rows``), and the tests check the rows
against the classes: every field has one, and the constructors refuse what ``valid`` rules out.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import NamedTuple


class FieldDoc(NamedTuple):
    fields: tuple[str, ...]
    unit: str
    valid: str
    meaning: str


FIELD_DOCS: dict[str, tuple[FieldDoc, ...]] = {
    "Position": (
        FieldDoc(("x", "y"), "m", "finite, at most 1e6 in magnitude",
                 "the ground-plane position; the elevation (`pos.elevation`) is derived from the map by the "
                 "PhysicsSystem"),
    ),
    "Velocity": (
        FieldDoc(("vx", "vy"), "m/s", "finite, at most 1000 in magnitude",
                 "the ground-plane velocity"),
    ),
    "Agent": (
        FieldDoc(("max_speed",), "m/s", "> 0, at most 1000",
                 "the speed the physics truncates to"),
        FieldDoc(("max_force",), "N", "> 0",
                 "the steering force is truncated to this"),
        FieldDoc(("mass",), "kg", "from 0.001 to 1e6",
                 "acceleration = force / mass"),
        FieldDoc(("turn_speed",), "1/s", "> 0",
                 "how fast the heading turns toward the velocity (a lerp by `dt * turn_speed` a tick)"),
        FieldDoc(("stopping_distance",), "m", ">= 0",
                 "within this of its goal a following agent has arrived"),
        FieldDoc(("max_climb",), "m", ">= 0",
                 "the largest step up it can walk onto"),
    ),
    "Collider": (
        FieldDoc(("radius",), "m", "> 0",
                 "an agent's disc"),
        FieldDoc(("shape",), "", '`"circle"` or `"box"`',
                 ""),
        FieldDoc(("size",), "m", "each > 0",
                 "a box's footprint (width, depth)"),
        FieldDoc(("height",), "m", "> 0",
                 "a box's height"),
        FieldDoc(("layer",), "", "integer from 0 to 2^31 - 1",
                 "agents meet only agents of their own layer ([Crowds](crowds.md#many-small-worlds-as-one-layers))"),
    ),
    "SteeringWeights": (
        FieldDoc(("weights",), "", "behaviour name → weight >= 0",
                 "how strongly each behaviour counts; an unnamed behaviour is off (None: all off)"),
        FieldDoc(("combiner",), "", '`"weighted_sum"`, `"prioritized"`, `"dithered"`',
                 "how forces combine: a weighted truncated sum, prioritised, or dithered"),
        FieldDoc(("deceleration",), "", '`"slow"` (3), `"normal"` (2), `"fast"` (1) or a number > 0',
                 "arrive's deceleration"),
        FieldDoc(("panic_distance",), "m", "> 0 (inf: no limit)",
                 "flee acts only within this of the point"),
        FieldDoc(("threat_range",), "m", "> 0",
                 "evade acts only within this of the pursuer"),
        FieldDoc(("wander_radius",), "m", "> 0",
                 "radius of wander's circle"),
        FieldDoc(("wander_distance",), "m", ">= 0",
                 "how far ahead wander's circle lies"),
        FieldDoc(("wander_jitter",), "m/s", ">= 0",
                 "how far wander's target moves on its circle per second"),
        FieldDoc(("detection_box_length",), "m", "> 0",
                 "obstacle avoidance's look-ahead box (at rest; it grows with speed)"),
        FieldDoc(("feeler_length",), "m", "> 0",
                 "wall avoidance's feelers"),
        FieldDoc(("neighbour_radius",), "m", "> 0",
                 "separation, alignment and cohesion count agents within this"),
        FieldDoc(("target",), "m", "(x, y), finite",
                 "the point seek, flee and arrive aim at when no path drives the agent"),
        FieldDoc(("target_entity",), "", "an entity id >= 0 (a scene names it)",
                 "the entity pursuit and evade watch"),
    ),
    "Avoidance": (
        FieldDoc(("enabled",), "", "true or false",
                 "whether the agent avoids"),
        FieldDoc(("neighbour_dist",), "m", "> 0",
                 "other agents further than this (centre to centre) are not considered (RVO2's `neighborDist`)"),
        FieldDoc(("max_neighbours",), "", "integer from 0 to 1024",
                 "at most this many of them, the nearest (RVO2's `maxNeighbors`)"),
        FieldDoc(("time_horizon",), "s", "> 0",
                 "how far ahead collisions with agents are avoided (RVO2's `timeHorizon`)"),
        FieldDoc(("time_horizon_obst",), "s", "> 0",
                 "the same for walls (RVO2's `timeHorizonObst`)"),
        FieldDoc(("layers",), "", "integer from 0 to 2^31 - 1",
                 "a bit set: the avoidance layers the agent is on (Godot's `avoidance_layers`); an agent without "
                 "Avoidance is on layer 1"),
        FieldDoc(("mask",), "", "integer from 0 to 2^31 - 1",
                 "a bit set: it avoids another agent only when `mask & other.layers` is not 0 (Godot's "
                 "`avoidance_mask`)"),
        FieldDoc(("priority",), "", "from 0 to 1",
                 "it ignores agents of lower priority, which take all of the avoiding (Godot's `avoidance_priority`)"),
        FieldDoc(("side",), "", '`"right"`, `"left"`, `"none"`',
                 "the side on which it passes agents walking against it; it drifts to that side while they come at "
                 "it, so opposing streams form lanes ([Crowds](crowds.md#lanes-keeping-to-one-side))"),
    ),
    "PathRequest": (
        FieldDoc(("goal",), "m", "(x, y)",
                 "a point"),
        FieldDoc(("target",), "", "an entity (a scene names it)",
                 "an entity, followed as it moves"),
        FieldDoc(("goals",), "m", "one or more (x, y)",
                 'several points: the nearest counts (exits); needs `method = "flow_field"`'),
        FieldDoc(("zone",), "m", "[xmin, ymin, xmax, ymax], min <= max",
                 'anywhere inside counts; needs `method = "flow_field"`'),
        FieldDoc(("method",), "", '`"path"`, `"flow_field"`',
                 "a Path of its own, or a flow field shared by every request with the same goal"),
        FieldDoc(("replan_period",), "ticks", "integer >= 1",
                 "ticks between refreshes (None: the world's `pathfind_period`)"),
        FieldDoc(("algorithm",), "", '`"astar"`, `"dijkstra"`',
                 "the path search"),
        FieldDoc(("smooth",), "", "",
                 "string-pull the path"),
        FieldDoc(("allow_partial",), "", "",
                 "a path to the closest reachable node when the goal is cut off"),
        FieldDoc(("max_expanded",), "nodes", "integer >= 1",
                 "a path search's budget (None: unlimited)"),
        FieldDoc(("despawn_on_arrival",), "", "",
                 "remove the entity at the end of the tick it arrives"),
        FieldDoc(("goal_elevation",), "m", 'finite; with `goal` and `method = "path"` only',
                 "which surface over the goal point is meant where the nav graph has several `floors` (the room "
                 "under an upper floor); None: the highest"),
    ),
    "NavFilter": (
        FieldDoc(("costs",), "", "> 0 and at most 1e6 each, by area name",
                 "cost multipliers that replace the areas' own `cost` for this agent"),
        FieldDoc(("excluded",), "", "area names",
                 "areas it never enters: their nodes are not walkable for its searches"),
    ),
    "Path": (
        FieldDoc(("waypoints",), "m", "(k, 2) or (k, 3) points (x, y[, elevation]), finite, k at most 100,000",
                 "the points walked through"),
        FieldDoc(("radius",), "m", "> 0",
                 "the path radius: a waypoint counts as reached within it"),
        FieldDoc(("mode",), "", '`"once"`, `"patrol"` (ping-pong), `"loop"`',
                 "what happens at the last waypoint"),
        FieldDoc(("nodes",), "", "node ids",
                 "the nav graph nodes of the route"),
        FieldDoc(("index",), "", "integer",
                 "the waypoint being walked to"),
        FieldDoc(("status",), "", '`"none"`, `"complete"`, `"partial"`, `"unreachable"`, `"stale"`',
                 "the plan's status; setting `\"stale\"` asks for a re-plan"),
        FieldDoc(("direction",), "", "1 or -1",
                 "a patrol's direction along the waypoints"),
        FieldDoc(("graph_version",), "", "integer",
                 "the nav graph version the route was planned on"),
    ),
    "NavMap": (
        FieldDoc(("scan_range",), "m", "each > 0",
                 "half extents and ray height of the scan"),
        FieldDoc(("spacing",), "m", "> 0, at most the scanned width and depth",
                 "node spacing"),
        FieldDoc(("max_climb",), "m", ">= 0",
                 "the largest climbable step between nodes"),
        FieldDoc(("clearance",), "m", ">= 0",
                 "kept from box edges"),
        FieldDoc(("max_drop",), "m", ">= 0",
                 "the highest ledge the scan links a one-way drop off; none up to `max_climb` ([Scene "
                 "files](scenes.md#navmap))"),
        FieldDoc(("floors",), "count", "integer from 1 to 8",
                 "how many walkable surfaces over one spot the graph holds, from the highest down ([Scene "
                 "files](scenes.md#navmap))"),
    ),
}
"""The fields of the components a scene or a script sets, by class name (of ``ecs_nav``)."""


def default_text(value) -> str:
    """A default as a scene file writes it: ``5.0``, ``true``, ``"circle"``, ``inf``,
    ``(1.0, 1.0)``, ``None``; an empty collection: ``empty``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, str):
        return f'`"{value}"`'
    if not isinstance(value, tuple) and hasattr(value, "__len__") and len(value) == 0:
        return "empty"
    return repr(value)


def field_rows(cls: type) -> list[tuple[str, str, str, str, str]]:
    """The rows of ``cls``'s table: fields (as code), unit, default (from the signature; fields
    sharing a row share it), valid, meaning."""
    parameters = inspect.signature(cls).parameters
    factories = {f.name: f.default_factory for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    rows = []
    for doc in FIELD_DOCS[cls.__name__]:
        defaults = set()
        for name in doc.fields:
            factory = factories.get(name, dataclasses.MISSING)
            defaults.add(default_text(parameters[name].default if factory is dataclasses.MISSING else factory()))
        rows.append((", ".join(f"`{name}`" for name in doc.fields), doc.unit, " or ".join(sorted(defaults)), doc.valid,
                     doc.meaning))
    return rows
