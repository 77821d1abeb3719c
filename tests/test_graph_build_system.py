"""GraphBuildSystem: the graph of a scene (heightfield scan or tile grid), the scan parameters it
uses, and dynamic box obstacles (map updates, regional rebuilds, stale paths)."""

from __future__ import annotations

import sys
from pathlib import Path as FilePath

import numpy as np
import pytest
from ecs_nav.systems.graph_build import GraphBuildSystem
from scipy.sparse.csgraph import connected_components

from ecs_nav.core.components import Agent, Collider, NavMap, Path, Position, Velocity
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.build import ScanParams, scan_heightfield
from ecs_nav.scene.files import build_world, scene_from_dict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CHASE = FilePath(__file__).resolve().parent.parent / "scenes" / "chase.toml"
WALL_HEIGHT = 3.0


def chase_world(edit=None) -> World:
    data = tomllib.loads(CHASE.read_text(encoding="utf-8"))
    data["world"]["systems"] = ["graph_build"]
    if edit is not None:
        edit(data)
    return build_world(scene_from_dict(data, source=str(CHASE), base_dir=CHASE.parent))


def assert_same_graph(a, b):
    assert a.grid == b.grid
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.walkable, b.walkable)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.costs, b.costs)


def component_of(graph, node: int) -> np.ndarray:
    _, labels = connected_components(graph.to_scipy(), directed=True, connection="strong")
    return labels == labels[node]


def open_world(half=20.0, navmap=True) -> World:
    world = World()
    world.map = MapGeometry((-half, -half, half, half))
    if navmap:
        world.navmap = NavMap(scan_range=(half, 10.0, half))
    world.add_systems(GraphBuildSystem())
    return world


def crate(world: World, x: float, y: float, size=(4.0, 4.0), height=2.0) -> int:
    return world.spawn(Position(x, y), Collider(shape="box", size=size, height=height))


# --- the chase scene ---------------------------------------------------------------------------------


def test_chase_scene_graph_connects_floor_and_wall_top_only_through_the_ramps():
    world = chase_world()
    world.step()
    g = world.nav_graph
    assert g.node_count == 1600 and g.version == 0
    params = world.resources["nav_params"]
    assert params.scan_range == (40.0, 10.0, 40.0) and params.center == (0.0, 0.0)
    assert params.agent_radius == 0.5 and params.radius == 1.25
    src = g.edge_sources()
    h_src, h_dst = g.positions[src, 2], g.positions[g.indices, 2]
    assert not (((h_src == 0) & (h_dst == WALL_HEIGHT)) | ((h_src == WALL_HEIGHT) & (h_dst == 0))).any()
    y_src, y_dst = g.positions[src, 1], g.positions[g.indices, 1]
    onto_wall = (h_dst == WALL_HEIGHT) & (np.abs(y_dst) < 3.5) & (np.abs(y_src) > 3.5)
    assert onto_wall.any() and np.all((h_src[onto_wall] > 0) & (h_src[onto_wall] < WALL_HEIGHT))
    # every link between a floor node and a wall-top node's component goes through ramp nodes:
    # the floor of both sides and the wall top form one component, joined at the ramps
    npc, player = g.nearest_node((-30.0, -30.0), 0.0), g.nearest_node((30.0, 30.0), 0.0)
    assert component_of(g, npc)[player]
    ramp_nodes = (g.positions[:, 2] > 0) & (g.positions[:, 2] < WALL_HEIGHT)
    assert set(np.unique(np.sign(g.positions[ramp_nodes, 0]))) == {-1.0, 1.0}


def test_chase_scene_without_ramps_splits_the_two_sides():
    world = chase_world(lambda d: d["map"].pop("ramp"))
    world.step()
    g = world.nav_graph
    npc, player = g.nearest_node((-30.0, -30.0), 0.0), g.nearest_node((30.0, 30.0), 0.0)
    assert not component_of(g, npc)[player]


def test_the_scene_graph_is_the_plain_scan_of_its_map():
    world = chase_world()
    world.step()
    expected = scan_heightfield(world.map, ScanParams(agent_radius=0.5))
    assert_same_graph(world.nav_graph, expected)


# --- scan parameters ------------------------------------------------------------------------------------


def test_the_largest_agent_radius_sets_the_clearance():
    world = open_world()
    world.spawn(Position(0, 0), Agent(), Collider(radius=0.5))
    world.spawn(Position(5, 5), Agent(), Collider(radius=2.0))
    world.spawn(Position(9, 9), Collider(radius=3.0))  # not an agent: does not count
    world.step()
    params = world.resources["nav_params"]
    assert params.agent_radius == 2.0 and params.radius == 2.0
    assert_same_graph(world.nav_graph, scan_heightfield(world.map, params))


def test_without_a_navmap_the_scan_covers_the_map_bounds():
    world = World()
    world.map = MapGeometry((10.0, -6.0, 30.0, 6.0), [Box((20.0, 0.0), (2.0, 2.0), 4.0)])
    world.add_systems(GraphBuildSystem())
    world.step()
    params = world.resources["nav_params"]
    assert params.center == (20.0, 0.0)
    assert params.scan_range == (10.0, 5.0, 6.0)  # ray height: 1 m above the highest top
    g = world.nav_graph
    assert (g.grid.cols, g.grid.rows) == (10, 6) and g.walkable.any()
    assert g.positions[g.walkable, 0].min() >= 10.0 and g.positions[g.walkable, 0].max() <= 30.0


