"""Scene schema: the one place where scene input is checked, from TOML text to a ``Scene``.

Every field's type, finiteness and range is checked here (the types and most ranges by the
components' own constructors and ``ecs_nav.limits``, driven by their annotations), and so are
the sizes whose products a run would pay for: tiles, nav graph nodes, shapes, entities. A
scene that passes builds and runs; ``ecs-nav validate`` builds it to be sure.

Validation reports every problem at once, one line each, with where it is::

    scenes/chase.toml: entity[2] "npc" Collider.radius: must be > 0, got -1
"""

from __future__ import annotations

import difflib
import inspect
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from ecs_nav.components import (
    VIEW_COMPONENTS,
    Agent,
    Collider,
    NavMap,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    Velocity,
    nav_node_slots,
)
from ecs_nav.geometry import Box, Circle, Ramp
from ecs_nav.limits import (
    COORDINATE_LIMIT,
    DT_LIMIT,
    ENTITY_LIMIT,
    INTEGER_LIMIT,
    NAV_NODE_LIMIT,
    NESTING_LIMIT,
    SCENE_SIZE_LIMIT,
    SEED_LIMIT,
    SHAPE_LIMIT,
    check_value,
    describe,
    field_types,
)
from ecs_nav.nav.grid import parse_ascii_grid, read_movingai_map
from ecs_nav.platformer_world import Bot, PlatformerBody
from ecs_nav.scene_level import check_body, find_scene_file, parse_level_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMPONENTS: dict[str, type] = {
    cls.__name__: cls
    for cls in (Position, Velocity, Agent, Collider, SteeringWeights, PathRequest, Path, Player, PlatformerBody, Bot)
}
"""Component names a scene may use, and their classes."""

ENTITY_KEYS = ("name", "prefab", "count", "spawn_area")
VIEW_KEYS = ("layers",)
WORLD_KEYS = ("seed", "dt", "pathfind_period", "stuck_ticks", "systems")
MAP_KEYS = ("bounds", "floor", "box", "ramp", "circle", "grid", "cell_size", "origin", "wall_height", "movingai",
            "image", "tiled", "tiled_layer", "wkt")
TILE_SOURCES = ("grid", "movingai", "image", "tiled", "wkt")
"""The map keys that each make a tile map; a scene gives at most one."""
SHAPES = {"box": Box, "ramp": Ramp, "circle": Circle}
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
    level: dict[str, Any] = field(default_factory=dict)  # a side view's [level] (ecs_nav.scene_level)
    entities: list[dict[str, Any]] = field(default_factory=list)
    view: dict[str, Any] = field(default_factory=dict)  # [view]: how the viewer first shows it


def parse_text(content: bytes | str, source: str = "<text>", base_dir: FilePath | None = None) -> Scene:
    """Check a scene file's content (size, UTF-8, TOML syntax, nesting) and then its data."""
    if len(content) > SCENE_SIZE_LIMIT:
        raise SceneError([f"{source}: {len(content)} bytes: a scene file is at most {SCENE_SIZE_LIMIT} bytes"])
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
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
    _unknown_keys(data, ("world", "map", "level", "navmap", "prefab", "entity", "view"), "", report)
    scene = Scene(source=source)
    _parse_world(data.get("world", {}), scene, report)
    if "view" in data:
        scene.view = _parse_view(data["view"], report)
    if "map" in data:  # no [map]: no ground, no walls, no nav graph (README: Scene files)
        scene.map = _parse_map(data["map"], base_dir, report)
    if "level" in data:
        scene.level = parse_level_table(data["level"], base_dir, report)
        if "map" in data:
            report("level", "a scene is top-down ([map]) or a side view ([level]), not both")
    navmap = data.get("navmap")
    if navmap is not None:
        scene.navmap = _construct(NavMap, navmap, "navmap", report)
    _check_nav_size(scene, report)
    prefabs = data.get("prefab", {})
    if not isinstance(prefabs, dict):
        report("prefab", f"must be a table of named prefabs, got {kind_of(prefabs)}")
        prefabs = {}
    for name, comps in list(prefabs.items()):
        if not isinstance(comps, dict):
            report(f"prefab.{name}", f"must be a table of components, got {kind_of(comps)}")
            del prefabs[name]
            continue
        for comp_name, fields in comps.items():
            _check_component(comp_name, fields, f'prefab.{name}', report, check_refs=False)
    entities = data.get("entity", [])
    if not isinstance(entities, list):
        report("entity", "must be an array of tables ([[entity]])")
        entities = []
    names: dict[str, list[int]] = {}  # name -> the entries carrying it
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
    for i, entry in enumerate(scene.entities):
        where = f"entity[{i}]" + (f' "{entry["name"]}"' if "name" in entry else "")
        for comp_name, fields in entry["components"].items():
            _check_component(comp_name, fields, where, report, check_refs=True, names=names)
        _check_crowd(entry, where, report)
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
    _unknown_keys(section, WORLD_KEYS, "world", report)
    scene.seed = _number(section, "seed", "world", report, default=0, integer=True, low=0, high=SEED_LIMIT)
    scene.dt = _number(section, "dt", "world", report, default=1.0 / 60.0, positive=True, high=DT_LIMIT)
    for key, default in (("pathfind_period", 30), ("stuck_ticks", 20)):
        value = _number(section, key, "world", report, default=default, integer=True, positive=True,
                        high=INTEGER_LIMIT)
        scene.settings[key] = value
    systems = section.get("systems", list(DEFAULT_SYSTEMS))
    from ecs_nav.systems import SYSTEM_NAMES

    if not isinstance(systems, list) or not all(isinstance(s, str) for s in systems):
        report("world.systems", f"must be a list of system names, got {describe(systems)}")
    else:
        for s in systems:
            if s not in SYSTEM_NAMES:
                report("world.systems", f"unknown system {s!r}{did_you_mean(s, SYSTEM_NAMES)}")
        scene.systems = tuple(systems)


