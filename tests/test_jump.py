"""Jump point search: A*'s costs on uniform octile grids, valid cell-by-cell paths, A* elsewhere.

The Moving AI part runs every scenario of the maps up to 20,000 cells and an evenly spaced
sample of the big ones (``ECS_NAV_SOAK=1``: every scenario of every map), against the A* kernel
and the file's optimum, and a few per map against scipy's Dijkstra.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest
from conftest import maps_dir
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import dijkstra as scipy_dijkstra

from ecs_nav.nav.graph import EDGE_LINK, NavGraph
from ecs_nav.nav.grid import grid_graph, load_movingai, parse_ascii_grid, read_scenarios
from ecs_nav.nav.jump import find_path, jump_point_search
from ecs_nav.nav.octile import is_uniform_octile
from ecs_nav.nav.search import STATUS_COMPLETE, STATUS_PARTIAL, STATUS_UNREACHABLE, astar

SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
SMALL_MAP_CELLS = 20_000
SAMPLE = 60  # scenarios per big map in the short form (as test_movingai)
SCIPY_SAMPLE = 4  # scenarios per map also checked against scipy's Dijkstra
_MAPS = maps_dir()
MAP_NAMES = sorted(p.name for p in _MAPS.glob("*.map")) if _MAPS else []


def assert_valid_grid_path(graph: NavGraph, nodes: np.ndarray, cost: float):
    """Each step goes to one of the 8 neighbouring cells, onto a walkable cell, without cutting a
    corner, and the step costs (1 or sqrt 2 cells) add up to ``cost``."""
    cols, spacing = graph.grid.cols, graph.grid.spacing
    walkable = graph.walkable
    row, col = np.divmod(np.asarray(nodes, dtype=np.int64), cols)
    assert walkable[nodes].all(), "the path enters a blocked cell"
    d_row, d_col = np.diff(row), np.diff(col)
    assert np.all((np.abs(d_row) <= 1) & (np.abs(d_col) <= 1) & ((d_row != 0) | (d_col != 0))), "not a grid step"
    diagonal = (d_row != 0) & (d_col != 0)
    beside_row = (row[:-1] + d_row) * cols + col[:-1]
    beside_col = row[:-1] * cols + col[:-1] + d_col
    assert np.all(~diagonal | (walkable[beside_row] & walkable[beside_col])), "a diagonal step cuts a corner"
    total = 0.0
    for is_diagonal in diagonal:  # summed from the start, as the search adds them
        total += math.sqrt(2.0) * spacing if is_diagonal else spacing
    assert total == pytest.approx(cost, rel=1e-12, abs=1e-12)


def assert_searches_match_scipy(graph: NavGraph, rng, search) -> list[tuple[int, int]]:
    """``search(graph, start, goal)`` from a few random open cells to a few others: the optimal
    cost (scipy's Dijkstra) along a valid grid path, or where the goal is cut off A*'s partial
    path. Returns the cut-off (start, goal) pairs."""
    open_nodes = np.flatnonzero(graph.walkable)
    starts = rng.choice(open_nodes, min(4, open_nodes.size), replace=False)
    distances = scipy_dijkstra(graph.to_scipy(), indices=starts)
    cut_off = []
    for i, start in enumerate(starts):
        for goal in rng.choice(open_nodes, min(6, open_nodes.size), replace=False):
            got = search(graph, int(start), int(goal))
            if math.isinf(distances[i, goal]):
                reference = astar(graph, int(start), int(goal))
                assert got.status == STATUS_PARTIAL and np.array_equal(got.nodes, reference.nodes)
                cut_off.append((int(start), int(goal)))
                continue
            assert got.status == STATUS_COMPLETE
            assert got.cost == pytest.approx(distances[i, goal], rel=1e-12, abs=1e-12)
            assert got.nodes[0] == start and got.nodes[-1] == goal
            assert_valid_grid_path(graph, got.nodes, got.cost)
    return cut_off


def scenario_sample(scenarios: np.ndarray, cells: int) -> np.ndarray:
    if SOAK or cells <= SMALL_MAP_CELLS or len(scenarios) <= SAMPLE:
        return scenarios
    return scenarios[np.unique(np.linspace(0, len(scenarios) - 1, SAMPLE).round().astype(int))]


# --- Moving AI scenarios ------------------------------------------------------------------------------


@pytest.mark.maps
@pytest.mark.slow
@pytest.mark.parametrize("name", MAP_NAMES)
def test_jump_point_search_costs_equal_astar_on_moving_ai_scenarios(movingai_dir, name):
    graph = load_movingai(movingai_dir / name)
    assert is_uniform_octile(graph)
    scenarios = scenario_sample(read_scenarios(movingai_dir / f"{name}.scen"), graph.node_count)
    matrix = graph.to_scipy()
    scipy_picks = set(np.linspace(0, len(scenarios) - 1, SCIPY_SAMPLE).round().astype(int).tolist())
    checked = 0
    for k, s in enumerate(scenarios):
        start = graph.node_at_cell(s["start_x"], s["start_y"])
        goal = graph.node_at_cell(s["goal_x"], s["goal_y"])
        where = f"{name} bucket {s['bucket']}: ({s['start_x']},{s['start_y']}) -> ({s['goal_x']},{s['goal_y']})"
        reference = astar(graph, start, goal)
        jumped = jump_point_search(graph, start, goal)
        assert jumped.status == reference.status, where
        if reference.status != STATUS_COMPLETE:  # the file's "no path" scenarios: A*'s partial answer
            assert jumped.cost == reference.cost and np.array_equal(jumped.nodes, reference.nodes), where
            continue
        assert jumped.cost == pytest.approx(reference.cost, rel=1e-12), where
        assert jumped.cost == pytest.approx(float(s["optimal_length"]), rel=1e-4), where
        assert jumped.nodes[0] == start and jumped.nodes[-1] == goal, where
        assert_valid_grid_path(graph, jumped.nodes, jumped.cost)
        assert jumped.expanded <= reference.expanded, where
        if k in scipy_picks:
            assert jumped.cost == pytest.approx(scipy_dijkstra(matrix, indices=start)[goal], rel=1e-12), where
        checked += 1
    assert checked > 0


# --- random and hand-made grids ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 24),
    cols=st.integers(1, 24),
    density=st.floats(0.0, 0.5),
    cell_size=st.sampled_from([1.0, 0.5, 2.0, 1.25]),
)
def test_jump_point_search_matches_scipy_on_random_grids(seed, rows, cols, density, cell_size):
    rng = np.random.default_rng(seed)
    graph = grid_graph(rng.random((rows, cols)) < density, cell_size=cell_size)
    if not graph.walkable.any():
        return
    assert is_uniform_octile(graph)
    for start, goal in assert_searches_match_scipy(graph, rng, jump_point_search):
        assert jump_point_search(graph, start, goal, allow_partial=False).status == STATUS_UNREACHABLE


def test_a_corridor_costs_one_jump_not_a_node_per_cell():
    graph = grid_graph(np.zeros((1, 200), dtype=bool))
    got = jump_point_search(graph, 0, 199)
    assert got.cost == 199.0 and got.nodes.tolist() == list(range(200))
    assert got.expanded == 2  # the start, then the goal found by one scan
    assert astar(graph, 0, 199).expanded == 200


def test_a_wall_with_one_gap_is_passed_through_the_gap():
    graph = grid_graph(parse_ascii_grid("....@....\n....@....\n.........\n....@....\n....@...."))
    start, goal = graph.node_at_cell(0, 0), graph.node_at_cell(8, 0)
    got = jump_point_search(graph, start, goal)
    assert got.cost == pytest.approx(astar(graph, start, goal).cost, rel=1e-12)
    assert graph.node_at_cell(4, 2) in got.nodes.tolist()
    assert_valid_grid_path(graph, got.nodes, got.cost)


def test_start_equal_to_goal_is_a_one_node_path():
    graph = grid_graph(parse_ascii_grid("..\n.."))
    got = jump_point_search(graph, 3, 3)
    assert got.status == STATUS_COMPLETE and got.cost == 0.0 and got.nodes.tolist() == [3]


def test_a_blocked_start_or_goal_raises_naming_it():
    graph = grid_graph(parse_ascii_grid(".@."))
    with pytest.raises(ValueError, match="goal node"):
        jump_point_search(graph, graph.node_at_cell(0, 0), 1)
    with pytest.raises(ValueError, match="start node"):
        find_path(graph, 1, 0)


# --- when the graph is not uniform octile: A* --------------------------------------------------------


def _rebuilt(graph: NavGraph, src, dst, costs, kinds=None) -> NavGraph:
    return NavGraph.from_edges(graph.positions, graph.walkable, src, dst, costs, graph.grid, kinds=kinds)


def _variants():
    """Graphs that differ from a plain 12x12 grid in one way each, and what makes them differ."""
    base = grid_graph(np.random.default_rng(3).random((12, 12)) < 0.2)
    src, dst, costs = base.edge_sources(), base.indices.astype(np.int64), base.costs.copy()
    out = {}
    dearer = costs.copy()
    dearer[src == dst[0]] *= 3.0  # an area cost: leaving one node costs three times as much
    out["area cost"] = _rebuilt(base, src, dst, dearer)
    keep = np.ones(src.size, bool)
    keep[np.flatnonzero(np.abs(dst - src) == 1)[0]] = False  # a step a height difference forbids
    out["missing step"] = _rebuilt(base, src[keep], dst[keep], costs[keep])
    walk = np.flatnonzero(base.walkable)
    out["off-mesh link"] = _rebuilt(base, np.append(src, walk[0]), np.append(dst, walk[-1]), np.append(costs, 2.0),
                                    np.append(np.zeros(src.size, np.uint8), EDGE_LINK))
    cut = grid_graph(parse_ascii_grid("..\n.@"))  # a diagonal step past a blocked corner added
    csrc, cdst = cut.edge_sources(), cut.indices.astype(np.int64)
    corner = [cut.node_at_cell(0, 1), cut.node_at_cell(1, 0)]
    out["corner cutting"] = _rebuilt(cut, np.append(csrc, corner), np.append(cdst, corner[::-1]),
                                     np.append(cut.costs, [math.sqrt(2.0)] * 2))
    return base, out


def test_only_plain_octile_grids_count_as_uniform():
    base, variants = _variants()
    assert is_uniform_octile(base)
    for what, graph in variants.items():
        assert not is_uniform_octile(graph), what
        with pytest.raises(ValueError, match="uniform octile"):
            jump_point_search(graph, int(np.flatnonzero(graph.walkable)[0]), int(np.flatnonzero(graph.walkable)[-1]))


def test_find_path_runs_astar_where_jump_point_search_does_not_apply():
    base, variants = _variants()
    rng = np.random.default_rng(0)
    for what, graph in variants.items():
        walk = np.flatnonzero(graph.walkable)
        for start, goal in rng.choice(walk, (10, 2)):
            got, reference = find_path(graph, start, goal), astar(graph, start, goal)
            assert (got.cost, got.expanded, got.status) == (reference.cost, reference.expanded, reference.status), what
            assert np.array_equal(got.nodes, reference.nodes), what
    # on the plain grid: a budget, a trace or another heuristic asks for A* itself
    start, goal = int(np.flatnonzero(base.walkable)[0]), int(np.flatnonzero(base.walkable)[-1])
    for kwargs in ({"max_expanded": 10_000}, {"trace": True}, {"heuristic": "euclidean"}):
        got, reference = find_path(base, start, goal, **kwargs), astar(base, start, goal, **kwargs)
        assert got.expanded == reference.expanded and np.array_equal(got.nodes, reference.nodes), kwargs
    jumped = find_path(base, start, goal)
    assert jumped.cost == pytest.approx(astar(base, start, goal).cost, rel=1e-12)
    assert jumped.expanded < astar(base, start, goal).expanded


def test_a_graph_changed_in_place_is_tested_again():
    graph = grid_graph(np.zeros((6, 6), dtype=bool))
    assert is_uniform_octile(graph)
    graph.costs = graph.costs * np.where(graph.edge_sources() == 0, 2.0, 1.0)  # a new array: a new cache key
    assert not is_uniform_octile(graph)


def wall_built_in_place(graph: NavGraph) -> NavGraph:
    """Give a 9 x 9 open grid's ``graph`` a wall down its middle, open only on the top line, in
    place (its arrays replaced and its version raised, as a rebuild does); returns the walled grid
    built anew, the reference."""
    walled = np.zeros((9, 9), dtype=bool)
    walled[1:, 4] = True
    rebuilt = grid_graph(walled)
    for name in ("walkable", "indptr", "indices", "costs", "kinds", "positions"):
        setattr(graph, name, getattr(rebuilt, name))
    graph.version += 1
    return rebuilt


def test_a_graph_rebuilt_in_place_with_a_new_wall_is_searched_on_its_new_cells():
    graph = grid_graph(np.zeros((9, 9), dtype=bool))
    start, goal = graph.node_at_cell(0, 4), graph.node_at_cell(8, 4)
    assert jump_point_search(graph, start, goal).cost == 8.0
    rebuilt = wall_built_in_place(graph)
    got, reference = jump_point_search(graph, start, goal), astar(rebuilt, start, goal)
    assert got.cost == pytest.approx(reference.cost, rel=1e-12) and got.cost > 8.0
    assert_valid_grid_path(graph, got.nodes, got.cost)


def test_a_diagonal_step_on_a_two_column_grid_costs_sqrt_2_either_way():
    graph = grid_graph(np.zeros((2, 2), dtype=bool))  # node ids of the two diagonals differ by 1 and by 3
    for start, goal in ((0, 3), (1, 2), (2, 1), (3, 0)):
        got = jump_point_search(graph, start, goal)
        assert got.cost == pytest.approx(math.sqrt(2.0), rel=1e-15) and got.nodes.tolist() == [start, goal]


def test_node_ids_of_any_integer_type_give_the_same_path_and_bad_ones_raise_naming_them():
    graph = grid_graph(parse_ascii_grid("....\n.@@.\n...."))  # node 5: the middle row's first wall
    start, goal = graph.node_at_cell(0, 0), graph.node_at_cell(3, 2)
    reference = jump_point_search(graph, start, goal)
    for a, b in ((np.int64(start), np.int32(goal)), (np.int16(start), goal)):
        got = find_path(graph, a, b)
        assert got.cost == reference.cost and np.array_equal(got.nodes, reference.nodes)
    for bad, message in ((-1, "start node -1 is not in the graph"), (graph.node_count, "not in the graph"),
                         (1.5, "an integer"), (True, "an integer"), (5, "start node 5 .* not walkable")):
        with pytest.raises(ValueError, match=message):
            find_path(graph, bad, goal)
    with pytest.raises(ValueError, match="goal node 5 .* not walkable"):
        find_path(graph, start, 5)


def test_a_graph_of_two_levels_is_not_uniform_octile():
    flat = grid_graph(np.zeros((3, 3), dtype=bool))
    grid = dataclasses.replace(flat.grid, levels=2)
    positions = np.concatenate([flat.positions, flat.positions - [0.0, 0.0, 3.0]])
    walkable = np.concatenate([flat.walkable, np.zeros(9, dtype=bool)])  # the lower level empty
    two = NavGraph.from_edges(positions, walkable, flat.edge_sources(), flat.indices, flat.costs, grid)
    assert not is_uniform_octile(two)
    got, reference = find_path(two, 0, 8), astar(two, 0, 8)
    assert got.expanded == reference.expanded and np.array_equal(got.nodes, reference.nodes)
