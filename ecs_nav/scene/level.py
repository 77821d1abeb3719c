"""The side-view part of a scene file: the ``[level]`` table and its characters.

A scene with a ``[level]`` is a side view (see ``ecs_nav.platformer.world``)::

    [level]
    tiles = '''
    ..........
    .@....==..
    ##########
    '''
    # or: file = "my_level.txt"  (beside the scene, or in $ECS_NAV_MAPS)
    clearance = 0.5   # tiles a bot's jump clears above the node it aims at (>= 0)

Tiles: ``#`` solid, ``=`` one-way platform, ``.`` empty, ``@`` empty and a spawn point; the
first line is the top row. Entities carry ``PlatformerBody`` (``spawn = k`` for the k-th ``@``,
or ``x``/``y`` in tiles) and, for bots, ``Bot``. Every problem is reported with where it is:
a bad tile or ragged line names the level's line and column (counted from the level's first
line, as for ``map.grid``), and so does a character whose box would start inside a solid tile.
"""

from __future__ import annotations

import math
import os
from pathlib import Path as FilePath
from typing import Any

from ecs_nav.platformer.level import SOLID, LevelError, TileLevel, load_level, parse_level
from ecs_nav.platformer.world import PLATFORMER, PlatformerBody, PlatformerMap

LEVEL_KEYS = ("tiles", "file", "clearance")


def find_scene_file(name: str, base_dir: FilePath | None) -> FilePath | None:
    """A file a scene names (a level, a Moving AI map): as given, beside the scene
    (``base_dir``), or in ``$ECS_NAV_MAPS``; None when there is none (or the name cannot be a
    file name)."""
    if not name or "\0" in name or len(name) > 4096:
        return None
    candidates = [FilePath(name)]
    if base_dir is not None:
        candidates.append(base_dir / name)
    maps = os.environ.get("ECS_NAV_MAPS")
    if maps:
        candidates.append(FilePath(maps) / FilePath(name).name)
    try:
        return next((c.resolve() for c in candidates if c.is_file()), None)
    except OSError:  # a name too long for the file system, say
        return None


def _level_problem(where: str, exc: LevelError) -> tuple[str, str]:
    """(where, message) for a LevelError: 'level.tiles', 'line 3, column 5: ...'."""
    prefix = f"{exc.source}:{exc.line}:{exc.column}: "
    message = str(exc)[len(prefix):] if str(exc).startswith(prefix) else str(exc)
    source = "" if exc.source in ("<level>", where) else f"{exc.source}: "
    return where, f"{source}line {exc.line}, column {exc.column}: {message}"


def parse_level_table(section: Any, base_dir: FilePath | None, report) -> dict[str, Any]:
    """Validate a scene's ``[level]``; returns ``{"tiles": text, "clearance": c, "level": TileLevel}``
    (``file`` too when it came from one), or {} after reporting what is wrong."""
    if not isinstance(section, dict):
        report("level", f"must be a table, got {type(section).__name__}")
        return {}
    for key in section:
        if key not in LEVEL_KEYS:
            report(f"level.{key}", f"unknown key (allowed: {', '.join(LEVEL_KEYS)})")
    out: dict[str, Any] = {}
    clearance = section.get("clearance", 0.5)
    if isinstance(clearance, bool) or not isinstance(clearance, (int, float)) or not (
            math.isfinite(clearance) and clearance >= 0):
        report("level.clearance", f"must be a number of tiles >= 0, got {clearance!r}")
        clearance = 0.5
    out["clearance"] = float(clearance)
    if ("tiles" in section) == ("file" in section):
        report("level", "give exactly one of tiles (the level as text) or file (a level file)")
        return {}
    if "tiles" in section:
        text = section["tiles"]
        if not isinstance(text, str):
            report("level.tiles", f"must be a multi-line string of tiles, got {type(text).__name__}")
            return {}
        try:
            level = parse_level(text, source="level.tiles")
        except LevelError as exc:
            report(*_level_problem("level.tiles", exc))
            return {}
        out["tiles"] = text
    else:
        name = str(section["file"])
        found = find_scene_file(name, base_dir)
        if found is None:
            report("level.file", f"file not found: {name} (looked beside the scene and in $ECS_NAV_MAPS)")
            return {}
        try:
            level = load_level(found)
        except LevelError as exc:
            report(*_level_problem("level.file", exc))
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            report("level.file", f"{found}: cannot read: {exc}")
            return {}
        out["file"] = name
        out["tiles"] = found.read_text(encoding="utf-8")
    out["level"] = level
    return out


