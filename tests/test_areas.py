"""Area costs ([[map.area]]) and per-agent NavFilters: exact against scipy on the weighted graph."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.path import Path as PolygonPath
from scipy.sparse import csr_array
from scipy.sparse.csgraph import shortest_path
from square_scene import square_scene, world_of

from ecs_nav.core.components import NavFilter, Path, PathRequest
from ecs_nav.nav.graph import EDGE_LINK
from ecs_nav.nav.search import astar
from ecs_nav.scene.files import build_world, scene_from_dict, scene_to_dict
from ecs_nav.scene.schema import SceneError

MUD = {"name": "mud", "cost": 3.0, "center": [-4.3, 2.2], "size": [9.4, 13.4]}
ROAD = {"name": "road", "cost": 0.5, "polygon": [[-18.3, -1.37], [17.6, -2.41], [17.6, 1.63], [-18.3, 0.59]]}
WATER = {"name": "water", "cost": 2.0, "center": [6.2, 5.1], "size": [5.4, 20.6]}
AREAS = (MUD, ROAD, WATER)


def agent(start, goal, nav_filter=None):
    entry = {"Position": {"x": start[0], "y": start[1]}, "Velocity": {}, "Agent": {"max_speed": 3.0},
             "Collider": {"radius": 0.4}, "SteeringWeights": {"weights": {"follow_path": 1.0}},
             "PathRequest": {"goal": list(goal)}}
    if nav_filter is not None:
        entry["NavFilter"] = nav_filter
    return entry


def scene(areas=AREAS, entities=(), systems=None, boxes=()):
    return square_scene(3, boxes, entities, systems, area=areas)


def reference_matrix(graph, costs=None, excluded=()):
    """The weighted graph built here from the plain one: a node's multiplier is that of the
    last area containing it (matplotlib for the polygon), an edge costs its length times the
    mean of its ends' multipliers; nodes of excluded areas lose their edges."""
    costs = costs or {}
    xy = graph.positions[:, :2]
    m = np.ones(graph.node_count)
    for area in AREAS:
        if "polygon" in area:
            inside = PolygonPath(np.array(area["polygon"])).contains_points(xy)
        else:
            (cx, cy), (w, d) = area["center"], area["size"]
            inside = (np.abs(xy[:, 0] - cx) <= w / 2) & (np.abs(xy[:, 1] - cy) <= d / 2)
        m[inside] = np.inf if area["name"] in excluded else costs.get(area["name"], area["cost"])
    src = np.repeat(np.arange(graph.node_count), np.diff(graph.indptr))
    dst = graph.indices
    weight = np.where(graph.kinds == EDGE_LINK, 1.0, (m[src] + m[dst]) / 2) * graph.costs
    keep = np.isfinite(weight)
    n = graph.node_count
    return csr_array((weight[keep], (src[keep], dst[keep])), shape=(n, n)), m


FILTERS = [None, {"costs": {"mud": 1.0, "road": 0.2}}, {"excluded": ["water"]},
           {"costs": {"water": 8.0}, "excluded": ["mud"]}]


@pytest.mark.parametrize("nav_filter", FILTERS)
def test_area_costs_and_filters_give_scipys_shortest_path_costs(nav_filter):
    world = world_of(scene(boxes=[{"center": [0, 12], "size": [14, 1], "height": 3}], systems=["graph_build"]))
    world.step()
    graph, areas = world.nav_graph, world.nav_areas
    f = NavFilter(**(nav_filter or {}))
    weighted = areas.graph_for(graph, f.costs, f.excluded)
    matrix, m = reference_matrix(graph, f.costs, f.excluded)
    rng = np.random.default_rng(7)
    nodes = np.flatnonzero(graph.walkable & np.isfinite(m))
    starts = rng.choice(nodes, 12, replace=False)
    goals = rng.choice(nodes, 12, replace=False)
    reference = shortest_path(matrix, method="D", indices=starts)
    assert (m < 1).any() and (m > 1).any()  # the road is cheaper, mud or water dearer: both sides tested
    for i, (s, g) in enumerate(zip(starts, goals)):
        res = astar(weighted, int(s), int(g))
        if np.isinf(reference[i, g]):
            assert res.status != "complete"
            continue
        assert res.complete and res.cost == pytest.approx(reference[i, g], rel=1e-12)
        steps = matrix[res.nodes[:-1], res.nodes[1:]]
        assert np.asarray(steps).sum() == pytest.approx(res.cost, rel=1e-12)  # along edges of the reference
        assert np.all(np.isfinite(m[res.nodes]))  # no node of an excluded area


