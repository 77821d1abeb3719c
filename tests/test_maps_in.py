"""Maps in: an image, a Tiled map and a WKT walkable area become the same walls as the ASCII
grid that draws them."""

import base64
import warnings
import zlib

import numpy as np
import pytest

from ecs_nav.scene import maps_in
from ecs_nav.scene.files import SceneError, load_scene, parse_scene

GRID = ["#######",
        "#.....#",
        "#..#..#",
        "#.....#",
        "#######"]
BLOCKED = np.array([[c == "#" for c in row] for row in GRID])
SCENE = """
[world]
systems = []
[map]
{source}
cell_size = 2.0
"""


def _boxes(path):
    with load_scene(path) as world:
        return sorted((b.center, b.size) for b in world.map.boxes), world.map.bounds


def _write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(SCENE.format(source=source))
    return path


def _ascii_scene(tmp_path):
    return _write(tmp_path, "grid.toml", 'grid = """\n' + "\n".join(GRID) + '\n"""')


def test_an_image_map_blocks_its_dark_pixels(tmp_path):
    image = pytest.importorskip("PIL.Image")
    pixels = np.where(BLOCKED, 20, 235).astype(np.uint8)
    image.fromarray(np.stack([pixels] * 3, axis=-1)).save(tmp_path / "level.png")
    assert (maps_in.read_image_map(tmp_path / "level.png") == BLOCKED).all()
    assert _boxes(_write(tmp_path, "image.toml", 'image = "level.png"')) == _boxes(_ascii_scene(tmp_path))


@pytest.mark.parametrize("encoding", ["csv", "base64-zlib"])
def test_a_tiled_map_blocks_the_tiles_of_its_layer(tmp_path, encoding):
    gids = np.where(BLOCKED, 3, 0).astype("<u4")
    if encoding == "csv":
        data = '<data encoding="csv">' + ",".join(map(str, gids.ravel())) + "</data>"
    else:
        data = ('<data encoding="base64" compression="zlib">'
                + base64.b64encode(zlib.compress(gids.tobytes())).decode() + "</data>")
    rows, cols = BLOCKED.shape
    (tmp_path / "level.tmx").write_text(
        f'<?xml version="1.0"?><map orientation="orthogonal" width="{cols}" height="{rows}" tilewidth="16" '
        f'tileheight="16"><layer name="floor" width="{cols}" height="{rows}"><data encoding="csv">'
        + ",".join(["1"] * (rows * cols)) + f'</data></layer><layer name="walls" width="{cols}" height="{rows}">'
        + data + "</layer></map>")
    assert (maps_in.read_tiled_map(tmp_path / "level.tmx", "walls") == BLOCKED).all()
    scene = _write(tmp_path, "tiled.toml", 'tiled = "level.tmx"\ntiled_layer = "walls"')
    assert _boxes(scene) == _boxes(_ascii_scene(tmp_path))
    with pytest.raises(SceneError, match=r"no tile layer 'wall' \(did you mean \"walls\"\?\)"):
        parse_scene(_write(tmp_path, "bad.toml", 'tiled = "level.tmx"\ntiled_layer = "wall"'))


def test_a_wkt_walkable_area_is_rasterised_with_its_holes_blocked(tmp_path):
    pytest.importorskip("shapely")
    # the grid's free cells (2 m each), with the ASCII grid's pillar as a hole, 2 m in from the origin
    wkt = "POLYGON ((2 2, 12 2, 12 8, 2 8, 2 2), (6 4, 8 4, 8 6, 6 6, 6 4))"
    blocked, origin = maps_in.rasterise_wkt(wkt, 2.0)
    assert origin == (2.0, 2.0) and (blocked == BLOCKED[1:-1, 1:-1]).all()
    with load_scene(_write(tmp_path, "wkt.toml", f'wkt = "{wkt}"')) as world:
        assert world.map.bounds == (2.0, 2.0, 12.0, 8.0)
        assert [(b.center, b.size) for b in world.map.boxes] == [((7.0, 5.0), (2.0, 2.0))]


def test_one_tile_map_source_at_a_time_and_files_must_exist(tmp_path):
    with pytest.raises(SceneError, match="give one tile map source, not grid and wkt"):
        parse_scene(_write(tmp_path, "two.toml", 'grid = "#"\nwkt = "POLYGON ((0 0, 1 0, 1 1, 0 0))"'))
    with pytest.raises(SceneError, match="map.image: file not found: nowhere.png"):
        parse_scene(_write(tmp_path, "missing.toml", 'image = "nowhere.png"'))
    with pytest.raises(SceneError, match="map.wkt: the walkable area must be a POLYGON or MULTIPOLYGON"):
        parse_scene(_write(tmp_path, "point.toml", 'wkt = "POINT (1 1)"'))
    with pytest.raises(SceneError, match="map.wkt: the walkable area is an empty Polygon"):
        parse_scene(_write(tmp_path, "empty.toml", 'wkt = "POLYGON EMPTY"'))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (shapely's warning of the NaN is not passed on)
        with pytest.raises(SceneError, match=r"map.wkt: the walkable area has a point that is not finite: \[nan"):
            parse_scene(_write(tmp_path, "nan.toml", 'wkt = "POLYGON ((0 0, nan 0, 10 10, 0 10, 0 0))"'))
