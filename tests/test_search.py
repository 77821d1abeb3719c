"""A*, Dijkstra and the distance field: exact against scipy, honest about failure."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.sparse.csgraph import shortest_path

from ecs_nav.nav.graph import EDGE_LINK, GridIndex, NavGraph
from ecs_nav.nav.grid import grid_graph, parse_ascii_grid
from ecs_nav.nav.search import (
    STATUS_COMPLETE,
    STATUS_PARTIAL,
    STATUS_UNREACHABLE,
    admissibility_factor,
    astar,
    dijkstra,
    distance_field,
    path_from_field,
    paths_from_field,
)

HEURISTICS = ["octile", "euclidean", "zero"]


def scipy_distances(graph: NavGraph, sources) -> np.ndarray:
    return shortest_path(graph.to_scipy(), method="D", directed=True, indices=sources)


def assert_valid_path(graph: NavGraph, nodes: np.ndarray, cost: float):
    """Consecutive nodes are linked and the edge costs add up to ``cost``."""
    assert nodes.dtype == np.int64
    total = 0.0
    for a, b in zip(nodes[:-1], nodes[1:], strict=True):
        step = graph.distance(a, b)
        assert step < math.inf and a != b, f"{a} -> {b} is not an edge"
        total += step
    assert total == pytest.approx(cost, rel=1e-12, abs=1e-12)


def random_graph(seed: int, rows: int, cols: int, links: int) -> NavGraph:
    """A random octile grid plus one-way off-mesh links, some far cheaper than the ground
    they span (a teleporter): the heuristic must be scaled down to stay admissible."""
    rng = np.random.default_rng(seed)
    base = grid_graph(rng.random((rows, cols)) < 0.3)
    src, dst, cost = list(base.edge_sources()), list(base.indices), list(base.costs)
    kinds = [0] * len(src)
    open_nodes = np.flatnonzero(base.walkable)
    existing = set(zip(src, dst, strict=True))
    if open_nodes.size >= 2:
        for _ in range(links):
            a, b = rng.choice(open_nodes, 2, replace=False)
            if (a, b) in existing:
                continue
            existing.add((a, b))
            src.append(a)
            dst.append(b)
            cost.append(float(rng.uniform(0.05, 3.0)))
            kinds.append(EDGE_LINK)
    return NavGraph.from_edges(base.positions, base.walkable, src, dst, cost, base.grid, kinds=kinds)


# --- hand-made cases -------------------------------------------------------------------------------

CORRIDOR = """
.....
.@@@.
.@G@.
.@@@.
.....
"""


def test_start_equals_goal():
    g = grid_graph(parse_ascii_grid(".."))
    r = astar(g, 0, 0)
    assert r.status == STATUS_COMPLETE and r.cost == 0.0 and r.nodes.tolist() == [0] and r.complete


def test_simple_path_goes_round_the_wall():
    g = grid_graph(parse_ascii_grid("....\n.@@.\n...."))
    r = astar(g, g.node_at_cell(0, 1), g.node_at_cell(3, 1))
    assert r.status == STATUS_COMPLETE
    assert r.cost == 5.0  # no corner cutting: up, three along the top line, down
    assert_valid_path(g, r.nodes, r.cost)
    assert r.nodes[0] == g.node_at_cell(0, 1) and r.nodes[-1] == g.node_at_cell(3, 1)


@pytest.mark.parametrize("search", ["astar", "dijkstra"])
def test_invalid_start_or_goal_raises(search):
    g = grid_graph(parse_ascii_grid(".@\n.."))
    fn = astar if search == "astar" else dijkstra
    blocked = 3  # grid row 1 (top line), col 1: the '@'
    assert not g.walkable[blocked]
    with pytest.raises(ValueError, match="start node 3 .* is not walkable"):
        fn(g, blocked, 0)
    with pytest.raises(ValueError, match="goal node 3 .* is not walkable"):
        fn(g, 0, blocked)
    with pytest.raises(ValueError, match="start node 9 is not in the graph"):
        fn(g, 9, 0)
    with pytest.raises(ValueError, match="goal node -1 is not in the graph"):
        fn(g, 0, -1)


def test_bad_options_raise():
    g = grid_graph(parse_ascii_grid(".."))
    with pytest.raises(ValueError, match="unknown heuristic"):
        astar(g, 0, 1, heuristic="manhattan")
    with pytest.raises(ValueError, match="max_expanded"):
        astar(g, 0, 1, max_expanded=0)
    with pytest.raises(ValueError, match="at least one goal"):
        distance_field(g, [])
    with pytest.raises(ValueError, match="goal node 5 is not in the graph"):
        distance_field(g, [0, 5])


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_unreachable_goal_gives_partial_path_to_the_closest_node(heuristic):
    g = grid_graph(parse_ascii_grid(CORRIDOR))
    start, goal = g.node_at_cell(0, 0), g.node_at_cell(2, 2)
    r = astar(g, start, goal, heuristic=heuristic)
    assert r.status == STATUS_PARTIAL
    closest = {g.node_at_cell(2, 0), g.node_at_cell(2, 4), g.node_at_cell(0, 2), g.node_at_cell(4, 2)}
    assert r.nodes[-1] in closest
    assert r.nodes[0] == start
    assert_valid_path(g, r.nodes, r.cost)
    assert r.cost == pytest.approx(scipy_distances(g, start)[r.nodes[-1]])  # optimal to its end
    assert r.expanded == 16  # the whole ring, every time
    again = astar(g, start, goal, heuristic=heuristic)
    assert again.nodes.tolist() == r.nodes.tolist()  # deterministic


def test_unreachable_without_partial():
    g = grid_graph(parse_ascii_grid(CORRIDOR))
    r = astar(g, g.node_at_cell(0, 0), g.node_at_cell(2, 2), allow_partial=False)
    assert r.status == STATUS_UNREACHABLE and r.nodes.size == 0 and r.cost == math.inf
    r = dijkstra(g, g.node_at_cell(2, 2), g.node_at_cell(0, 0), allow_partial=False)
    assert r.status == STATUS_UNREACHABLE


def test_boxed_in_start_is_a_partial_path_of_one_node():
    g = grid_graph(parse_ascii_grid(CORRIDOR))
    start = g.node_at_cell(2, 2)
    r = astar(g, start, g.node_at_cell(0, 0))
    assert r.status == STATUS_PARTIAL and r.nodes.tolist() == [start] and r.cost == 0.0 and r.expanded == 1


def test_search_budget():
    g = grid_graph(np.zeros((20, 20), bool))
    start, goal = g.node_at_cell(0, 0), g.node_at_cell(19, 19)
    full = astar(g, start, goal, heuristic="zero")
    assert full.status == STATUS_COMPLETE and full.expanded > 50
    r = astar(g, start, goal, heuristic="zero", max_expanded=50)
    assert r.status == STATUS_PARTIAL and r.expanded == 50
    assert_valid_path(g, r.nodes, r.cost)
    assert r.cost == pytest.approx(scipy_distances(g, start)[r.nodes[-1]])
    r = astar(g, start, goal, max_expanded=1)
    assert r.status == STATUS_PARTIAL and r.nodes.tolist() == [start] and r.expanded == 1
    r = astar(g, start, goal, max_expanded=10, allow_partial=False)
    assert r.status == STATUS_UNREACHABLE and r.nodes.size == 0
    # A* walks straight down the diagonal: a budget of path length + 1 is enough
    r = astar(g, start, goal, max_expanded=20)
    assert r.status == STATUS_COMPLETE and r.cost == pytest.approx(19 * math.sqrt(2))


def test_off_mesh_link_is_used_and_heuristic_stays_admissible():
    base = grid_graph(np.zeros((1, 30), bool))
    src, dst, cost = list(base.edge_sources()), list(base.indices), list(base.costs)
    src.append(0)
    dst.append(29)
    cost.append(2.0)  # a teleporter across 29 cells
    g = NavGraph.from_edges(
        base.positions, base.walkable, src, dst, cost, base.grid, kinds=[0] * (len(src) - 1) + [EDGE_LINK]
    )
    assert admissibility_factor(g, "octile") == pytest.approx(2.0 / 29.0)
    r = astar(g, 0, 28)
    assert r.status == STATUS_COMPLETE and r.cost == pytest.approx(3.0) and r.nodes.tolist() == [0, 29, 28]


@pytest.mark.parametrize("distinct_costs", ["rare", "many"])
def test_costs_outside_the_packed_table_stay_exact(distinct_costs):
    """The kernel reads edge costs through a table of the distinct costs, sampled from the
    edges: a rare cost the sample missed, and more than 256 distinct costs (one table entry
    per edge), must both come out exact."""
    base = grid_graph(np.random.default_rng(3).random((70, 70)) < 0.2)
    costs = base.costs.copy()
    assert 1235 % (base.edge_count // 4096) != 0  # the sample takes every k-th edge
    if distinct_costs == "rare":
        costs[1235] = 7.25  # one edge among ~20,000, not in the sample
    else:
        costs = costs * np.random.default_rng(4).uniform(1.0, 1.5, costs.size)
    g = NavGraph.from_edges(base.positions, base.walkable, base.edge_sources(), base.indices, costs, base.grid)
    nodes = np.flatnonzero(g.walkable)
    src = int(g.edge_sources()[1235])
    ref = scipy_distances(g, src)
    for b in nodes[:: max(1, nodes.size // 60)]:
        check_result(g, astar(g, src, b), src, b, ref)
    dist, _ = dijkstra(g, src)
    np.testing.assert_allclose(dist, ref, rtol=1e-12)


def test_grid_admissibility_factor_is_one():
    g = grid_graph(np.zeros((3, 3), bool), cell_size=0.7)
    assert admissibility_factor(g, "octile") == pytest.approx(1.0, abs=1e-12)
    assert admissibility_factor(g, "euclidean") == pytest.approx(1.0, abs=1e-12)
    assert admissibility_factor(g, "zero") == 0.0


def test_factor_cache_follows_the_graph_version():
    g = grid_graph(np.zeros((1, 3), bool))
    assert admissibility_factor(g) == pytest.approx(1.0)
    g.costs[:] = 0.5  # a region rebuild changes costs and bumps the version
    g.version += 1
    assert admissibility_factor(g) == pytest.approx(0.5)


def test_reverse_graph_follows_the_graph_version():
    g = grid_graph(np.zeros((1, 3), bool))
    np.testing.assert_allclose(distance_field(g, [0])[0], [0, 1, 2])
    g.costs[:] = 0.5
    g.version += 1
    np.testing.assert_allclose(distance_field(g, [0])[0], [0, 0.5, 1])


def test_scratch_reuse_between_queries_matches_fresh_graphs():
    rng = np.random.default_rng(7)
    blocked = rng.random((30, 30)) < 0.25
    shared = grid_graph(blocked)
    nodes = np.flatnonzero(shared.walkable)
    for _ in range(40):
        a, b = rng.choice(nodes, 2)
        h = str(rng.choice(HEURISTICS))
        budget = int(rng.choice([5, 50, 10_000]))
        got = astar(shared, a, b, heuristic=h, max_expanded=budget)
        fresh = astar(grid_graph(blocked), a, b, heuristic=h, max_expanded=budget)
        assert got.nodes.tolist() == fresh.nodes.tolist()
        assert (got.cost, got.status, got.expanded) == (fresh.cost, fresh.status, fresh.expanded)


# --- exact against scipy --------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    arrays(bool, st.tuples(st.integers(1, 14), st.integers(1, 14)), elements=st.booleans()),
    st.sampled_from([1.0, 0.25, 3.0]),
    st.integers(0, 2**31),
)
def test_grid_costs_equal_scipy(blocked, cell_size, seed):
    g = grid_graph(blocked, cell_size=cell_size)
    nodes = np.flatnonzero(g.walkable)
    if nodes.size == 0:
        return
    rng = np.random.default_rng(seed)
    starts = rng.choice(nodes, min(4, nodes.size), replace=False)
    ref = scipy_distances(g, starts)
    for i, a in enumerate(starts):
        for b in rng.choice(nodes, min(6, nodes.size), replace=False):
            for h in HEURISTICS:
                r = astar(g, a, b, heuristic=h)
                check_result(g, r, a, b, ref[i])
            check_result(g, dijkstra(g, a, b), a, b, ref[i])


def check_result(g, r, a, b, ref_from_a):
    if ref_from_a[b] < math.inf:
        assert r.status == STATUS_COMPLETE
        assert r.cost == pytest.approx(ref_from_a[b], rel=1e-9, abs=1e-12)
        assert r.nodes[0] == a and r.nodes[-1] == b
    else:
        assert r.status == STATUS_PARTIAL and r.nodes[0] == a
        assert r.cost == pytest.approx(ref_from_a[r.nodes[-1]], rel=1e-9, abs=1e-12)
    assert_valid_path(g, r.nodes, r.cost)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 10), st.integers(2, 10), st.integers(0, 25))
def test_directed_graphs_with_off_mesh_links_equal_scipy(seed, rows, cols, links):
    g = random_graph(seed, rows, cols, links)
    nodes = np.flatnonzero(g.walkable)
    if nodes.size < 2:
        return
    rng = np.random.default_rng(seed + 1)
    starts = rng.choice(nodes, min(3, nodes.size), replace=False)
    ref = scipy_distances(g, starts)
    for i, a in enumerate(starts):
        for b in rng.choice(nodes, min(8, nodes.size), replace=False):
            for h in HEURISTICS:
                check_result(g, astar(g, a, b, heuristic=h), a, b, ref[i])
        dist, pred = dijkstra(g, a)
        assert dist.shape == pred.shape == (g.node_count,)
        assert pred.dtype == np.int64 and dist.dtype == np.float64
        np.testing.assert_allclose(dist, ref[i], rtol=1e-9)
        assert pred[a] == -1 and np.all(pred[np.isinf(dist)] == -1)
        reached = np.flatnonzero(np.isfinite(dist) & (np.arange(g.node_count) != a))
        for v in reached:  # predecessors lie on shortest paths
            assert dist[pred[v]] + g.distance(pred[v], v) == pytest.approx(dist[v], rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 10), st.integers(1, 10), st.integers(0, 20), st.integers(1, 3))
def test_distance_field_equals_scipy_on_the_reverse(seed, rows, cols, links, n_goals):
    g = random_graph(seed, rows, cols, links)
    nodes = np.flatnonzero(g.walkable)
    if nodes.size == 0:
        return
    rng = np.random.default_rng(seed)
    goals = rng.choice(nodes, min(n_goals, nodes.size), replace=False)
    dist, next_hop = distance_field(g, goals)
    ref = shortest_path(g.to_scipy().T, method="D", directed=True, indices=goals).min(axis=0)
    np.testing.assert_allclose(dist, ref, rtol=1e-9)
    assert dist.shape == next_hop.shape == (g.node_count,) and next_hop.dtype == np.int64
    assert np.all(next_hop[goals] == -1) and np.all(dist[goals] == 0)
    assert np.all(next_hop[np.isinf(dist)] == -1)
    offsets, all_paths = paths_from_field(next_hop, nodes)
    for i, v in enumerate(nodes):
        path = path_from_field(next_hop, v)
        assert path.tolist() == all_paths[offsets[i] : offsets[i + 1]].tolist()
        if np.isfinite(dist[v]):
            assert path[0] == v and path[-1] in goals
            assert_valid_path(g, path, dist[v])
        else:
            assert path.tolist() == [v]


def test_distance_field_max_cost_and_empty_paths():
    g = grid_graph(np.zeros((1, 10), bool))
    dist, next_hop = distance_field(g, 0, max_cost=3.5)
    assert dist[:4].tolist() == [0, 1, 2, 3] and np.all(np.isinf(dist[4:]))
    assert next_hop[:4].tolist() == [-1, 0, 1, 2] and np.all(next_hop[4:] == -1)
    offsets, nodes = paths_from_field(next_hop, [3, -1, 0])
    assert offsets.tolist() == [0, 4, 4, 5] and nodes.tolist() == [3, 2, 1, 0, 0]
    dist, pred = dijkstra(g, 9, max_cost=2.0)
    assert np.isfinite(dist).sum() == 3


def test_one_way_links_are_followed_forwards_only():
    g = NavGraph.from_edges(
        np.zeros((3, 3)), np.ones(3, bool), [0, 1], [1, 2], [1.0, 1.0], GridIndex((0, 0), 1.0, 1, 3), kinds=[2, 2]
    )
    assert astar(g, 0, 2, heuristic="zero").cost == 2.0
    assert astar(g, 2, 0, heuristic="zero").status == STATUS_PARTIAL
    dist, next_hop = distance_field(g, 2)
    assert dist.tolist() == [2.0, 1.0, 0.0] and next_hop.tolist() == [1, 2, -1]


def test_path_from_field_rejects_starts_outside_the_field():
    # the compiled trace reads next_hop[start] unchecked: a bad start was a segfault
    g = grid_graph(np.zeros((1, 10), bool))
    _, next_hop = distance_field(g, 0)
    for bad in (100000, 10, -2):
        with pytest.raises(ValueError, match=f"start {bad} "):
            path_from_field(next_hop, bad)
    with pytest.raises(ValueError, match="integer"):
        path_from_field(next_hop, 2.5)
    with pytest.raises(ValueError, match=r"starts\[1\] = 100000 "):
        paths_from_field(next_hop, [3, 100000, -5])
    with pytest.raises(ValueError, match=r"starts\[0\] = -2 "):
        paths_from_field(next_hop, np.array([-2]))
    with pytest.raises(ValueError, match="integer"):
        paths_from_field(next_hop, [1.5])
    assert path_from_field(next_hop, np.int64(9)).tolist() == list(range(9, -1, -1))
    assert path_from_field(next_hop, -1).tolist() == []
    offsets, nodes = paths_from_field(next_hop, [])
    assert offsets.tolist() == [0] and nodes.size == 0
