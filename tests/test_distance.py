"""Whole-graph distance fields: both Dijkstra kernels and the seed's step field, against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import dijkstra as scipy_dijkstra

from ecs_nav.nav.distance import (
    MAX_QUEUE_CLASSES,
    dijkstra_field,
    distance_field,
    field_buffers,
    grid_steps,
    step_field,
)
from ecs_nav.nav.graph import EDGE_LINK, NavGraph
from ecs_nav.nav.grid import grid_graph


def to_goal_reference(graph: NavGraph, goals) -> np.ndarray:
    """scipy's multi-source distances on the reversed graph: each node's distance *to* a goal."""
    return scipy_dijkstra(graph.to_scipy().T.tocsr(), indices=np.atleast_1d(goals), min_only=True)


def with_links(base: NavGraph, rng, count: int, costs) -> NavGraph:
    """``base`` plus ``count`` one-way off-mesh links between random walkable nodes, costs drawn
    from ``costs`` (a list: few classes; a callable: one class per link)."""
    src, dst, cost = list(base.edge_sources()), list(base.indices), list(base.costs)
    kinds = [0] * len(src)
    nodes = np.flatnonzero(base.walkable)
    seen = set(zip(src, dst))
    for _ in range(count):
        a, b = (int(x) for x in rng.choice(nodes, 2, replace=False))
        if (a, b) in seen:
            continue
        seen.add((a, b))
        src.append(a)
        dst.append(b)
        cost.append(float(costs(rng)) if callable(costs) else float(rng.choice(costs)))
        kinds.append(EDGE_LINK)
    return NavGraph.from_edges(base.positions, base.walkable, src, dst, cost, base.grid, kinds=kinds)


def assert_next_hops_on_shortest_paths(graph: NavGraph, dist: np.ndarray, next_hop: np.ndarray, goals):
    goals = np.atleast_1d(goals)
    assert np.all(next_hop[goals] == -1) and np.all(dist[goals] == 0)
    assert np.all(next_hop[np.isinf(dist)] == -1)
    for v in np.flatnonzero(np.isfinite(dist) & (next_hop >= 0)):
        u = next_hop[v]
        assert dist[v] == pytest.approx(graph.distance(v, u) + dist[u], rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cell_size", [1.0, 0.3])
def test_octile_grid_fields_equal_scipy(seed, cell_size):
    """Grid steps, two cost classes: the grid kernel."""
    rng = np.random.default_rng(seed)
    graph = grid_graph(rng.random((rng.integers(1, 40), rng.integers(1, 40))) < rng.uniform(0, 0.45), cell_size)
    nodes = np.flatnonzero(graph.walkable)
    if nodes.size == 0:
        pytest.skip("no walkable cell drawn")
    assert grid_steps(graph) is not None
    goals = rng.choice(nodes, min(int(rng.integers(1, 4)), nodes.size), replace=False)
    dist, next_hop = distance_field(graph, goals)
    np.testing.assert_allclose(dist, to_goal_reference(graph, goals), rtol=1e-9)
    assert_next_hops_on_shortest_paths(graph, dist, next_hop, goals)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("classes", ["few", "many"])
def test_one_way_links_with_few_or_many_costs_equal_scipy(seed, classes):
    """Links to far slots: a few extra cost classes run the class queues over the CSR, one per
    link the heap."""
    rng = np.random.default_rng(100 + seed)
    base = grid_graph(rng.random((20, 25)) < 0.3)
    costs = [0.5, 2.5, 7.0] if classes == "few" else (lambda r: r.uniform(0.05, 6.0))
    graph = with_links(base, rng, 60, costs)
    few = len(graph.packed_adjacency()[1]) <= MAX_QUEUE_CLASSES
    assert few == (classes == "few") and grid_steps(graph) is None
    goals = rng.choice(np.flatnonzero(graph.walkable), 2, replace=False)
    dist, next_hop = distance_field(graph, goals)
    np.testing.assert_allclose(dist, to_goal_reference(graph, goals), rtol=1e-9)
    assert_next_hops_on_shortest_paths(graph, dist, next_hop, goals)
    start = int(goals[0])
    dist, pred = dijkstra_field(graph, start)
    np.testing.assert_allclose(dist, scipy_dijkstra(graph.to_scipy(), indices=start), rtol=1e-9)
    for v in np.flatnonzero(np.isfinite(dist) & (pred >= 0)):
        assert dist[v] == pytest.approx(dist[pred[v]] + graph.distance(pred[v], v), rel=1e-12)


def grid_with_costs(blocked, cost_of_step) -> NavGraph:
    """The octile grid of ``blocked`` with each edge's cost set by ``cost_of_step(d_row, d_col,
    source)``."""
    base = grid_graph(blocked)
    cols = base.grid.cols
    src, dst = base.edge_sources(), base.indices.astype(np.int64)
    costs = [cost_of_step(int(b // cols - a // cols), int(b % cols - a % cols), int(a)) for a, b in zip(src, dst)]
    return NavGraph.from_edges(base.positions, base.walkable, src, dst, costs, base.grid)


@pytest.mark.parametrize("seed", range(3))
def test_grid_steps_with_a_cost_per_direction_equal_scipy(seed):
    """Slopes: uphill (+row) dearer than downhill, diagonals their own: four classes, grid kernel."""
    rng = np.random.default_rng(200 + seed)
    graph = grid_with_costs(rng.random((18, 21)) < 0.25, lambda dr, dc, a: [0.7, 1.0, 1.6][dr + 1] * (1.5 if dc else 1))
    steps = grid_steps(graph)
    assert steps is not None and steps.classes >= 4
    goals = rng.choice(np.flatnonzero(graph.walkable), 2, replace=False)
    dist, next_hop = distance_field(graph, goals)
    np.testing.assert_allclose(dist, to_goal_reference(graph, goals), rtol=1e-9)
    assert_next_hops_on_shortest_paths(graph, dist, next_hop, goals)


def test_grid_steps_whose_costs_vary_within_a_direction_run_the_general_kernels():
    rng = np.random.default_rng(9)
    graph = grid_with_costs(rng.random((15, 15)) < 0.2, lambda dr, dc, a: 1.0 + (a % 3) * 0.25 + abs(dr) + abs(dc))
    assert graph.step_mask()[1] and grid_steps(graph) is None
    goals = rng.choice(np.flatnonzero(graph.walkable), 3, replace=False)
    np.testing.assert_allclose(distance_field(graph, goals)[0], to_goal_reference(graph, goals), rtol=1e-9)


def test_a_full_heap_grows_and_the_answer_stays_exact():
    rng = np.random.default_rng(3)
    graph = with_links(grid_graph(np.zeros((15, 15), bool)), rng, 200, lambda r: r.uniform(0.05, 9.0))
    buffers = field_buffers(graph.reverse())
    buffers.heap_key, buffers.heap_node = np.empty(1), np.empty(1, np.int32)
    dist, _ = distance_field(graph, 7)
    assert buffers.heap_key.shape[0] > 1
    np.testing.assert_allclose(dist, to_goal_reference(graph, 7), rtol=1e-9)


def test_out_arrays_are_written_in_place_and_reused():
    rng = np.random.default_rng(5)
    graph = grid_graph(rng.random((30, 30)) < 0.25)
    nodes = np.flatnonzero(graph.walkable)
    out = (np.empty(graph.node_count), np.empty(graph.node_count, np.int64))
    for goal in nodes[[0, -1, len(nodes) // 2]]:
        dist, next_hop = distance_field(graph, goal, out=out)
        assert dist is out[0] and next_hop is out[1]
        np.testing.assert_allclose(dist, to_goal_reference(graph, goal), rtol=1e-9)
        assert_next_hops_on_shortest_paths(graph, dist, next_hop, goal)
    buffers = field_buffers(graph.reverse())
    kept = (buffers.class_key, buffers.heap_key, buffers.queue)
    distance_field(graph, nodes[1], out=out)
    assert all(a is b for a, b in zip(kept, (buffers.class_key, buffers.heap_key, buffers.queue)))


def test_max_cost_leaves_far_nodes_unreached():
    graph = grid_graph(np.zeros((1, 10), bool))
    for kernel_graph in (graph, with_links(graph, np.random.default_rng(0), 30, lambda r: r.uniform(1, 9))):
        dist, hop = dijkstra_field(kernel_graph, 0, max_cost=3.5)
        ref = scipy_dijkstra(kernel_graph.to_scipy(), indices=0, limit=3.5)
        np.testing.assert_allclose(dist, ref)
        assert np.all(hop[np.isinf(dist)] == -1)


def test_bad_arguments_name_what_is_wrong():
    graph = grid_graph(np.array([[False, True], [False, False]]))
    with pytest.raises(ValueError, match="at least one goal"):
        distance_field(graph, [])
    with pytest.raises(ValueError, match="goal node 3 .* is not walkable"):
        distance_field(graph, [0, 3])
    with pytest.raises(ValueError, match="source node 4 is not in the graph"):
        dijkstra_field(graph, 4)
    with pytest.raises(ValueError, match="max_cost"):
        distance_field(graph, 0, max_cost=math.nan)
    with pytest.raises(ValueError, match=r"out must be \(4,\) float64 and \(4,\) int64"):
        distance_field(graph, 0, out=(np.empty(4), np.empty(4, np.int32)))
    with pytest.raises(ValueError, match=r"out must be \(4,\) int32"):
        step_field(graph, 0, out=np.empty(3, np.int32))


def orthogonal_reference(graph: NavGraph, goals) -> np.ndarray:
    """Unweighted distances to the goals over the edges between 4-neighbour slots, by scipy."""
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    cols = graph.grid.cols
    step = np.abs(dst - src)
    orthogonal = (step == cols) | ((step == 1) & (src // cols == dst // cols))
    n = graph.node_count
    reverse = csr_array((np.ones(orthogonal.sum()), (dst[orthogonal], src[orthogonal])), shape=(n, n))
    ref = scipy_dijkstra(reverse, indices=np.atleast_1d(goals), min_only=True, unweighted=True)
    return np.where(np.isinf(ref), -1, ref).astype(np.int32)


@pytest.mark.parametrize("seed", range(5))
def test_step_field_equals_an_unweighted_search_over_orthogonal_edges(seed):
    rng = np.random.default_rng(seed)
    graph = with_links(grid_graph(rng.random((17, 23)) < 0.3), rng, 20, [1.0])  # links are not steps
    goals = rng.choice(np.flatnonzero(graph.walkable), 2, replace=False)
    steps = step_field(graph, goals)
    assert steps.dtype == np.int32
    np.testing.assert_array_equal(steps, orthogonal_reference(graph, goals))
    assert np.all(steps[~graph.walkable] == -1)
