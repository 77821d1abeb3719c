"""The viewer's explaining layers without GL: scene [view] layers, group colours,
path bands and loops, goal rings, one-way edge arrows, labels and the side panel."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.core.components import (
    Agent,
    Collider,
    Name,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    Velocity,
)
from ecs_nav.core.world import World
from ecs_nav.nav.graph import EDGE_DROP, EDGE_WALK, GridIndex, NavGraph
from ecs_nav.render import colours as draw_colours
from ecs_nav.render import draw, graph_layers
from ecs_nav.render import labels as draw_labels
from ecs_nav.render import panel as draw_panel
from ecs_nav.render import paths as draw_paths
from ecs_nav.scene.files import build_world, parse_scene
from ecs_nav.scene.schema import SceneError, parse_text

SCENE = """
[view]
layers = ["map", "graph_edges", "agents"]
[[entity]]
name = "walker"
Position = { x = 0, y = 0 }
"""


def named_world() -> World:
    world = World(seed=1)
    world.spawn(Position(0, 0), Velocity(1, 0), Agent(), Collider(radius=0.5), Player(), Name("player"))
    for x in (4.0, 6.0, 8.0):
        world.spawn(Position(x, 0), Velocity(0, 1), Agent(), Collider(radius=0.4), Name("crowd"))
    world.spawn(Position(0, 6), Velocity(0, 0), Agent(), Collider(radius=0.5), Name("hunter"),
                SteeringWeights(weights={"pursuit": 1.0, "wall_avoidance": 3.0}))
    world.spawn(Position(-6, 0), Agent(), Collider(radius=0.5))  # unnamed
    return world


# --- [view] --------------------------------------------------------------------------------------


def test_a_scene_view_table_chooses_the_layers_that_start_on():
    world = build_world(parse_text(SCENE, source="s.toml"))
    assert draw.default_layers(world) == {"map", "graph_edges", "agents"}
    assert draw.default_layers(World()) == draw.DEFAULT_LAYERS
    assert not {"graph_edges", "graph_nodes", "flow_field", "heat_map"} & draw.DEFAULT_LAYERS


def test_an_unknown_view_layer_is_reported_with_a_suggestion():
    with pytest.raises(SceneError) as info:
        parse_text('[view]\nlayers = ["map", "grpah_edges"]\nzoom = 3\n', source="s.toml")
    message = str(info.value)
    assert "s.toml: view.layers: unknown layer 'grpah_edges' (did you mean \"graph_edges\"?)" in message
    assert "s.toml: view.zoom: unknown key" in message
    with pytest.raises(SceneError, match="view.layers: must be a list of layer names"):
        parse_text('[view]\nlayers = "map"\n', source="s.toml")


def test_crowd_scenes_start_with_agents_and_no_velocity_noise():
    for name in ("crowd", "evacuation"):
        layers = set(parse_scene(name).view["layers"])
        assert "agents" in layers and "velocity" not in layers and "graph_edges" not in layers, name
    assert "heat_map" in parse_scene("evacuation").view["layers"]


# --- colours ---------------------------------------------------------------------------------------


def test_viridis_gets_lighter_from_near_to_far():
    rgb = draw_colours.viridis(np.linspace(0, 1, 50))[:, :3]
    luminance = rgb @ [0.2126, 0.7152, 0.0722]
    assert np.all(np.diff(luminance) > 0)
    np.testing.assert_allclose(draw_colours.viridis(0.0)[:3], draw_colours.VIRIDIS[0])
    np.testing.assert_allclose(draw_colours.viridis(2.0)[:3], draw_colours.VIRIDIS[-1])  # clamped


def test_each_named_group_has_one_colour_and_the_player_keeps_its_blue():
    world = named_world()
    players = world.table.rows_of(np.array(world.find(Player)))
    groups = draw_colours.agent_groups(world, draw.PALETTE, players)
    assert groups.names == ["player", "crowd", "hunter"]
    assert groups.sizes.tolist() == [1, 3, 1]
    rows = world.table.rows_of(np.array(world.find(Name)))
    colours = groups.row_colour
    np.testing.assert_allclose(colours[players[0]], draw.PALETTE["player"])
    crowd = [r for r in rows if groups.row_group[r] == 1]
    assert len(crowd) == 3 and np.allclose(colours[crowd], draw_colours.GROUP_COLOURS[1])
    np.testing.assert_allclose(colours[world.table.n - 1], draw.PALETTE["agent"])  # unnamed
    inst = draw.agent_instances(world.table, players, row_colour=colours)
    np.testing.assert_allclose(inst[:, 5:8], colours[:, :3], atol=1e-6)


# --- paths ------------------------------------------------------------------------------------------


def test_a_loop_is_closed_and_a_patrol_walking_back_fades_what_is_behind_it():
    square = [(0, 0), (4, 0), (4, 4), (0, 4)]
    loop = draw_paths.path_lines([(99, Path(waypoints=square, mode="loop"))])
    starts, ends = loop[0::2, :2], loop[1::2, :2]
    assert any(np.allclose(s, (0, 4)) and np.allclose(e, (0, 0)) for s, e in zip(starts[:4], ends[:4], strict=True))
    once = draw_paths.path_lines([(99, Path(waypoints=square, mode="once"))])
    assert loop.shape[0] - once.shape[0] == 2  # one closing segment more
    back = Path(waypoints=square, mode="patrol", index=1, direction=-1)  # walking from 3 back to 1
    rows = draw_paths.path_lines([(99, back)])
    alpha = rows[:6:2, 5]  # segments 0-1, 1-2, 2-3
    bright = draw.PALETTE["path"][3]
    np.testing.assert_allclose(alpha, [bright, bright * draw_paths.WALKED_ALPHA, bright * draw_paths.WALKED_ALPHA],
                               rtol=1e-6)


def test_the_path_band_is_as_wide_as_the_path_radius():
    band = draw_paths.path_bands([(1, Path(waypoints=[(0, 0), (10, 0)], radius=2.0))], [(1, 0, 0, 1)])
    assert band.shape[0] > 0 and band.shape[0] % 3 == 0
    np.testing.assert_allclose(band[:, 1].min(), -2.0, atol=1e-5)
    np.testing.assert_allclose(band[:, 1].max(), 2.0, atol=1e-5)
    np.testing.assert_allclose(band[:, 5], draw_paths.BAND_ALPHA, rtol=1e-6)
    many = [(i, Path(waypoints=[(0, 0), (1, 0)])) for i in range(draw_paths.BAND_PATH_LIMIT + 1)]
    assert draw_paths.path_bands(many).shape == (0, 6)


def test_a_goal_shared_by_many_agents_is_marked_once_in_their_colour():
    world = named_world()
    crowd = [e for e, (n,) in world.query(Name) if n.value == "crowd"]
    requests = [(e, PathRequest(goal=(10.0, 10.0))) for e in crowd]
    groups = draw_colours.agent_groups(world, draw.PALETTE)
    rows = draw_paths.goal_markers([], requests, world.table, groups.row_colour)
    assert rows.shape[0] == 2 * 2 * 24  # two rings of 24 segments, once
    centre = (rows[:, :2].min(axis=0) + rows[:, :2].max(axis=0)) / 2
    np.testing.assert_allclose(centre, (10, 10), atol=1e-6)
    np.testing.assert_allclose(rows[0, 2:5], draw_colours.GROUP_COLOURS[1][:3], atol=1e-6)
    # a path's end is marked only when no request says where the agent is going
    path = Path(waypoints=[(0, 0), (3, 3)])
    assert draw_paths.goal_markers([(crowd[0], path)], requests[:1]).shape[0] == 96
    assert draw_paths.goal_markers([(crowd[0], path)], []).shape[0] == 96


def test_velocity_lines_are_left_out_for_agents_drawn_small():
    world = named_world()
    moving = int(np.count_nonzero(np.hypot(*world.table.live("vel").T) > 0))
    assert draw.velocity_lines(world.table).shape[0] == moving * 6
    # 0.4 m agents at 9 px/m are 3.6 px (< VELOCITY_MIN_PIXELS), the 0.5 m ones 4.5 px
    assert draw.velocity_lines(world.table, pixels_per_unit=9.0).shape[0] == 1 * 6
    assert draw.velocity_lines(world.table, pixels_per_unit=1.0).shape == (0, 6)


# --- graph ------------------------------------------------------------------------------------------


def test_one_way_edges_get_an_arrowhead_in_their_kind_colour():
    grid = GridIndex(origin=(0.0, 0.0), spacing=2.0, rows=1, cols=3)
    positions = np.array([[0, 0, 0], [2, 0, 0], [4, 0, -1]], dtype=float)
    graph = NavGraph.from_edges(positions, np.ones(3, bool), src=[0, 1, 1], dst=[1, 0, 2], costs=[2, 2, 2],
                                grid=grid, kinds=[EDGE_WALK, EDGE_WALK, EDGE_DROP])
    rows = graph_layers.graph_edge_lines(graph)
    assert rows.shape[0] == 2 + 3 * 2  # the two-way pair once, the drop as shaft + two barbs
    np.testing.assert_allclose(rows[2:, 2:], np.tile(draw.PALETTE["graph_drop"], (6, 1)), atol=1e-6)
    np.testing.assert_allclose(rows[4::2, :2], [(4, 0)] * 2)  # both barbs leave the far end (4, 0)
    assert np.all(rows[5::2, 0] < 4)  # and point back along the edge


# --- labels and the panel -------------------------------------------------------------------------


def test_labels_name_each_group_with_what_it_runs_and_do_not_overlap():
    world = named_world()
    groups = draw_colours.agent_groups(world, draw.PALETTE)
    camera = draw.Camera(width=800, height=600)
    camera.fit((-10, -10, 10, 10))
    labels = draw_labels.agent_labels(world, camera, groups)
    texts = [label.text for label in labels]
    assert texts == ["player", "crowd ×3", "hunter: pursuit"]
    np.testing.assert_allclose(labels[2].colour, draw_colours.GROUP_COLOURS[2])
    x, y = camera.world_to_screen((0, 6))[0]
    box = draw_labels.label_box(labels[2])
    assert 0 < box[0] - x < 20 and box[1] < y < box[3] and labels[2].leader is None  # right of the hunter
    far = draw.Camera(width=800, height=600, scale=0.5)  # 20 m is 10 px: beside each other they would overlap
    spread = draw_labels.agent_labels(world, far, groups)
    assert [label.text for label in spread] == ["player", "crowd ×3", "hunter: pursuit"]
    boxes = [draw_labels.label_box(label) for label in spread]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])  # none over another
    assert draw_labels.agent_labels(world, camera, groups, left=800) == []  # all under the panel


def test_the_side_panel_lists_events_the_legend_and_the_selected_agent():
    world = named_world()
    hunter = next(e for e, (n,) in world.query(Name) if n.value == "hunter")
    world.add_component(hunter, Path(waypoints=[(0, 6), (3, 6), (3, 10)], index=1, status="complete"))
    world.event_counts["Stuck"] += 2
    groups = draw_colours.agent_groups(world, draw.PALETTE)
    lines = draw_panel.panel_lines(world, ["tick 0"], {"map", "paths", "agents", "velocity"}, groups, [hunter])
    text = [line.text for line in lines]
    assert any(t.split() == ["Stuck", "2"] for t in text) and any(t.split() == ["PathFailed", "0"] for t in text)
    swatches = {line.text: line.swatch for line in lines if line.swatch is not None}
    assert swatches["velocity (0.5 s ahead)"] == draw.PALETTE["velocity"]
    assert swatches["crowd ×3"] == tuple(draw_colours.GROUP_COLOURS[1])
    assert "graph edges" not in swatches  # only the layers that are on
    assert f"selected: hunter #{hunter}" in text
    assert "  waypoint 2/3 (3.0, 6.0)" in text
    assert "  left 7.0 m" in text  # 3 m to the waypoint, 4 m on to the end
    assert any(t.split()[:2] == ["pursuit", "w"] for t in text)


def test_the_panel_width_leaves_most_of_a_small_window_to_the_map():
    assert draw_panel.side_panel_width(1280) == draw_panel.SIDE_PANEL_PIXELS
    assert draw_panel.side_panel_width(300) == 100


def test_the_panel_shows_each_behaviours_force_only_when_given_them():
    world = named_world()
    hunter = next(e for e, (n,) in world.query(Name) if n.value == "hunter")
    plain = draw_panel.agent_state_lines(world, hunter)
    behaviour_lines = [t.split() for t in plain if t.split()[0] in ("pursuit", "wall")]
    assert behaviour_lines == [["wall", "avoidance", "w", "3.00"], ["pursuit", "w", "1.00"]]  # no made-up forces
    forces = {"pursuit": (3.0, 4.0), "wall avoidance": (0.0, -1.5), "separation": (0.6, 0.8)}
    lines = draw_panel.agent_state_lines(world, hunter, forces)
    assert len(lines) == len(plain) + 1  # separation: given a force, listed though its weight is 0
    rows = {t.split("w ")[0].strip(): t.split() for t in lines if t.endswith(" N") and "force" not in t}
    assert rows["pursuit"] == ["pursuit", "w", "1.00", "5.0", "N"]  # |(3, 4)| = 5
    assert rows["wall avoidance"] == ["wall", "avoidance", "w", "3.00", "1.5", "N"]
    assert rows["separation"] == ["separation", "w", "0.00", "1.0", "N"]
    panel = [line.text for line in draw_panel.panel_lines(world, [], {"agents"}, None, [hunter], forces)]
    assert "  pursuit          w 1.00    5.0 N" in panel
    assert all(len(t) <= 36 for t in lines)  # fits the panel


def test_a_path_followers_label_says_where_its_path_leads():
    world = World(seed=1)
    follow = {"follow_path": 1.0, "wall_avoidance": 2.0}
    player = world.spawn(Position(0, 0), Agent(), Collider(radius=0.5), Name("player"))
    npc = world.spawn(Position(20, 0), Agent(), Collider(radius=0.5), Name("npc"), SteeringWeights(weights=follow))
    world.add_component(npc, PathRequest(target=player))
    guard = world.spawn(Position(0, 20), Agent(), Collider(radius=0.5), Name("guard"), SteeringWeights(weights=follow))
    world.add_component(guard, Path(waypoints=[(0, 20), (10, 20)], mode="patrol"))
    crowd = [world.spawn(Position(20 + i, 20), Agent(), Collider(radius=0.5), Name("crowd"),
                         SteeringWeights(weights=follow)) for i in range(3)]
    for e in crowd:
        world.add_component(e, PathRequest(goals=((0.0, 0.0), (30.0, 30.0)), method="flow_field"))
    camera = draw.Camera(width=1000, height=800)
    camera.fit((-5, -5, 35, 35))
    groups = draw_colours.agent_groups(world, draw.PALETTE)
    texts = {label.text for label in draw_labels.agent_labels(world, camera, groups)}
    assert texts == {"player", "npc: follow path to player", "guard: patrol path",
                     "crowd ×3: follow field to nearest goal"}
    world.add_component(npc, PathRequest(goal=(5.0, 5.0)))
    assert draw_labels.path_words(world, npc) == "follow path to goal"


# --- the avoidance layer ---------------------------------------------------------------------------


def test_the_avoidance_layer_draws_each_half_plane_its_forbidden_side_and_both_velocities():
    from ecs_nav.motion.avoidance_trace import AvoidanceTrace
    from ecs_nav.render.avoidance import AVOIDANCE_SECONDS, HATCH_LENGTH, LINE_REACH, half_plane_lines

    assert half_plane_lines(None).shape == (0, 6) and half_plane_lines(AvoidanceTrace(entity=3)).shape == (0, 6)
    speed, origin = 2.0, np.array([10.0, -4.0])
    trace = AvoidanceTrace(entity=3, position=origin, max_speed=speed, obstacle_lines=1, tick=5,
                           lines=np.array([[0.0, 1.0, -1.0, 0.0],     # a wall's: vy <= 1 (the left of -x)
                                           [0.5, 0.0, 0.0, 1.0],      # an agent's: vx <= 0.5
                                           [0.0, 9.0, 1.0, 0.0]]),    # beyond the drawn disc: not drawn
                           preferred=np.array([1.5, 0.0]), chosen=np.array([0.5, 0.2]))
    rows = half_plane_lines(trace)
    assert rows.dtype == np.float32
    xy, rgba = rows[:, :2].astype(np.float64), rows[:, 2:].astype(np.float64)

    def lines_of(colour):
        mask = np.all(np.isclose(rgba, colour, atol=1e-6), axis=1)
        return xy[mask].reshape(-1, 2, 2)

    def velocity(p):
        return (p - origin) / AVOIDANCE_SECONDS

    def cross(a, b):
        return a[..., 0] * b[1] - a[..., 1] * b[0]

    reach = LINE_REACH * speed
    for colour, (point, direction) in ((draw.PALETTE["orca_wall"], ([0.0, 1.0], [-1.0, 0.0])),
                                       (draw.PALETTE["orca_agent"], ([0.5, 0.0], [0.0, 1.0]))):
        drawn = velocity(lines_of(colour))
        boundary, ticks = drawn[0], drawn[1:]
        # the boundary runs along the line, from rim to rim of the disc LINE_REACH times the speed
        assert np.allclose(np.hypot(*boundary.T), reach)
        assert np.allclose(cross(boundary - np.array(point), direction), 0.0)
        # each tick starts on the boundary and points to its forbidden side, the right of its direction
        assert len(ticks) >= 4 and np.allclose(cross(ticks[:, 0] - np.array(point), direction), 0.0)
        right = np.array([direction[1], -direction[0]])
        assert np.allclose(ticks[:, 1] - ticks[:, 0], HATCH_LENGTH * right)
    for colour, tip in ((draw.PALETTE["orca_preferred"], trace.preferred), (draw.PALETTE["orca_chosen"],
                                                                             trace.chosen)):
        drawn = velocity(lines_of(colour))
        assert np.allclose(drawn[0], [[0.0, 0.0], tip])  # a line from the agent to the velocity's point
        assert np.allclose(drawn[1:].reshape(-1, 2).mean(axis=0), tip)  # its + or ring round the tip
    ring = velocity(lines_of(draw.PALETTE["orca_speed"]))
    assert np.allclose(np.hypot(*ring.reshape(-1, 2).T), speed)
    assert rows.shape[0] == sum(len(lines_of(draw.PALETTE[c])) * 2 for c in
                                ("orca_wall", "orca_agent", "orca_preferred", "orca_chosen", "orca_speed"))


def test_the_panel_says_whose_avoidance_it_shows_or_asks_for_a_selection():
    from ecs_nav.motion.avoidance_trace import AvoidanceTrace

    hint = [line.text for line in draw_panel.legend_lines({"avoidance"})]
    assert "  select an agent to see its" in hint
    trace = AvoidanceTrace(entity=4, lines=np.zeros((3, 4)), obstacle_lines=1, chosen=np.array([0.6, 0.8]), tick=9)
    shown = [line.text for line in draw_panel.legend_lines({"avoidance"}, avoidance=trace)]
    assert "  #4: 2 agents, 1 wall, 1.00 m/s, tick 9" in shown
