"""Flow fields: seed 003 worked by hand, the subdivision fix, and the exact sampled field checked
against scipy, brute-force line of sight and agents walking it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components
from scipy.sparse.csgraph import dijkstra as scipy_dijkstra

from ecs_nav.nav import (
    FlowField,
    GridIndex,
    NavGraph,
    flow_field,
    grid_graph,
    heat_map,
    line_of_sight,
    parse_ascii_grid,
    seed_field,
    subdivide,
    tile_directions,
    vector_field,
)
from ecs_nav.nav.graph import EDGE_DROP
from ecs_nav.nav.sight import sees_node, sight_grid

S2 = 1 / math.sqrt(2)
S5 = 1 / math.sqrt(5)


# --- seed 003 as written: hand-worked grids -------------------------------------------------------

L_MAP = """
....
.#..
G...
"""


def test_heat_map_is_the_brushfire_worked_by_hand():
    g = grid_graph(parse_ascii_grid(L_MAP))  # node id = world row * 4 + col; world row 0 = last line
    heat = heat_map(g, g.node_at_cell(0, 2))
    assert heat.dtype == np.int32
    assert heat.tolist() == [0, 1, 2, 3,
                             1, -1, 3, 4,
                             2, 3, 4, 5]  # fmt: skip


def test_vector_field_points_downhill_worked_by_hand():
    """x = h(left) - h(right), y = h(down) - h(up); a blocked or missing side takes the tile's own."""
    g = grid_graph(parse_ascii_grid(L_MAP))
    vectors = vector_field(g, heat_map(g, g.node_at_cell(0, 2)))
    expected = [
        [-S2, -S2], [-1, 0], [-2 * S5, -S5], [-S2, -S2],  # world row 0 (the goal's line)
        [0, -1], [0, 0], [-S5, -2 * S5], [-S5, -2 * S5],  # row 1: the blocked tile has none
        [-S2, -S2], [-1, 0], [-2 * S5, -S5], [-S2, -S2],  # row 2 (the first text line)
    ]
    np.testing.assert_allclose(vectors, expected, atol=1e-15)


def one_way_row() -> NavGraph:
    """Three slots in a row: 0 <-> 1 walkable, 1 -> 2 a drop that cannot be climbed back."""
    positions = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, -1]])
    return NavGraph.from_edges(positions, np.ones(3, bool), [0, 1, 1], [1, 0, 2], [1.0, 1.0, 1.0],
                               GridIndex((0.0, 0.0), 1.0, 1, 3), kinds=[0, 0, EDGE_DROP])  # fmt: skip


def test_heat_map_and_vectors_follow_one_way_drops_in_the_walking_direction():
    g = one_way_row()
    assert heat_map(g, 2).tolist() == [2, 1, 0]
    assert heat_map(g, 0).tolist() == [0, 1, -1]  # 2 cannot climb back to 1
    np.testing.assert_allclose(vector_field(g, heat_map(g, 2)), [[1, 0], [1, 0], [0, 0]])
    # to 0: tile 1's right neighbour is unreachable, so it takes tile 1's own heat
    np.testing.assert_allclose(vector_field(g, heat_map(g, 0)), [[-1, 0], [-1, 0], [0, 0]])


@pytest.mark.parametrize("seed", range(4))
def test_subdividing_a_tile_grid_equals_the_grid_at_half_the_cell_size(seed):
    blocked = np.random.default_rng(seed).random((7, 9)) < 0.3
    fine = subdivide(grid_graph(blocked, cell_size=2.0, origin=(1.0, -3.0)))
    ref = grid_graph(np.kron(blocked, np.ones((2, 2), bool)), cell_size=1.0, origin=(1.0, -3.0))
    assert fine.grid == ref.grid
    np.testing.assert_array_equal(fine.walkable, ref.walkable)
    np.testing.assert_allclose(fine.positions[ref.walkable], ref.positions[ref.walkable])
    np.testing.assert_array_equal(fine.indptr, ref.indptr)
    np.testing.assert_array_equal(fine.indices, ref.indices)
    np.testing.assert_allclose(fine.costs, ref.costs, rtol=1e-15)