def _leading_blank_lines(text: str) -> int:
    count = 0
    for line in text.splitlines():
        if line.strip():
            break
        count += 1
    return count


def check_body(level_spec: dict[str, Any], body: PlatformerBody, where: str, report) -> None:
    """Report a body whose spawn index the level lacks, or whose box starts inside a solid tile
    (naming the level's line and column of that tile)."""
    level: TileLevel = level_spec["level"]
    if body.spawn is None and body.x is None:
        report(f"{where} PlatformerBody", "give its start: spawn (an @ of the level), or x and y (tiles)")
        return
    w_tiles, h_tiles = body.size_tiles()
    if body.spawn is not None:
        if body.spawn >= len(level.spawns):
            report(f"{where} PlatformerBody.spawn", f"the level has {len(level.spawns)} spawn point(s) (@), "
                   f"got index {body.spawn}")
            return
        try:
            level.check_fits(level.spawns[body.spawn], w_tiles, h_tiles)
        except LevelError as exc:
            report(*_level_problem(f"{where} PlatformerBody.spawn", exc))
        return
    eps = 1e-7
    first = _leading_blank_lines(level_spec["tiles"])
    for row in range(math.floor(body.y + eps), math.floor(body.y + body.height - eps) + 1):
        for col in range(math.floor(body.x + eps), math.floor(body.x + body.width - eps) + 1):
            if not (0 <= col < level.width and 0 <= row < level.height):  # (no line or column to name)
                report(f"{where} PlatformerBody", f"the {body.width}x{body.height}-tile box at ({body.x}, {body.y}) "
                       f"reaches outside the level ({level.width} x {level.height} tiles, x and y from 0)")
                return
            if level.tile(col, row) == SOLID:
                line = first + level.height - row
                report(f"{where} PlatformerBody", f"line {line}, column {col + 1}: the {body.width}x{body.height}"
                       f"-tile box at ({body.x}, {body.y}) overlaps a solid tile")
                return


def build_side_view(world, level_spec: dict[str, Any]) -> PlatformerMap:
    """Put a fresh PlatformerMap for ``level_spec`` into ``world`` (a copy of the level: the
    scene's stays as written when a tile is toggled)."""
    level = parse_level(level_spec["tiles"], source=level_spec.get("file", "level.tiles"))
    side = PlatformerMap(level, dt=world.dt, clearance=level_spec["clearance"])
    world.resources[PLATFORMER] = side
    return side


def level_to_dict(world, level_spec: dict[str, Any]) -> dict[str, Any]:
    """The ``[level]`` table of a saved scene: the level as it is now (toggled tiles included)."""
    side = world.resources.get(PLATFORMER)
    tiles = side.level.to_text() if side is not None else level_spec["tiles"]
    return {"tiles": tiles, "clearance": level_spec["clearance"]}


def body_now(world, entity: int, body: PlatformerBody) -> dict[str, Any]:
    """A body's scene fields with its current position (so a saved scene starts where it is)."""
    fields = {k: v for k, v in vars(body).items() if v is not None}
    side = world.resources.get(PLATFORMER)
    if side is not None and side.row_of(entity) >= 0:
        fields.pop("spawn", None)
        fields["x"], fields["y"] = side.position(entity)
    return fields
