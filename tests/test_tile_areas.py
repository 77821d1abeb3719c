"""Tile areas ([[map.area]] tiles with a legend): exact against scipy on the weighted graph."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import shortest_path

from ecs_nav.core.components import NavFilter
from ecs_nav.nav.areas import NavArea, tile_areas
from ecs_nav.nav.distance import distance_field
from ecs_nav.nav.flowfield import flow_field
from ecs_nav.nav.search import astar
from ecs_nav.scene.files import build_world, scene_from_dict, scene_to_dict
from ecs_nav.scene.schema import SceneError

ROWS, COLS, CELL, ORIGIN = 24, 30, 0.5, (-3.0, 2.0)
LEGEND = {"m": {"name": "mud", "cost": 3.0}, "~": {"name": "water", "cost": 2.0}, "=": {"name": "road", "cost": 0.5}}


def pictures(seed=3):
    """A tile map with a few walls and an area picture over the same cells: mud, water and a road
    in random blobs (text order: the first line is the top row)."""
    rng = np.random.default_rng(seed)
    walls = np.full((ROWS, COLS), ".")
    walls[rng.random((ROWS, COLS)) < 0.08] = "#"
    areas = np.full((ROWS, COLS), ".")
    for ch in "m~=":
        for _ in range(4):
            r, c = rng.integers(0, ROWS - 4), rng.integers(0, COLS - 6)
            areas[r:r + rng.integers(2, 5), c:c + rng.integers(3, 7)] = ch
    return "\n".join("".join(r) for r in walls), "\n".join("".join(r) for r in areas), areas


def scene(area_entry, entities=(), systems=("graph_build",)):
    grid, _, _ = pictures()
    return {"world": {"seed": 1, "systems": list(systems)},
            "map": {"grid": grid, "cell_size": CELL, "origin": list(ORIGIN), "area": [area_entry]},
            "entity": list(entities)}


def world_of(data):
    return build_world(scene_from_dict(copy.deepcopy(data), source="tiles.toml"))


def reference(graph, picture, costs=None, excluded=()):
    """The weighted graph built here from the plain one and the picture: a node's multiplier is
    its own cell's character's cost (the node of grid slot (col, row) is text row rows - 1 - row),
    an edge costs its length times the mean of its ends' multipliers."""
    costs = costs or {}
    by_char = {ch: (np.inf if e["name"] in excluded else costs.get(e["name"], e["cost"])) for ch, e in LEGEND.items()}
    by_char["."] = 1.0
    m = np.array([by_char[ch] for ch in picture[::-1].reshape(-1)])
    src = np.repeat(np.arange(graph.node_count), np.diff(graph.indptr))
    weight = (m[src] + m[graph.indices]) / 2 * graph.costs
    keep = np.isfinite(weight)
    n = graph.node_count
    return csr_array((weight[keep], (src[keep], graph.indices[keep])), shape=(n, n)), m


FILTERS = [None, {"costs": {"road": 0.1, "mud": 1.5}}, {"excluded": ["water"]}]


@pytest.mark.parametrize("nav_filter", FILTERS)
def test_paths_and_flow_fields_over_tile_areas_give_scipys_shortest_path_costs(nav_filter):
    _, picture_text, picture = pictures()
    world = world_of(scene({"tiles": picture_text, "legend": LEGEND}))
    world.step()
    graph, areas = world.nav_graph, world.nav_areas
    f = NavFilter(**(nav_filter or {}))
    weighted = areas.graph_for(graph, f.costs, f.excluded)
    matrix, m = reference(graph, picture, f.costs, f.excluded)
    assert (m < 1).any() and (m > 1).any()
    nodes = np.flatnonzero(graph.walkable & np.isfinite(m))
    rng = np.random.default_rng(5)
    starts, goals = rng.choice(nodes, 10, replace=False), rng.choice(nodes, 10, replace=False)
    from_starts = shortest_path(matrix, method="D", indices=starts)
    for i, (s, g) in enumerate(zip(starts, goals)):
        res = astar(weighted, int(s), int(g))
        if np.isinf(from_starts[i, g]):
            assert res.status != "complete"
            continue
        assert res.complete and res.cost == pytest.approx(from_starts[i, g], rel=1e-12)
        assert np.asarray(matrix[res.nodes[:-1], res.nodes[1:]]).sum() == pytest.approx(res.cost, rel=1e-12)
    to_goals = shortest_path(matrix.T.tocsr(), method="D", indices=goals[:3]).min(axis=0)
    np.testing.assert_allclose(distance_field(weighted, goals[:3])[0], to_goals, rtol=1e-12)
    np.testing.assert_allclose(flow_field(weighted, goals[:3]).distance, to_goals, rtol=1e-12)


