"""Scene schema: the one place where scene input is checked, from TOML text to a ``Scene``
(with its two helpers: ``scene_map`` reads the ``[map]`` section, ``scene_values`` holds the
value checks both use).

Every field's type, finiteness and range is checked here (the types and most ranges by the
components' own constructors and ``ecs_nav.core.limits``, driven by their annotations), and so are
the sizes whose products a run would pay for: tiles, nav graph nodes, shapes, entities. A
scene that passes builds and runs; ``ecs-nav validate`` builds it to be sure.

Validation reports every problem at once, one line each, with where it is::

    scenes/chase.toml: entity[2] "npc" Collider.radius: must be > 0, got -1
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from ecs_nav.core.components import (
    VIEW_COMPONENTS,
    Agent,
    Avoidance,
    Collider,
    NavFilter,
    NavMap,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    Velocity,
    nav_node_slots,
)
from ecs_nav.core.limits import (
    DT_LIMIT,
    ENTITY_LIMIT,
    INTEGER_LIMIT,
    NAV_NODE_LIMIT,
    NESTING_LIMIT,
    SCENE_SIZE_LIMIT,
    SEED_LIMIT,
    describe,
)
from ecs_nav.platformer.bots import planned_jump
from ecs_nav.platformer.world import Bot, PlatformerBody
from ecs_nav.scene.crowds import crowd_room, measured_map, stacked_crowd
from ecs_nav.scene.level import check_body, parse_level_table
from ecs_nav.scene.map import TILE_SOURCES, parse_map
from ecs_nav.scene.values import construct, did_you_mean, kind_of, number, unknown_keys, vector

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMPONENTS: dict[str, type] = {
    cls.__name__: cls
    for cls in (Position, Velocity, Agent, Collider, SteeringWeights, Avoidance, PathRequest, NavFilter, Path, Player,
                PlatformerBody, Bot)
}
"""Component names a scene may use, and their classes."""

ENTITY_KEYS = ("name", "prefab", "count", "spawn_area")
VIEW_KEYS = ("layers",)
WORLD_KEYS = ("seed", "dt", "pathfind_period", "stuck_ticks", "path_budget_per_tick", "systems")
"""The map keys that each make a tile map; a scene gives at most one."""
DEFAULT_SYSTEMS = ("graph_build", "pathfind", "path_follow", "steering", "physics")
ENTITY_REFERENCES = {("PathRequest", "target"), ("SteeringWeights", "target_entity")}
"""Fields that name another entity; the scene writes the entity's ``name``."""


class SceneError(ValueError):
    """A scene that cannot be loaded. ``problems`` holds one line per problem: characters that
    would break a line or not show (line and paragraph separators, control characters) are
    written as escapes, so a key or name from the file cannot split or hide its line."""

    def __init__(self, problems: list[str]):
        self.problems = [one_line(p) for p in problems]
        super().__init__("\n".join(self.problems))


def one_line(text: str) -> str:
    """``text`` with every non-printable character (newlines, U+2028, controls) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


@dataclass
class Scene:
    """A parsed, validated scene: everything needed to build a World, and to save it again."""

    source: str = "<python>"
    seed: int = 0
    dt: float = 1.0 / 60.0
    settings: dict[str, Any] = field(default_factory=dict)
    systems: tuple[str, ...] = DEFAULT_SYSTEMS
    map: dict[str, Any] = field(default_factory=dict)
    navmap: NavMap | None = None
    level: dict[str, Any] = field(default_factory=dict)  # a side view's [level] (ecs_nav.scene.level)
    entities: list[dict[str, Any]] = field(default_factory=list)
    view: dict[str, Any] = field(default_factory=dict)  # [view]: how the viewer first shows it


def parse_text(content: bytes | str, source: str = "<text>", base_dir: FilePath | None = None) -> Scene:
    """Check a scene file's content (size, UTF-8, TOML syntax, nesting) and then its data."""
    if len(content) > SCENE_SIZE_LIMIT:
        raise SceneError([f"{source}: {len(content)} bytes: a scene file is at most {SCENE_SIZE_LIMIT} bytes"])
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8").removeprefix("\ufeff")  # (a byte-order mark, as some editors write)
        except UnicodeDecodeError as exc:
            raise SceneError([f"{source}: not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
                              " (scene files are TOML, which is UTF-8)"]) from None
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise SceneError([f"{source}: TOML syntax error: {exc}"]) from None
    except RecursionError:
        raise SceneError([f"{source}: tables or arrays nested more than {NESTING_LIMIT} levels deep"]) from None
    if nesting_depth(data) > NESTING_LIMIT:
        raise SceneError([f"{source}: tables or arrays nested more than {NESTING_LIMIT} levels deep"])
    return scene_from_dict(data, source=source, base_dir=base_dir)