def _parse_view(section: Any, report) -> dict[str, Any]:
    """``[view]``: ``layers``, the viewer's layers that start on (``ecs_nav.draw.LAYERS``)."""
    from ecs_nav.draw import LAYERS

    if not isinstance(section, dict):
        report("view", f"must be a table, got {kind_of(section)}")
        return {}
    _unknown_keys(section, VIEW_KEYS, "view", report)
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


def _parse_map(section: Any, base_dir: FilePath | None, report) -> dict[str, Any]:
    if not isinstance(section, dict):
        report("map", f"must be a table, got {kind_of(section)}")
        return {}
    _unknown_keys(section, MAP_KEYS, "map", report)
    out: dict[str, Any] = {}
    tile_map = any(k in section for k in TILE_SOURCES)
    if "bounds" in section:
        bounds = _vector(section["bounds"], 4, "map.bounds", report)
        if bounds is not None and not (bounds[0] < bounds[2] and bounds[1] < bounds[3]):
            report("map.bounds", f"must be [xmin, ymin, xmax, ymax] with xmin < xmax and ymin < ymax, got {bounds}")
        elif bounds is not None:
            out["bounds"] = bounds
    elif not tile_map:
        report("map", "bounds = [xmin, ymin, xmax, ymax] is missing (a map of pieces needs its floor's extent; "
               "leave [map] out for none)")
    if "floor" in section:
        out["floor"] = _number(section, "floor", "map", report, default=0.0, high=COORDINATE_LIMIT)
    pieces_total = 0
    for kind, cls in SHAPES.items():
        pieces = section.get(kind, [])
        if not isinstance(pieces, list):
            report(f"map.{kind}", f"must be an array of tables ([[map.{kind}]]), got {kind_of(pieces)}")
            continue
        pieces_total += len(pieces)
        if pieces_total > SHAPE_LIMIT:
            report(f"map.{kind}", f"more than {SHAPE_LIMIT} pieces in all")
            continue
        out[kind] = [p for i, piece in enumerate(pieces)
                     if (p := _construct(cls, piece, f"map.{kind}[{i}]", report)) is not None]
    sources = [k for k in TILE_SOURCES if k in section]
    if len(sources) > 1:
        report("map", f"give one tile map source, not {' and '.join(sources)} (sources: {', '.join(TILE_SOURCES)})")
    _parse_other_sources(section, out, base_dir, report)
    if "grid" in section:
        if not isinstance(section["grid"], str):
            report("map.grid", f"must be a multi-line string of tiles, got {kind_of(section['grid'])}")
        else:
            out["grid"] = section["grid"].strip("\n")
            try:  # lines are counted from the grid's first line
                out["tiles"] = parse_ascii_grid(out["grid"]).shape
            except ValueError as exc:
                report("map.grid", str(exc))
    if "movingai" in section and not isinstance(section["movingai"], str):
        report("map.movingai", f"must be the name of a .map file (a string), got {kind_of(section['movingai'])}")
    elif "movingai" in section:
        out["movingai"] = section["movingai"]
        found = find_scene_file(out["movingai"], base_dir)
        if found is None:
            report("map.movingai", f"file not found: {out['movingai']} (looked beside the scene and in $ECS_NAV_MAPS)")
        else:
            out["movingai_path"] = found
            try:  # the message names the file and its line
                out["tiles"] = read_movingai_map(found).shape
            except ValueError as exc:
                report("map.movingai", str(exc))
            except OSError as exc:
                report("map.movingai", f"{found}: cannot read: {exc.strerror}")
    for key in ("cell_size", "wall_height"):
        if key in section:
            out[key] = _number(section, key, "map", report, default=1.0, positive=True, high=COORDINATE_LIMIT)
    if "origin" in section:
        origin = _vector(section["origin"], 2, "map.origin", report)
        if origin is not None:
            out["origin"] = origin
    if "tiles" in out:
        rows, cols = out.pop("tiles")
        ox, oy = out.get("origin", (0.0, 0.0))
        cell = out.get("cell_size", 1.0)
        far = max(abs(ox), abs(oy), abs(ox + cols * cell), abs(oy + rows * cell))
        if far > COORDINATE_LIMIT:
            report("map.cell_size", f"{rows} x {cols} tiles of {cell:g} m from {[ox, oy]} reach {far:.3g} m: "
                   f"coordinates are at most {COORDINATE_LIMIT:g}")
    if tile_map and ("box" in section or "ramp" in section or "circle" in section):
        report("map", "a tile map (grid/movingai) cannot also have box, ramp or circle pieces")
    return out


