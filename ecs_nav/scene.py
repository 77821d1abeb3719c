"""Scene files: TOML in, a World with its systems out (and back: ``save_scene``).

A scene has a ``[world]`` table (seed, dt, system settings), a ``[map]`` (bounds and static
``box`` / ``ramp`` / ``circle`` pieces, or an ASCII ``grid``, or a Moving AI ``movingai`` file),
a ``[navmap]`` (scan parameters), named ``[prefab.NAME]`` component sets, and ``[[entity]]``
entries listing components by name with their fields. An entity with ``count = N`` and a
``spawn_area = [xmin, ymin, xmax, ymax]`` is a crowd of N identical agents, placed by the
World's seeded generator on free floor: a member's disc (its Collider radius) never overlaps a
solid it could not climb onto from the floor, nor stands on a box top inside the area.

Validation reports every problem at once, one line each, with where it is::

    scenes/chase.toml: entity[2] "npc" Collider.radius: must be > 0, got -1
"""

from __future__ import annotations

import difflib
import inspect
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from ecs_nav.components import (
    STEERING_PARAMS,
    Agent,
    Collider,
    Name,
    NavMap,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    Velocity,
)
from ecs_nav.geometry import Box, Circle, MapGeometry, Ramp
from ecs_nav.nav.grid import parse_ascii_grid, read_movingai_map
from ecs_nav.platformer_world import Bot, PlatformerBody
from ecs_nav.scene_level import body_now, build_side_view, check_body, level_to_dict, parse_level_table
from ecs_nav.world import World

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
WORLD_KEYS = ("seed", "dt", "pathfind_period", "stuck_ticks", "systems")
MAP_KEYS = ("bounds", "floor", "box", "ramp", "circle", "grid", "cell_size", "origin", "wall_height", "movingai")
SHAPES = {"box": Box, "ramp": Ramp, "circle": Circle}
DEFAULT_SYSTEMS = ("graph_build", "pathfind", "path_follow", "steering", "physics")
ENTITY_REFERENCES = {("PathRequest", "target"), ("SteeringWeights", "target_entity")}
"""Fields that name another entity; the scene writes the entity's ``name``."""


