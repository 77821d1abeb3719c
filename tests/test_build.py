"""The heightfield scan (seed 000's AIGraph): nodes, clearance, climb and corner rules, rebuilds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components, dijkstra

from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp
from ecs_nav.nav.build import ScanParams, path_crosses_region, rebuild_region, region_nodes, scan_heightfield
from ecs_nav.nav.graph import EDGE_LINK, EDGE_WALK, NavGraph

# --- the seed's scene --------------------------------------------------------------------------------

WALL_HEIGHT = 3.0


def chase_geometry(with_ramps: bool = True) -> MapGeometry:
    """Seed 000's scene: an 80 x 80 m floor centred on the origin, a few boxes, a 7 m thick,
    3 m high wall spanning the map east-west (y in [-3.5, 3.5]), a ramp up its south face at
    x = -20 and a ramp down its north face at x = +20 (16 m long, 8 m wide: 0.375 m per 2 m
    step), a cylinder. The NPC starts south-west (-30, -30), the player north-east (30, 30)."""
    boxes = [
        Box(center=(0.0, 0.0), size=(80.0, 7.0), height=WALL_HEIGHT),  # the wall
        Box(center=(-10.0, -28.0), size=(6.0, 4.0), height=2.0),
        Box(center=(12.0, -14.0), size=(4.0, 4.0), height=1.5),
        Box(center=(-18.0, 26.0), size=(4.0, 8.0), height=2.5),
        Box(center=(26.0, 30.0), size=(6.0, 3.0), height=1.0),
    ]
    ramps = [
        Ramp(start=(-20.0, -19.5), end=(-20.0, -3.5), width=8.0, low=0.0, high=WALL_HEIGHT),  # up, south
        Ramp(start=(20.0, 19.5), end=(20.0, 3.5), width=8.0, low=0.0, high=WALL_HEIGHT),  # down, north
    ]
    circles = [Circle(center=(6.0, -24.0), radius=1.5, height=2.0)]
    return MapGeometry((-40.0, -40.0, 40.0, 40.0), boxes, ramps if with_ramps else [], circles)


NPC_START = (-30.0, -30.0)
PLAYER_START = (30.0, 30.0)


def shortest_path(graph: NavGraph, start: int, goal: int) -> list[int]:
    dist, pred = dijkstra(graph.to_scipy(), indices=start, return_predecessors=True)
    if not np.isfinite(dist[goal]):
        return []
    path = [goal]
    while path[-1] != start:
        path.append(int(pred[path[-1]]))
    return path[::-1]


def assert_same_graph(a: NavGraph, b: NavGraph):
    assert a.grid == b.grid
    np.testing.assert_array_equal(a.positions, b.positions)  # NaN == NaN here
    np.testing.assert_array_equal(a.walkable, b.walkable)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.costs, b.costs)
    np.testing.assert_array_equal(a.kinds, b.kinds)


def assert_symmetric(graph: NavGraph):
    m = graph.to_scipy()
    assert (m != m.T).nnz == 0


# --- parameters ----------------------------------------------------------------------------------


def test_scan_params_keep_the_seed_tuple_order():
    p = ScanParams()
    assert p.scan_range == (40.0, 10.0, 40.0)
    assert (p.half_x, p.ray_height, p.half_y) == (40.0, 10.0, 40.0)
    q = ScanParams(scan_range=(30.0, 12.0, 20.0))
    assert (q.cols, q.rows) == (30, 20)
    assert q.grid().origin == (-30.0, -20.0)
    assert ScanParams(clearance=1.25, agent_radius=2.0).radius == 2.0


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"spacing": 0.0}, "spacing"),
        ({"spacing": float("nan")}, "spacing"),
        ({"max_climb": -1.0}, "max_climb"),
        ({"clearance": -0.1}, "clearance"),
        ({"agent_radius": float("inf")}, "agent_radius"),
        ({"scan_range": (40.0, 10.0)}, "scan_range"),
        ({"scan_range": (-1.0, 10.0, 40.0)}, r"scan_range\[0\]"),
    ],
)
def test_scan_params_validate(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ScanParams(**kwargs)


# --- node validity -----------------------------------------------------------------------------------


def test_seed_grid_on_an_empty_floor():
    g = scan_heightfield(MapGeometry((-40, -40, 40, 40)), ScanParams())
    assert g.node_count == (2 * 40 // 2) * (2 * 40 // 2) == 1600  # the seed's node count
    xy = g.positions[:, :2]
    assert xy.min(axis=0).tolist() == [-40.0, -40.0] and xy.max(axis=0).tolist() == [38.0, 38.0]
    # the map's edge is a ledge: the row and column on it are dropped
    edge = (xy[:, 0] == -40) | (xy[:, 1] == -40)
    assert not g.walkable[edge].any() and g.walkable[~edge].all()
    assert np.all(g.positions[g.walkable, 2] == 0.0) and np.all(np.isnan(g.positions[~g.walkable, 2]))
    n = 39
    assert g.edge_count == 2 * (2 * n * (n - 1) + 2 * (n - 1) ** 2)
    assert set(np.round(g.costs, 9)) == {2.0, round(2 * math.sqrt(2), 9)}
    assert_symmetric(g)


def rect_distance(points, center, size):
    d = np.maximum(np.abs(points - np.asarray(center)) - np.asarray(size) / 2, 0.0)
    return np.hypot(d[:, 0], d[:, 1])


def within_bounds(graph, half, r):
    """The map's edge is a ledge: the node's clearance disc must fit inside the map."""
    return np.all(np.abs(graph.positions[:, :2]) + r <= half, axis=1)


SMALL = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=0.5)


@pytest.mark.parametrize("agent_radius", [0.0, 2.0])
def test_clearance_keeps_nodes_off_walls(agent_radius):
    center, size = (0.3, 0.2), (3.0, 2.0)
    geometry = MapGeometry((-11, -11, 11, 11), boxes=[Box(center, size, 3.0)])
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=0.5, agent_radius=agent_radius)
    g = scan_heightfield(geometry, params)
    d = rect_distance(g.positions[:, :2], center, size)
    r = max(1.25, agent_radius)
    np.testing.assert_array_equal(g.walkable, (d >= r) & within_bounds(g, 11.0, r))


def test_clearance_keeps_nodes_off_ledges_on_a_platform():
    center, size = (0.3, 0.2), (9.0, 7.0)
    geometry = MapGeometry((-11, -11, 11, 11), boxes=[Box(center, size, 3.0)])
    g = scan_heightfield(geometry, SMALL)
    xy = g.positions[:, :2]
    inside = np.all(np.abs(xy - center) <= np.asarray(size) / 2, axis=1)
    edge_distance = np.min(np.asarray(size) / 2 - np.abs(xy - center), axis=1)
    on_top = inside & (edge_distance >= 1.25)
    on_floor = ~inside & (rect_distance(xy, center, size) >= 1.25)
    np.testing.assert_array_equal(g.walkable, (on_top | on_floor) & within_bounds(g, 11.0, 1.25))
    assert np.all(g.positions[on_top, 2] == 3.0)
    # the top and the floor are not linked
    _, labels = connected_components(g.to_scipy(), directed=False)
    assert not set(labels[on_top]) & set(labels[on_floor])


def test_literal_corner_reading_would_miss_a_wall_face():
    # the seed's rule read literally rejects only corner squares; ours keeps a node 0.5 from the
    # middle of a long wall's face off the graph
    geometry = MapGeometry((-11, -11, 11, 11), boxes=[Box((0, 0), (10, 1), 3.0)])
    g = scan_heightfield(geometry, SMALL)
    assert g.node_at_cell(20, 19) is None  # world (0, 1.0): 0.5 from the face at y = 0.5
    node = g.nearest_node((0.0, 2.0))
    assert node is not None and np.allclose(g.node_position(node), [0.0, 2.0, 0.0])


def test_climb_rule_steps_and_platforms():
    geometry = MapGeometry(
        (-11, -11, 11, 11),
        boxes=[Box((-5.0, 0.0), (4.0, 4.0), 0.4), Box((5.0, 0.0), (6.0, 6.0), 0.6)],
    )
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=1.0, link_lift=0.5)
    g = scan_heightfield(geometry, params)
    step = g.nearest_node((-5.0, 0.0))
    assert g.node_position(step)[2] == pytest.approx(0.4)
    assert g.walkable[g.nearest_node((-7.5, 0.0), search_cells=0)]  # beside the step: no wall
    # a 0.4 step is climbed: the step's nodes link to the floor
    _, labels = connected_components(g.to_scipy(), directed=False)
    assert labels[step] == labels[g.nearest_node((-9.0, 0.0))]
    # a 0.6 platform is a wall: no links up, floor nodes keep their distance
    top = g.nearest_node((5.0, 0.0))
    assert g.node_position(top)[2] == pytest.approx(0.6)
    assert labels[top] != labels[step]
    assert g.node_at_cell(11, 10) is None  # world (1, 0): 1 m from the platform's face


def test_climb_rule_on_a_steep_ramp():
    # 0.6 per 2 m along the ramp: no links up or down its slope, links across it
    geometry = MapGeometry((-11, -11, 11, 11), ramps=[Ramp((0, -5), (0, 5), 10.0, 0.0, 3.0)])
    g = scan_heightfield(geometry, ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=2.0))
    mid = g.nearest_node((0.0, 0.0))
    assert g.node_position(mid)[2] == pytest.approx(1.5)
    nbrs = g.neighbours(mid)
    assert set(np.round(g.positions[nbrs, 1] - g.positions[mid, 1], 9)) == {0.0}
    assert len(nbrs) == 2


def test_links_do_not_cut_box_corners():
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=2.0, clearance=0.0)
    pillar = MapGeometry((-11, -11, 11, 11), boxes=[Box((1.0, 1.0), (0.4, 0.4), 3.0)])
    g = scan_heightfield(pillar, params)
    a, b = g.nearest_node((0, 0)), g.nearest_node((2, 2))
    c, d = g.nearest_node((2, 0)), g.nearest_node((0, 2))
    assert g.distance(a, b) == math.inf and g.distance(c, d) == math.inf  # both diagonals cut it
    assert g.distance(a, c) == 2.0 and g.distance(a, d) == 2.0  # the sides pass by it
    assert g.distance(c, b) == 2.0 and g.distance(d, b) == 2.0
    empty = scan_heightfield(MapGeometry((-11, -11, 11, 11)), params)
    assert empty.distance(a, b) == pytest.approx(2 * math.sqrt(2))


def test_links_do_not_cut_stair_edges():
    # a narrow ramp between two rows of floor nodes: a link across it where its top is above
    # the lifted link is cut; near its foot (lower than the 0.2 lift) the link passes over
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=2.0, clearance=0.0)
    geometry = MapGeometry((-11, -11, 11, 11), ramps=[Ramp((-9.0, 1.0), (9.0, 1.0), 1.0, 0.0, 3.0)])
    g = scan_heightfield(geometry, params)
    low = (g.nearest_node((-8, 0)), g.nearest_node((-8, 2)))  # ramp top at x = -8: 0.17
    high = (g.nearest_node((6, 0)), g.nearest_node((6, 2)))  # ramp top at x = 6: 2.5
    assert g.distance(*low) == 2.0
    assert g.distance(*high) == math.inf


def test_link_lift_decides_climbable_step_edges():
    # a 0.3 step whose edge is 0.5 from the lower node: the seed's 0.2 lift refuses the link
    geometry = MapGeometry((-11, -11, 11, 11), boxes=[Box((3.0, 0.0), (5.0, 20.0), 0.3)])  # x >= 0.5
    seed = scan_heightfield(geometry, ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=2.0, clearance=0.0))
    lifted = scan_heightfield(
        geometry, ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=2.0, clearance=0.0, link_lift=0.5)
    )
    a, b = seed.nearest_node((0, 0)), seed.nearest_node((2, 0))
    assert seed.positions[b, 2] == pytest.approx(0.3)
    assert seed.distance(a, b) == math.inf
    assert lifted.distance(a, b) == 2.0


# --- the chase scene ---------------------------------------------------------------------------


def test_chase_scene_connects_the_two_sides_only_over_the_ramps():
    geometry = chase_geometry()
    g = scan_heightfield(geometry, ScanParams())
    assert g.node_count == 1600
    assert_symmetric(g)
    npc, player = g.nearest_node(NPC_START, 0.0), g.nearest_node(PLAYER_START, 0.0)
    path = shortest_path(g, npc, player)
    assert path, "the two sides must be connected"
    heights = g.positions[path, 2]
    ys = g.positions[path, 1]
    on_wall = heights == WALL_HEIGHT
    assert on_wall.any() and np.all(np.abs(ys[on_wall]) <= 3.5)
    on_ramp = (heights > 0) & (heights < WALL_HEIGHT)
    assert on_ramp.sum() >= 2 * 6  # up one ramp, down the other
    ramp_x = g.positions[path, 0][on_ramp]
    assert set(np.unique(np.sign(ramp_x))) == {-1.0, 1.0}
    assert np.all(np.abs(np.diff(heights)) <= 0.5)
    # no floor node beside the wall's face; ramp and wall-top nodes exist
    xy = g.positions[:, :2]
    beside_face = (np.abs(np.abs(xy[:, 1]) - 4.0) < 1e-9) & (np.abs(np.abs(xy[:, 0]) - 20) > 4)
    assert not g.walkable[beside_face].any()
    # without the ramps the wall splits the map
    flat = scan_heightfield(chase_geometry(with_ramps=False), ScanParams())
    assert shortest_path(flat, flat.nearest_node(NPC_START, 0.0), flat.nearest_node(PLAYER_START, 0.0)) == []


def test_chase_scene_floor_reaches_wall_top_only_through_ramp_nodes():
    g = scan_heightfield(chase_geometry(), ScanParams())
    src = g.edge_sources()
    h_src, h_dst = g.positions[src, 2], g.positions[g.indices, 2]
    floor_to_wall = ((h_src == 0) & (h_dst == WALL_HEIGHT)) | ((h_src == WALL_HEIGHT) & (h_dst == 0))
    assert not floor_to_wall.any()
    # every link touching a wall-top node from off the wall comes from a ramp
    y_src, y_dst = g.positions[src, 1], g.positions[g.indices, 1]
    onto_wall = (h_dst == WALL_HEIGHT) & (np.abs(y_dst) < 3.5) & (np.abs(y_src) > 3.5)
    assert onto_wall.any() and np.all((h_src[onto_wall] > 0) & (h_src[onto_wall] < WALL_HEIGHT))


# --- dynamic rebuilds ----------------------------------------------------------------------------


def test_rebuild_region_equals_a_full_rebuild_on_the_chase_scene():
    geometry = chase_geometry()
    params = ScanParams()
    g = scan_heightfield(geometry, params)
    box_id = 2  # the box at (12, -14)
    changes = [
        lambda: geometry.move(box_id, (15.0, -20.0)),
        lambda: geometry.remove(5),  # the south ramp
        lambda: geometry.shape(geometry.add(Circle((-5.0, 10.0), 2.0, 2.0))).aabb(),
        lambda: geometry.move(box_id, Box((0.0, 20.0), (10.0, 1.0), 3.0)),
    ]
    for change in changes:
        aabb = change()
        g = rebuild_region(g, geometry, params, aabb)
        assert_same_graph(g, scan_heightfield(geometry, params))
    assert g.version == len(changes)
    # the south ramp is gone: the two sides are apart again
    assert shortest_path(g, g.nearest_node(NPC_START, 0.0), g.nearest_node(PLAYER_START, 0.0)) == []


def test_rebuild_region_keeps_off_mesh_links_whose_ends_still_stand():
    geometry = MapGeometry((-10, -10, 10, 10), boxes=[Box((0, 0), (1, 1), 3.0)])
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=1.0, clearance=0.3)
    scan = scan_heightfield(geometry, params)
    cols = scan.grid.cols

    def node(x, y):  # the slot at (x, y) on this 1 m grid from (-10, -10)
        return (y + 10) * cols + (x + 10)

    # one-way links next to the box: into (-1, 1), out of (0, 1), and into (1, 0), which the
    # move below puts on the box's edge (a ledge: not walkable)
    links = [(node(-8, -8), node(-1, 1), 2.0), (node(0, 1), node(-8, -8), 3.0), (node(-8, 8), node(1, 0), 4.0)]
    src = np.concatenate([scan.edge_sources(), [a for a, _, _ in links]])
    dst = np.concatenate([scan.indices, [b for _, b, _ in links]])
    cost = np.concatenate([scan.costs, [c for _, _, c in links]])
    kinds = np.concatenate([scan.kinds, np.full(len(links), EDGE_LINK, np.uint8)])
    g = NavGraph.from_edges(scan.positions, scan.walkable, src, dst, cost, scan.grid, kinds,
                            scan.max_climb)
    aabb = geometry.move(0, (0.5, 0.0))
    region = region_nodes(g, params, aabb)
    assert {node(-1, 1), node(0, 1), node(1, 0)} <= set(region.tolist())
    g = rebuild_region(g, geometry, params, aabb)
    assert not g.walkable[node(1, 0)]
    for a, b, c in links[:2]:
        assert g.distance(a, b) == c, "the rebuild dropped the link"
        lo, hi = g.indptr[a], g.indptr[a + 1]
        assert g.kinds[lo:hi][g.indices[lo:hi] == b].tolist() == [EDGE_LINK]
    assert g.kinds.tolist().count(EDGE_LINK) == 2
    # everything else is the scan of the moved geometry
    walk = g.kinds == EDGE_WALK
    full = scan_heightfield(geometry, params)
    np.testing.assert_array_equal(g.positions, full.positions)
    assert sorted(zip(g.edge_sources()[walk].tolist(), g.indices[walk].tolist(), strict=True)) == sorted(
        zip(full.edge_sources().tolist(), full.indices.tolist(), strict=True)
    )


@st.composite
def edits(draw):
    shapes = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["box", "circle", "ramp"]))
        x, y = draw(st.floats(-9, 9)), draw(st.floats(-9, 9))
        if kind == "box":
            shapes.append(Box((x, y), (draw(st.floats(0.2, 5)), draw(st.floats(0.2, 5))),
                              draw(st.sampled_from([0.3, 1.0, 3.0]))))
        elif kind == "circle":
            shapes.append(Circle((x, y), draw(st.floats(0.2, 2)), 2.0))
        else:
            angle = draw(st.floats(0, 2 * math.pi))
            shapes.append(Ramp((x, y), (x + 6 * math.cos(angle), y + 6 * math.sin(angle)), 3.0, 0.0, 1.0))
    moves = draw(st.lists(st.tuples(st.integers(0, 5), st.floats(-9, 9), st.floats(-9, 9),
                                    st.booleans()), min_size=1, max_size=4))
    return shapes, moves


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=edits())
def test_rebuild_region_equals_a_full_rebuild_random(case):
    shapes, moves = case
    geometry = MapGeometry((-10, -10, 10, 10), boxes=[s for s in shapes if isinstance(s, Box)],
                           ramps=[s for s in shapes if isinstance(s, Ramp)],
                           circles=[s for s in shapes if isinstance(s, Circle)])
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=1.0)
    g = scan_heightfield(geometry, params)
    for index, x, y, remove in moves:
        ids = sorted(geometry.shapes)
        if not ids:
            break
        sid = ids[index % len(ids)]
        aabb = geometry.remove(sid) if remove else geometry.move(sid, (x, y))
        g = rebuild_region(g, geometry, params, aabb)
        assert_same_graph(g, scan_heightfield(geometry, params))


def test_path_crosses_region():
    geometry = chase_geometry()
    params = ScanParams()
    g = scan_heightfield(geometry, params)
    path = shortest_path(g, g.nearest_node(NPC_START, 0.0), g.nearest_node(PLAYER_START, 0.0))
    assert path_crosses_region(g, params, path, (-21.0, -10.0, -19.0, -9.0))  # on the south ramp
    assert not path_crosses_region(g, params, path, (30.0, -35.0, 35.0, -30.0))  # far away
    assert not path_crosses_region(g, params, [], (-21.0, -10.0, -19.0, -9.0))
    nodes = region_nodes(g, params, (0.0, 0.0, 0.0, 0.0))
    # the slots within max(1.25, 2 * sqrt(2)) of the origin's box
    d = np.abs(g.positions[nodes, :2]).max(axis=1)
    assert np.all(d <= 2 * math.sqrt(2)) and len(nodes) == 9
