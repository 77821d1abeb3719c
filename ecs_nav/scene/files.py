"""Scene files: find them, load them into a World with its systems, and save a World back.

A scene has a ``[world]`` table (seed, dt, system settings), a ``[map]`` (bounds and static
``box`` / ``ramp`` / ``circle`` pieces, or an ASCII ``grid``, a Moving AI ``movingai`` file, an
``image``, a Tiled ``tiled`` map or a ``wkt`` walkable area: ``ecs_nav.scene.maps_in``),
a ``[navmap]`` (scan parameters), named ``[prefab.NAME]`` component sets, and ``[[entity]]``
entries listing components by name with their fields. An entity with ``count = N`` and a
``spawn_area = [xmin, ymin, xmax, ymax]`` is a crowd of N identical agents, placed by the
World's seeded generator on free floor: a member's disc (its Collider radius) stays inside the
map's bounds, never overlaps a solid it could not climb onto from the floor, nor stands on a box
top inside the area; a gap narrower than the disc holds none.

Checking a scene is ``ecs_nav.scene.schema``'s job (every problem at once, one line each)::

    scenes/chase.toml: entity[2] "npc" Collider.radius: must be > 0, got -1
"""

from __future__ import annotations

import inspect
import os
from collections import Counter
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from ecs_nav.core.components import (
    STEERING_PARAMS,
    Agent,
    Collider,
    Name,
    Path,
    PathRequest,
    Position,
    SteeringWeights,
    entity_label,
)
from ecs_nav.core.limits import SCENE_SIZE_LIMIT
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.nav.areas import NavAreas, legend_entries
from ecs_nav.nav.grid import parse_ascii_grid, read_movingai_map
from ecs_nav.nav.links import NavLinks
from ecs_nav.platformer.world import PlatformerBody
from ecs_nav.scene import maps_in
from ecs_nav.scene.level import body_now, build_side_view, level_to_dict
from ecs_nav.scene.map import MAP_KEYS, SHAPES
from ecs_nav.scene.schema import (
    COMPONENTS,
    DEFAULT_SYSTEMS,
    ENTITY_KEYS,
    ENTITY_REFERENCES,
    WORLD_KEYS,
    Scene,
    SceneError,
    parse_text,
    scene_from_dict,
)
from ecs_nav.scene.values import did_you_mean

__all__ = ["COMPONENTS", "DEFAULT_SYSTEMS", "ENTITY_KEYS", "ENTITY_REFERENCES", "MAP_KEYS", "SHAPES", "WORLD_KEYS",
           "Scene", "SceneError", "build_world", "builtin_scenes", "load_scene", "parse_scene", "resolve_scene",
           "save_scene", "scene_from_dict", "scene_to_dict", "scenes_dir"]

# --- finding scenes -------------------------------------------------------------------------------


def scenes_dir() -> FilePath:
    """The built-in scenes: ``scenes/`` of a source checkout (or editable install), else the
    copy an installed wheel carries inside the package (``ecs_nav/scenes``)."""
    package = FilePath(__file__).resolve().parents[1]
    checkout = package.parent / "scenes"
    return checkout if checkout.is_dir() else package / "scenes"


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
    if path.is_dir():
        raise SceneError([f"{path_or_name}: a folder, not a scene file"])
    kind = special_file_kind(path)
    if kind is not None:
        raise SceneError([f"{path_or_name}: not a regular file ({kind}): a scene is a .toml file"])
    hint = did_you_mean(str(path_or_name), builtin_scenes())
    raise SceneError([f"{path_or_name}: no such scene file or built-in scene{hint}"
                      f" (built-in: {', '.join(builtin_scenes()) or 'none'})"])


def special_file_kind(path: FilePath) -> str | None:
    """What ``path`` is when it exists but is neither a regular file nor a folder (``"a FIFO"``,
    ``"a character device"``, ...); None otherwise. Reads the file's status only, never the file
    (opening a FIFO would wait for a writer)."""
    import stat

    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return None


