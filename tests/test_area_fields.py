"""Flow fields and distance fields on area costs: exact against scipy on the weighted graph."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import shortest_path
from test_areas import AREAS, WATER, agent, reference_matrix, scene, world_of

from ecs_nav.core.components import NavFilter
from ecs_nav.nav.distance import dijkstra_field, distance_field
from ecs_nav.nav.field_cache import RecentFields
from ecs_nav.nav.fields import FIELDS
from ecs_nav.nav.flowfield import flow_field
from ecs_nav.nav.sight import line_of_sight

FILTERS = [None, {"costs": {"mud": 1.0, "road": 0.2}}, {"excluded": ["water"]},
           {"costs": {"water": 8.0}, "excluded": ["mud"]}]


def built(areas=AREAS):
    world = world_of(scene(areas=areas, boxes=[{"center": [0, 12], "size": [14, 1], "height": 3}],
                           systems=["graph_build"]))
    world.step()
    return world


@pytest.mark.parametrize("nav_filter", FILTERS)
def test_distance_and_flow_fields_on_a_filters_graph_give_scipys_costs(nav_filter):
    world = built()
    graph, areas = world.nav_graph, world.nav_areas
    f = NavFilter(**(nav_filter or {}))
    weighted = areas.graph_for(graph, f.costs, f.excluded)
    matrix, m = reference_matrix(graph, f.costs, f.excluded)
    nodes = np.flatnonzero(graph.walkable & np.isfinite(m))
    goals = np.random.default_rng(11).choice(nodes, 3, replace=False)
    to_goal = shortest_path(matrix.T.tocsr(), method="D", indices=goals).min(axis=0)  # reverse: distance *to*
    from_goal = shortest_path(matrix, method="D", indices=goals).min(axis=0)
    distance, next_hop = distance_field(weighted, goals)
    np.testing.assert_allclose(distance, to_goal, rtol=1e-12)
    np.testing.assert_allclose(dijkstra_field(weighted, goals)[0], from_goal, rtol=1e-12)
    np.testing.assert_allclose(flow_field(weighted, goals).distance, to_goal, rtol=1e-12)
    assert not np.isfinite(distance[~np.isfinite(m)]).any()  # excluded areas are not walked
    step = np.flatnonzero(next_hop >= 0)  # each next hop is an edge on a cheapest way
    np.testing.assert_allclose(np.asarray(matrix[step, next_hop[step]]).ravel() + distance[next_hop[step]],
                               distance[step], rtol=1e-12)


def test_few_and_many_distinct_costs_both_match_scipy():
    # one area: at most 8 distinct edge costs (the class queues); three: more (the heap)
    for areas in (AREAS[:1], AREAS):
        world = built(areas)
        weighted = world.nav_areas.graph_for(world.nav_graph)
        costs = np.unique(weighted.costs)
        assert (costs.size <= 8) == (len(areas) == 1)
        goal = int(np.flatnonzero(weighted.walkable)[200])
        n = weighted.node_count
        matrix = csr_array((weighted.costs, (weighted.edge_sources(), weighted.indices)), shape=(n, n))
        np.testing.assert_allclose(distance_field(weighted, goal)[0],
                                   shortest_path(matrix.T.tocsr(), method="D", indices=[goal])[0], rtol=1e-12)


def test_line_of_sight_on_a_weighted_graph_stays_within_one_cost():
    world = built()
    graph = world.nav_graph
    weighted = world.nav_areas.graph_for(graph, {"road": 1.0, "water": 1.0})  # mud (3x) is the only dear area
    a, b = (-12.0, 5.0), (4.0, 5.0)  # straight across the mud box [-9, 0.4] x [-4.5, 8.9]
    assert line_of_sight(graph, a, b)
    assert not line_of_sight(weighted, a, b)
    assert line_of_sight(weighted, (-12.0, 5.0), (-10.0, 5.0))  # beside it, all plain floor
    assert line_of_sight(weighted, (-6.0, 5.0), (-2.0, 5.0))  # within it


def test_recent_fields_keep_one_field_per_graph_and_goal():
    world = built()
    graph, areas = world.nav_graph, world.nav_areas
    plain, dry = areas.graph_for(graph), areas.graph_for(graph, excluded=["water"])
    goal = int(np.flatnonzero(dry.walkable)[300])
    recent = RecentFields()
    for _ in range(3):  # alternating filters: each graph's field is computed once
        a, b = recent.field(plain, goal), recent.field(dry, goal)
    assert recent.computed == 2
    np.testing.assert_array_equal(a[0], distance_field(plain, goal)[0])
    np.testing.assert_array_equal(b[0], distance_field(dry, goal)[0])
    assert not np.array_equal(a[0], b[0])


def test_flow_field_agents_get_their_filters_field_and_keep_out_of_excluded_areas():
    entities = []
    for y in (4, 8):
        for nav_filter in (None, {"excluded": ["water"]}):
            entry = agent((1, y), (14, 6), nav_filter)
            entry["PathRequest"]["method"] = "flow_field"
            entities.append(entry)
    world = world_of(scene(entities=entities))
    ents = sorted(world.entities())
    track = {e: [] for e in ents}
    for _ in range(900):
        world.step()
        for e in track:
            track[e].append(world.table.pos[world.table.row_of(e)].copy())
    fields = world.resources[FIELDS]
    ids = [int(world.table.field_id[world.table.row_of(e)]) for e in ents]
    assert ids[0] == ids[2] and ids[1] == ids[3] and ids[0] != ids[1]  # one field per filter and goal
    graph = world.nav_graph
    matrix, m = reference_matrix(graph, {}, ["water"])
    dry = fields.get(ids[1]).flow
    goal = dry.goals
    np.testing.assert_allclose(dry.distance, shortest_path(matrix.T.tocsr(), method="D", indices=goal).min(axis=0),
                               rtol=1e-12)
    (cx, cy), (w, d) = WATER["center"], WATER["size"]
    for e, nav_filter in zip(ents, (None, 1, None, 1)):
        t = np.array(track[e])
        depth = np.max(np.minimum(w / 2 - np.abs(t[:, 0] - cx), d / 2 - np.abs(t[:, 1] - cy)))
        assert np.hypot(*(t[-1] - np.array([14, 6]))) < 2.5
        if nav_filter:
            assert depth < 0.5  # never further in than half a node spacing (see test_areas)
        else:
            assert depth > 2  # wades straight through