def test_no_map_no_graph():
    world = World()
    world.add_systems(GraphBuildSystem())
    world.run(2)
    assert world.nav_graph is None


def test_a_tile_grid_scene_builds_an_octile_grid_graph():
    grid = "\n".join(["......", ".@@...", "......", "...@.."])
    data = {"world": {"systems": ["graph_build"]}, "map": {"grid": grid, "cell_size": 2.0, "origin": [-6, -4]}}
    world = build_world(scene_from_dict(data))
    world.step()
    g = world.nav_graph
    assert (g.grid.cols, g.grid.rows) == (6, 4)
    assert g.node_at_cell(1, 1) is None and g.node_at_cell(3, 3) is None
    a = g.node_at_cell(0, 0)
    np.testing.assert_allclose(g.node_position(a), (-5.0, 3.0, 0.0))
    assert g.distance(a, g.node_at_cell(1, 0)) == 2.0
    assert g.distance(g.node_at_cell(3, 2), g.node_at_cell(4, 3)) == np.inf  # no corner cutting past (3, 3)
    assert g.distance(g.node_at_cell(4, 2), g.node_at_cell(5, 3)) == pytest.approx(2.0 * np.sqrt(2.0))
    # a dynamic box on a tile map blocks the cells under it
    box = crate(world, 3.0, 1.0, size=(1.5, 1.5))
    world.step()
    g2 = world.nav_graph
    assert g2.version == 1
    assert g2.node_at_cell(4, 1) is None and g.node_at_cell(4, 1) is not None
    world.despawn(box)
    world.step()
    np.testing.assert_array_equal(world.nav_graph.walkable, g.walkable)


# --- dynamic obstacles ------------------------------------------------------------------------------------


def test_obstacles_present_at_the_start_are_in_the_first_graph():
    world = open_world()
    crate(world, 4.0, 4.0)
    world.step()
    gb = world.system("GraphBuildSystem")
    assert gb.rebuilds == 0 and len(world.map.boxes) == 1
    assert world.map.boxes[0] == Box((4.0, 4.0), (4.0, 4.0), 2.0)
    assert_same_graph(world.nav_graph, scan_heightfield(world.map, world.resources["nav_params"]))
    assert world.nav_graph.positions[12 * 20 + 12, 2] == 2.0  # the slot at (4, 4) is on the box top


def test_moving_spawning_and_despawning_boxes_rebuild_exactly_the_changed_regions():
    world = open_world()
    world.spawn(Position(-5.0, 0.0), Agent(), Collider(radius=0.5), Velocity())  # an agent: not an obstacle
    world.step()
    params = world.resources["nav_params"]
    empty = world.nav_graph
    gb = world.system("GraphBuildSystem")
    a = crate(world, 6.0, 6.0)
    world.step()
    assert gb.last_changes == [(4.0, 4.0, 8.0, 8.0)] and world.nav_graph.version == 1
    assert_same_graph(world.nav_graph, scan_heightfield(world.map, params))
    b = crate(world, -8.0, 8.0, size=(2.0, 6.0), height=1.0)
    world.get(a, Position).x = 10.0
    world.step()
    assert len(gb.last_changes) == 2 and world.nav_graph.version == 3
    assert_same_graph(world.nav_graph, scan_heightfield(world.map, params))
    world.step()  # nothing moved: nothing rebuilt
    assert gb.last_changes == [] and world.nav_graph.version == 3
    world.despawn(a)
    world.despawn(b)
    world.step()
    assert world.map.shapes == {}
    assert_same_graph(world.nav_graph, empty)
    assert gb.rebuilds == 5


def test_only_paths_crossing_a_changed_region_go_stale():
    world = open_world()
    world.step()
    g = world.nav_graph
    row = lambda y: [g.nearest_node((x, y), 0.0) for x in range(-12, 13, 2)]  # noqa: E731
    near = world.spawn(Position(0.0, 0.0))
    far = world.spawn(Position(0.0, -14.0))
    fixed = world.spawn(Position(0.0, 5.0))
    unreachable = world.spawn(Position(0.0, 6.0))
    world.add_component(near, Path(nodes=row(0.0), waypoints=g.positions[row(0.0)], status="complete"))
    world.add_component(far, Path(nodes=row(-14.0), waypoints=g.positions[row(-14.0)], status="partial"))
    world.add_component(fixed, Path(waypoints=[[-5.0, 0.0], [5.0, 0.0]], status="none"))
    world.add_component(unreachable, Path(status="unreachable"))
    crate(world, 0.0, 2.5, size=(2.0, 1.0))  # beside the y = 0 row: its links may change
    world.step()
    assert world.get(near, Path).status == "stale"
    assert world.get(far, Path).status == "partial"
    assert world.get(fixed, Path).status == "none"
    assert world.get(unreachable, Path).status == "unreachable"


def test_obstacle_bookkeeping_is_in_the_state_digest():
    digests = []
    for x in (3.0, 3.5):
        world = open_world()
        world.step()
        box = crate(world, 0.0, 0.0)
        world.step()
        world.get(box, Position).x = x
        world.step()
        digests.append(world.state_digest())
        world.close()
    assert digests[0] != digests[1]


@pytest.mark.parametrize("shape", ["circle"])
def test_non_box_colliders_are_not_obstacles(shape):
    world = open_world()
    world.spawn(Position(0.0, 0.0), Collider(radius=1.0, shape=shape))
    world.step()
    assert world.map.shapes == {}