def nesting_depth(data: Any) -> int:
    """How deeply tables and arrays nest in ``data`` (a scalar: 0), counted without recursion
    and no further than one level past NESTING_LIMIT."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= NESTING_LIMIT:  # deeper than that is reported anyway: stop counting
            stack.extend((child, depth + 1) for child in children)
    return deepest


def scene_from_dict(data: dict[str, Any], source: str = "<dict>", base_dir: FilePath | None = None) -> Scene:
    """Validate a scene's data (as TOML parses it) into a Scene; raises SceneError."""
    problems: list[str] = []

    def report(where: str, message: str) -> None:
        problems.append(f"{source}: {where}: {message}" if where else f"{source}: {message}")

    if not isinstance(data, dict):
        raise SceneError([f"{source}: a scene is a table, got {kind_of(data)}"])
    unknown_keys(data, ("world", "map", "level", "navmap", "prefab", "entity", "view"), "", report)
    scene = Scene(source=source)
    _parse_world(data.get("world", {}), scene, report)
    if "view" in data:
        scene.view = _parse_view(data["view"], report)
    if "map" in data:  # no [map]: no ground, no walls, no nav graph (docs: guide/scenes.md)
        scene.map = parse_map(data["map"], base_dir, report)
    if "level" in data:
        scene.level = parse_level_table(data["level"], base_dir, report)
        if "map" in data:
            report("level", "a scene is top-down ([map]) or a side view ([level]), not both")
    navmap = data.get("navmap")
    if navmap is not None:
        scene.navmap = construct(NavMap, navmap, "navmap", report)
    _check_nav_size(scene, report)
    prefabs = data.get("prefab", {})
    if not isinstance(prefabs, dict):
        report("prefab", f"must be a table of named prefabs, got {kind_of(prefabs)}")
        prefabs = {}
    prefab_problems: dict[str, set[tuple[str, str]]] = {}  # prefab -> its (component.field, message)
    for name, comps in list(prefabs.items()):
        if not isinstance(comps, dict):
            report(f"prefab.{name}", f"must be a table of components, got {kind_of(comps)}")
            del prefabs[name]
            continue
        seen = prefab_problems.setdefault(name, set())

        def report_prefab(key, message, where=f"prefab.{name}", seen=seen):
            seen.add((key.removeprefix(f"{where} "), message))
            report(key, message)

        for comp_name, fields in comps.items():
            _check_component(comp_name, fields, f'prefab.{name}', report_prefab, check_refs=False)
    entities = data.get("entity", [])
    if not isinstance(entities, list):
        report("entity", "must be an array of tables ([[entity]])")
        entities = []
    names: dict[str, list[int]] = {}  # name -> the entries carrying it
    written: list[tuple[int, dict]] = []  # each entry of scene.entities as written, and its index
    total = 0
    for i, entry in enumerate(entities):
        where = f"entity[{i}]"
        if not isinstance(entry, dict):
            report(where, f"must be a table, got {kind_of(entry)}")
            continue
        name = entry.get("name")
        if "name" in entry and not isinstance(name, str):
            report(f"{where} name", f"must be a string, got {kind_of(name)} {name!r}")
        elif isinstance(name, str):
            where += f' "{name}"'
            names.setdefault(name, []).append(i)
        count = entry.get("count", 1)
        if isinstance(count, int) and not isinstance(count, bool) and 0 < count <= ENTITY_LIMIT:
            total += count
        merged = _merge_prefab(entry, prefabs, where, report)
        if merged is not None:
            scene.entities.append(merged)
            written.append((i, entry))
    geometry_of = measured_map(scene)  # the map's geometry, built once if a crowd's floor is measured
    for (i, own), entry in zip(written, scene.entities):
        where = f"entity[{i}]" + (f' "{entry["name"]}"' if "name" in entry else "")
        told = prefab_problems.get(entry.get("prefab"), set()) if isinstance(entry.get("prefab"), str) else set()

        def report_new(key, message, where=where, told=told):  # (the prefab's problems were said, for it)
            if (key.removeprefix(f"{where} "), message) not in told:
                report(key, message)

        for comp_name, fields in entry["components"].items():
            inherited = told and comp_name not in own  # taken whole from the prefab
            _check_component(comp_name, fields, where, report_new if inherited else report, check_refs=True,
                             names=names, own_name=entry.get("name"), own_count=entry.get("count", 1))
        _check_crowd(entry, where, report, geometry_of)
        _check_side_view(scene, entry, where, "level" in data, report)
    if total > ENTITY_LIMIT:
        report("entity", f"{total} entities in all (crowds counted member by member): at most {ENTITY_LIMIT}")
    if problems:
        raise SceneError(problems)
    return scene


