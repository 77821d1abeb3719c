"""Simulation events. Systems emit them through ``World.emit``; they are kept in
``world.events`` for the tick and delivered to ``world.on(EventType, fn)`` subscribers at the
end of the tick, in emission order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TargetReached:
    """An agent stopped within its stopping distance of its path's goal (once per arrival)."""

    entity: int
    tick: int


@dataclass(frozen=True)
class WaypointReached:
    """An agent reached waypoint ``index`` of its path."""

    entity: int
    index: int
    tick: int


@dataclass(frozen=True)
class PathChanged:
    """The PathfindSystem gave an agent a new route (``status``: complete or partial)."""

    entity: int
    status: str
    tick: int


@dataclass(frozen=True)
class PathFailed:
    """No complete path to the goal: ``status`` is partial or unreachable."""

    entity: int
    status: str
    tick: int


@dataclass(frozen=True)
class Stuck:
    """An agent made no progress for the stuck threshold and re-requested its path."""

    entity: int
    tick: int
