"""reachable_from: the nodes a breadth-first search reaches are the nodes Dijkstra reaches."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.nav.distance import dijkstra_field
from ecs_nav.nav.grid import grid_graph
from ecs_nav.scene.reachability import reachable_from


@pytest.mark.parametrize("seed", range(6))
def test_reachable_from_agrees_with_dijkstra_both_ways_on_random_split_grids(seed):
    rng = np.random.default_rng(seed)
    blocked = rng.random((24, 31)) < 0.38  # dense enough to cut the grid into islands
    graph = grid_graph(blocked)
    free = np.flatnonzero(graph.walkable)
    sources = rng.choice(free, size=3, replace=False)
    for g in (graph, graph.reverse()):
        expected = np.isfinite(dijkstra_field(g, sources)[0])
        assert np.array_equal(reachable_from(g, sources), expected)
        assert 0 < expected.sum() < free.size  # the case is split, not trivial

