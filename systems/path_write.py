"""The PathfindSystem's Paths: a search's route written as the entity's ``Path``, with its events.

What ``systems/pathfind.py``'s docstring says under "The Path written" and "Events": the
waypoints of the route's nodes, plus the exact goal point when the goal node's surface can be
walked to it; string pulling (``request.smooth``) from where the agent stands; the waypoint
index (1 when the agent stands in the start node's cell, kept when the new route is the rest of
the old one); a periodic replan that keeps a route still as good (``ecs_nav.nav.corridor``) and,
pulled, in sight; ``PathChanged`` and ``PathFailed``. ``systems/path_serve.py`` calls
``write_route`` once per served entity and ``mark_pending`` for one the budget leaves waiting.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.core.components import Path, PathRequest
from ecs_nav.core.events import PathChanged, PathFailed
from ecs_nav.core.world import World
from ecs_nav.nav.corridor import ROUTE_SLACK, route_kept, still_as_good
from ecs_nav.nav.search import STATUS_COMPLETE, STATUS_PARTIAL, STATUS_UNREACHABLE
from ecs_nav.nav.smooth import line_walkable, smooth_path

_GOAL_LIFT = 0.2
"""Lift of the goal-node → goal-point segment test (the seed's link lift)."""


def write_route(world: World, graph, entity: int, path: Path | None, request: PathRequest, route: tuple,
                forced: bool, row: int, start: np.ndarray, goal: np.ndarray, goal_found: bool, own_node: int) -> bool:
    """Write the route ``route`` = (nodes, status, cost) found for ``entity``'s ``request`` on
    ``graph`` as its Path (``path``: the one it has, or None).

    Args:
        forced: a new, stale or unplanned request (always rewritten); else a periodic replan,
            which keeps the route being walked while it is still as good.
        row: the entity's table row (-1: none; then nothing is string-pulled).
        start: (3,) the point planned from (x, y, elevation): the agent's, or its link landing.
        goal: (3,) the goal point (x, y, elevation; NaN elevation: unknown, the goal node's).
        goal_found: whether the goal was found (a point, or a target entity that exists) with a
            node; else ``remaining`` of a PathFailed is inf.
        own_node: the node of the grid cell ``start`` lies in (``own_nodes``; -1: none).

    Returns:
        False when the periodic replan kept the route being walked (its Path only stops being
        ``pending``), True when the Path was written.
    """
    nodes, status, cost = route
    if (not forced and status in (STATUS_COMPLETE, STATUS_PARTIAL) and path is not None
            and path.status == status
            and _still_good(world, graph, path, request, nodes, cost, row, start[:2])):
        path.pending = False
        return False
    table = world.table
    waypoints = graph.positions[nodes].copy()
    if status == STATUS_COMPLETE and nodes.size:
        goal_point = np.array([goal[0], goal[1], goal[2] if np.isfinite(goal[2]) else waypoints[-1, 2]])
        if _walkable_to_goal(world, graph, waypoints[-1], goal_point):
            waypoints = np.vstack([waypoints, goal_point])
    pulled = bool(request.smooth and world.map is not None and waypoints.shape[0] > 1 and row >= 0)
    if pulled:
        # from where the agent stands, its first waypoint (seed 000's path[0]: the follower
        # starts at index 1), each leg clear for the agent's disc widened by the Path's
        # radius: where the follower takes a waypoint as reached within that radius of it,
        # every straight line from there to the next waypoint is clear for the agent (where
        # it took one as reached by crossing the line square to the leg, further out, the
        # periodic replan's line of sight, _in_sight, catches a blocked one)
        here = np.array([[start[0], start[1], start[2]]])
        reach = path.radius if path is not None else Path.radius
        waypoints = smooth_path(np.vstack([here, waypoints]), world.map,
                                radius=float(table.radius[row]) + float(reach),
                                max_climb=float(table.max_climb[row]))
    remaining = np.inf
    if nodes.size and goal_found and status != STATUS_COMPLETE:
        remaining = float(np.hypot(*(goal[:2] - waypoints[-1, :2])))
    # (an agent on a link's start node walks to it first: the link is crossed from there)
    stands = bool(nodes.size and own_node == nodes[0]) and not (
        world.nav_links is not None and nodes.size > 1
        and world.nav_links.link_between(graph, int(nodes[0]), int(nodes[1])) >= 0)
    _write(world, entity, path, nodes, waypoints, status, stands, graph.version, remaining, pulled)
    return True


def mark_pending(world: World, entity: int, path: Path | None) -> None:
    """The entity's request waits in the queue: its Path (an empty one when it has none) says
    so; its route, if any, is kept."""
    if path is None:
        path = world.try_get(entity, Path)
    if path is None:
        path = Path()
        world.add_component(entity, path)
    path.pending = True


def _still_good(world: World, graph, path: Path | None, request: PathRequest, nodes: np.ndarray,
                cost: float, row: int, agent_xy: np.ndarray) -> bool:
    """Whether a periodic replan keeps the route being walked: it has the new plan's status
    (the caller's test), is on this graph version, is still as good as the new plan
    (``ecs_nav.nav.corridor.still_as_good``, within ``ROUTE_SLACK`` node spacings), and, pulled
    (``request.smooth``), leaves the agent in sight of its waypoint (``_in_sight``)."""
    if path is None or path.graph_version != graph.version or nodes.size == 0:
        return False
    good = still_as_good(graph.indptr, graph.indices, graph.costs, graph.positions,
                         np.asarray(path.nodes, np.int64), np.asarray(path.waypoints, np.float64),
                         int(path.index), int(nodes[0]), int(nodes[-1]), float(cost), float(agent_xy[0]),
                         float(agent_xy[1]), ROUTE_SLACK * graph.grid.spacing)
    return bool(good) and (not request.smooth or _in_sight(world, path, row))


def _in_sight(world: World, path: Path, row: int) -> bool:
    """Whether the agent of table row ``row`` can walk straight to the waypoint it walks to
    (``ecs_nav.nav.smooth.line_walkable``, with its radius and max_climb): a string-pulled leg
    is long, and an agent pushed off it (over a railing, round a wall's end) may have a wall
    between it and its waypoint, which the length of the route does not show."""
    table = world.table
    if world.map is None or row < 0 or path.waypoints.shape[0] == 0:
        return True
    target = path.waypoints[min(max(int(path.index), 0), path.waypoints.shape[0] - 1)]
    here = (table.pos[row, 0], table.pos[row, 1], table.elevation[row])
    return line_walkable(world.map, here, target, radius=float(table.radius[row]),
                         max_climb=float(table.max_climb[row]))


def own_nodes(graph, points: np.ndarray, elevations: np.ndarray) -> np.ndarray:
    """The node of the grid cell each point lies in, on the level within a climb of its
    elevation (``NavGraph.cell_nodes``; -1: none)."""
    return graph.cell_nodes(points, elevations, graph.max_climb)


def _walkable_to_goal(world: World, graph, node_pos: np.ndarray, goal: np.ndarray) -> bool:
    if np.all(np.abs(node_pos - goal) <= 1e-9):
        return False  # the goal is the node itself: no extra waypoint
    if abs(goal[2] - node_pos[2]) > graph.max_climb + 1e-9:
        return False
    if world.map is None:
        return True
    lift = np.array([0.0, 0.0, _GOAL_LIFT])
    return not bool(world.map.segment_blocked(node_pos + lift, goal + lift)[0])


def _write(world: World, entity: int, path: Path | None, nodes: np.ndarray, waypoints: np.ndarray,
           status: str, stands_on_start: bool, version: int, remaining: float, pulled: bool = False) -> None:
    if path is None:
        path = world.try_get(entity, Path)
    previous = None if path is None else path.nodes
    previous_status = None if path is None else path.status
    kept = -1 if previous is None else route_kept(previous, nodes)
    if path is None:
        path = Path()
        world.add_component(entity, path)
    count = waypoints.shape[0]
    if pulled:  # (pulled from the agent's position, its first waypoint: it walks to the second)
        index = 1
    elif kept >= 0 and path.waypoints.shape[0] > 0:
        # the same route from further along: the waypoint being walked keeps its place
        index = min(max(int(path.index) - kept, 0), max(count - 1, 0))
    else:
        index = 1 if stands_on_start and count > 1 else 0
    path.nodes = np.asarray(nodes, dtype=np.int64)
    path.waypoints = np.ascontiguousarray(waypoints, dtype=np.float64).reshape(-1, 3)
    path.index = index
    path.status = status
    path.direction = 1
    path.graph_version = int(version)
    path.pending = False
    if status in (STATUS_COMPLETE, STATUS_PARTIAL) and kept < 0:
        world.emit(PathChanged(entity, status, world.tick))
    if status in (STATUS_PARTIAL, STATUS_UNREACHABLE) and status != previous_status:
        world.emit(PathFailed(entity, status, world.tick, remaining=remaining))

