"""Which goals a scene's agents cannot reach: islands of the nav graph between spawn and goal.

A map split in two (a wall with no door, a ledge too high to climb) leaves agents on one part
and their goal on the other. The simulation handles it (a partial path, an unreachable status,
one ``PathFailed`` each), but a person building a scene wants to hear it once, before the run,
with where the gap is. ``unreachable_goals(world)`` groups the requesters by name and goal and
reports each group that has members the goal cannot be reached from:

    entity "crowd": goal (24, 24) unreachable from 200 of 200 agents: gap at (13.0, 21.5)
    (2.8 m between the two parts of the nav graph)

The gap is the closest pair of nodes between the part of the graph that reaches the goal and
the part the first cut-off agent stands on. ``ecs-nav validate`` prints these lines and ``ecs-nav
run`` prints them once as warnings after the first tick (when the nav graph exists).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ecs_nav.core.components import Name, PathRequest, entity_label
from ecs_nav.nav.fields import FieldGoal, goal_nodes


def unreachable_goals(world) -> list[str]:
    """One line per group of requesters (same name, same goal) some of whom cannot reach their
    goal on ``world.nav_graph`` (built: after the GraphBuildSystem ran); [] when all can."""
    graph = world.nav_graph
    if graph is None:
        return []
    table = world.table
    groups: dict[tuple[str, FieldGoal, float | None], list[int]] = defaultdict(list)
    for entity, (request,) in sorted(world.query(PathRequest), key=lambda item: item[0]):
        if not table.has(entity):
            continue  # not a top-down agent (a side-view bot plans on its level)
        groups[(entity_label(world, entity), FieldGoal.of(request), request.goal_elevation)].append(entity)
    lines = []
    for (label, goal, elevation), ents in groups.items():
        if elevation is None:
            nodes, _ = goal_nodes(goal, graph, table, world.map)
        else:  # the surface the request names (a floor of several), as the PathfindSystem takes it:
            point = np.array(goal.points, np.float64)  # any surface there when none is at that height
            nodes = graph.nearest_nodes(point, np.array([elevation]))
            nodes = nodes if nodes[0] >= 0 else graph.nearest_nodes(point)
            nodes = nodes[nodes >= 0]
        where = goal_text(world, goal) + ("" if elevation is None else f" at elevation {elevation:g}")
        if nodes.size == 0:
            lines.append(f"{label}: goal {where} is off the nav graph (no walkable node near it)")
            continue
        reach = reachable_from(graph.reverse(), np.unique(nodes))  # the nodes a goal node is reached from
        rows = table.rows_of(np.asarray(ents, np.int64))
        starts = graph.nearest_nodes(table.pos[rows], table.elevation[rows])
        cut = (starts < 0) | ~reach[np.maximum(starts, 0)]
        if not cut.any():
            continue
        line = f"{label}: goal {where} unreachable from {int(cut.sum())} of {len(ents)} agents"
        on_graph = starts[cut & (starts >= 0)]
        if on_graph.size:
            island = reachable_from(graph, on_graph[:1])
            line += gap_text(graph, island, reach)
        lines.append(line)
    return lines


def goal_text(world, goal: FieldGoal) -> str:
    """The goal as a person would write it, a target entity by its scene name where it has one."""
    named = goal.entity >= 0 and world.try_get(goal.entity, Name) is not None
    return entity_label(world, goal.entity) if named else goal.describe()


def reachable_from(graph, sources: np.ndarray) -> np.ndarray:
    """(n,) bool: the nodes reached from any of ``sources`` ((k,) node ids) along the edges of
    ``graph`` (whose costs are finite: every edge is a way through). A breadth-first search one
    frontier at a time, in numpy: a one-off check needs no compiled kernel (a first run would
    spend seconds compiling one)."""
    reached = np.zeros(graph.node_count, dtype=bool)
    frontier = np.unique(np.asarray(sources, dtype=np.int64))
    reached[frontier] = True
    while frontier.size:
        first, count = graph.indptr[frontier], np.diff(graph.indptr)[frontier]
        offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        edges = np.repeat(first, count) + offsets
        heads = graph.indices[edges]
        frontier = np.unique(heads[~reached[heads]])
        reached[frontier] = True
    return reached


def gap_text(graph, island: np.ndarray, reach: np.ndarray) -> str:
    """': gap at (x, y) (d m between ...)': the closest pair of nodes between the ``island`` mask
    and the ``reach`` mask, or '' when either is empty; on a graph of several floors the pair
    closest in 3-D, with its elevation."""
    a, b = np.flatnonzero(island), np.flatnonzero(reach)
    if a.size == 0 or b.size == 0:
        return ""
    from scipy.spatial import cKDTree  # only when there is a gap to place (scipy.spatial loads slowly)

    floors = graph.grid.levels > 1  # the parts may lie over each other: measured in 3-D
    xy = graph.positions[:, :3] if floors else graph.positions[:, :2]
    d, j = cKDTree(xy[b]).query(xy[a])
    i = int(np.argmin(d))
    mid = (xy[a[i]] + xy[b[j[i]]]) / 2
    at = f"({mid[0]:.1f}, {mid[1]:.1f}, elevation {mid[2]:.1f})" if floors else f"({mid[0]:.1f}, {mid[1]:.1f})"
    return f": gap at {at} ({d[i]:.1f} m between the two parts of the nav graph)"
