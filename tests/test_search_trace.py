"""The search-debug trace: the nodes a path search expanded, recovered from the
kernel's scratch, equal what a plain-Python A* with the same tie-breaking expands; the
PathfindSystem records them for the traced entity only, and the paths are the same with or
without the trace."""

from __future__ import annotations

import heapq
import math

import numpy as np
from ecs_nav.systems.graph_build import GraphBuildSystem
from ecs_nav.systems.pathfind import PathfindSystem

from ecs_nav.core.components import Agent, Collider, NavMap, PathRequest, Position, Velocity
from ecs_nav.core.resource_names import SEARCH_TRACE
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.build import ScanParams, scan_heightfield
from ecs_nav.nav.search import admissibility_factor, astar, dijkstra
from ecs_nav.nav.search_trace import KIND_ASTAR, KIND_SHARED, SearchTrace, trace_entity
from ecs_nav.render import draw
from ecs_nav.render import paths as draw_paths

BOXES = [Box((0, 4), (16, 2), 3.0), Box((-8, -6), (2, 10), 3.0), Box((9, -4), (3, 3), 3.0)]


def walled_graph():
    geometry = MapGeometry((-20, -20, 20, 20), BOXES)
    return scan_heightfield(geometry, ScanParams(scan_range=(20, 10, 20), spacing=2.0))


def reference_astar(graph, start: int, goal: int, heuristic: str = "octile", budget: float = math.inf):
    """A* written out in Python: lazy-deletion heap of (f, h, node), the kernel's tie-breaking
    (lower f, then lower h, then lower id), the same scaled heuristic. Returns the expanded set."""
    xy = graph.positions[:, :2]
    scale = admissibility_factor(graph, heuristic) if heuristic != "zero" else 0.0

    def h(v):
        dx, dy = abs(xy[v, 0] - xy[goal, 0]), abs(xy[v, 1] - xy[goal, 1])
        if heuristic == "zero":
            return 0.0
        if heuristic == "euclidean":
            return scale * math.sqrt(dx * dx + dy * dy)
        return scale * (dy + (math.sqrt(2.0) - 1.0) * dx if dx < dy else dx + (math.sqrt(2.0) - 1.0) * dy)

    g = {start: 0.0}
    closed: set[int] = set()
    heap = [(h(start), h(start), start)]
    while heap:
        f, hu, u = heapq.heappop(heap)
        if u in closed or f != g[u] + hu:
            continue  # a stale entry
        closed.add(u)
        if u == goal or len(closed) >= budget:
            break
        for e in range(graph.indptr[u], graph.indptr[u + 1]):
            v = int(graph.indices[e])
            gv = g[u] + float(graph.costs[e])
            if v not in closed and gv < g.get(v, math.inf):
                g[v] = gv
                hv = h(v)
                heapq.heappush(heap, (gv + hv, hv, v))
    return closed


def test_the_expanded_nodes_are_the_ones_a_reference_astar_expands():
    graph = walled_graph()
    walkable = np.flatnonzero(np.diff(graph.indptr) > 0)
    rng = np.random.default_rng(7)
    checked = 0
    for start, goal in rng.choice(walkable, (25, 2)):
        for heuristic in ("octile", "euclidean", "zero"):
            result = astar(graph, int(start), int(goal), heuristic=heuristic, trace=True)
            expected = reference_astar(graph, int(start), int(goal), heuristic)
            assert set(result.expanded_nodes.tolist()) == expected, (start, goal, heuristic)
            assert result.expanded_nodes.size == result.expanded
            assert np.all(np.diff(result.expanded_nodes) > 0)  # increasing ids
            if start != goal:
                assert set(result.nodes.tolist()) <= expected  # the path runs over expanded nodes
            checked += 1
    assert checked == 75