class SceneError(ValueError):
    """A scene that cannot be loaded. ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


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


# --- finding scenes -------------------------------------------------------------------------------


def scenes_dir() -> FilePath:
    """The built-in scenes: ``scenes/`` of a source checkout (or editable install), else the
    copy an installed wheel carries inside the package (``ecs_nav/scenes``)."""
    here = FilePath(__file__).resolve().parent
    checkout = here.parent / "scenes"
    return checkout if checkout.is_dir() else here / "scenes"


def builtin_scenes() -> list[str]:
    return sorted(p.stem for p in scenes_dir().glob("*.toml"))


def resolve_scene(path_or_name: str | os.PathLike) -> FilePath:
    """A path to a scene file, or the name of a built-in scene (``chase`` → scenes/chase.toml)."""
    path = FilePath(path_or_name)
    if path.is_file():
        return path
    builtin = scenes_dir() / f"{path.stem if path.suffix == '.toml' else path.name}.toml"
    if path.parent == FilePath(".") and builtin.is_file():
        return builtin
    hint = _did_you_mean(str(path_or_name), builtin_scenes())
    raise SceneError([f"{path_or_name}: no such scene file or built-in scene{hint}"
                      f" (built-in: {', '.join(builtin_scenes()) or 'none'})"])


# --- loading --------------------------------------------------------------------------------------


def load_scene(path_or_name: str | os.PathLike, seed: int | None = None) -> World:
    """Load a scene file (or built-in scene name) into a new World with its systems added."""
    return build_world(parse_scene(path_or_name), seed=seed)


def parse_scene(path_or_name: str | os.PathLike) -> Scene:
    """Read and validate a scene file; raises SceneError listing every problem."""
    path = resolve_scene(path_or_name)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SceneError([f"{path}: cannot read: {exc.strerror}"]) from None
    except UnicodeDecodeError as exc:
        raise SceneError([f"{path}: not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
                          " (scene files are TOML, which is UTF-8)"]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SceneError([f"{path}: TOML syntax error: {exc}"]) from None
    return scene_from_dict(data, source=str(path), base_dir=path.parent)


def scene_from_dict(data: dict[str, Any], source: str = "<dict>", base_dir: FilePath | None = None) -> Scene:
    """Validate a scene's data (as TOML parses it) into a Scene; raises SceneError."""
    problems: list[str] = []

    def report(where: str, message: str) -> None:
        problems.append(f"{source}: {where}: {message}" if where else f"{source}: {message}")

    _unknown_keys(data, ("world", "map", "level", "navmap", "prefab", "entity"), "", report)
    scene = Scene(source=source)
    _parse_world(data.get("world", {}), scene, report)
    scene.map = _parse_map(data.get("map", {}), base_dir, report)
    if "level" in data:
        scene.level = parse_level_table(data["level"], base_dir, report)
        if "map" in data:
            report("level", "a scene is top-down ([map]) or a side view ([level]), not both")
    navmap = data.get("navmap")
    if navmap is not None:
        scene.navmap = _construct(NavMap, navmap, "navmap", report)
    prefabs = data.get("prefab", {})
    if not isinstance(prefabs, dict):
        report("prefab", f"must be a table of named prefabs, got {_kind(prefabs)}")
        prefabs = {}
    for name, comps in prefabs.items():
        if not isinstance(comps, dict):
            report(f"prefab.{name}", f"must be a table of components, got {_kind(comps)}")
            continue
        for comp_name, fields in comps.items():
            _check_component(comp_name, fields, f'prefab.{name}', report, check_refs=False)
    entities = data.get("entity", [])
    if not isinstance(entities, list):
        report("entity", "must be an array of tables ([[entity]])")
        entities = []
    names: dict[str, list[int]] = {}  # name -> the entries carrying it
    for i, entry in enumerate(entities):
        where = f"entity[{i}]"
        if not isinstance(entry, dict):
            report(where, f"must be a table, got {_kind(entry)}")
            continue
        name = entry.get("name")
        if "name" in entry and not isinstance(name, str):
            report(f"{where} name", f"must be a string, got {_kind(name)} {name!r}")
        elif isinstance(name, str):
            where += f' "{name}"'
            names.setdefault(name, []).append(i)
        merged = _merge_prefab(entry, prefabs, where, report)
        if merged is not None:
            scene.entities.append(merged)
    for i, entry in enumerate(scene.entities):
        where = f"entity[{i}]" + (f' "{entry["name"]}"' if "name" in entry else "")
        for comp_name, fields in entry["components"].items():
            _check_component(comp_name, fields, where, report, check_refs=True, names=names)
        _check_crowd(entry, where, report)
        _check_side_view(scene, entry, where, "level" in data, report)
    if problems:
        raise SceneError(problems)
    return scene


def _parse_world(section: Any, scene: Scene, report) -> None:
    if not isinstance(section, dict):
        report("world", f"must be a table, got {_kind(section)}")
        return
    _unknown_keys(section, WORLD_KEYS, "world", report)
    scene.seed = _number(section, "seed", "world", report, default=0, integer=True)
    scene.dt = _number(section, "dt", "world", report, default=1.0 / 60.0, positive=True)
    for key, default in (("pathfind_period", 30), ("stuck_ticks", 20)):
        value = _number(section, key, "world", report, default=default, integer=True, positive=True)
        scene.settings[key] = value
    systems = section.get("systems", list(DEFAULT_SYSTEMS))
    from systems import SYSTEM_NAMES

    if not isinstance(systems, list) or not all(isinstance(s, str) for s in systems):
        report("world.systems", f"must be a list of system names, got {systems!r}")
    else:
        for s in systems:
            if s not in SYSTEM_NAMES:
                report("world.systems", f"unknown system {s!r}{_did_you_mean(s, SYSTEM_NAMES)}")
        scene.systems = tuple(systems)