# --- loading --------------------------------------------------------------------------------------


def load_scene(path_or_name: str | os.PathLike, seed: int | None = None) -> World:
    """Load a scene file (or built-in scene name) into a new World with its systems added. On a
    first run (an empty numba cache) a built-in scene's kernels are first compiled in parallel
    processes (``ecs_nav.compile.precompile``)."""
    path = resolve_scene(path_or_name)
    if path.resolve().parent == scenes_dir().resolve():
        from ecs_nav.compile.precompile import precompile_scene

        precompile_scene(path.stem)
    return build_world(parse_scene(path), seed=seed)


def parse_scene(path_or_name: str | os.PathLike) -> Scene:
    """Read and validate a scene file; raises SceneError listing every problem."""
    path = resolve_scene(path_or_name)
    try:
        if path.stat().st_size > SCENE_SIZE_LIMIT:
            raise SceneError([f"{path}: {path.stat().st_size} bytes: a scene file is at most {SCENE_SIZE_LIMIT} bytes"])
        content = path.read_bytes()
    except OSError as exc:
        raise SceneError([f"{path}: cannot read: {exc.strerror}"]) from None
    return parse_text(content, source=str(path), base_dir=path.parent)


# --- building the World ---------------------------------------------------------------------------


def build_geometry(map_spec: dict[str, Any]) -> tuple[MapGeometry | None, np.ndarray | None, dict]:
    """The map's geometry, its tile grid (blocked cells in text order) if it has one, and the
    grid's placement (cell_size, origin)."""
    if not map_spec:  # a scene without [map]: no ground, walls or nav graph
        return None, None, {}
    placement = {"cell_size": map_spec.get("cell_size", 1.0), "origin": tuple(map_spec.get("origin", (0.0, 0.0)))}
    blocked = None
    if "grid" in map_spec:
        blocked = parse_ascii_grid(map_spec["grid"])
    elif "movingai_path" in map_spec:
        blocked = read_movingai_map(map_spec["movingai_path"])
    elif "image_path" in map_spec:
        blocked = maps_in.read_image_map(map_spec["image_path"])
    elif "tiled_path" in map_spec:
        blocked = maps_in.read_tiled_map(map_spec["tiled_path"], map_spec.get("tiled_layer"))
    elif "wkt" in map_spec:  # the grid lies where the area does
        blocked, origin = maps_in.rasterise_wkt(map_spec["wkt"], placement["cell_size"])
        placement["origin"] = origin
    if blocked is not None:
        geometry = MapGeometry.from_grid(blocked, placement["cell_size"], placement["origin"],
                                         map_spec.get("wall_height", 3.0))
        return geometry, blocked, placement
    geometry = MapGeometry(bounds=tuple(map_spec["bounds"]), boxes=list(map_spec.get("box", [])),
                           ramps=list(map_spec.get("ramp", [])), circles=list(map_spec.get("circle", [])),
                           floor=map_spec.get("floor", 0.0))
    return geometry, None, placement


