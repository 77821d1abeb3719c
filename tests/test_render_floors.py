"""The viewer on a map of several floors: the selected agent's floor drawn as always, the others
shaded (``ecs_nav.render.floors``), floating shapes see-through; a frame of the overpass scene."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.core.components import Agent, Collider, Position
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.build import ScanParams, scan_heightfield
from ecs_nav.render import areas as draw_areas
from ecs_nav.render import draw, floors, graph_layers

DECK = Box((0, 0), (6, 20), 0.5, base=3.0)  # a deck 3.0..3.5 m over the floor, x -3..3
WALL = Box((-7, 0), (1, 6), 2.0)  # a plain box standing on the floor


def deck_world() -> World:
    """A 20 m square with a floating deck and a box, a two-floor graph, an agent under the deck
    (row 0), one on it (row 1) and one beside it on the floor (row 2)."""
    world = World(seed=1)
    world.map = MapGeometry((-10, -10, 10, 10), boxes=[DECK, WALL])
    world.nav_graph = scan_heightfield(world.map, ScanParams(scan_range=(10, 10, 10), spacing=1.0, clearance=0.5,
                                                             floors=2))
    for x in (0.0, 1.0, 6.0):
        world.spawn(Position(x, 2.0), Agent(), Collider(radius=0.4))
    world.table.elevation[:3] = (0.0, DECK.top, 0.0)
    return world


def levels(graph) -> np.ndarray:
    return np.arange(graph.node_count) // graph.grid.slots


def test_the_deck_world_has_nodes_on_the_deck_and_under_it():
    graph = deck_world().nav_graph
    z, level = graph.positions[:, 2], levels(graph)
    assert graph.grid.levels == 2
    assert (graph.walkable & (level == 0) & (z == DECK.top)).sum() > 20
    assert (graph.walkable & (level == 1) & (z == 0.0)).sum() > 20


# --- which nodes and agents are shaded -----------------------------------------------------------


def test_with_nothing_selected_the_lower_levels_are_shaded_and_the_highest_is_not():
    world = deck_world()
    shade, _ = floors.view_shades(world, [])
    np.testing.assert_array_equal(shade, levels(world.nav_graph) >= 1)


@pytest.mark.parametrize("row", [0, 1, 2])
def test_a_node_is_on_the_selected_agents_floor_when_less_than_a_body_height_from_its_elevation(row):
    world = deck_world()
    graph = world.nav_graph
    shade, _ = floors.view_shades(world, [row])
    own = world.table.elevation[row]
    for node in np.flatnonzero(graph.walkable):  # brute force, node by node
        assert shade[node] == (abs(graph.positions[node, 2] - own) >= 2.0), node
    assert not shade[graph.walkable].all() and shade[graph.walkable].any()


def test_with_nothing_selected_the_agents_under_a_surface_are_shaded():
    world = deck_world()
    _, shaded = floors.view_shades(world, [])
    np.testing.assert_array_equal(shaded, [True, False, False])  # under the deck; on it; beside it


def test_agents_a_body_height_or_more_from_the_selected_agent_are_shaded():
    world = deck_world()
    np.testing.assert_array_equal(floors.view_shades(world, [0])[1], [False, True, False])  # the deck agent
    np.testing.assert_array_equal(floors.view_shades(world, [1])[1], [True, False, True])  # both floor agents


def test_the_body_height_is_the_physics_systems_else_the_scans_else_two_metres():
    from ecs_nav.systems.physics import PhysicsSystem

    world = deck_world()
    world.table.elevation[1] = 1.5  # 1.5 m over the floor agents: within a 2 m or 1.7 m body, not a 1.2 m one
    assert floors.body_height(world) == floors.DEFAULT_BODY_HEIGHT == 2.0
    assert floors.view_shades(world, [0])[1] is None  # no agent shaded
    world.resources["nav_params"] = ScanParams(agent_height=1.7)
    assert floors.body_height(world) == 1.7
    assert floors.view_shades(world, [0])[1] is None
    world.add_systems(PhysicsSystem(body_height=1.2))
    assert floors.body_height(world) == 1.2
    np.testing.assert_array_equal(floors.view_shades(world, [0])[1], [False, True, False])


def test_a_single_floor_map_has_no_shades():
    world = deck_world()
    world.map = MapGeometry((-10, -10, 10, 10), boxes=[Box((0, 0), (6, 20), 3.5), WALL])
    world.nav_graph = scan_heightfield(world.map, ScanParams(scan_range=(10, 10, 10), spacing=1.0, clearance=0.5))
    assert not floors.has_floors(world)
    assert floors.view_shades(world, []) == (None, None)
    assert floors.view_shades(world, [1]) == (None, None)


def test_the_legend_says_which_floor_is_drawn_in_full_on_a_map_of_floors_only():
    from ecs_nav.render.panel import panel_lines

    world = deck_world()
    texts = [line.text for line in panel_lines(world, [], {"map", "agents"})]
    assert "faded: off the top floor" in texts
    texts = [line.text for line in panel_lines(world, [], {"map", "agents"}, selected=[world.table.entity[0]])]
    assert "faded: off the selected agent's floor" in texts
    world.map = MapGeometry((-10, -10, 10, 10), boxes=[WALL])
    world.nav_graph = scan_heightfield(world.map, ScanParams(scan_range=(10, 10, 10), spacing=1.0, clearance=0.5))
    assert not any(line.text.startswith("faded") for line in panel_lines(world, [], {"map", "agents"}))


# --- the draw lists ---------------------------------------------------------------------------------


def test_node_ticks_of_other_floors_are_drawn_first_and_fainter():
    world = deck_world()
    graph = world.nav_graph
    shade, _ = floors.view_shades(world, [0])  # the agent under the deck: the floor is viewed
    rows = graph_layers.graph_node_ticks(graph, shade).reshape(2, -1, 2, 6)  # a + a node: across, then up
    full, faint = draw.PALETTE["graph_node"][3], draw.PALETTE["graph_node"][3] * floors.SHADED_ALPHA
    alpha = rows[0, :, 0, 5]
    on = graph.walkable & ~shade
    lower = (graph.walkable & shade).sum()
    assert rows.shape[1] == graph.walkable.sum() and lower > 0
    assert np.allclose(alpha[:lower], faint) and np.allclose(rows[1, :lower, :, 5], faint)
    assert np.allclose(alpha[lower:], full) and np.allclose(rows[1, lower:, :, 5], full)
    centres = rows[0].mean(axis=1)[:, :2]
    seen = centres[np.isclose(alpha, full)]
    np.testing.assert_allclose(np.sort(seen, axis=0), np.sort(graph.positions[on, :2], axis=0), atol=1e-5)
    assert (graph.positions[on, 2] < 2.0).all()  # the viewed nodes are the floor's, none of the deck's


def test_an_edge_is_drawn_full_only_when_both_its_nodes_are_on_the_viewed_floor():
    world = deck_world()
    graph = world.nav_graph
    shade, _ = floors.view_shades(world, [1])  # the agent on the deck
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    once = src < dst  # every edge of this graph is two-way: drawn once
    both_on = (~shade[src] & ~shade[dst])[once]
    rows = graph_layers.graph_edge_lines(graph, shade).reshape(-1, 2, 6)
    alpha = rows[:, 0, 5]
    assert rows.shape[0] == once.sum()
    assert np.isclose(alpha, draw.PALETTE["graph_edge"][3]).sum() == both_on.sum() > 0
    assert np.isclose(alpha, draw.PALETTE["graph_edge"][3] * floors.SHADED_ALPHA).sum() == (~both_on).sum() > 0
    assert (np.diff(alpha) >= -1e-7).all()  # the faint ones first


def test_heat_map_and_flow_arrows_of_other_floors_are_fainter_and_under_the_viewed_floors():
    world = deck_world()
    graph = world.nav_graph
    shade, _ = floors.view_shades(world, [])
    distance = np.where(graph.walkable, np.arange(graph.node_count, dtype=float), np.inf)
    direction = np.where(graph.walkable[:, None], 1.0, 0.0) * np.array([1.0, 0.0])
    flow = {"distance": distance, "direction": direction}
    squares = graph_layers.heat_map_triangles(graph, flow, shade).reshape(-1, 6, 6)
    plain = graph_layers.heat_map_triangles(graph, flow).reshape(-1, 6, 6)
    lower = (graph.walkable & shade).sum()
    assert squares.shape == plain.shape and lower > 0
    alpha = plain[0, 0, 5]
    assert np.allclose(plain[:, :, 5], alpha)
    np.testing.assert_allclose(squares[lower:, :, 5], alpha)  # level 0, last (on top), as before
    np.testing.assert_allclose(squares[:lower, :, 5], alpha * floors.SHADED_ALPHA)
    level_0 = np.flatnonzero(graph.walkable & ~shade)
    np.testing.assert_allclose(squares[lower:, 0, 2:5], plain[np.isin(np.flatnonzero(graph.walkable), level_0), 0, 2:5],
                               atol=1e-6)  # colours kept, only reordered
    arrows = graph_layers.flow_field_arrows(graph, flow, shade).reshape(3, -1, 2, 6)  # shafts, then each barb
    assert np.allclose(arrows[:, :lower, 0, 5], draw.PALETTE["flow_arrow"][3] * floors.SHADED_ALPHA)
    assert np.allclose(arrows[:, lower:, 0, 5], draw.PALETTE["flow_arrow"][3])


def test_area_tints_of_other_floors_are_fainter():
    from ecs_nav.nav.areas import NavArea, NavAreas

    world = deck_world()
    graph = world.nav_graph
    shade, _ = floors.view_shades(world, [])
    areas = NavAreas([NavArea("mud", cost=4.0, center=(0.0, 0.0), size=(20.0, 20.0))])
    plain = draw_areas.area_cells(areas, graph)
    rows = draw_areas.area_cells(areas, graph, shade=shade).reshape(-1, 6, 6)
    tint = draw_areas.area_alpha(4.0)
    lower = shade[areas.node_areas(graph) >= 0].sum()
    assert len(plain) == rows.shape[0] * 6 and lower > 0
    np.testing.assert_allclose(rows[:lower, 0, 5], tint * floors.SHADED_ALPHA)
    np.testing.assert_allclose(rows[lower:, 0, 5], tint)


def test_agents_on_another_floor_are_faded_toward_the_background():
    world = deck_world()
    _, shaded = floors.view_shades(world, [1])
    plain = draw.agent_instances(world.table, selected_rows=[1])
    rows = draw.agent_instances(world.table, selected_rows=[1], shaded=shaded)
    background, agent = np.array(draw.PALETTE["background"][:3]), np.array(draw.PALETTE["agent"][:3])
    faded = background + (agent - background) * floors.SHADED_AGENT
    np.testing.assert_allclose(rows[[0, 2], 5:8], [faded, faded], atol=1e-6)
    np.testing.assert_array_equal(rows[1], plain[1])
    np.testing.assert_array_equal(rows[:, [0, 1, 2, 3, 4, 8]], plain[:, [0, 1, 2, 3, 4, 8]])


def test_a_floating_box_is_filled_translucent_with_an_opaque_rim_and_a_standing_box_is_opaque():
    world = deck_world()
    rows = draw.map_triangles(world.map)
    hmax = draw.map_max_height(world.map)
    deck, wall = draw.height_colour(DECK.top, hmax), draw.height_colour(WALL.top, hmax)
    is_deck = np.all(np.isclose(rows[:, 2:5], deck[:3]), axis=1)
    assert sorted(set(np.round(rows[is_deck, 5], 6))) == [draw.FLOATING_ALPHA, 1.0]
    fill = rows[is_deck & np.isclose(rows[:, 5], draw.FLOATING_ALPHA)]
    np.testing.assert_allclose([fill[:, 0].min(), fill[:, 1].min(), fill[:, 0].max(), fill[:, 1].max()],
                               DECK.aabb())
    rim = rows[is_deck & np.isclose(rows[:, 5], 1.0)]
    assert len(rim) == 24  # four rectangles
    inside = (np.abs(rim[:, 0]) < 3 - draw.FLOATING_RIM - 1e-6) & (np.abs(rim[:, 1]) < 10 - draw.FLOATING_RIM - 1e-6)
    assert not inside.any()  # the rim keeps to the edge: the middle stays see-through
    is_wall = np.all(np.isclose(rows[:, 2:5], wall[:3]), axis=1)
    assert is_wall.sum() == 6 and np.allclose(rows[is_wall, 5], 1.0)


# --- a frame of the overpass scene -----------------------------------------------------------------


def frame(world, camera, layers, selected_rows=()):
    """Render ``world`` offscreen through ``camera`` with ``selected_rows`` selected."""
    import ecs_nav.systems.render as render

    system = render.RenderSystem(size=(camera.width, camera.height))
    target = render.Target(camera.width, camera.height)
    target.bind()
    try:
        system.draw(world, camera, layers, selected_rows)
        return target.read()
    finally:
        target.delete()


def rgb_at(image, camera, point) -> np.ndarray:
    x, y = camera.world_to_screen(point)[0]
    return image[camera.height - 1 - int(y), int(x)].astype(int)


@pytest.mark.render
def test_overpass_the_road_agent_under_the_deck_is_drawn_shaded_and_in_full_when_selected(gl_window):
    import ecs_nav
    from ecs_nav.core.components import Name
    from ecs_nav.render.colours import agent_groups

    world = ecs_nav.load_scene("overpass")
    table = world.table
    road = table.row_of(next(e for e, (n,) in world.query(Name) if n.value == "road_1"))
    y = table.pos[road, 1]
    deck = next(b for b in world.map.boxes if b.base > 0 and b.aabb()[1] < y < b.aabb()[3])  # over the road
    x0, y0, x1, y1 = deck.aabb()
    for _ in range(900):  # walk it under the deck's middle
        world.step()
        if x0 + 1.5 < table.pos[road, 0] < x1 - 1.5:
            break
    assert x0 < table.pos[road, 0] < x1 and y0 < table.pos[road, 1] < y1
    assert table.elevation[road] < 0.5  # on the road, not on the deck
    assert world.map.surface_height(table.pos[road:road + 1])[0] == pytest.approx(deck.top)
    camera = draw.Camera(width=960, height=720)
    camera.fit(draw.map_bounds(world))
    layers = {"map", "agents"}
    ground = frame(world, camera, {"map"})
    seen, selected = frame(world, camera, layers), frame(world, camera, layers, [road])
    colour = np.asarray(agent_groups(world, draw.PALETTE).row_colour[road][:3])
    centre = table.pos[road] - table.heading[road] * 0.3 * table.radius[road]  # off the heading tick
    faded = floors.faded_rgb(colour, draw.PALETTE["background"])
    assert np.abs(rgb_at(seen, camera, centre) - np.round(faded * 255)).max() <= 12  # drawn, shaded
    assert np.abs(rgb_at(selected, camera, centre) - np.round(colour * 255)).max() <= 12  # its floor: in full
    assert np.abs(rgb_at(ground, camera, centre) - rgb_at(seen, camera, centre)).max() > 30  # not hidden
    # the road's wall shows through the deck: the deck's fill blends over it
    wall = next(b for b in world.map.boxes if b.base <= world.map.floor and b.aabb()[0] < x0 and b.aabb()[2] > x1
                and y0 < b.center[1] < y1)  # a wall the deck crosses
    hmax = draw.map_max_height(world.map)
    plain = draw.height_colour(wall.top - world.map.floor, hmax)[:3]
    top = draw.height_colour(deck.top - world.map.floor, hmax)[:3]
    blend = plain * (1 - draw.FLOATING_ALPHA) + top * draw.FLOATING_ALPHA
    assert np.abs(rgb_at(ground, camera, ((x0 + x1) / 2, wall.center[1])) - np.round(blend * 255)).max() <= 12
    beside = ((x1 + wall.aabb()[2]) / 2, wall.center[1])  # the same wall beyond the deck
    assert np.abs(rgb_at(ground, camera, beside) - np.round(plain * 255)).max() <= 12