def _parse_map(section: Any, base_dir: FilePath | None, report) -> dict[str, Any]:
    if not isinstance(section, dict):
        report("map", f"must be a table, got {_kind(section)}")
        return {}
    _unknown_keys(section, MAP_KEYS, "map", report)
    out: dict[str, Any] = {}
    if "bounds" in section:
        out["bounds"] = _vector(section["bounds"], 4, "map.bounds", report)
    if "floor" in section:
        out["floor"] = _number(section, "floor", "map", report, default=0.0)
    for kind, cls in SHAPES.items():
        pieces = section.get(kind, [])
        if not isinstance(pieces, list):
            report(f"map.{kind}", f"must be an array of tables ([[map.{kind}]]), got {_kind(pieces)}")
            continue
        out[kind] = [p for i, piece in enumerate(pieces)
                     if (p := _construct(cls, piece, f"map.{kind}[{i}]", report)) is not None]
    if "grid" in section and "movingai" in section:
        report("map", "give either grid or movingai, not both")
    if "grid" in section:
        if not isinstance(section["grid"], str):
            report("map.grid", f"must be a multi-line string of tiles, got {_kind(section['grid'])}")
        else:
            out["grid"] = section["grid"].strip("\n")
            try:  # lines are counted from the grid's first line
                parse_ascii_grid(out["grid"])
            except ValueError as exc:
                report("map.grid", str(exc))
    if "movingai" in section:
        out["movingai"] = str(section["movingai"])
        found = _find_map_file(out["movingai"], base_dir)
        if found is None:
            report("map.movingai", f"file not found: {out['movingai']} (looked beside the scene and in $ECS_NAV_MAPS)")
        else:
            out["movingai_path"] = found
            try:  # the message names the file and its line
                read_movingai_map(found)
            except ValueError as exc:
                report("map.movingai", str(exc))
            except OSError as exc:
                report("map.movingai", f"{found}: cannot read: {exc.strerror}")
    for key in ("cell_size", "wall_height"):
        if key in section:
            out[key] = _number(section, key, "map", report, default=1.0, positive=True)
    if "origin" in section:
        out["origin"] = _vector(section["origin"], 2, "map.origin", report)
    if ("grid" in out or "movingai" in out) and ("box" in section or "ramp" in section or "circle" in section):
        report("map", "a tile map (grid/movingai) cannot also have box, ramp or circle pieces")
    return out


def _find_map_file(name: str, base_dir: FilePath | None) -> FilePath | None:
    candidates = [FilePath(name)]
    if base_dir is not None:
        candidates.append(base_dir / name)
    maps = os.environ.get("ECS_NAV_MAPS")
    if maps:
        candidates.append(FilePath(maps) / FilePath(name).name)
    return next((c.resolve() for c in candidates if c.is_file()), None)


def _merge_prefab(entry: dict, prefabs: dict, where: str, report) -> dict | None:
    components: dict[str, Any] = {}
    meta = {k: entry[k] for k in ENTITY_KEYS if k in entry}
    if "prefab" in entry:
        prefab = entry["prefab"]
        if prefab not in prefabs:
            report(f"{where} prefab", f"unknown prefab {prefab!r}{_did_you_mean(str(prefab), list(prefabs))}")
            return None
        for comp_name, fields in prefabs[prefab].items():
            components[comp_name] = dict(fields) if isinstance(fields, dict) else fields
    for key, value in entry.items():
        if key in ENTITY_KEYS:
            continue
        if key not in COMPONENTS and key[:1].islower():
            report(f"{where} {key}", f"unknown key{_did_you_mean(key, list(ENTITY_KEYS) + list(COMPONENTS))}")
            continue
        if isinstance(components.get(key), dict) and isinstance(value, dict):
            components[key] = {**components[key], **value}  # the entity's fields override the prefab's
        else:
            components[key] = value
    return {**meta, "components": components}


def _check_component(comp_name, fields, where, report, check_refs, names=None) -> None:
    if comp_name not in COMPONENTS:
        report(f"{where} {comp_name}", f"unknown component{_did_you_mean(comp_name, list(COMPONENTS))}"
               f" (known: {', '.join(COMPONENTS)})")
        return
    if not isinstance(fields, dict):
        report(f"{where} {comp_name}", f"must be a table of fields, got {_kind(fields)}")
        return
    cls = COMPONENTS[comp_name]
    fields = dict(fields)
    for comp, key in ENTITY_REFERENCES:
        if comp == comp_name and key in fields:
            ref = fields[key]
            if not isinstance(ref, str):
                report(f"{where} {comp_name}.{key}", f"must name an entity (a string), got {ref!r}")
                return
            if check_refs and ref not in (names or {}):
                report(f"{where} {comp_name}.{key}", f"no entity named {ref!r}{_did_you_mean(ref, list(names or {}))}")
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
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        report(f"{where} count", f"must be an integer >= 1, got {count!r}")
        return
    if "spawn_area" in entry:
        area = _vector(entry["spawn_area"], 4, f"{where} spawn_area", report)
        if area is not None and not (area[0] <= area[2] and area[1] <= area[3]):
            report(f"{where} spawn_area", f"must be [xmin, ymin, xmax, ymax] with min <= max, got {area}")
    elif count > 1 and "Position" not in entry["components"]:  # a Position stacks them (physics separates)
        report(f"{where} spawn_area", "a crowd (count > 1) needs a spawn_area or a Position")


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


