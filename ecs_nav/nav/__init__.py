"""Navigation: graphs (build is separate from query), searches, smoothing."""
from ecs_nav.nav.graph import EDGE_DROP, EDGE_LINK, EDGE_WALK, GridIndex, NavGraph

__all__ = ["EDGE_DROP", "EDGE_LINK", "EDGE_WALK", "GridIndex", "NavGraph"]
