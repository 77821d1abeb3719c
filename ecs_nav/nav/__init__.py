"""Navigation: graphs, their construction (build is separate from query) and searches.

    graph = load_movingai("arena.map")
    result = astar(graph, graph.node_at_cell(1, 1), graph.node_at_cell(40, 30))
    result = find_path(graph, graph.node_at_cell(1, 1), graph.node_at_cell(40, 30))  # the same cost, faster
    result.nodes, result.cost, result.status

    field = flow_field(graph, goal)              # one exact field shared by a crowd (seed 003)
    directions, distance = field.sample(agent_positions)
"""

from ecs_nav.nav.distance import dijkstra_field, step_field
from ecs_nav.nav.flowfield import (
    FlowField,
    SeedField,
    flow_field,
    heat_map,
    line_of_sight,
    seed_field,
    subdivide,
    tile_directions,
    vector_field,
)
from ecs_nav.nav.graph import EDGE_DROP, EDGE_LINK, EDGE_WALK, GridIndex, NavGraph
from ecs_nav.nav.grid import grid_graph, load_movingai, parse_ascii_grid, read_movingai_map, read_scenarios
from ecs_nav.nav.jump import find_path, jump_point_search
from ecs_nav.nav.landmarks import prepare_landmarks
from ecs_nav.nav.octile import is_uniform_octile
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
    "EDGE_DROP", "EDGE_LINK", "EDGE_WALK", "FlowField", "GridIndex", "NavGraph", "PathResult", "STATUS_COMPLETE",
    "STATUS_PARTIAL", "STATUS_UNREACHABLE", "SeedField", "astar", "dijkstra", "dijkstra_field", "distance_field",
    "find_path", "flow_field", "grid_graph", "heat_map", "is_uniform_octile", "jump_point_search", "line_of_sight",
    "load_movingai", "parse_ascii_grid", "path_from_field", "paths_from_field", "prepare_landmarks",
    "read_movingai_map", "read_scenarios", "seed_field", "step_field", "subdivide", "tile_directions", "vector_field",
]
