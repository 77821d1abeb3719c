"""Several walkable surfaces over one spot: the scan's floors, against scipy's shortest paths.

The map: a road along x on the ground, and a bridge deck along y over it (a box floating from
3.0 to 3.5 m) reached by two ramps; a road user walks under the deck, a bridge user over it.
"""

import math

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Ramp
from ecs_nav.nav import astar, find_path, flow_field
from ecs_nav.nav.build import MAX_FLOORS, ScanParams, rebuild_region, scan_heightfield

DECK = Box((0.0, 0.0), (6.0, 30.0), 0.5, base=3.0)
RAMPS = [Ramp((0.0, -25.0), (0.0, -15.0), 6.0, 0.0, 3.5), Ramp((0.0, 25.0), (0.0, 15.0), 6.0, 0.0, 3.5)]


def bridge(extra=()):
    return MapGeometry((-30.0, -30.0, 30.0, 30.0), boxes=[DECK, *extra], ramps=RAMPS)


def params(floors=2, **kw):
    return ScanParams(scan_range=(30.0, 20.0, 30.0), spacing=1.0, clearance=0.5, floors=floors, **kw)


@pytest.fixture(scope="module")
def graph():
    return scan_heightfield(bridge(), params())


def test_one_floor_is_the_scan_of_the_highest_surface():
    one = scan_heightfield(bridge(), params(floors=1))
    two = scan_heightfield(bridge(), params())
    slots = one.grid.slots
    assert two.node_count == 2 * slots and one.node_count == slots
    np.testing.assert_array_equal(one.positions, two.positions[:slots])
    # under the deck the road is the second surface; nowhere else is there one
    under = np.flatnonzero(two.walkable[slots:])
    xy = two.positions[slots + under, :2]
    assert under.size > 0
    assert np.all(np.abs(xy[:, 0]) <= 3.0 + 1e-9) and np.all(np.abs(xy[:, 1]) <= 15.0 + 1e-9)
    np.testing.assert_array_equal(two.positions[slots + under, 2], 0.0)


def test_a_point_snaps_to_the_level_of_its_elevation(graph):
    deck = graph.nearest_node((0.0, 0.0), 3.5)
    road = graph.nearest_node((0.0, 0.0), 0.0)
    assert graph.level_of_node(deck) == 0 and graph.positions[deck, 2] == 3.5
    assert graph.level_of_node(road) == 1 and graph.positions[road, 2] == 0.0
    assert graph.cell_of_node(deck) == graph.cell_of_node(road)
    assert graph.nearest_node((0.0, 0.0)) == deck  # no elevation: the highest
    np.testing.assert_array_equal(graph.cell_nodes(np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]),
                                                   np.array([0.2, 3.3, 1.7]), graph.max_climb), [road, deck, -1])


def test_the_road_passes_under_the_bridge_and_the_bridge_over_the_road(graph):
    west, east = graph.nearest_node((-20.0, 0.0), 0.0), graph.nearest_node((20.0, 0.0), 0.0)
    under = find_path(graph, west, east)
    assert under.cost == pytest.approx(40.0)
    assert np.all(graph.positions[under.nodes, 2] == 0.0)
    south, north = graph.nearest_node((0.0, -28.0), 0.0), graph.nearest_node((0.0, 28.0), 0.0)
    over = find_path(graph, south, north)
    assert over.cost == pytest.approx(56.0)
    at_road = graph.positions[over.nodes]
    assert np.all(at_road[np.abs(at_road[:, 1]) < 1.0, 2] == 3.5)  # over the road, on the deck


def test_costs_equal_scipy_on_the_graph_of_two_floors(graph):
    rng = np.random.default_rng(3)
    walk = np.flatnonzero(graph.walkable)
    sources = rng.choice(walk, 6, replace=False)
    reference = dijkstra(graph.to_scipy(), indices=sources)
    for i, s in enumerate(sources):
        for t in rng.choice(walk, 25, replace=False):
            want = reference[i, t]
            got = astar(graph, int(s), int(t)).cost
            assert (math.isinf(want) and math.isinf(got)) or got == pytest.approx(want, abs=1e-9)


def test_a_region_rebuild_keeps_ids_and_equals_a_full_scan():
    crate = Box((-6.0, 0.0), (2.0, 2.0), 1.0)  # on the road, beside the deck
    low = Box((1.0, 8.0), (1.0, 1.0), 1.0)  # on the road, under the deck
    geometry = bridge()
    before = scan_heightfield(geometry, params())
    for shape in (crate, low):
        geometry.add(shape)
        before = rebuild_region(before, geometry, params(), shape.aabb())
    full = scan_heightfield(geometry, params())
    assert before.node_count == full.node_count
    np.testing.assert_array_equal(before.positions, full.positions)
    assert before.to_scipy().toarray().tolist() == full.to_scipy().toarray().tolist()


def test_a_flow_field_samples_the_level_of_each_point(graph):
    goal = graph.nearest_node((25.0, 0.0), 0.0)
    field = flow_field(graph, [goal])
    reference = dijkstra(graph.reverse().to_scipy(), indices=[goal])[0]
    np.testing.assert_allclose(field.distance, reference)
    points = np.array([[0.0, 0.3], [0.0, 0.3]])
    _, on_road = field.sample(points[:1], np.array([0.0]))
    _, on_deck = field.sample(points[1:], np.array([3.5]))
    road, deck = graph.nearest_node((0.0, 0.0), 0.0), graph.nearest_node((0.0, 0.0), 3.5)
    assert on_road[0] == pytest.approx(reference[road], abs=1.0)
    assert on_deck[0] == pytest.approx(reference[deck], abs=1.0)
    assert on_deck[0] > on_road[0] + 20.0  # off the deck by a ramp first