def test_a_budgeted_search_records_exactly_its_budget_and_dijkstra_traces_too():
    graph = walled_graph()
    start, goal = int(graph.nearest_nodes(np.array([[-18.0, -18.0]]))[0]), int(graph.nearest_nodes(
        np.array([[18.0, 18.0]]))[0])
    result = astar(graph, start, goal, max_expanded=40, trace=True)
    assert result.status == "partial" and result.expanded == 40
    assert set(result.expanded_nodes.tolist()) == reference_astar(graph, start, goal, budget=40)
    plain = dijkstra(graph, start, goal, trace=True)
    assert set(plain.expanded_nodes.tolist()) == reference_astar(graph, start, goal, "zero")
    assert astar(graph, start, goal).expanded_nodes is None  # not asked: nothing extra
    assert astar(graph, start, start, trace=True).expanded_nodes.size == 0  # no search ran


def open_world(trace_first: bool) -> tuple[World, list[int]]:
    world = World(seed=0)
    world.map = MapGeometry((-20, -20, 20, 20), BOXES)
    world.navmap = NavMap(scan_range=(20.0, 10.0, 20.0))
    world.add_systems(GraphBuildSystem(), PathfindSystem(period=30))
    ents = []
    for x, y, goal in ((-16, -16, (16, 16)), (-16, 12, (14, -14)), (14, -16, (-12, 16))):
        e = world.spawn(Position(x, y), Velocity(), Agent(), Collider(radius=0.5))
        world.add_component(e, PathRequest(goal=goal))
        ents.append(e)
    if trace_first:
        trace_entity(world, ents[0])
    return world, ents


def test_the_pathfind_system_records_the_traced_entitys_search_only_and_plans_the_same():
    traced_world, ents = open_world(trace_first=True)
    plain_world, _ = open_world(trace_first=False)
    traced_world.step()
    plain_world.step()
    trace = traced_world.resources[SEARCH_TRACE]
    assert trace.entity == ents[0] and trace.kind == KIND_ASTAR and trace.tick == 0
    graph = traced_world.nav_graph
    start, goal = graph.nearest_nodes(np.array([[-16.0, -16.0], [16.0, 16.0]]), np.zeros(2))
    expected = astar(graph, int(start), int(goal), trace=True)
    np.testing.assert_array_equal(trace.nodes, expected.expanded_nodes)
    assert trace.graph_version == graph.version and trace.status == "complete"
    traced_world.run(60)
    plain_world.run(60)
    assert traced_world.state_digest() == plain_world.state_digest()
    assert SEARCH_TRACE not in plain_world.resources


def test_a_shared_search_records_every_node_it_settled():
    world, ents = open_world(trace_first=False)
    for e in ents:  # one goal for all three: one shared reverse search
        world.add_component(e, PathRequest(goal=(0.0, 16.0)))
    trace_entity(world, ents[1])
    world.step()
    trace = world.resources[SEARCH_TRACE]
    assert trace.kind == KIND_SHARED and trace.nodes.size > 0
    graph = world.nav_graph
    goal = int(graph.nearest_nodes(np.array([[0.0, 16.0]]), np.zeros(1))[0])
    distance, _ = dijkstra(graph, goal)  # a flat map: every edge goes both ways, so from = to
    np.testing.assert_array_equal(trace.nodes, np.flatnonzero(np.isfinite(distance)))
    trace_entity(world, None)
    assert SEARCH_TRACE not in world.resources


def test_searched_node_squares_sit_on_the_nodes_and_vanish_for_another_graph_version():
    graph = walled_graph()
    trace = SearchTrace(entity=1)
    walkable = np.flatnonzero(np.diff(graph.indptr) > 0)[:3]
    trace.record(walkable, KIND_ASTAR, "complete", 3, graph.version)
    rows = draw_paths.searched_nodes(graph, trace)
    assert rows.shape == (3 * 6, 6)
    centres = rows[:, :2].reshape(3, 6, 2).mean(axis=1)
    np.testing.assert_allclose(centres, graph.positions[walkable, :2], atol=1e-4)
    assert np.allclose(rows[:, 2:], draw.PALETTE["search"])
    trace.graph_version += 1
    assert draw_paths.searched_nodes(graph, trace).shape == (0, 6)
    assert "3 expanded, tick 3" in trace.describe()