def test_a_tile_areas_cells_hold_the_nodes_of_their_characters_on_a_pieces_map_too():
    picture = "..mm\n..~~\n...."  # 3 rows of 4 cells of 2 m, the lower-left corner at (-4, -4)
    areas = tile_areas(picture, {"m": {"name": "mud", "cost": 2}, "~": {"name": "water"}}, 2.0, (-4, -4))
    assert [(a.name, a.cost, a.tile) for a in areas] == [("mud", 2.0, "m"), ("water", 1.0, "~")]
    # rows cover y in [0, 2) (the top line), [-2, 0), [-4, -2); a cell holds its left and bottom edges
    points = np.array([[0.0, 0.0], [3.9, 1.9], [0.0, 2.0], [-0.1, 1.0], [4.0, 1.0], [1.0, -1.0], [0.0, -2.0],
                       [-1.0, -1.0]])
    np.testing.assert_array_equal(areas[0].contains(points), [True, True, False, False, False, False, False, False])
    np.testing.assert_array_equal(areas[1].contains(points), [False, False, False, False, False, True, True, False])
    assert areas[0].extent() == (-4.0, -4.0, 4.0, 2.0)


def test_a_filtered_agent_never_enters_an_excluded_tile_area():
    # a band of water across the map with a gap at its east end: the filtered agent goes round
    band = ["." * COLS] * 10 + ["~" * (COLS - 4) + "...."] * 4 + ["." * COLS] * 10
    entities = [{"Position": {"x": ORIGIN[0] + 4.0, "y": ORIGIN[1] + 1.0}, "Velocity": {},
                 "Agent": {"max_speed": 2.0}, "Collider": {"radius": 0.2},
                 "SteeringWeights": {"weights": {"follow_path": 1.0}},
                 "PathRequest": {"goal": [ORIGIN[0] + 4.0, ORIGIN[1] + 11.0]}, **extra}
                for extra in ({"NavFilter": {"excluded": ["water"]}}, {})]
    data = scene({"tiles": "\n".join(band), "legend": {"~": {"name": "water", "cost": 1.0}}}, entities,
                 systems=["graph_build", "pathfind", "path_follow", "steering", "physics"])
    data["map"]["grid"] = "\n".join(["." * COLS] * ROWS)
    world = world_of(data)
    water = world.nav_areas.areas[0]
    x0, y0, x1, y1 = water.extent()
    band_low, band_high = y1 - 14 * CELL, y1 - 10 * CELL
    band_east = x0 + (COLS - 4) * CELL
    ents = sorted(world.entities())
    track = {e: [] for e in ents}
    for _ in range(900):
        world.step()
        for e in ents:
            track[e].append(world.table.pos[world.table.row_of(e)].copy())
    for e in ents:
        t = np.array(track[e])
        depth = np.minimum(np.minimum(t[:, 1] - band_low, band_high - t[:, 1]), band_east - t[:, 0])
        track[e] = (t, depth.max(), water.contains(t).any())
    (filtered, filtered_depth, _), (_, plain_depth, plain_wet) = track[ents[0]], track[ents[1]]
    # the area is its nodes' cells: an agent on outside nodes keeps its centre within half a cell of them
    assert filtered_depth < CELL / 2
    assert plain_wet and plain_depth > 0.9  # the same trip without the filter wades across the 2 m band
    assert np.hypot(*(filtered[-1] - (ORIGIN[0] + 4.0, ORIGIN[1] + 11.0))) < 1.0


