"""Tile maps from other tools: images, Tiled maps and WKT polygons, each read into the same
blocked-cell array as an ASCII grid or a Moving AI map: (rows, cols) bool in text order (row 0
is the map's north edge), which ``MapGeometry.from_grid`` turns into walls.

* an image (PNG, or any format Pillow reads): a pixel darker than ``threshold`` (luminance in
  [0, 1], transparent pixels count as light) is a blocked cell;
* a Tiled map (``.tmx``, orthogonal, layers in CSV or base64 encoding, uncompressed, zlib or
  gzip): a cell is blocked where the chosen tile layer (by name; else the first) has a tile;
* WKT (JuPedSim's input): the walkable area as a POLYGON or MULTIPOLYGON (holes are
  obstacles), rasterised at ``cell_size``: a cell is blocked when its centre is not inside.

Each raises ValueError naming the file (and what is wrong) on bad input.
"""

from __future__ import annotations

import base64
import gzip
import os
import warnings
import zlib
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from ecs_nav.core.limits import COORDINATE_LIMIT, SCENE_SIZE_LIMIT, TILE_LIMIT

TMX_SIZE_LIMIT = 64 * SCENE_SIZE_LIMIT
"""A Tiled map file is read only up to this many bytes."""


def _check_tiles(rows: int, cols: int, where: str) -> None:
    if rows < 1 or cols < 1:
        raise ValueError(f"{where}: a map needs at least one tile, got {rows} x {cols}")
    if rows * cols > TILE_LIMIT:
        raise ValueError(f"{where}: {rows} x {cols} tiles: a tile map has at most {TILE_LIMIT}")


def read_image_map(path: str | os.PathLike, threshold: float = 0.5) -> np.ndarray:
    """Blocked cells of an image: dark pixels (luminance < ``threshold``) are blocked."""
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    try:
        with Image.open(path) as image:
            _check_tiles(image.height, image.width, str(path))
            rgba = np.asarray(image.convert("RGBA"), dtype=np.float64) / 255.0
    except UnidentifiedImageError:
        raise ValueError(f"{path}: not an image Pillow can read") from None
    luminance = rgba[..., :3] @ np.array([0.2126, 0.7152, 0.0722])
    return (luminance < threshold) & (rgba[..., 3] > 0.5)


def read_tiled_map(path: str | os.PathLike, layer: str | None = None) -> np.ndarray:
    """Blocked cells of a Tiled ``.tmx`` map: where tile layer ``layer`` (else the first) has a tile."""
    path = Path(path)
    if path.stat().st_size > TMX_SIZE_LIMIT:
        raise ValueError(f"{path}: more than {TMX_SIZE_LIMIT} bytes")
    try:
        root = ElementTree.fromstring(path.read_bytes())
    except ElementTree.ParseError as exc:
        raise ValueError(f"{path}: not a Tiled map (XML: {exc})") from None
    if root.tag != "map":
        raise ValueError(f"{path}: not a Tiled map (the root element is <{root.tag}>, not <map>)")
    if root.get("orientation", "orthogonal") != "orthogonal":
        raise ValueError(f"{path}: only orthogonal Tiled maps, got {root.get('orientation')!r}")
    layers = root.findall("layer")
    names = [element.get("name", "") for element in layers]
    if not layers:
        raise ValueError(f"{path}: the map has no tile layer")
    if layer is not None and layer not in names:
        from ecs_nav.scene.values import did_you_mean

        raise ValueError(f"{path}: no tile layer {layer!r}{did_you_mean(layer, names)} (layers: {', '.join(names)})")
    chosen = layers[names.index(layer) if layer is not None else 0]
    cols, rows = int(chosen.get("width", 0)), int(chosen.get("height", 0))
    _check_tiles(rows, cols, f"{path}: layer {chosen.get('name', '')!r}")
    data = chosen.find("data")
    if data is None or data.find("chunk") is not None or data.find("tile") is not None:
        raise ValueError(f"{path}: layer data must be CSV or base64 (not XML tiles or an infinite map's chunks)")
    gids = _layer_gids(data, str(path))
    if gids.size != rows * cols:
        raise ValueError(f"{path}: layer {chosen.get('name', '')!r} holds {gids.size} tiles, expected {rows} x {cols}")
    return (gids.reshape(rows, cols) & 0x1FFFFFFF) != 0  # the top bits are Tiled's flip flags


def _layer_gids(data, where: str) -> np.ndarray:
    encoding, compression = data.get("encoding"), data.get("compression")
    text = (data.text or "").strip()
    if encoding == "csv":
        try:
            return np.array([int(v) for v in text.replace("\n", "").split(",") if v.strip()], np.uint32)
        except ValueError:
            raise ValueError(f"{where}: a CSV layer holds something that is not a tile id") from None
    if encoding == "base64":
        raw = base64.b64decode(text)
        if compression == "zlib":
            raw = zlib.decompress(raw, bufsize=4 * TILE_LIMIT)
        elif compression == "gzip":
            raw = gzip.decompress(raw)
        elif compression is not None:
            raise ValueError(f"{where}: layer compression {compression!r} is not supported (zlib or gzip)")
        if len(raw) % 4:
            raise ValueError(f"{where}: base64 layer data is not a whole number of tile ids")
        return np.frombuffer(raw, dtype="<u4").astype(np.uint32)
    raise ValueError(f"{where}: layer encoding {encoding!r} is not supported (csv or base64)")


def rasterise_wkt(wkt: str, cell_size: float) -> tuple[np.ndarray, tuple[float, float]]:
    """Blocked cells of a walkable area given as WKT, and the grid's origin (its lower-left
    corner, the area's bounds' minimum)."""
    import shapely

    try:
        with warnings.catch_warnings():  # (a NaN coordinate: refused below, by name)
            warnings.simplefilter("ignore", RuntimeWarning)
            area = shapely.from_wkt(wkt)
    except shapely.errors.ShapelyError as exc:
        raise ValueError(f"not WKT: {exc}") from None
    if area.geom_type not in ("Polygon", "MultiPolygon"):
        raise ValueError(f"the walkable area must be a POLYGON or MULTIPOLYGON, got {area.geom_type}")
    if area.is_empty:
        raise ValueError(f"the walkable area is an empty {area.geom_type}")
    points = shapely.get_coordinates(area)
    bad = ~np.isfinite(points).all(axis=1)
    if bad.any():
        raise ValueError(f"the walkable area has a point that is not finite: {points[bad][0].tolist()}")
    xmin, ymin, xmax, ymax = area.bounds
    if max(abs(xmin), abs(ymin), abs(xmax), abs(ymax)) > COORDINATE_LIMIT:
        raise ValueError(f"the walkable area reaches {area.bounds}: coordinates are at most {COORDINATE_LIMIT:g}")
    cols, rows = max(int(np.ceil((xmax - xmin) / cell_size)), 1), max(int(np.ceil((ymax - ymin) / cell_size)), 1)
    _check_tiles(rows, cols, f"the WKT area at cell_size {cell_size:g}")
    xs = xmin + (np.arange(cols) + 0.5) * cell_size
    ys = ymin + (np.arange(rows) + 0.5) * cell_size
    gx, gy = np.meshgrid(xs, ys[::-1])  # text order: row 0 is the north edge
    return ~shapely.contains_xy(area, gx, gy), (float(xmin), float(ymin))