def test_subdividing_keeps_a_drop_one_way():
    fine = subdivide(one_way_row())  # 2 x 6 fine slots
    down = scipy_dijkstra(fine.to_scipy(), indices=0)  # fine slot under parent 0 -> parent 2's
    up = scipy_dijkstra(fine.to_scipy(), indices=5)
    assert np.isfinite(down[[4, 5, 10, 11]]).all()
    assert np.isinf(up[[0, 1, 2, 3, 6, 7, 8, 9]]).all()


RING = """
#######
#.....#
#.###.#
#.###.#
#.....#
#######
"""


def walk(direction_at, graph: NavGraph, start, goal_reached, step=0.02, max_steps=4000) -> tuple[bool, np.ndarray]:
    """Move a point along the sampled field by small steps; like an agent it cannot enter a slot
    that is not walkable (it slides along the free axis). Returns (reached, last point)."""
    p = np.asarray(start, dtype=np.float64).copy()

    def free(q):
        col, row = graph.grid.cells_of(q[None, :])
        return 0 <= col[0] < graph.grid.cols and 0 <= row[0] < graph.grid.rows and graph.walkable[
            row[0] * graph.grid.cols + col[0]]  # fmt: skip

    for _ in range(max_steps):
        if goal_reached(p):
            return True, p
        move = step * direction_at(p[None, :])[0]
        for candidate in (p + move, p + move * [1, 0], p + move * [0, 1]):
            if free(candidate):
                p = candidate
                break
    return goal_reached(p), p


def test_the_subdivision_fix_frees_an_agent_the_plain_field_traps():
    g = grid_graph(parse_ascii_grid(RING))
    goal, trap = g.node_at_cell(3, 1), g.node_at_cell(3, 4)
    goal_point = g.positions[goal, :2]
    heat = heat_map(g, goal)
    assert heat[trap] == 7  # reachable: seven steps round either side of the block
    vectors = vector_field(g, heat)
    assert vectors[trap].tolist() == [0.0, 0.0]  # two equally short ways: a local optimum

    def at_goal_tile(p):
        return bool(np.all(np.abs(p - goal_point) <= 0.5))

    start = g.positions[trap, :2]
    reached, end = walk(lambda p: tile_directions(g, vectors, p), g, start, at_goal_tile)
    assert not reached and np.allclose(end, start)  # never moved

    field = seed_field(g, goal_point)
    assert field.graph.node_count == 4 * g.node_count and field.goals.size == 4
    np.testing.assert_allclose(field.graph.positions[field.goals, :2], goal_point + 0.25 * np.array(
        [[-1, -1], [1, -1], [-1, 1], [1, 1]]))  # fmt: skip
    assert np.all(field.heat[field.goals] == 0)
    reached, _ = walk(field.directions, g, start, at_goal_tile)
    assert reached
    rng = np.random.default_rng(0)  # and from anywhere in the ring
    for node in rng.choice(np.flatnonzero(g.walkable), 20):
        assert walk(field.directions, g, g.positions[node, :2] + rng.uniform(-0.4, 0.4, 2), at_goal_tile)[0]


def test_seed_field_rejects_a_goal_off_the_graph():
    g = grid_graph(parse_ascii_grid(RING))
    with pytest.raises(ValueError, match="goal_point"):
        seed_field(g, (100.0, 100.0))
    with pytest.raises(ValueError, match="goal_point"):
        seed_field(g, (1.0, np.nan))


# --- the exact field ------------------------------------------------------------------------------


def random_map(seed: int, rows: int = 24, cols: int = 24, blocked: float = 0.25):
    """A random tile map and its largest strongly connected region (walkable node ids)."""
    rng = np.random.default_rng(seed)
    g = grid_graph(rng.random((rows, cols)) < blocked)
    _, labels = connected_components(g.to_scipy(), directed=True, connection="strong")
    labels[~g.walkable] = -1
    region = np.flatnonzero(labels == np.bincount(labels[labels >= 0]).argmax())
    return g, region, rng


def brute_sees(graph: NavGraph, a, b) -> bool:
    """Every cell whose closed square the segment a-b touches is walkable (flat tile maps)."""
    g = graph.grid
    pa = (np.asarray(a) - np.array(g.origin)) / g.spacing + 0.5  # cell (c, r) is [c, c+1] x [r, r+1]
    pb = (np.asarray(b) - np.array(g.origin)) / g.spacing + 0.5
    lo, hi = np.floor(np.minimum(pa, pb)).astype(int) - 1, np.floor(np.maximum(pa, pb)).astype(int) + 1
    for r in range(lo[1], hi[1] + 1):
        for c in range(lo[0], hi[0] + 1):
            if _segment_touches(pa, pb, c, r) and not (
                0 <= c < g.cols and 0 <= r < g.rows and graph.walkable[r * g.cols + c]
            ):
                return False
    return True