def test_the_pathfind_system_serves_each_agent_on_its_filters_costs():
    filters = [None, {"excluded": ["water"]}, {"costs": {"road": 3.0}}]
    entities = [agent((-15, -12), (15, 12), f) for f in filters]
    world = world_of(scene(entities=entities, systems=["graph_build", "pathfind"]))
    world.step()
    graph = world.nav_graph
    for entity, nav_filter in zip(sorted(e for e in world.entities() if world.try_get(e, PathRequest)), filters):
        f = NavFilter(**(nav_filter or {}))
        matrix, m = reference_matrix(graph, f.costs, f.excluded)
        nodes = world.get(entity, Path).nodes
        cost = np.asarray(matrix[nodes[:-1], nodes[1:]]).sum()
        best = shortest_path(matrix, method="D", indices=[nodes[0]])[0, nodes[-1]]
        assert world.get(entity, Path).status == "complete" and cost == pytest.approx(best, rel=1e-12)
    plain, dry, off_road = (world.get(e, Path).nodes for e in sorted(world.entities()))
    water = (np.abs(graph.positions[:, 0] - 6.2) <= 2.7) & (np.abs(graph.positions[:, 1] - 5.1) <= 10.3)
    assert water[plain].any() and not water[dry].any()


def test_a_filtered_agent_walks_round_an_excluded_area():
    world = world_of(scene(entities=[agent((1, 4), (12, 6), {"excluded": ["water"]}), agent((1, 8), (12, 8))]))
    track = {e: [] for e in world.entities()}
    for _ in range(900):
        world.step()
        for e in track:
            track[e].append(world.table.pos[world.table.row_of(e)].copy())
    (cx, cy), (w, d) = WATER["center"], WATER["size"]
    depth = {e: np.max(np.minimum(w / 2 - np.abs(np.array(t)[:, 0] - cx), d / 2 - np.abs(np.array(t)[:, 1] - cy)))
             for e, t in track.items()}
    filtered, plain = sorted(track)
    # its centre never further inside the water than half a node spacing (an area is the nodes whose
    # centre lies in it, and an agent walking by on outside nodes may be anywhere in their cells)
    assert depth[filtered] < 0.5
    assert depth[plain] > 2  # the same trip without the filter wades straight through
    assert np.hypot(*(track[filtered][-1] - np.array([12, 6]))) < 2.5


def test_bad_areas_and_filters_are_reported():
    cases = [({"name": "x", "polygon": [[0, 0], [1, 1]]}, "map.area[0].polygon"),
             ({"name": "x", "center": [0, 0], "size": [1, 1], "polygon": [[0, 0], [1, 0], [0, 1]]},
              "map.area[0].polygon"),
             ({"name": "x", "cost": 0, "center": [0, 0], "size": [1, 1]}, "map.area[0].cost"),
             ({"name": "x", "center": [0, 0], "size": [0, 1]}, "map.area[0].size"),
             ({"cost": 2, "center": [0, 0], "size": [1, 1]}, "map.area[0]")]
    for area, where in cases:
        with pytest.raises(SceneError) as info:
            scene_from_dict(scene([area]))
        assert any(where in p for p in info.value.problems), info.value.problems
    with pytest.raises(SceneError, match="NavFilter.costs"):
        scene_from_dict(scene(entities=[agent((0, 0), (5, 5), {"costs": {"mud": -1.0}})]))
    world = world_of(scene(entities=[agent((0, 0), (5, 5), {"excluded": ["lava"]})]))
    with pytest.raises(ValueError, match="no area named 'lava'"):
        world.step()


def test_areas_and_filters_survive_a_save_and_load():
    world = world_of(scene(entities=[agent((-15, -12), (15, 12), {"excluded": ["water"], "costs": {"mud": 2.0}})]))
    again = build_world(scene_from_dict(scene_to_dict(world)))
    assert again.nav_areas.areas == world.nav_areas.areas
    world.run(200)
    again.run(200)
    assert world.state_digest() == again.state_digest()
