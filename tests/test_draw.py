"""The pyglet-free half of rendering: camera maths and the vertex arrays of every layer."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ecs_nav.core.components import Agent, Collider, Path, Player, Position, Velocity
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp
from ecs_nav.nav.build import ScanParams, scan_heightfield
from ecs_nav.render import draw, graph_layers
from ecs_nav.render import panel as draw_panel
from ecs_nav.render import paths as draw_paths


def small_world() -> World:
    world = World(seed=3)
    world.map = MapGeometry((-20, -12, 20, 12), boxes=[Box((0, 5), (10, 1), 3.0), Box((-10, -5), (2, 6), 1.0)],
                            ramps=[Ramp((5, -8), (15, -8), 3.0, 0.0, 2.0)], circles=[Circle((-12, 6), 2.0, 1.5)])
    world.spawn(Position(-5, 0), Velocity(1, 0.5), Agent(), Collider(radius=0.8))
    world.spawn(Position(8, 2), Velocity(0, -2), Agent(), Collider(radius=0.6), Player())
    world.spawn(Position(0, -6), Collider(radius=1.0))  # a body that is not an Agent
    return world


# --- camera -------------------------------------------------------------------------------------


def test_camera_round_trip_and_fit():
    cam = draw.Camera(width=800, height=400)
    cam.fit((-20, -10, 20, 10), margin=0.0)
    assert cam.center == (0.0, 0.0)
    assert cam.scale == pytest.approx(20.0)  # 800 px / 40 units, 400 / 20 both give 20
    corners = cam.world_to_screen([(-20, -10), (20, 10)])
    np.testing.assert_allclose(corners, [(0, 0), (800, 400)])
    points = np.random.default_rng(0).uniform(-50, 50, (10, 2))
    np.testing.assert_allclose(cam.screen_to_world(cam.world_to_screen(points)), points)


def test_camera_zoom_keeps_the_point_under_the_cursor_and_pan_follows_the_mouse():
    cam = draw.Camera(center=(3.0, -2.0), scale=10.0, width=640, height=480)
    anchor = cam.screen_to_world((100, 50))[0]
    cam.zoom_at(100, 50, 2.0)
    assert cam.scale == 20.0
    np.testing.assert_allclose(cam.screen_to_world((100, 50))[0], anchor)
    before = cam.screen_to_world((300, 300))[0]
    cam.pan(40, -20)  # drag right/down: the ground under the mouse moves with it
    np.testing.assert_allclose(cam.screen_to_world((340, 280))[0], before)
    cam.zoom_at(0, 0, 1e9)
    assert cam.scale == cam.max_scale


def test_camera_matrix_maps_the_view_to_clip_space():
    cam = draw.Camera(center=(5.0, 1.0), scale=4.0, width=200, height=100)
    m = cam.matrix().reshape(4, 4).T  # column-major → row-major
    x0, y0, x1, y1 = cam.visible_bounds()
    for (x, y), clip in (((x0, y0), (-1, -1)), ((x1, y1), (1, 1)), ((5.0, 1.0), (0, 0))):
        np.testing.assert_allclose((m @ [x, y, 0, 1])[:2], clip, atol=1e-6)


# --- layers ---------------------------------------------------------------------------------------


def test_map_triangles_shade_by_height_and_draw_taller_pieces_last():
    world = small_world()
    rows = draw.map_triangles(world.map)
    assert rows.dtype == np.float32 and rows.shape[1] == 6 and rows.shape[0] % 3 == 0
    hmax = draw.map_max_height(world.map)
    assert hmax == 3.0
    np.testing.assert_allclose(rows[0, 2:], draw.PALETTE["floor"])  # the floor first
    np.testing.assert_allclose(rows[-1, 2:], draw.height_colour(3.0, hmax), atol=1e-6)  # the 3 m wall last

    def has(colour):
        return bool(np.isclose(rows[:, 2:], colour, atol=1e-5).all(axis=1).any())

    assert has(draw.height_colour(1.0, hmax))  # the 1 m box
    # the ramp is a gradient: its low edge has the "low" colour, its high edge the colour of 2 m
    assert has(draw.height_colour(0.0, hmax)) and has(draw.height_colour(2.0, hmax))


def test_height_colour_runs_from_low_to_high():
    np.testing.assert_allclose(draw.height_colour(0.0, 2.0), draw.PALETTE["low"])
    np.testing.assert_allclose(draw.height_colour(2.0, 2.0), draw.PALETTE["high"])
    np.testing.assert_allclose(draw.height_colour(5.0, 2.0), draw.PALETTE["high"])  # clamped


def test_graph_layers_draw_each_undirected_edge_once():
    world = small_world()
    graph = scan_heightfield(world.map, ScanParams(scan_range=(20, 10, 12), spacing=2.0))
    edges = graph_layers.graph_edge_lines(graph)
    assert edges.shape[0] == 2 * (graph.indices.shape[0] // 2)  # all links are two-way here
    ticks = graph_layers.graph_node_ticks(graph)
    assert ticks.shape[0] == 4 * int(graph.walkable.sum())


def test_flow_field_and_heat_map_only_where_reachable():
    world = small_world()
    graph = scan_heightfield(world.map, ScanParams(scan_range=(20, 10, 12), spacing=2.0))
    n = graph.node_count
    distance = np.where(graph.walkable, np.arange(n, dtype=float), np.inf)
    distance[np.flatnonzero(graph.walkable)[:5]] = np.inf  # five cut-off nodes
    direction = np.zeros((n, 2))
    direction[graph.walkable] = (1.0, 0.0)
    flow = {"distance": distance, "direction": direction}
    heat = graph_layers.heat_map_triangles(graph, flow)
    assert heat.shape[0] == 6 * (int(graph.walkable.sum()) - 5)
    arrows = graph_layers.flow_field_arrows(graph, flow)
    assert arrows.shape[0] == 6 * int(graph.walkable.sum())
    assert graph_layers.heat_map_triangles(graph, None).shape == (0, 6)
    assert graph_layers.flow_field_arrows(None, flow).shape == (0, 6)


def test_path_lines_fade_the_walked_part_and_link_the_agent():
    world = small_world()
    entity = world.entities()[0]
    path = Path(waypoints=[(0, 0), (4, 0), (4, 4), (8, 4)], index=2)
    rows = draw_paths.path_lines([(entity, path)], world.table)
    # 3 segments, + on waypoints 2 and 3 (2 segments each), one agent → waypoint link
    assert rows.shape[0] == 2 * 3 + 4 * 2 + 2
    alphas = rows[:6, 5]
    walked = draw.PALETTE["path"][3] * draw_paths.WALKED_ALPHA
    np.testing.assert_allclose(alphas, [walked] * 4 + [draw.PALETTE["path"][3]] * 2, rtol=1e-6)
    np.testing.assert_allclose(rows[-2, :2], world.table.pos[world.table.row_of(entity)])
    np.testing.assert_allclose(rows[-1, :2], (4, 4))
    assert draw_paths.path_lines([], world.table).shape == (0, 6)
    assert draw_paths.path_lines([(entity, Path())], world.table).shape == (0, 6)


def test_agent_instances_colour_agents_players_and_bodies():
    world = small_world()
    table = world.table
    player_rows = table.rows_of(np.array(world.find(Player)))
    inst = draw.agent_instances(table, player_rows, selected_rows=[0])
    assert inst.shape == (3, 9) and inst.dtype == np.float32
    np.testing.assert_allclose(inst[:, :2], table.live("pos"))
    np.testing.assert_allclose(inst[:, 2], [0.8, 0.6, 1.0])
    np.testing.assert_allclose(inst[0, 5:8], draw.PALETTE["agent"][:3])
    np.testing.assert_allclose(inst[1, 5:8], draw.PALETTE["player"][:3])
    np.testing.assert_allclose(inst[2, 5:8], draw.PALETTE["body"][:3])
    assert inst[:, 8].tolist() == [1.0, 0.0, 0.0]


def test_velocity_and_steer_target_lines():
    world = small_world()
    table = world.table
    vel = draw.velocity_lines(table)
    assert vel.shape[0] == 2 * 3 * 2  # two moving rows, an arrow of 3 segments each
    # the arrow starts on the rim and is velocity * VELOCITY_SECONDS long
    np.testing.assert_allclose(vel[0, :2], (8, 2 - 0.6) if table.vel[0, 0] == 0 else
                               np.array((-5, 0)) + 0.8 * np.array((1, 0.5)) / np.hypot(1, 0.5), rtol=1e-5)
    assert draw_paths.steer_target_lines(table).shape == (0, 6)
    table.steer_target[0] = (3, 3)
    table.has_steer_target[0] = True
    assert draw_paths.steer_target_lines(table).shape[0] == 2 + 4 + 2 * 12  # line, +, ring


def test_pick_row_finds_the_nearest_agent_under_the_point():
    world = small_world()
    assert draw.pick_row(world.table, (-5.3, 0.2)) == 0
    assert draw.pick_row(world.table, (8.0, 2.7)) == 1
    assert draw.pick_row(world.table, (15.0, 10.0)) == -1


def test_hud_lines_name_tick_time_agents_and_systems():
    world = small_world()
    world.run(30)
    lines = draw_panel.hud_lines(world, fps=59.94, ms_per_tick={"PhysicsSystem": 0.25}, speed=2.0)
    assert lines[0] == "tick 30   time 0.50 s" and lines[1] == "agents 2"
    assert "fps  59.9" in lines[2] and "speed x2" in lines[2]
    assert lines[3].split() == ["Physics", "0.250", "ms/tick"]
    assert "paused" in draw_panel.hud_lines(world, paused=True)[2]


def test_map_bounds_fall_back_without_a_map():
    world = World()
    assert draw.map_bounds(world) == (-10.0, -10.0, 10.0, 10.0)
    world.spawn(Position(3, 4))
    assert draw.map_bounds(world) == (1.0, 2.0, 5.0, 6.0)


def test_headless_simulation_never_imports_pyglet():
    code = (
        "import sys\n"
        "import ecs_nav, ecs_nav.render.draw, ecs_nav.render.viewer, ecs_nav.systems, ecs_nav.systems.render\n"
        "from ecs_nav import World, Position, Velocity, Agent, Collider\n"
        "w = World(); w.spawn(Position(0, 0), Velocity(1, 0), Agent(), Collider()); w.run(10)\n"
        "assert not any(m == 'pyglet' or m.startswith('pyglet.') for m in sys.modules), 'pyglet imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(draw.__file__).rsplit("/ecs_nav/", 1)[0])
