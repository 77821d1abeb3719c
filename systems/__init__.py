"""The ECS systems: thin esper Processors, each selecting rows, calling a core kernel and
writing back. They run in the fixed order of ``ecs_nav.core.system.SYSTEM_ORDER``."""

from __future__ import annotations

from typing import Any

SYSTEM_NAMES = ("graph_build", "pathfind", "path_follow", "steering", "physics")
"""Scene-file names of the systems, in tick order. The RenderSystem is not among them: the
viewer and the captures make their own, so a scene never loads pyglet."""


def make_systems(names, settings: dict[str, Any] | None = None) -> list:
    """Instances of the named systems, configured from a scene's ``[world]`` settings.

    Imports lazily: a system that a scene does not name is never imported."""
    settings = settings or {}
    out = []
    for name in names:
        if name == "graph_build":
            from ecs_nav.systems.graph_build import GraphBuildSystem

            out.append(GraphBuildSystem())
        elif name == "pathfind":
            from ecs_nav.systems.pathfind import PathfindSystem

            out.append(PathfindSystem(period=settings.get("pathfind_period", 30),
                                      path_budget_per_tick=settings.get("path_budget_per_tick")))
        elif name == "path_follow":
            from ecs_nav.systems.path_follow import PathFollowSystem

            out.append(PathFollowSystem(stuck_ticks=settings.get("stuck_ticks", 20)))
        elif name == "steering":
            from ecs_nav.systems.steering import SteeringSystem

            out.append(SteeringSystem())
        elif name == "physics":
            from ecs_nav.systems.physics import PhysicsSystem

            out.append(PhysicsSystem())
        else:
            raise ValueError(f"unknown system {name!r} (known: {', '.join(SYSTEM_NAMES)})")
    return out