def _parse_world(section: Any, scene: Scene, report) -> None:
    if not isinstance(section, dict):
        report("world", f"must be a table, got {kind_of(section)}")
        return
    unknown_keys(section, WORLD_KEYS, "world", report)
    scene.seed = number(section, "seed", "world", report, default=0, integer=True, low=0, high=SEED_LIMIT)
    scene.dt = number(section, "dt", "world", report, default=1.0 / 60.0, positive=True, high=DT_LIMIT)
    for key, default in (("pathfind_period", 30), ("stuck_ticks", 20)):
        value = number(section, key, "world", report, default=default, integer=True, positive=True,
                        high=INTEGER_LIMIT)
        scene.settings[key] = value
    if "path_budget_per_tick" in section:  # absent: unlimited (no key, so a saved scene stays without one)
        scene.settings["path_budget_per_tick"] = number(section, "path_budget_per_tick", "world", report, default=None,
                                                        integer=True, positive=True, high=INTEGER_LIMIT)
    systems = section.get("systems", list(DEFAULT_SYSTEMS))
    from ecs_nav.systems import SYSTEM_NAMES

    if not isinstance(systems, list) or not all(isinstance(s, str) for s in systems):
        report("world.systems", f"must be a list of system names, got {describe(systems)}")
    else:
        for i, s in enumerate(systems):
            if s not in SYSTEM_NAMES:
                report("world.systems", f"unknown system {s!r}{did_you_mean(s, SYSTEM_NAMES)}")
            elif s in systems[:i]:
                report("world.systems", f"{s!r} is listed twice: each system runs once a tick")
        scene.systems = tuple(systems)


def _parse_view(section: Any, report) -> dict[str, Any]:
    """``[view]``: ``layers``, the viewer's layers that start on (``ecs_nav.render.draw.LAYERS``)."""
    from ecs_nav.render.draw import LAYERS

    if not isinstance(section, dict):
        report("view", f"must be a table, got {kind_of(section)}")
        return {}
    unknown_keys(section, VIEW_KEYS, "view", report)
    layers = section.get("layers")
    if layers is None:
        return {}
    if not isinstance(layers, list) or not all(isinstance(name, str) for name in layers):
        report("view.layers", f"must be a list of layer names, got {describe(layers)}")
        return {}
    ok = True
    for name in layers:
        if name not in LAYERS:
            report("view.layers", f"unknown layer {name!r}{did_you_mean(name, LAYERS)} (layers: {', '.join(LAYERS)})")
            ok = False
    return {"layers": tuple(dict.fromkeys(layers))} if ok else {}


