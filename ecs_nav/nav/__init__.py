"""Navigation: graphs, their construction (build is separate from query) and searches.

    graph = load_movingai("arena.map")
    result = astar(graph, graph.node_at_cell(1, 1), graph.node_at_cell(40, 30))
    result.nodes, result.cost, result.status
"""

from ecs_nav.nav.graph import EDGE_DROP, EDGE_LINK, EDGE_WALK, GridIndex, NavGraph
from ecs_nav.nav.grid import grid_graph, load_movingai, parse_ascii_grid, read_movingai_map, read_scenarios
from ecs_nav.nav.search import (
    STATUS_COMPLETE,
    STATUS_PARTIAL,
    STATUS_UNREACHABLE,
    PathResult,
    astar,
    dijkstra,
    distance_field,
    path_from_field,
    paths_from_field,
)

__all__ = [
    "EDGE_DROP", "EDGE_LINK", "EDGE_WALK", "GridIndex", "NavGraph", "PathResult",
    "STATUS_COMPLETE", "STATUS_PARTIAL", "STATUS_UNREACHABLE", "astar", "dijkstra", "distance_field",
    "grid_graph", "load_movingai", "parse_ascii_grid", "path_from_field", "paths_from_field",
    "read_movingai_map", "read_scenarios",
]
