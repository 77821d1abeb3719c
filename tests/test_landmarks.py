"""Landmark heuristics and the precomputed jump tables: each against a plain reference.

The jump tables (``straight_jumps``, ``diagonal_jumps``) are checked cell by cell against a scan
written out step by step; the landmarks' distance fields against scipy's Dijkstra, their bound
against the true distance (admissible) and across every edge (consistent); and jump point search
with landmarks against scipy's costs on random grids, through a graph change.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import maps_dir
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components
from scipy.sparse.csgraph import dijkstra as scipy_dijkstra
from test_jump import assert_searches_match_scipy, assert_valid_grid_path, wall_built_in_place

from ecs_nav.nav.graph import EDGE_DROP, NavGraph
from ecs_nav.nav.grid import grid_graph, load_movingai, read_scenarios
from ecs_nav.nav.jump import find_path, jump_point_search
from ecs_nav.nav.jump_tables import DIAGONAL_STEPS, STRAIGHT_STEPS, diagonal_jumps, straight_jumps
from ecs_nav.nav.landmarks import (
    MAX_LANDMARKS,
    active_landmarks,
    default_count,
    farthest_landmarks,
    landmarks_of,
    prepare_landmarks,
)
from ecs_nav.nav.search import astar


def padded(blocked: np.ndarray) -> tuple[np.ndarray, int]:
    rows, cols = blocked.shape
    free = np.zeros((rows + 2, cols + 2), dtype=np.uint8)
    free[1:-1, 1:-1] = ~blocked
    return free.reshape(-1), cols + 2


def scan_straight(free, width, n, sr, sc) -> int:
    """The straight table's entry, scanning cell by cell: k > 0 at the first cell with a forced
    neighbour (an open side cell whose counterpart one step back is blocked), -k at a wall."""
    d = sc + sr * width
    side = width if sr == 0 else 1
    k = 0
    while free[n + d]:
        m = n + d
        k += 1
        if any(free[m + s] and not free[n + s] for s in (side, -side)):
            return k
        n = m
    return -k


def scan_diagonal(free, width, n, sr, sc) -> int:
    """The diagonal table's entry, stepping cell by cell: k > 0 at the first cell from which a
    straight scan along either part finds a forced neighbour, -k where a step would cut a corner."""
    dh, dv = sc, sr * width
    k = 0
    while free[n + dh] and free[n + dv] and free[n + dh + dv]:
        n += dh + dv
        k += 1
        if scan_straight(free, width, n, 0, sc) > 0 or scan_straight(free, width, n, sr, 0) > 0:
            return k
    return -k


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 14), cols=st.integers(1, 14), density=st.floats(0, 0.6))
def test_jump_tables_match_a_cell_by_cell_scan(seed, rows, cols, density):
    blocked = np.random.default_rng(seed).random((rows, cols)) < density
    free, width = padded(blocked)
    jumps = straight_jumps(free, width)
    diag = diagonal_jumps(free, width, jumps)
    for n in np.flatnonzero(free):
        for k, (sr, sc) in enumerate(STRAIGHT_STEPS):
            assert jumps[n, k] == scan_straight(free, width, n, sr, sc), (n, sr, sc)
        for k, (sr, sc) in enumerate(DIAGONAL_STEPS):
            assert diag[n, k] == scan_diagonal(free, width, n, sr, sc), (n, sr, sc)


def test_landmark_fields_equal_scipy_and_are_spread_apart():
    graph = grid_graph(np.random.default_rng(5).random((20, 30)) < 0.3)
    nodes, distances = farthest_landmarks(graph, 6)
    assert len(set(nodes.tolist())) == 6 and graph.walkable[nodes].all()
    reference = scipy_dijkstra(graph.to_scipy(), indices=nodes).T
    np.testing.assert_allclose(distances, reference, rtol=1e-12)
    # each one is the node farthest from those picked before it
    for i in range(1, 6):
        nearest = reference[:, :i].min(axis=1)
        reachable = np.isfinite(nearest)
        assert nearest[nodes[i]] == pytest.approx(nearest[reachable].max(), rel=1e-12)


def test_the_landmark_bound_is_admissible_and_consistent():
    graph = grid_graph(np.random.default_rng(8).random((16, 16)) < 0.3)
    marks = prepare_landmarks(graph, 5)
    truth = scipy_dijkstra(graph.to_scipy())
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    for goal in np.flatnonzero(graph.walkable)[::7]:
        to_goal = marks.distances[goal]
        both = np.isfinite(to_goal)
        bound = np.abs(to_goal[both][None, :] - marks.distances[:, both]).max(axis=1, initial=0.0)
        reach = np.isfinite(truth[:, goal])
        assert np.all(bound[reach] <= truth[reach, goal] * (1 + 1e-12) + 1e-12)  # never above the true cost
        edge = reach[src] & reach[dst]
        assert np.all(bound[src[edge]] <= graph.costs[edge] + bound[dst[edge]] + 1e-12)  # consistent


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 20),
    cols=st.integers(1, 20),
    density=st.floats(0.0, 0.5),
    count=st.integers(1, 8),
)
def test_jump_point_search_with_landmarks_matches_scipy_on_random_grids(seed, rows, cols, density, count):
    rng = np.random.default_rng(seed)
    graph = grid_graph(rng.random((rows, cols)) < density)
    if not graph.walkable.any():
        return
    prepare_landmarks(graph, count)
    assert_searches_match_scipy(graph, rng, find_path)


def test_landmarks_expand_fewer_jump_points_on_a_cluttered_grid():
    blocked = np.random.default_rng(2).random((60, 60)) < 0.33
    plain, marked = grid_graph(blocked), grid_graph(blocked)
    prepare_landmarks(marked, 16)
    _, label = connected_components(plain.to_scipy())
    largest = np.flatnonzero(plain.walkable & (label == np.bincount(label[plain.walkable]).argmax()))
    start, goal = int(largest[0]), int(largest[-1])  # near opposite edges of the map
    a, b = find_path(plain, start, goal), find_path(marked, start, goal)
    assert a.complete and b.cost == pytest.approx(a.cost, rel=1e-12)
    assert b.expanded < a.expanded / 2


def test_landmarks_are_made_again_after_the_graph_changes():
    graph = grid_graph(np.zeros((9, 9), dtype=bool))
    first = prepare_landmarks(graph, 3)
    start, goal = graph.node_at_cell(0, 4), graph.node_at_cell(8, 4)
    assert jump_point_search(graph, start, goal).cost == 8.0
    rebuilt = wall_built_in_place(graph)
    got = jump_point_search(graph, start, goal)
    assert got.cost == pytest.approx(astar(rebuilt, start, goal).cost, rel=1e-12) and got.cost > 8.0
    again = landmarks_of(graph)
    assert again is not first and again.key == graph.cache_key()
    np.testing.assert_allclose(again.distances, scipy_dijkstra(rebuilt.to_scipy(), indices=again.nodes).T)


def test_the_default_count_keeps_the_fields_within_64_mib():
    assert [default_count(n) for n in (1, 100 * 100, 512 * 512, 512 * 512 + 1, 1024 * 1024, 2**30)] == [
        32, 32, 32, 31, 8, 1]
    graph = grid_graph(np.zeros((5, 5), dtype=bool))
    assert prepare_landmarks(graph).nodes.size == 25  # fewer when the graph has fewer nodes to pick


def test_zero_landmarks_opt_out_and_bad_counts_or_directed_graphs_raise():
    graph = grid_graph(np.zeros((4, 4), dtype=bool))
    assert prepare_landmarks(graph, 2) is not None and landmarks_of(graph) is not None
    assert prepare_landmarks(graph, 0) is None and landmarks_of(graph) is None
    for bad in (-1, MAX_LANDMARKS + 1, 2.5, True, "4"):
        with pytest.raises(ValueError, match="landmark count"):
            prepare_landmarks(graph, bad)
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    kinds = np.zeros(src.size, np.uint8)
    kinds[0] = EDGE_DROP
    keep = np.ones(src.size, bool)
    keep[np.flatnonzero((src == dst[0]) & (dst == src[0]))] = False  # the drop's way back removed
    one_way = NavGraph.from_edges(graph.positions, graph.walkable, src[keep], dst[keep], graph.costs[keep],
                                  graph.grid, kinds=kinds[keep])
    with pytest.raises(ValueError, match="undirected"):
        prepare_landmarks(one_way, 4)


_MAPS = maps_dir()
MAP_NAMES = sorted(p.name for p in _MAPS.glob("*.map")) if _MAPS else []
SMALL_MAP_CELLS = 20_000
SAMPLE = 60  # scenarios per big map (every one on the small maps)


@pytest.mark.maps
@pytest.mark.slow
@pytest.mark.parametrize("name", MAP_NAMES)
def test_landmarks_keep_moving_ai_scenarios_optimal(movingai_dir, name):
    """Every scenario of the small maps against A*; an evenly spaced sample of the big ones against
    plain jump point search (itself checked against A* in test_jump); all against the file."""
    graph, plain = load_movingai(movingai_dir / name), load_movingai(movingai_dir / name)
    prepare_landmarks(graph)
    scenarios = read_scenarios(movingai_dir / f"{name}.scen")
    small = graph.node_count <= SMALL_MAP_CELLS
    if not small:
        scenarios = scenarios[np.unique(np.linspace(0, len(scenarios) - 1, SAMPLE).round().astype(int))]
    for s in scenarios:
        start = graph.node_at_cell(s["start_x"], s["start_y"])
        goal = graph.node_at_cell(s["goal_x"], s["goal_y"])
        got = find_path(graph, start, goal)
        reference = astar(graph, start, goal) if small else find_path(plain, start, goal)
        where = f"{name} bucket {s['bucket']}: ({s['start_x']},{s['start_y']}) -> ({s['goal_x']},{s['goal_y']})"
        assert got.status == reference.status, where
        assert got.cost == pytest.approx(reference.cost, rel=1e-12), where
        if got.complete:
            assert got.cost == pytest.approx(float(s["optimal_length"]), rel=1e-4), where
            assert_valid_grid_path(graph, got.nodes, got.cost)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(0, 12), most=st.integers(1, 8), floor=st.integers(-1, 3))
def test_a_query_uses_the_landmarks_with_the_largest_bounds_at_its_start(seed, count, most, floor):
    rng = np.random.default_rng(seed)
    marks = rng.integers(0, 6, (5, count)).astype(np.float64)  # small integers: ties
    marks[rng.random(marks.shape) < 0.2] = np.inf  # landmarks not connected to some nodes
    start, goal = rng.integers(0, 5, 2)
    active, to_goal = active_landmarks(marks, start, goal, most, float(floor))
    usable = np.flatnonzero(np.isfinite(marks[start]) & np.isfinite(marks[goal]))
    bound = np.abs(marks[goal, usable] - marks[start, usable])
    usable, bound = usable[bound > floor], bound[bound > floor]  # no sharper than the octile distance: left out
    expected = usable[np.argsort(-bound, kind="stable")][:most]
    assert active.tolist() == expected.tolist()
    assert to_goal.tolist() == marks[goal, expected].tolist()
