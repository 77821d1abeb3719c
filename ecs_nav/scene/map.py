"""The ``[map]`` section of a scene: bounds, floor, pieces (boxes, ramps, circles) or one tile
map source (an ASCII grid, a Moving AI file, an image, a Tiled map, WKT polygons), each read here
so that a scene that validates also builds; and its off-mesh links (``[[map.link]]``,
``ecs_nav.nav.links.OffMeshLink``) and areas (``[[map.area]]``, ``ecs_nav.nav.areas.NavArea``)."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Any

from ecs_nav.core.limits import COORDINATE_LIMIT, SHAPE_LIMIT
from ecs_nav.geometry.shapes import Box, Circle, Ramp
from ecs_nav.nav.areas import NavArea, tile_areas
from ecs_nav.nav.grid import parse_ascii_grid, read_movingai_map
from ecs_nav.nav.links import OffMeshLink
from ecs_nav.scene.level import find_scene_file
from ecs_nav.scene.values import construct, kind_of, number, unknown_keys, vector

MAP_KEYS = ("bounds", "floor", "box", "ramp", "circle", "link", "area", "grid", "cell_size", "origin", "wall_height",
            "movingai", "image", "tiled", "tiled_layer", "wkt")
TILE_SOURCES = ("grid", "movingai", "image", "tiled", "wkt")
SHAPES = {"box": Box, "ramp": Ramp, "circle": Circle}


def parse_map(section: Any, base_dir: FilePath | None, report) -> dict[str, Any]:
    if not isinstance(section, dict):
        report("map", f"must be a table, got {kind_of(section)}")
        return {}
    unknown_keys(section, MAP_KEYS, "map", report)
    out: dict[str, Any] = {}
    tile_map = any(k in section for k in TILE_SOURCES)
    if "bounds" in section:
        bounds = vector(section["bounds"], 4, "map.bounds", report)
        if bounds is not None and not (bounds[0] < bounds[2] and bounds[1] < bounds[3]):
            report("map.bounds", f"must be [xmin, ymin, xmax, ymax] with xmin < xmax and ymin < ymax, got {bounds}")
        elif bounds is not None:
            out["bounds"] = bounds
    elif not tile_map:
        report("map", "bounds = [xmin, ymin, xmax, ymax] is missing (a map of pieces needs its floor's extent; "
               "leave [map] out for none)")
    if "floor" in section:
        out["floor"] = number(section, "floor", "map", report, default=0.0, high=COORDINATE_LIMIT)
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
                     if (p := construct(cls, piece, f"map.{kind}[{i}]", report)) is not None]
    links = section.get("link", [])
    if not isinstance(links, list):
        report("map.link", f"must be an array of tables ([[map.link]]), got {kind_of(links)}")
    elif len(links) > SHAPE_LIMIT:
        report("map.link", f"more than {SHAPE_LIMIT} links")
    elif links:  # off-mesh links: ecs_nav.nav.links (their nodes are found when the graph is built)
        out["link"] = [p for i, link in enumerate(links)
                       if (p := construct(OffMeshLink, link, f"map.link[{i}]", report)) is not None]
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
            out[key] = number(section, key, "map", report, default=1.0, positive=True, high=COORDINATE_LIMIT)
    if "origin" in section:
        origin = vector(section["origin"], 2, "map.origin", report)
        if origin is not None:
            out["origin"] = origin
    _parse_areas(section, out, report)
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


def _parse_areas(section: dict, out: dict, report) -> None:
    """``[[map.area]]`` (``ecs_nav.nav.areas``): boxes, polygons and tile areas. A tile area is
    ``tiles`` with a ``legend`` (one area per character: ``tile_areas``) or with one area's
    ``name``, ``cost`` and ``tile``; its ``cell_size`` and ``origin`` default to the map's. Over a
    tile map's own cells (both defaulted) it has the map's rows and columns; anywhere it lies
    within the map (its bounds, or its tile grid)."""
    areas = section.get("area", [])
    if not isinstance(areas, list):
        report("map.area", f"must be an array of tables ([[map.area]]), got {kind_of(areas)}")
        return
    if len(areas) > SHAPE_LIMIT:
        report("map.area", f"more than {SHAPE_LIMIT} areas")
        return
    if not areas:
        return
    cell, origin = out.get("cell_size", 1.0), tuple(out.get("origin", (0.0, 0.0)))
    tiles = out.get("tiles") if "wkt" not in out else None  # the tile map's (rows, cols) (a WKT map's lie
    # where its polygon does, not at its origin: no check there)
    extent = None
    if tiles is not None:
        extent = (origin[0], origin[1], origin[0] + tiles[1] * cell, origin[1] + tiles[0] * cell)
    elif "bounds" in out and "wkt" not in out:
        extent = tuple(out["bounds"])
    built = []
    for i, area in enumerate(areas):
        where = f"map.area[{i}]"
        if not (isinstance(area, dict) and ("tiles" in area or "legend" in area)):
            if (p := construct(NavArea, area, where, report)) is not None:
                built.append(p)
            continue
        placed = {"cell_size": cell, "origin": origin, **area}
        if "legend" in area:
            unknown_keys(area, ("tiles", "legend", "cell_size", "origin"), where, report)
            try:
                found = tile_areas(placed.get("tiles"), placed["legend"], placed["cell_size"], placed["origin"],
                                   where=where)
            except ValueError as exc:
                report(*str(exc).split(": ", 1))
                continue
        else:
            found = construct(NavArea, placed, where, report)
            if found is None:
                continue
            found = (found,)
        shape = found[0].tile_shape()
        if tiles is not None and "cell_size" not in area and "origin" not in area and shape != tuple(tiles):
            report(f"{where}.tiles", f"{shape[0]} x {shape[1]} cells over the map's grid of {tiles[0]} x {tiles[1]} "
                   f"tiles: give as many, or a cell_size and origin of its own")
            continue
        x0, y0, x1, y1 = found[0].extent()
        if extent is not None and not (x0 >= extent[0] - 1e-9 and y0 >= extent[1] - 1e-9
                                       and x1 <= extent[2] + 1e-9 and y1 <= extent[3] + 1e-9):
            report(f"{where}.tiles", f"{shape[0]} x {shape[1]} cells of {found[0].cell_size:g} m from "
                   f"{list(found[0].origin)} cover [{x0:g}, {y0:g}, {x1:g}, {y1:g}], beyond the map's "
                   f"[{', '.join(f'{v:g}' for v in extent)}]")
            continue
        built.extend(found)
    out["area"] = built


def _parse_other_sources(section: dict, out: dict, base_dir: FilePath | None, report) -> None:
    """``image``, ``tiled`` (with ``tiled_layer``) and ``wkt`` maps (``ecs_nav.scene.maps_in``):
    read here, so a scene that validates builds; ``out["tiles"]`` gets the grid's shape."""
    from ecs_nav.scene import maps_in
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