def test_tile_areas_survive_a_save_and_load_as_one_legend_table():
    _, picture_text, _ = pictures()
    world = world_of(scene({"tiles": picture_text, "legend": LEGEND}))
    saved = scene_to_dict(world)
    assert saved["map"]["area"] == [{"tiles": picture_text, "cell_size": CELL, "origin": list(ORIGIN),
                                     "legend": LEGEND}]
    assert build_world(scene_from_dict(saved)).nav_areas.areas == world.nav_areas.areas


def test_one_named_tile_area_takes_its_own_character_and_the_maps_cells():
    _, picture_text, _ = pictures()
    world = world_of(scene({"name": "mud", "cost": 4.0, "tiles": picture_text, "tile": "m"}))
    (mud,) = world.nav_areas.areas
    assert (mud.cell_size, mud.origin, mud.tile_shape()) == (CELL, ORIGIN, (ROWS, COLS))
    assert mud == tile_areas(picture_text, {"m": {"name": "mud", "cost": 4.0}, "~": {"name": "w"},
                                            "=": {"name": "r"}}, CELL, ORIGIN)[0]


def test_bad_tile_areas_are_reported_with_the_file_and_field():
    _, picture_text, _ = pictures()
    good = {"tiles": picture_text, "legend": LEGEND}
    rows = picture_text.split("\n")
    cases = [
        (dict(good, tiles="\n".join(rows[:3] + ["q" + rows[3][1:]] + rows[4:])),
         "tiles.toml: map.area[0].tiles: line 4, column 1: 'q' is not in the legend"),
        (dict(good, tiles="\n".join(rows[:5] + [rows[5] + "."] + rows[6:])),
         f"tiles.toml: map.area[0].tiles: line 6: {COLS + 1} characters, expected {COLS}"),
        (dict(good, tiles="\n".join(rows[1:])), f"tiles.toml: map.area[0].tiles: {ROWS - 1} x {COLS} cells over the "
                                                f"map's grid of {ROWS} x {COLS} tiles"),
        (dict(good, tiles="\n".join(rows[1:]), origin=[-4, 0]), "map.area[0].tiles: 23 x 30 cells of 0.5 m from"),
        (dict(good, legend={**LEGEND, "m": {"name": "mud", "cost": float("inf")}}),
         "tiles.toml: map.area[0].legend.m.cost: must be a number > 0"),
        (dict(good, legend={**LEGEND, "m": {"name": "mud", "cost": float("nan")}}), "map.area[0].legend.m.cost"),
        (dict(good, legend={**LEGEND, "m": {"cost": 2.0}}), "map.area[0].legend.m: expected { name = ..."),
        (dict(good, legend={**LEGEND, "mm": {"name": "x"}}), "map.area[0].legend: 'mm' is not a tile character"),
        (dict(good, cell_size=-1.0), "map.area[0].cell_size: must be a number > 0"),
        (dict(good, colour="red"), "map.area[0].colour"),
        ({"name": "mud", "tiles": picture_text}, "map.area[0].tiles: a tile area needs both"),
        ({"name": "mud", "tiles": picture_text, "tile": "m", "center": [0, 0], "size": [1, 1]},
         "map.area[0].polygon: give one shape"),
    ]
    for entry, message in cases:
        with pytest.raises(SceneError) as info:
            scene_from_dict(scene(entry), source="tiles.toml")
        assert any(message in p for p in info.value.problems), (message, info.value.problems)
    with pytest.raises(ValueError, match="NavArea.tile: expected one printable character"):
        NavArea("mud", tiles="..", tile=".")
