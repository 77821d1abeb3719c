"""The route an agent walks, against a new plan for the same request.

A periodic replan keeps the route being walked (no rewrite, so the follower's leg is untouched
and no PathChanged) while it is about as good as the new plan: among the many equally short
routes of a grid the agent keeps the one it is on, as Detour's path corridor does. And a new
plan that is the rest of the old route (the agent moved along it) keeps the follower's place.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel

ROUTE_SLACK = 0.5
"""A periodic replan keeps the current route unless the new one is shorter by more than this
many node spacings (``still_as_good``)."""


@kernel
def still_as_good(indptr, indices, costs, positions, route, waypoints, index, new_start, new_goal, new_cost,
                  agent_x, agent_y, slack):
    """Whether the route being walked is still as good as a new plan: it ends at the new plan's
    goal node and is no longer, from the agent at (``agent_x``, ``agent_y``), than the new plan
    plus ``slack`` (m; the caller's ``ROUTE_SLACK`` node spacings).

    ``indptr``, ``indices``, ``costs``, ``positions``: the graph's CSR adjacency (targets ascending
    within a node) and its (n, 3) node positions. ``route`` (k,): the old route's node ids;
    ``waypoints`` (w, 3) its waypoints and ``index`` the one being walked to. ``new_start``,
    ``new_goal``: the new plan's first and last node; ``new_cost``: its cost.

    The old route's length from the agent: |agent - the node being walked to| + the route's cost
    from that node. Where its first k waypoints are its nodes, that node is the waypoint being
    walked to; else (string-pulled: the waypoints are some of its nodes, and maybe the goal point
    past the last) it is the node at that waypoint, or the last node where the waypoint is on
    none. The new plan's: |agent - new_start| + ``new_cost``. False when either route or the
    waypoints are empty, an id is not a node, two consecutive nodes are not linked, or the goals
    differ. (A pulled leg is long: the PathfindSystem also asks that the agent can walk straight
    to its waypoint, which this rule, without the map, does not see. A pulled route's first
    waypoint is where the agent stood, on no node: a patrol or loop walking back to it is measured
    from the goal node, so only that line of sight replaces its route.)"""
    k = route.size
    n = positions.shape[0]
    if k == 0 or not (0 <= new_start < n and 0 <= new_goal < n) or route[k - 1] != new_goal:
        return False
    for j in range(k):
        if not 0 <= route[j] < n:
            return False
    # the cost from each node of the route to its end, summed from the end (as np.cumsum of the
    # reversed edge costs: the same float sums)
    to_goal = np.zeros(k)
    remaining = 0.0
    for j in range(k - 2, -1, -1):
        a, b = route[j], route[j + 1]
        edge = -1
        for e in range(indptr[a], indptr[a + 1]):
            if indices[e] == b:
                edge = e
                break
        if edge < 0:
            return False
        remaining += costs[edge]
        to_goal[j] = remaining
    on_nodes = waypoints.shape[0] >= k
    if on_nodes:
        for j in range(k):
            if waypoints[j, 0] != positions[route[j], 0] or waypoints[j, 1] != positions[route[j], 1]:
                on_nodes = False
                break
    if on_nodes:  # measured from the node being walked to
        j = min(index, k - 1)
        if j < 0:  # counted from the end, as numpy indexes; before the first: no waypoint
            j += k
            if j < 0:
                return False
        node = route[j]
        old = np.hypot(positions[node, 0] - agent_x, positions[node, 1] - agent_y) + to_goal[j]
    else:  # string-pulled: from the route's node at the waypoint being walked to
        w = waypoints.shape[0]
        at = min(index, w - 1)
        if at < 0:  # counted from the end, as numpy indexes; before the first: no waypoint
            at += w
            if at < 0:
                return False
        j = k - 1  # (a waypoint on no node is the goal point past the last node)
        for m in range(k):
            if waypoints[at, 0] == positions[route[m], 0] and waypoints[at, 1] == positions[route[m], 1]:
                j = m
                break
        node = route[j]
        old = np.hypot(positions[node, 0] - agent_x, positions[node, 1] - agent_y) + to_goal[j]
        if np.isnan(old):
            return False
    start = np.hypot(positions[new_start, 0] - agent_x, positions[new_start, 1] - agent_y)
    return old <= start + new_cost + slack


def route_kept(previous: np.ndarray, nodes: np.ndarray) -> int:
    """Where ``nodes`` starts in ``previous`` when it is the rest of that route (the agent moved
    along it), else -1. An empty route is never kept."""
    if nodes.size == 0 or previous.size < nodes.size:
        return -1
    at = np.flatnonzero(previous == nodes[0])
    for j in at:
        j = int(j)
        if previous.size - j == nodes.size and np.array_equal(previous[j:], nodes):
            return j
    return -1