def _segment_touches(pa, pb, c, r) -> bool:
    """Exact test: does segment pa-pb meet the closed square [c, c+1] x [r, r+1] (Liang-Barsky)?"""
    t0, t1 = 0.0, 1.0
    d = pb - pa
    for p, q in ((-d[0], pa[0] - c), (d[0], c + 1 - pa[0]), (-d[1], pa[1] - r), (d[1], r + 1 - pa[1])):
        if p == 0:
            if q < 0:
                return False
        else:
            t = q / p
            if p < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
    return t0 <= t1 + 1e-12


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("blocked", [0.2, 0.01])  # sparse: long sights, runs of many cells per row
def test_line_of_sight_equals_the_brute_force_touched_cells_rule(seed, blocked):
    g, region, rng = random_map(seed, 40, 40, blocked)
    sight = sight_grid(g)
    for _ in range(200):
        a, b = (int(v) for v in rng.choice(region, 2))
        expected = brute_sees(g, g.positions[a, :2], g.positions[b, :2])
        assert line_of_sight(g, g.positions[a, :2], g.positions[b, :2]) == expected, (a, b)
        assert sees_node(sight, a, b) == expected, (a, b)  # the exact integer walk


def test_line_of_sight_goes_down_a_drop_but_not_up():
    g = one_way_row()
    assert line_of_sight(g, (0.0, 0.0), (2.0, 0.0))
    assert not line_of_sight(g, (2.0, 0.0), (0.0, 0.0))
    assert not line_of_sight(g, (0.0, 0.0), (9.0, 0.0))  # off the grid