def _parse_other_sources(section: dict, out: dict, base_dir: FilePath | None, report) -> None:
    """``image``, ``tiled`` (with ``tiled_layer``) and ``wkt`` maps (``ecs_nav.maps_in``):
    read here, so a scene that validates builds; ``out["tiles"]`` gets the grid's shape."""
    from ecs_nav import maps_in

    if "tiled_layer" in section:
        if "tiled" not in section or not isinstance(section["tiled_layer"], str):
            report("map.tiled_layer", "names a tile layer (a string) of the map's tiled file")
        else:
            out["tiled_layer"] = section["tiled_layer"]
    for key in ("image", "tiled"):
        if key not in section:
            continue
        if not isinstance(section[key], str):
            report(f"map.{key}", f"must be the name of a file (a string), got {kind_of(section[key])}")
            continue
        out[key] = section[key]
        found = find_scene_file(section[key], base_dir)
        if found is None:
            report(f"map.{key}", f"file not found: {section[key]} (looked beside the scene and in $ECS_NAV_MAPS)")
            continue
        out[f"{key}_path"] = found
        try:
            blocked = (maps_in.read_image_map(found) if key == "image"
                       else maps_in.read_tiled_map(found, out.get("tiled_layer")))
            out["tiles"] = blocked.shape
        except ImportError as exc:
            report(f"map.{key}", f"needs {exc.name}: pip install 'ecs-nav[results]'")
        except (ValueError, OSError) as exc:
            report(f"map.{key}", str(exc))
    if "wkt" in section:
        if not isinstance(section["wkt"], str):
            report("map.wkt", f"must be a POLYGON or MULTIPOLYGON as WKT text, got {kind_of(section['wkt'])}")
            return
        out["wkt"] = section["wkt"]
        cell = section.get("cell_size", 1.0)
        if isinstance(cell, (int, float)) and not isinstance(cell, bool) and cell > 0:
            try:
                blocked, origin = maps_in.rasterise_wkt(section["wkt"], float(cell))
                out["tiles"] = blocked.shape
            except ImportError as exc:
                report("map.wkt", f"needs {exc.name}: pip install 'ecs-nav[results]'")
            except ValueError as exc:
                report("map.wkt", str(exc))


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


def _check_component(comp_name, fields, where, report, check_refs, names=None) -> None:
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
            if check_refs and len(names[ref]) > 1:
                carriers = ", ".join(f"entity[{i}]" for i in names[ref])
                report(f"{where} {comp_name}.{key}", f"{ref!r} names several entities ({carriers}): "
                       "a reference must name one")
                return
            fields[key] = 0  # a placeholder id, for the constructor's checks
    _construct(cls, fields, f"{where}", report, prefix=comp_name)