def build_world(scene: Scene, seed: int | None = None) -> World:
    """A new World for ``scene``: map, nav parameters, systems, then the entities."""
    from ecs_nav.systems import make_systems

    world = World(seed=scene.seed if seed is None else seed, dt=scene.dt)
    world.resources["scene"] = scene
    world.map, blocked, placement = build_geometry(scene.map)
    if blocked is not None:
        world.resources["tile_grid"] = (blocked, placement)
    world.navmap = scene.navmap
    if scene.map.get("link"):  # off-mesh links: the GraphBuildSystem adds their edges
        world.nav_links = NavLinks(scene.map["link"])
    if scene.map.get("area"):  # area costs: the PathfindSystem weighs the graph by them
        world.nav_areas = NavAreas(scene.map["area"])
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
        components, refs = _instantiate(entry["components"], None if positions is None else positions[0])
        name = entry.get("name")
        tags = (lambda _i, name=name: [Name(name)]) if name is not None else None
        if count == 1:
            ids = [world.spawn(*components, *(tags(0) if tags else []))]
        else:  # a crowd: one pass over the table (100,000 members in well under 2 s)
            ids = world.spawn_many(count, components, positions, tags=tags).tolist()
        if name is not None:
            by_name.setdefault(name, ids[0])
        if refs:
            deferred.extend((entity, refs) for entity in ids)
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
    radius = float(spec.get("Collider", {}).get("radius", Collider().radius)) if "Collider" in spec else 0.0
    climb = float(spec.get("Agent", {}).get("max_climb", Agent().max_climb))
    floor = geometry.floor
    xmin, ymin, xmax, ymax = geometry.bounds
    found = np.zeros((0, 2))
    for _ in range(CROWD_PLACEMENT_TRIES):
        cand = lo + rng.random((2 * count, 2)) * (hi - lo)
        # the disc inside the bounds, touching no wall, on ground it can stand on; a gap
        # narrower than the disc fails the wall test on one side or the other
        free = ((cand[:, 0] - radius >= xmin) & (cand[:, 0] + radius <= xmax)
                & (cand[:, 1] - radius >= ymin) & (cand[:, 1] + radius <= ymax))
        free &= geometry.penetration(cand, radius, floor, climb) <= 0
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
    map_spec = {k: v for k, v in scene.map.items() if k not in ("movingai_path", "image_path", "tiled_path")
                and not (k in SHAPES and not v)}  # (no empty piece lists: a tile map may have none)
    if map_spec and not scene.level:
        data["map"] = {k: (legend_entries(v) if k == "area" else [_fields_of(p) for p in v]
                           if k in SHAPES or k == "link" else v) for k, v in map_spec.items()}
    if scene.level:
        data["level"] = level_to_dict(world, scene.level)
    if world.navmap is not None:
        data["navmap"] = _fields_of(world.navmap)
    if scene.view:
        data["view"] = {key: list(value) if isinstance(value, tuple) else value for key, value in scene.view.items()}
    names = {e: n.value for e, (n,) in world.query(Name)}
    problems = reference_problems(world, names)
    if problems:
        raise ValueError("save_scene: a scene file names the entities it refers to, and cannot hold "
                         + "; ".join(problems))
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


def reference_problems(world: World, names: dict[int, str]) -> list[str]:
    """Why each entity reference of ``world`` (``ENTITY_REFERENCES``) cannot go into a scene file,
    which refers to an entity by its ``Name`` (``names``: entity -> name), one line each: the
    target is the entity itself, gone, unnamed, or shares its name with others."""
    shared = Counter(names.values())
    problems = []
    for comp_name, key in sorted(ENTITY_REFERENCES):
        for entity, (component,) in sorted(world.query(COMPONENTS[comp_name]), key=lambda item: item[0]):
            target = getattr(component, key)
            if target is None:
                continue
            if target == entity:
                why = "the entity itself"
            elif not world.exists(target):
                why = f"entity {target}, which is gone"
            elif target not in names:
                why = f"entity {target}, which has no Name (give it one)"
            elif shared[names[target]] > 1:
                why = f"entity {target} by its name {names[target]!r}, which {shared[names[target]]} entities share"
            else:
                continue
            problems.append(f"{entity_label(world, entity)} {comp_name}.{key}: a reference to {why}")
    return problems


def save_scene(world: World, path: str | os.PathLike | None = None) -> str:
    """Write the World as a scene file (TOML, by tomli-w: any name, any character); returns
    the text. What a scene file cannot hold is listed in the user guide (Saving a World); a
    reference (``PathRequest.target``, ``SteeringWeights.target_entity``) it could not load
    again, to an entity that is unnamed, gone, itself or one of several of that name, raises
    ValueError naming each, and nothing is written."""
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


def to_toml(data: dict[str, Any]) -> str:
    """Scene data as TOML text (tomli-w: valid for any key or string, multi-line strings kept)."""
    import tomli_w  # only saving needs it

    return tomli_w.dumps(data, multiline_strings=True)