@pytest.mark.parametrize("seed", range(5))
def test_field_distance_equals_scipy_at_nodes(seed):
    g, region, rng = random_map(seed)
    goals = rng.choice(region, 1 + seed % 3, replace=False)
    field = flow_field(g, goals)
    ref = scipy_dijkstra(g.to_scipy().T.tocsr(), indices=goals, min_only=True)
    np.testing.assert_allclose(field.distance, ref, rtol=1e-9)
    assert field.next_hop.dtype == np.int64 and field.goals.tolist() == sorted(goals.tolist())
    assert field.graph_key == g.cache_key() and field.is_current(g)
    _, distance = field.sample(g.positions[region, :2])
    np.testing.assert_allclose(distance, ref[region], rtol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_directions_are_never_zero_on_a_reachable_tile(seed):
    g, region, rng = random_map(10 + seed)
    goal = int(rng.choice(region))
    field = flow_field(g, goal)
    reachable = np.flatnonzero(np.isfinite(field.distance) & (np.arange(g.node_count) != goal))
    directions, _ = field.sample(g.positions[reachable, :2])
    np.testing.assert_allclose(np.hypot(*directions.T), 1.0, rtol=1e-12)
    # anywhere in a reachable tile, not only at its node
    points = g.positions[rng.choice(reachable, 400), :2] + rng.uniform(-0.5, 0.5, (400, 2))
    directions, distance = field.sample(points)
    np.testing.assert_allclose(np.hypot(*directions.T), 1.0, rtol=1e-12)
    assert np.all(np.isfinite(distance))


@pytest.mark.parametrize("seed", range(6))
def test_agents_following_the_field_reach_the_goal_on_random_maps(seed):
    g, region, rng = random_map(20 + seed, 20, 20, 0.25)
    goal = int(rng.choice(region))
    goal_point = g.positions[goal, :2]
    field = flow_field(g, goal)
    ref = scipy_dijkstra(g.to_scipy().T.tocsr(), indices=goal)
    for start in rng.choice(region, 12):
        p0 = g.positions[start, :2] + rng.uniform(-0.3, 0.3, 2)
        if not g.walkable[g.nearest_nodes(p0)[0]]:
            continue
        steps = int(2 * (ref[start] + 2) / 0.05)
        reached, end = walk(lambda p: field.sample(p)[0], g, p0, lambda p: np.hypot(*(p - goal_point)) < 0.1,
                            step=0.05, max_steps=steps)  # fmt: skip
        assert reached, f"from {p0} the agent stopped at {end} (goal {goal_point})"


def test_direction_is_continuous_across_tile_borders_in_open_space():
    g = grid_graph(parse_ascii_grid("""
..........
..........
....##....
....##....
..........
G.........
"""))
    field = flow_field(g, g.node_at_cell(0, 5))
    t = np.linspace(0.0, 1.0, 3001)[:, None]
    lines = (((6.1, 0.7), (9.3, 5.4)), ((2.2, 5.6), (8.9, 4.1)), ((7.5, 0.2), (7.5, 5.8)), ((0.3, 2.5), (3.7, 5.8)))
    for a, b in lines:
        points = np.asarray(a) + t * (np.asarray(b) - np.asarray(a))  # crosses tile borders and node lines
        directions, distance = field.sample(points)
        turn = np.arccos(np.clip(np.sum(directions[1:] * directions[:-1], axis=1), -1, 1))
        assert turn.max() < 0.02, (a, b, turn.max())  # a step of ~0.002 m never turns it more than ~1 degree
        assert np.abs(np.diff(distance)).max() < 0.01


def test_open_areas_point_straight_at_the_goal():
    g = grid_graph(parse_ascii_grid("""
...............
...............
...............
...............
#######.#######
......#.#......
......#........
"""))
    goal = g.node_at_cell(7, 1)  # in line with the door: a cone below the wall sees it too
    field = flow_field(g, goal)
    rng = np.random.default_rng(1)
    room = np.array([[0.5, 14.5], [3.5, 6.5]])  # between the node centres of the goal's room
    points = rng.uniform(room[:, 0], room[:, 1], (500, 2))
    directions, _ = field.sample(points)
    straight = g.positions[goal, :2] - points
    straight /= np.hypot(*straight.T)[:, None]
    angle = np.degrees(np.arccos(np.clip(np.sum(directions * straight, axis=1), -1, 1)))
    assert angle.max() < 1.0
    # below the wall, wherever the node and every node after it on its way see the goal
    anchors = field.anchors(np.arange(g.node_count))
    checked = 0
    for v in np.flatnonzero(np.isfinite(field.distance)):
        chain, u = [], v
        while u >= 0:
            chain.append(u)
            u = field.next_hop[u]
        if all(brute_sees(g, g.positions[w, :2], g.positions[goal, :2]) for w in chain):
            checked += 1
            assert anchors[v] == goal
    assert checked == 60 + 3  # the room and the door's column below it


@pytest.mark.parametrize("seed", range(3))
def test_every_anchor_follows_the_theta_star_rule_whether_sampled_or_asked(seed):
    """anchor(v) = anchor(next_hop(v)) when v sees it (brute force), else next_hop(v), for every
    reachable node; sampling, which resolves anchors lazily (agents on a quarter of the nodes and
    the chains behind them), gives the directions of a field whose anchors were all asked first."""
    g, region, rng = random_map(seed, 30, 30, 0.2)
    goal = int(rng.choice(region))
    full = flow_field(g, goal)
    asked = full.anchors(np.arange(g.node_count))
    reachable = np.flatnonzero(asked >= 0)
    assert reachable.size > 300
    assert asked[goal] == goal
    for v in reachable[reachable != goal]:
        hop = full.next_hop[v]
        a = asked[hop]
        sees = brute_sees(g, g.positions[v, :2], g.positions[a, :2])
        assert asked[v] == (a if sees else hop), v
    agents = rng.choice(reachable, reachable.size // 4, replace=False)
    points = g.positions[agents, :2] + rng.uniform(-0.45, 0.45, (agents.size, 2))
    lazy_dir, lazy_dist = flow_field(g, goal).sample(points)
    full_dir, full_dist = full.sample(points)
    assert np.array_equal(lazy_dir, full_dir) and np.array_equal(lazy_dist, full_dist)


def test_goal_points_are_where_the_field_leads():
    g = grid_graph(np.zeros((5, 5), bool))
    goal = 12  # the centre slot, at (2.5, 2.5)
    field = flow_field(g, [goal], goal_points=[[2.9, 2.2]])
    directions, distance = field.sample(np.array([[0.5, 4.5], [2.6, 2.5]]))
    for d, p in zip(directions, ([0.5, 4.5], [2.6, 2.5])):
        expected = np.array([2.9, 2.2]) - p
        np.testing.assert_allclose(d, expected / np.hypot(*expected), atol=1e-12)
    assert distance[0] == pytest.approx(2 * math.sqrt(2))


def test_points_off_the_graph_head_for_the_nearest_reachable_node():
    g = grid_graph(parse_ascii_grid("""
.....@@@@@@
.....@@@@@@
.....@@@@@@
"""))
    field = flow_field(g, g.node_at_cell(0, 1))
    near = np.array([[6.5, 1.5]])  # inside the block, 2 cells from the open node at (4.5, 1.5)
    directions, distance = field.sample(near)
    np.testing.assert_allclose(directions, [[-1.0, 0.0]])
    assert distance[0] == pytest.approx(4.0 + 2.0)
    far = np.array([[10.5, 1.5], [-50.0, 1.0], [np.nan, 0.0]])
    directions, distance = field.sample(far)
    assert np.all(directions == 0) and np.all(np.isinf(distance))


def test_several_goals_lead_to_the_nearest():
    g = grid_graph(np.zeros((1, 11), bool))
    field = flow_field(g, [0, 10])
    directions, distance = field.sample(np.array([[2.5, 0.5], [8.5, 0.5]]))
    np.testing.assert_allclose(directions, [[-1, 0], [1, 0]])
    np.testing.assert_allclose(distance, [2, 2])


def test_rebuild_reuses_its_arrays_and_equals_a_fresh_field():
    g, region, rng = random_map(3)
    a, b = (int(x) for x in rng.choice(region, 2, replace=False))
    field = flow_field(g, a)
    kept = (field.distance, field.next_hop)
    points = g.positions[rng.choice(region, 50), :2] + rng.uniform(-0.4, 0.4, (50, 2))
    field.sample(points)  # anchors toward a, memoised
    assert field.rebuild(g, b, goal_points=[g.positions[b, :2] + 0.2]) is field
    assert field.distance is kept[0] and field.next_hop is kept[1]
    fresh = FlowField(g, b, goal_points=[g.positions[b, :2] + 0.2])
    np.testing.assert_array_equal(field.distance, fresh.distance)
    np.testing.assert_array_equal(field.next_hop, fresh.next_hop)
    for got, want in zip(field.sample(points), fresh.sample(points)):
        np.testing.assert_array_equal(got, want)
    field.rebuild(g, a)  # and back: the goal point of b is gone
    np.testing.assert_array_equal(field.sample(points)[0], flow_field(g, a).sample(points)[0])


def test_rebuild_with_nothing_changed_keeps_the_field_and_a_changed_graph_rebuilds_it():
    g = grid_graph(np.zeros((1, 6), bool))
    field = flow_field(g, 0)
    field.sample(np.array([[5.5, 0.5]]))
    anchors = field.anchors(np.arange(6))
    assert field.rebuild(g, 0) is field and np.array_equal(field.anchors(np.arange(6)), anchors)
    g.costs[:] = 2.0  # a region rebuild changes costs and bumps the version
    g.version += 1
    assert not field.is_current(g)
    field.rebuild(g, 0)
    assert field.is_current(g) and field.distance.tolist() == [0, 2, 4, 6, 8, 10]


def test_max_cost_leaves_far_tiles_off_the_field():
    g = grid_graph(np.zeros((1, 10), bool))
    field = flow_field(g, 0, max_cost=3.5)
    assert np.isfinite(field.distance).sum() == 4
    directions, distance = field.sample(np.array([[8.5, 0.5]]))
    assert np.all(directions == 0) and np.isinf(distance[0])


def test_bad_arguments_name_what_is_wrong():
    g = grid_graph(parse_ascii_grid("..@"))
    with pytest.raises(ValueError, match="goal node 2 .* is not walkable"):
        flow_field(g, 2)
    with pytest.raises(ValueError, match=r"goal_points must be \(2, 2\)"):
        flow_field(g, [0, 1], goal_points=[[0.0, 0.0]])
    with pytest.raises(ValueError, match="points must have shape"):
        flow_field(g, 0).sample(np.zeros(3))
    with pytest.raises(ValueError, match="heat must have shape"):
        vector_field(g, np.zeros(2))
    with pytest.raises(ValueError, match=r"vectors must have shape \(3, 2\)"):
        tile_directions(g, np.zeros((2, 2)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="points must have shape"):
        tile_directions(g, np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="nodes must be node ids"):
        flow_field(g, 0).anchors([7])
