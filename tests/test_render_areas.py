"""The viewer's area tints (ecs_nav.render.areas): the cells the searches see, tinted by cost."""

from __future__ import annotations

import numpy as np
from test_areas import AREAS, MUD, ROAD, WATER, scene, world_of

from ecs_nav.render.areas import MAX_ALPHA, area_alpha, area_cells
from ecs_nav.render.draw import PALETTE, map_triangles
from ecs_nav.render.panel import legend_lines


def built():
    world = world_of(scene(systems=["graph_build"]))
    world.step()
    return world


def test_each_node_of_an_area_is_drawn_as_its_cell_in_the_areas_tint():
    world = built()
    graph, areas = world.nav_graph, world.nav_areas
    rows = area_cells(areas, graph)
    cells = rows.reshape(-1, 6, 6)
    assert len(cells) == np.count_nonzero(areas.node_areas(graph) >= 0)  # all three areas cost other than 1
    centres = cells[:, :, :2].mean(axis=1)
    nodes = graph.nearest_nodes(centres.astype(np.float64))
    np.testing.assert_allclose(graph.positions[nodes, :2], centres, atol=1e-5)  # one cell per node, on it
    width = cells[:, :, 0].max(axis=1) - cells[:, :, 0].min(axis=1)
    np.testing.assert_allclose(width, graph.grid.spacing, atol=1e-5)
    colour = cells[:, 0, 2:]
    index = areas.node_areas(graph)[nodes]
    for i, area in enumerate(AREAS):
        mine = colour[index == i]
        tint = PALETTE["area_dear"] if area["cost"] > 1 else PALETTE["area_cheap"]
        np.testing.assert_allclose(mine[:, :3], np.broadcast_to(tint[:3], mine[:, :3].shape), atol=1e-6)
        np.testing.assert_allclose(mine[:, 3], area_alpha(area["cost"]), atol=1e-6)
    # dearer (or cheaper) is more opaque, up to MAX_ALPHA; a plain floor's 1 is not drawn
    assert area_alpha(MUD["cost"]) > area_alpha(WATER["cost"]) > 0 and area_alpha(ROAD["cost"]) > 0
    assert area_alpha(1.0) == 0 and area_alpha(1e6) == MAX_ALPHA and area_alpha(1e-6) == MAX_ALPHA


def test_area_cells_are_cut_to_the_bounds_and_lie_between_the_floor_and_the_shapes():
    world = built()
    rows = area_cells(world.nav_areas, world.nav_graph, bounds=(-5, -5, 5, 5))
    assert len(rows) and rows[:, 0].min() >= -5 and rows[:, 1].max() <= 5
    assert len(area_cells(None, world.nav_graph)) == 0 and len(area_cells(world.nav_areas, None)) == 0
    plain = map_triangles(world.map)
    tinted = map_triangles(world.map, rows)
    assert len(tinted) == len(plain) + len(rows)
    np.testing.assert_array_equal(tinted[:6], plain[:6])  # the floor first
    np.testing.assert_array_equal(tinted[6:6 + len(rows)], rows)  # then the areas
    np.testing.assert_array_equal(tinted[6 + len(rows):], plain[6:])  # then every shape


def test_the_legend_lists_each_area_name_once_with_its_cost_under_the_map():
    world = built()
    texts = [line.text for line in legend_lines({"map"}, areas=world.nav_areas)]
    assert texts[2:] == ["  area mud ×3", "  area road ×0.5", "  area water ×2"]
    assert not any("area" in t for t in (line.text for line in legend_lines({"agents"}, areas=world.nav_areas)))