def _merge_prefab(entry: dict, prefabs: dict, where: str, report) -> dict | None:
    components: dict[str, Any] = {}
    meta = {k: entry[k] for k in ENTITY_KEYS if k in entry}
    if "prefab" in entry:
        prefab = entry["prefab"]
        if not isinstance(prefab, str):
            report(f"{where} prefab", f"must name a prefab (a string), got {kind_of(prefab)} {describe(prefab)}")
            return None
        if prefab not in prefabs:
            report(f"{where} prefab", f"unknown prefab {prefab!r}{did_you_mean(prefab, list(prefabs))}")
            return None
        for comp_name, fields in prefabs[prefab].items():
            components[comp_name] = dict(fields) if isinstance(fields, dict) else fields
    for key, value in entry.items():
        if key in ENTITY_KEYS:
            continue
        if key not in COMPONENTS and key[:1].islower():
            report(f"{where} {key}", f"unknown key{did_you_mean(key, list(ENTITY_KEYS) + list(COMPONENTS))}")
            continue
        if isinstance(components.get(key), dict) and isinstance(value, dict):
            components[key] = {**components[key], **value}  # the entity's fields override the prefab's
        else:
            components[key] = value
    return {**meta, "components": components}


def _check_component(comp_name, fields, where, report, check_refs, names=None, own_name=None,
                     own_count=1) -> None:
    if comp_name not in COMPONENTS:
        report(f"{where} {comp_name}", f"unknown component{did_you_mean(comp_name, list(COMPONENTS))}"
               f" (known: {', '.join(COMPONENTS)})")
        return
    if not isinstance(fields, dict):
        report(f"{where} {comp_name}", f"must be a table of fields, got {kind_of(fields)}")
        return
    cls = COMPONENTS[comp_name]
    fields = dict(fields)
    for comp, key in ENTITY_REFERENCES:
        if comp == comp_name and key in fields:
            ref = fields[key]
            if not isinstance(ref, str):
                report(f"{where} {comp_name}.{key}", f"must name an entity (a string), got {describe(ref)}")
                return
            if check_refs and ref not in (names or {}):
                report(f"{where} {comp_name}.{key}", f"no entity named {ref!r}{did_you_mean(ref, list(names or {}))}")
                return
            if check_refs and ref == own_name and len(names[ref]) == 1 and own_count == 1:
                # (a crowd naming itself targets its first member, which the others follow)
                report(f"{where} {comp_name}.{key}", f"{ref!r} is this entity itself: name another one")
                return
            if check_refs and len(names[ref]) > 1:
                carriers = ", ".join(f"entity[{i}]" for i in names[ref])
                report(f"{where} {comp_name}.{key}", f"{ref!r} names several entities ({carriers}): "
                       "a reference must name one")
                return
            fields[key] = 0  # a placeholder id, for the constructor's checks
    construct(cls, fields, f"{where}", report, prefix=comp_name)