def _check_crowd(entry: dict, where: str, report) -> None:
    count = entry.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= ENTITY_LIMIT:
        report(f"{where} count", f"must be an integer from 1 to {ENTITY_LIMIT}, got {describe(count)}")
        return
    components = entry["components"]
    if "spawn_area" in entry:
        area = _vector(entry["spawn_area"], 4, f"{where} spawn_area", report)
        if area is not None and not (area[0] <= area[2] and area[1] <= area[3]):
            report(f"{where} spawn_area", f"must be [xmin, ymin, xmax, ymax] with min <= max, got {area}")
    elif count > 1 and "Position" not in components:  # a Position stacks them (physics separates)
        report(f"{where} spawn_area", "a crowd (count > 1) needs a spawn_area or a Position")
    elif "Position" not in components:
        views = [c.__name__ for c in VIEW_COMPONENTS if c.__name__ in components]
        if views:
            report(f"{where} {views[0]}", "needs a Position (or a spawn_area): "
                   f"{', '.join(views)} {'lives' if len(views) == 1 else 'live'} in the agent table, whose rows are "
                   "placed entities")


def _check_side_view(scene: Scene, entry: dict, where: str, has_level: bool, report) -> None:
    """Side-view components: a PlatformerBody needs the scene's [level] and must start clear of
    solid tiles; a Bot needs a PlatformerBody; none mixes with the top-down view components."""
    components = entry["components"]
    body_fields = components.get("PlatformerBody")
    if "Bot" in components and body_fields is None:
        report(f"{where} Bot", "a Bot needs a PlatformerBody")
    if body_fields is None:
        return
    if not has_level:
        report(f"{where} PlatformerBody", "needs the scene's [level] (a side view)")
        return
    top_down = [name for name in ("Position", "Velocity", "Agent", "Collider", "SteeringWeights", "Path")
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


def _construct(cls, fields, where, report, prefix: str | None = None):
    """``cls(**fields)`` after each field's generic check (``ecs_nav.limits.check_value``, from
    the class's annotations), turning bad keys, bad types and ValueErrors into report lines."""
    label = f"{where} {prefix}" if prefix else where
    if not isinstance(fields, dict):
        report(label, f"must be a table of fields, got {kind_of(fields)}")
        return None
    params = {k: p for k, p in inspect.signature(cls).parameters.items() if k != "self"}
    types = field_types(cls)
    ok = True
    checked = {}
    for key, value in fields.items():
        if key not in params:
            report(f"{label}.{key}", f"unknown field{did_you_mean(key, list(params))}"
                   f" (fields: {', '.join(params)})")
            ok = False
            continue
        default = params[key].default
        try:
            checked[key] = check_value(cls.__name__, key, types.get(key, Any), value,
                                       None if default is inspect.Parameter.empty else default)
        except ValueError as exc:
            _report_error(cls, params, label, exc, report)
            ok = False
    if not ok:
        return None
    try:
        return cls(**checked)
    except (ValueError, TypeError) as exc:
        _report_error(cls, params, label, exc, report)
        return None


def _report_error(cls, params, label: str, exc: Exception, report) -> None:
    message = str(exc)
    head, sep, rest = message.partition(": ")
    word, _, tail = message.partition(" ")
    if sep and head.startswith(f"{cls.__name__}."):  # "Collider.radius: must be > 0, got -1"
        report(f"{label}.{head[len(cls.__name__) + 1:]}", rest)
    elif word.split("[")[0] in params:  # "height must be a number" (the geometry's shapes)
        report(f"{label}.{word}", tail)
    else:
        report(label, message)


def _number(section, key, where, report, default, integer=False, positive=False, low=None,
            high=COORDINATE_LIMIT):
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        report(f"{where}.{key}", f"expected {'an integer' if integer else 'a number'}, got {kind_of(value)} "
               f"{describe(value)}")
        return default
    if not math.isfinite(value) or (positive and value <= 0):
        report(f"{where}.{key}", f"must be {'> 0' if positive else 'finite'}, got {describe(value)}")
        return default
    if (low is not None and value < low) or abs(value) > high:
        span = f"from {low} to {high}" if low is not None else f"at most {high:g} in magnitude"
        report(f"{where}.{key}", f"must be {span}, got {describe(value)}")
        return default
    return value


def _vector(value, length, where, report):
    if (not isinstance(value, list) or len(value) != length
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                       and abs(v) <= COORDINATE_LIMIT for v in value)):
        report(where, f"expected an array of {length} finite numbers at most {COORDINATE_LIMIT:g} in magnitude, "
               f"got {describe(value)}")
        return None
    return [float(v) for v in value]


def _unknown_keys(section: dict, allowed, where: str, report) -> None:
    for key in section:
        if key not in allowed:
            report(f"{where}.{key}" if where else key,
                   f"unknown key{did_you_mean(key, list(allowed))} (allowed: {', '.join(allowed)})")


def did_you_mean(word: str, choices) -> str:
    """' (did you mean "x"?)' for the closest of ``choices``, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def kind_of(value: Any) -> str:
    """A TOML value's kind in a message's words ("a table", "an array", ...)."""
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)
