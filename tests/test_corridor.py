"""The route being walked against a new plan (``ecs_nav.nav.corridor``): the compiled rule
against the rule written out with numpy over the graph's own edge lookup (``path_costs``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_nav.nav.corridor import ROUTE_SLACK, route_kept, still_as_good
from ecs_nav.nav.grid import grid_graph
from ecs_nav.nav.search import STATUS_COMPLETE, astar


def reference(graph, route, waypoints, index, new_nodes, new_cost, agent_xy, slack) -> bool:
    """The rule as the PathfindSystem wrote it before it was compiled, with the kernel's check
    that every id is a node (the numpy rule raised an IndexError there), and a string-pulled
    route measured from the node it walks to (not from its best node)."""
    if route.size == 0 or new_nodes.size == 0 or route[-1] != new_nodes[-1]:
        return False
    if np.any((route < 0) | (route >= graph.node_count)):
        return False
    costs = graph.path_costs(route)
    if not np.all(np.isfinite(costs)):
        return False
    to_goal = np.concatenate([np.cumsum(costs[::-1])[::-1], [0.0]])
    k = route.size
    if waypoints.shape[0] >= k and np.array_equal(waypoints[:k, :2], graph.positions[route, :2]):
        if index < -k:  # (before the first: no waypoint)
            return False
        j = min(index, k - 1)
        old = float(np.hypot(*(graph.positions[route[j], :2] - agent_xy))) + to_goal[j]
    else:  # string-pulled: from the route's node at the waypoint being walked to (else its last)
        if waypoints.shape[0] == 0 or index < -waypoints.shape[0]:
            return False
        walked_to = waypoints[min(index, waypoints.shape[0] - 1), :2]
        found = np.flatnonzero(np.all(graph.positions[route, :2] == walked_to, axis=1))
        j = int(found[0]) if found.size else k - 1
        old = float(np.hypot(*(graph.positions[route[j], :2] - agent_xy))) + to_goal[j]
    start = float(np.hypot(*(graph.positions[new_nodes[0], :2] - agent_xy)))
    return old <= start + new_cost + slack


def compiled(graph, route, waypoints, index, new_nodes, new_cost, agent_xy, slack) -> bool:
    return bool(still_as_good(graph.indptr, graph.indices, graph.costs, graph.positions, route, waypoints, index,
                              int(new_nodes[0]), int(new_nodes[-1]), float(new_cost), float(agent_xy[0]),
                              float(agent_xy[1]), slack))


def open_grid(rows=6, cols=8):
    return grid_graph(np.zeros((rows, cols), bool))


def test_the_new_plan_itself_is_kept_and_a_detour_longer_than_the_slack_is_not():
    graph = open_grid()
    plan = astar(graph, 0, 7)
    assert plan.status == STATUS_COMPLETE
    agent = graph.positions[0, :2]
    waypoints = graph.positions[plan.nodes]
    assert compiled(graph, plan.nodes, waypoints, 0, plan.nodes, plan.cost, agent, ROUTE_SLACK)
    # along row 1 and back down: two diagonals where the straight row is level, 2 (sqrt 2 - 1) > 0.5 longer
    detour = np.array([0, 9, 10, 11, 12, 13, 14, 7])
    waypoints = graph.positions[detour]
    assert not compiled(graph, detour, waypoints, 0, plan.nodes, plan.cost, agent, ROUTE_SLACK)
    assert compiled(graph, detour, waypoints, 0, plan.nodes, plan.cost, agent, 1.0)


def test_another_goal_a_broken_link_or_an_id_off_the_graph_is_never_kept():
    graph = open_grid()
    plan = astar(graph, 0, 7)
    agent = graph.positions[0, :2]
    for route in ([0, 1, 2, 3, 4, 5, 6], [0, 1, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7, graph.node_count], []):
        route = np.array(route, np.int64)
        waypoints = graph.positions[np.clip(route, 0, graph.node_count - 1)]
        assert not compiled(graph, route, waypoints, 0, plan.nodes, plan.cost, agent, 10.0)


def test_a_string_pulled_route_is_measured_from_the_node_it_walks_to():
    graph = open_grid()
    plan = astar(graph, 0, 7)
    route = plan.nodes
    pulled = graph.positions[[route[0], route[-1]]]  # pulled straight: its first and last nodes
    agent = graph.positions[5, :2] + [0.0, 0.1]  # near node 5, two nodes short of the goal
    rest = astar(graph, 5, 7)
    # walking to the goal node: 2 m along the route, as the new plan: kept
    assert compiled(graph, route, pulled, 1, rest.nodes, rest.cost, agent, 0.0)
    assert compiled(graph, route, pulled, 9, rest.nodes, rest.cost, agent, 0.0)  # (past the last: the last)
    assert compiled(graph, route, pulled, -1, rest.nodes, rest.cost, agent, 0.0)
    # still walking to the first waypoint, 5 m back: 12 m against 2, a new route. (Measured from
    # the route's best node, it would be kept: on a grid graph that node is always the goal, so
    # a pulled route would be kept until the graph changed.)
    assert not compiled(graph, route, pulled, 0, rest.nodes, rest.cost, agent, 0.0)
    assert not compiled(graph, route, pulled, -2, rest.nodes, rest.cost, agent, 0.0)
    assert not compiled(graph, route, pulled, -3, rest.nodes, rest.cost, agent, 10.0)  # (before the first)
    # off the route, it is measured the same way: the straight line to the node it walks to (8.6
    # m) against the 9.1 m plan (the PathfindSystem asks for a clear line too: test_pathfind_system)
    away = graph.positions[40, :2]  # row 5: four rows off the route along row 0
    around = astar(graph, 40, 7)
    assert compiled(graph, route, pulled, 1, around.nodes, around.cost, away, 0.0)
    # a waypoint on no node (the goal point past the last node) is measured from the last node
    past = np.vstack([pulled, graph.positions[7] + [0.3, 0.2, 0.0]])
    assert compiled(graph, route, past, 2, rest.nodes, rest.cost, agent, 0.0)
    moved = graph.positions[route].copy()  # as many waypoints as nodes, one of them off its node
    moved[3, 1] += 0.25
    assert not compiled(graph, route, moved, 0, rest.nodes, rest.cost, agent, 0.0)
    assert compiled(graph, route, moved, 5, rest.nodes, rest.cost, agent, 0.1)
    # on its nodes, it is measured from the waypoint being walked to: from node 0, 5 m back
    assert not compiled(graph, route, graph.positions[route], 0, rest.nodes, rest.cost, agent, 0.0)
    assert compiled(graph, route, graph.positions[route], 5, rest.nodes, rest.cost, agent, 0.1)
    assert not compiled(graph, route, graph.positions[:0], 0, rest.nodes, rest.cost, agent, 10.0)  # no waypoints


def test_a_route_exactly_as_long_as_the_new_plan_is_kept_without_slack():
    graph = open_grid()
    plan = astar(graph, 0, 7)  # along the row: whole metres, so both sums are exact
    assert plan.cost == 7.0
    assert compiled(graph, plan.nodes, graph.positions[plan.nodes], 0, plan.nodes, plan.cost, graph.positions[0, :2],
                    0.0)


@st.composite
def corridor_cases(draw):
    rows, cols = draw(st.integers(2, 7)), draw(st.integers(2, 7))
    blocked = np.array(draw(st.lists(st.booleans(), min_size=rows * cols, max_size=rows * cols))).reshape(rows, cols)
    blocked &= np.array(draw(st.lists(st.booleans(), min_size=rows * cols, max_size=rows * cols))).reshape(rows, cols)
    blocked[0, 0] = False
    graph = grid_graph(blocked, cell_size=draw(st.sampled_from([0.5, 1.0, 2.0])))
    open_nodes = np.flatnonzero(graph.walkable)
    node = st.sampled_from(open_nodes.tolist())
    # the route: a random walk over the graph's edges, or any nodes (some not linked)
    route = [draw(node)]
    for _ in range(draw(st.integers(0, 10))):
        a = route[-1]
        out = graph.indices[graph.indptr[a] : graph.indptr[a + 1]]
        route.append(int(draw(st.sampled_from(out.tolist()))) if out.size and draw(st.booleans()) else draw(node))
    route = np.array(route, np.int64)
    if draw(st.booleans()):  # or a shortest route, as the PathfindSystem writes them
        planned = astar(graph, draw(node), draw(node))
        if planned.nodes.size:
            route = planned.nodes
    kind = draw(st.sampled_from(["nodes", "nodes and goal", "pulled", "moved"]))
    waypoints = graph.positions[route].copy()
    if kind == "nodes and goal":
        waypoints = np.vstack([waypoints, waypoints[-1] + [0.3, 0.2, 0.0]])
    elif kind == "pulled":
        waypoints = waypoints[[0, -1]] if route.size > 2 else waypoints[:1]
    elif kind == "moved":
        waypoints[draw(st.integers(0, route.size - 1)), 0] += 0.25
    waypoints = np.nan_to_num(waypoints)  # (a blocked slot's elevation is NaN; Path waypoints are finite)
    on_route = draw(st.booleans())  # the agent somewhere near its route, planning again to its goal
    start = int(draw(st.sampled_from(route.tolist()))) if on_route else draw(node)
    new = astar(graph, start if graph.walkable[start] else draw(node),
                int(route[-1]) if on_route or draw(st.booleans()) else draw(node))
    near = graph.positions[start, :2] + [draw(st.floats(-1, 1)), draw(st.floats(-1, 1))]
    far = [draw(st.floats(-2, cols * 2 + 2)), draw(st.floats(-2, rows * 2 + 2))]
    agent = np.array(near if on_route else far)
    index = draw(st.integers(-route.size - 2, route.size + 2))  # (negative: counted from the end)
    slack = ROUTE_SLACK * graph.grid.spacing
    return graph, route, waypoints, index, new.nodes, new.cost, agent, slack


@settings(max_examples=400, deadline=None)
@given(corridor_cases())
def test_the_compiled_rule_agrees_with_the_rule_written_out(case):
    graph, route, waypoints, index, new_nodes, new_cost, agent, slack = case
    if new_nodes.size == 0:
        return  # (the caller never asks without a new plan)
    assert compiled(*case) == reference(*case)


def test_route_kept_finds_where_the_new_plan_continues_the_old_route():
    old = np.array([4, 5, 6, 7, 8])
    assert route_kept(old, np.array([6, 7, 8])) == 2
    assert route_kept(old, old) == 0
    assert route_kept(old, np.array([6, 7])) == -1  # not the rest of it
    assert route_kept(old, np.array([6, 9, 8])) == -1
    assert route_kept(old, np.zeros(0, np.int64)) == -1
    assert route_kept(np.array([1, 2, 1, 2]), np.array([1, 2])) == 2  # the occurrence that ends the route