def test_drops_from_the_deck_land_on_the_road_below():
    p = params(max_drop=4.0)
    g = scan_heightfield(MapGeometry((-30.0, -30.0, 30.0, 30.0), boxes=[DECK]), p)
    drops = g.kinds == 1
    src, dst = g.edge_sources()[drops], g.indices[drops]
    assert src.size > 0
    np.testing.assert_array_equal(g.positions[src, 2], 3.5)
    np.testing.assert_array_equal(g.positions[dst, 2], 0.0)
    assert np.all(g.positions[dst, 2] < g.positions[src, 2])


def test_floors_out_of_range_are_refused():
    for bad in (0, MAX_FLOORS + 1, 1.5, True):
        with pytest.raises(ValueError, match="floors"):
            params(floors=bad)


def test_the_physics_keeps_a_walker_on_its_own_floor_under_and_over_the_deck():
    geometry = bridge()
    # under the deck across its width (x -8 -> 4 at y = 0, on the road), and along it over the
    # road (y -5 -> 7 at x = 0, on the deck), in steps of 0.5 m
    start = np.array([[-8.0, 0.0], [0.0, -5.0]])
    elevation = np.array([0.0, 3.5])
    pos = start.copy()
    for _ in range(24):
        target = pos + np.array([[0.5, 0.0], [0.0, 0.5]])
        pos, elevation = geometry.resolve_circles(pos, target, 0.4, elevation, 0.5)
        np.testing.assert_array_equal(elevation, [0.0, 3.5])  # under it stays under, over stays over
    np.testing.assert_allclose(pos, [[4.0, 0.0], [0.0, 7.0]])


def bridge_scene(starts, method="flow_field"):
    """The bridge map as a scene of two floors, walkers at ``starts`` sent to the road's east end."""
    walker = {"Agent": {"max_speed": 2.0, "max_force": 20.0, "mass": 0.0167, "stopping_distance": 0.5},
              "Collider": {"radius": 0.4}, "Velocity": {},
              "SteeringWeights": {"weights": {"follow_path": 1.0}}}
    return {
        "world": {"seed": 1},
        "map": {"bounds": [-30, -30, 30, 30],
                "box": [{"center": [0, 0], "size": [6, 30], "height": 0.5, "base": 3.0}],
                "ramp": [{"start": [0, -25], "end": [0, -15], "width": 6, "low": 0.0, "high": 3.5},
                         {"start": [0, 25], "end": [0, 15], "width": 6, "low": 0.0, "high": 3.5}]},
        "navmap": {"scan_range": [30, 20, 30], "spacing": 0.5, "clearance": 0.5, "floors": 2},
        "prefab": {"walker": walker},
        "entity": [{"prefab": "walker", "Position": {"x": x, "y": y},
                    "PathRequest": {"goal": [25, 0], "method": method}} for x, y in starts],
    }


@pytest.mark.parametrize("method", ["flow_field", "path"])
def test_followers_on_the_road_pass_under_and_one_on_the_deck_comes_down_a_ramp(method):
    from ecs_nav.core.events import TargetReached
    from ecs_nav.scene.files import build_world, scene_from_dict

    world = build_world(scene_from_dict(bridge_scene([(-20.0, 0.0), (0.0, -5.0)], method)))
    arrived = []
    world.on(TargetReached, lambda ev: arrived.append(ev.entity))
    t = world.table
    assert t.elevation[0] == 0.0 and t.elevation[1] == 3.5  # spawned on the road, on the deck
    under = 0
    for _ in range(3000):
        world.step()
        assert t.elevation[0] == 0.0  # never lifted onto the deck it walks under
        under += abs(t.pos[0, 0]) < 2.0
        if len(arrived) == 2:
            break
    assert sorted(arrived) == sorted(world.entities()) and under > 0
    np.testing.assert_allclose(t.pos[:2], [[25.0, 0.0], [25.0, 0.0]], atol=1.5)
    np.testing.assert_array_equal(t.elevation[:2], 0.0)


def test_the_reachability_check_reads_the_floor_a_goal_names():
    from ecs_nav.scene.files import build_world, scene_from_dict
    from ecs_nav.scene.reachability import unreachable_goals

    # a closed room (x -10..-2) under an upper floor reached by a ramp: upstairs is reachable,
    # the room under it is not
    scene = bridge_scene([(20.0, -20.0)], method="path")
    scene["map"]["box"] = [
        {"center": [-6, 0], "size": [8, 8], "height": 0.5, "base": 3.0},
        {"center": [-6, 3.7], "size": [8, 0.6], "height": 3.0},
        {"center": [-6, -3.7], "size": [8, 0.6], "height": 3.0},
        {"center": [-9.7, 0], "size": [0.6, 8], "height": 3.0},
        {"center": [-2.3, 0], "size": [0.6, 8], "height": 3.0},
    ]
    scene["map"]["ramp"] = [{"start": [-6, -14], "end": [-6, -4], "width": 4, "low": 0.0, "high": 3.5}]
    up, down = ({"goal": [-6, 0], "goal_elevation": z} for z in (3.5, 0.0))
    scene["entity"] = [{"prefab": "walker", "name": name, "Position": {"x": 20, "y": -20}, "PathRequest": request}
                       for name, request in (("up", up), ("down", down))]
    world = build_world(scene_from_dict(scene))
    world.step()
    lines = unreachable_goals(world)
    assert len(lines) == 1 and lines[0].startswith('entity "down": goal (-6, 0) at elevation 0 unreachable from 1 of 1')
    gap = float(lines[0].split("(")[-1].split(" m")[0])
    assert gap >= 0.5  # a wall's width or a floor's height apart, in 3-D: not the 0 m of the plan view