def _construct(cls, fields, where, report, prefix: str | None = None):
    """Call ``cls(**fields)``, turning bad keys, bad types and ValueErrors into report lines."""
    label = f"{where} {prefix}" if prefix else where
    if not isinstance(fields, dict):
        report(label, f"must be a table of fields, got {_kind(fields)}")
        return None
    params = {k: p for k, p in inspect.signature(cls).parameters.items() if k != "self"}
    ok = True
    for key in fields:
        if key not in params:
            report(f"{label}.{key}", f"unknown field{_did_you_mean(key, list(params))}"
                   f" (fields: {', '.join(params)})")
            ok = False
    for key, value in fields.items():
        if key in params:
            expected = _expected_value(params[key])
            if not _type_ok(expected, value):
                report(f"{label}.{key}", f"expected {_expected(expected)}, got {_kind(value)} {value!r}")
                ok = False
    if not ok:
        return None
    try:
        return cls(**{k: tuple(v) if isinstance(v, list) and k != "waypoints" else v for k, v in fields.items()})
    except (ValueError, TypeError) as exc:
        message = str(exc)
        head, sep, rest = message.partition(": ")
        word, _, tail = message.partition(" ")
        if sep and head.startswith(f"{cls.__name__}."):  # "Collider.radius: must be > 0, got -1"
            report(f"{label}.{head[len(cls.__name__) + 1:]}", rest)
        elif word.split("[")[0] in params:  # "height must be a number" (the geometry's shapes)
            report(f"{label}.{word}", tail)
        else:
            report(label, message)
        return None


def _expected_value(param: inspect.Parameter) -> Any:
    """A sample of the value a constructor parameter takes: its default, or one made from its
    annotation when it has none (the geometry's required fields)."""
    if param.default is not inspect.Parameter.empty:
        return param.default
    annotation = str(param.annotation)
    if annotation.startswith("tuple"):
        return (0.0,) * annotation.count("float")
    return {"float": 0.0, "int": 0, "str": "", "bool": False}.get(annotation, None)


def _type_ok(default: Any, value: Any) -> bool:
    if default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if isinstance(default, tuple):
        return (isinstance(value, list) and len(value) == len(default)
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))
    return True


def _expected(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, (int, float)):
        return "a number"
    if isinstance(default, str):
        return "a string"
    if isinstance(default, tuple):
        return f"an array of {len(default)} numbers"
    return "a value"


def _number(section, key, where, report, default, integer=False, positive=False):
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        report(f"{where}.{key}", f"expected {'an integer' if integer else 'a number'}, got {_kind(value)} {value!r}")
        return default
    if not math.isfinite(value) or (positive and value <= 0):
        report(f"{where}.{key}", f"must be {'> 0' if positive else 'finite'}, got {value!r}")
        return default
    return value


def _vector(value, length, where, report):
    if (not isinstance(value, list) or len(value) != length
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)):
        report(where, f"expected an array of {length} finite numbers, got {value!r}")
        return None
    return [float(v) for v in value]