def _check_crowd(entry: dict, where: str, report, geometry_of) -> None:
    """A crowd's count, and where its members stand (``ecs_nav.scene.crowds``): a crowd needs a
    spawn_area (a Position alone would stack it on one point) whose free floor holds its discs;
    ``geometry_of()`` gives the map's geometry to measure that floor on."""
    count = entry.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= ENTITY_LIMIT:
        report(f"{where} count", f"must be an integer from 1 to {ENTITY_LIMIT}, got {describe(count)}")
        return
    components = entry["components"]
    if "spawn_area" in entry:
        area = vector(entry["spawn_area"], 4, f"{where} spawn_area", report)
        if area is not None and not (area[0] <= area[2] and area[1] <= area[3]):
            report(f"{where} spawn_area", f"must be [xmin, ymin, xmax, ymax] with min <= max, got {area}")
        elif area is not None and count > 1:
            problem = crowd_room(count, components, area, geometry_of)
            if problem:
                report(f"{where} count", problem)
    elif count > 1 and "Position" in components:
        report(f"{where} spawn_area", stacked_crowd(count, components))
    elif count > 1:
        report(f"{where} spawn_area", "a crowd (count > 1) needs a spawn_area ([xmin, ymin, xmax, ymax]) to place "
               "its members in")
    elif "Position" not in components:
        views = [c.__name__ for c in VIEW_COMPONENTS if c.__name__ in components]
        if views:
            report(f"{where} {views[0]}", "needs a Position (or a spawn_area): "
                   f"{', '.join(views)} {'lives' if len(views) == 1 else 'live'} in the agent table, whose rows are "
                   "placed entities")


def _check_side_view(scene: Scene, entry: dict, where: str, has_level: bool, report) -> None:
    """Side-view components: a PlatformerBody needs the scene's [level] and must start clear of
    solid tiles; a Bot needs a PlatformerBody, a jump that climbs a tile and a PathRequest to a
    goal or a target; none mixes with the top-down view components."""
    components = entry["components"]
    body_fields = components.get("PlatformerBody")
    bot = "Bot" in components
    if bot and body_fields is None:
        report(f"{where} Bot", "a Bot needs a PlatformerBody")
    request = components.get("PathRequest")
    if body_fields is not None and isinstance(request, dict):
        for key in ("goals", "zone"):
            if key in request:
                report(f"{where} PathRequest.{key}", "a side-view character's PathRequest takes a goal (a point) "
                       f"or a target (an entity); {key} is for top-down agents")
    if body_fields is None:
        return
    if not has_level:
        report(f"{where} PlatformerBody", "needs the scene's [level] (a side view)")
        return
    top_down = [name for name in ("Position", "Velocity", "Agent", "Collider", "SteeringWeights", "Avoidance", "Path")
                if name in components]
    if top_down:
        report(f"{where} PlatformerBody", f"a side-view character takes no top-down components ({', '.join(top_down)})")
    if entry.get("count", 1) != 1 or "spawn_area" in entry:
        report(f"{where} PlatformerBody", "side-view characters are placed one by one (no count, no spawn_area)")
    if not scene.level or not isinstance(body_fields, dict):
        return
    try:
        body = PlatformerBody(**{k: tuple(v) if isinstance(v, list) else v for k, v in body_fields.items()})
    except (TypeError, ValueError):
        return  # already reported by the component check
    try:
        body.constants().check_jump(scene.dt, "PlatformerBody")
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        report(f"{where} {field}", message)
    else:
        try:
            planned_jump(body.constants(), scene.dt, body.max_jump, bot)
        except ValueError as exc:  # (a max_jump given is in range: the constructor checked it)
            report(f"{where} PlatformerBody.jump_speed", str(exc))
    check_body(scene.level, body, where, report)


def _check_nav_size(scene: Scene, report) -> None:
    """The nav graph a scan would build: at most NAV_NODE_LIMIT node slots. Without a
    [navmap] the scan covers the map's bounds at NavMap's default spacing."""
    spec = scene.map
    if scene.navmap is not None or not spec.get("bounds") or any(k in spec for k in TILE_SOURCES):
        return
    xmin, ymin, xmax, ymax = spec["bounds"]
    spacing = NavMap().spacing
    nodes = nav_node_slots(xmax - xmin, ymax - ymin, spacing)
    if nodes > NAV_NODE_LIMIT:
        report("map.bounds", f"{xmax - xmin:g} x {ymax - ymin:g} m scanned at the default {spacing:g} m spacing is "
               f"{nodes:.3g} nav node slots, more than {NAV_NODE_LIMIT}: add a [navmap] with a larger spacing "
               "or a smaller scan_range")