def _unknown_keys(section: dict, allowed, where: str, report) -> None:
    for key in section:
        if key not in allowed:
            report(f"{where}.{key}" if where else key,
                   f"unknown key{_did_you_mean(key, list(allowed))} (allowed: {', '.join(allowed)})")


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _kind(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


# --- building the World ---------------------------------------------------------------------------


def build_geometry(map_spec: dict[str, Any]) -> tuple[MapGeometry | None, np.ndarray | None, dict]:
    """The map's geometry, its tile grid (blocked cells in text order) if it has one, and the
    grid's placement (cell_size, origin)."""
    if not map_spec:
        return None, None, {}
    placement = {"cell_size": map_spec.get("cell_size", 1.0), "origin": tuple(map_spec.get("origin", (0.0, 0.0)))}
    blocked = None
    if "grid" in map_spec:
        blocked = parse_ascii_grid(map_spec["grid"])
    elif "movingai_path" in map_spec:
        blocked = read_movingai_map(map_spec["movingai_path"])
    if blocked is not None:
        geometry = MapGeometry.from_grid(blocked, placement["cell_size"], placement["origin"],
                                         map_spec.get("wall_height", 3.0))
        return geometry, blocked, placement
    bounds = map_spec.get("bounds", (-40.0, -40.0, 40.0, 40.0))
    geometry = MapGeometry(bounds=tuple(bounds), boxes=list(map_spec.get("box", [])),
                           ramps=list(map_spec.get("ramp", [])), circles=list(map_spec.get("circle", [])),
                           floor=map_spec.get("floor", 0.0))
    return geometry, None, placement


def build_world(scene: Scene, seed: int | None = None) -> World:
    """A new World for ``scene``: map, nav parameters, systems, then the entities."""
    from systems import make_systems

    world = World(seed=scene.seed if seed is None else seed, dt=scene.dt)
    world.resources["scene"] = scene
    # a side view has its level instead of a map (its [map] is only the parser's empty defaults)
    world.map, blocked, placement = build_geometry({} if scene.level else scene.map)
    if blocked is not None:
        world.resources["tile_grid"] = (blocked, placement)
    world.navmap = scene.navmap
    if scene.level:
        build_side_view(world, scene.level)
    world.add_systems(*make_systems(scene.systems, scene.settings))
    # Crowd placement draws from its own stream of the seed, so building a scene leaves
    # world.rng untouched (a saved scene, with explicit positions, then loads equal).
    spawn_rng = np.random.default_rng([world.seed, 0x5CE4E])
    by_name: dict[str, int] = {}
    deferred: list[tuple[int, dict]] = []
    for index, entry in enumerate(scene.entities):
        count = entry.get("count", 1)
        area = entry.get("spawn_area")
        positions = None
        if area is not None:
            positions = _crowd_positions(world.map, entry, count, area, spawn_rng)
            if positions.shape[0] < count:
                where = f"entity[{index}]" + (f' "{entry["name"]}"' if "name" in entry else "")
                raise SceneError([f"{scene.source}: {where} spawn_area: room for only {positions.shape[0]} of "
                                  f"{count} agents on free floor in {list(area)}"])
        for k in range(count):
            components, refs = _instantiate(entry["components"], None if positions is None else positions[k])
            entity = world.spawn(*components)
            if "name" in entry:
                by_name.setdefault(entry["name"], entity)
                world.add_component(entity, Name(entry["name"]))
            if refs:
                deferred.append((entity, refs))
    for entity, refs in deferred:
        for (comp_name, key), ref_name in refs.items():
            component = world.get(entity, COMPONENTS[comp_name])
            if comp_name == "SteeringWeights":
                world.table.target_entity[world.table.row_of(entity)] = by_name[ref_name]
                object.__setattr__(component, "target_entity", by_name[ref_name])
            else:
                setattr(component, key, by_name[ref_name])
    return world


CROWD_PLACEMENT_TRIES = 50
"""A crowd draws at most this many candidate positions per member before giving up."""


def _crowd_positions(geometry, entry: dict, count: int, area, rng: np.random.Generator) -> np.ndarray:
    """Up to ``count`` positions drawn uniformly in ``area`` where a member stands on free
    floor (with a map: its disc overlaps no wall at the floor's height, and no top is higher
    than it can climb from the floor), in draw order."""
    lo, hi = np.array(area[:2], dtype=np.float64), np.array(area[2:], dtype=np.float64)
    if geometry is None:
        return lo + rng.random((count, 2)) * (hi - lo)
    spec = entry["components"]
    radius = float(spec.get("Collider", {}).get("radius", 0.0))
    climb = float(spec.get("Agent", {}).get("max_climb", Agent().max_climb))
    floor = geometry.floor
    found = np.zeros((0, 2))
    for _ in range(CROWD_PLACEMENT_TRIES):
        cand = lo + rng.random((2 * count, 2)) * (hi - lo)
        free = geometry.penetration(cand, radius, floor, climb) <= 0
        free &= geometry.surface_height(cand) <= floor + climb
        found = np.vstack([found, cand[free]])
        if found.shape[0] >= count:
            return found[:count]
    return found


def _instantiate(spec: dict[str, dict], position: np.ndarray | None):
    components, refs = [], {}
    for comp_name, fields in spec.items():
        fields = dict(fields)
        for comp, key in ENTITY_REFERENCES:
            if comp == comp_name and key in fields:
                refs[(comp, key)] = fields[key]
                fields[key] = 0 if comp == "PathRequest" else None
        if comp_name == "Position" and position is not None:
            fields = {"x": float(position[0]), "y": float(position[1])}
        components.append(COMPONENTS[comp_name](**{k: tuple(v) if isinstance(v, list) and k != "waypoints" else v
                                                   for k, v in fields.items()}))
    if position is not None and "Position" not in spec:
        components.append(Position(float(position[0]), float(position[1])))
    return components, refs


# --- saving -----------------------------------------------------------------------------------------


def scene_to_dict(world: World) -> dict[str, Any]:
    """The World's current state as scene data: saving then loading gives an equal World
    (the same ``state_digest()``)."""
    scene: Scene = world.resources.get("scene") or Scene()
    data: dict[str, Any] = {"world": {"seed": world.seed, "dt": world.dt, **scene.settings,
                                      "systems": [s for s in scene.systems]}}
    map_spec = {k: v for k, v in scene.map.items() if k != "movingai_path"}
    if map_spec and not scene.level:
        data["map"] = {k: ([_fields_of(p) for p in v] if k in SHAPES else v) for k, v in map_spec.items()}
    if scene.level:
        data["level"] = level_to_dict(world, scene.level)
    if world.navmap is not None:
        data["navmap"] = _fields_of(world.navmap)
    names = {e: n.value for e, (n,) in world.query(Name)}
    entities = []
    for entity in world.entities():
        entry: dict[str, Any] = {}
        if entity in names:
            entry["name"] = names[entity]
        for comp_name, cls in COMPONENTS.items():
            component = world.try_get(entity, cls)
            if isinstance(component, PlatformerBody):
                entry[comp_name] = body_now(world, entity, component)
            elif component is not None:
                entry[comp_name] = _component_fields(component, names)
        entities.append(entry)
    if entities:
        data["entity"] = entities
    return data


def save_scene(world: World, path: str | os.PathLike | None = None) -> str:
    """Write the World as a scene file (TOML); returns the text."""
    text = to_toml(scene_to_dict(world))
    if path is not None:
        FilePath(path).write_text(text, encoding="utf-8")
    return text


def _fields_of(obj) -> dict[str, Any]:
    params = inspect.signature(type(obj)).parameters
    return {k: _plain(getattr(obj, k)) for k in params if getattr(obj, k, None) is not None}


def _component_fields(component, names: dict[int, str]) -> dict[str, Any]:
    if isinstance(component, SteeringWeights):
        out = {"weights": component.weights, "combiner": component.combiner}
        out.update({p: _plain(getattr(component, p)) for p in STEERING_PARAMS})
        if component.target is not None:
            out["target"] = list(component.target)
        if component.target_entity is not None:
            out["target_entity"] = names.get(component.target_entity, component.target_entity)
        return out
    if isinstance(component, Path):
        return {"waypoints": component.waypoints[:, :2].tolist() if not np.any(component.waypoints[:, 2])
                else component.waypoints.tolist(),
                "radius": component.radius, "mode": component.mode}
    fields = _fields_of(component)
    if isinstance(component, PathRequest) and component.target is not None:
        fields["target"] = names.get(component.target, component.target)
    return fields


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- a small TOML writer (the scene schema needs tables, arrays of tables and inline values) ---


def to_toml(data: dict[str, Any]) -> str:
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            _toml_table(lines, key, value)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for item in value:
                _toml_table(lines, key, item, array=True)
    return "\n".join(lines).strip() + "\n"


def _toml_table(lines: list[str], name: str, table: dict, array: bool = False) -> None:
    lines.append("")
    lines.append(f"[[{name}]]" if array else f"[{name}]")
    nested = []
    for key, value in table.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            nested.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, items in nested:
        for item in items:
            _toml_table(lines, f"{name}.{key}", item, array=True)


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        if "\n" in value and "'''" not in value:
            return "'''\n" + value + "'''"
        import json

        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if value is None:
        raise ValueError("TOML has no null")
    raise TypeError(f"cannot write {type(value).__name__} to TOML")
