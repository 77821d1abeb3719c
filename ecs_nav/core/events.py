"""Simulation events. Systems emit them through ``World.emit``; they are kept in
``world.events`` for the tick and delivered to ``world.on(EventType, fn)`` subscribers at the
end of the tick, in emission order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TargetReached:
    """An agent following a path or a flow field arrived at its goal (once per arrival): within
    its stopping distance of the goal, or settled against agents that already arrived at the
    same goal (group arrival: a crowd grows around its goal instead of pushing at it). From
    this tick it brakes to a stop."""

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
    """No complete path to the goal: ``status`` is partial or unreachable.

    Emitted by the PathfindSystem when a request's plan becomes partial or unreachable (once
    per failure, not on every replan that fails the same way), and by the PathFollowSystem when
    an agent reaches the end of a partial path (it stops there: that is not an arrival).
    ``remaining`` is the straight-line distance (m) from the end of the partial path (or, at
    the end of the walk, from the agent) to the goal; inf when no path was found at all."""

    entity: int
    status: str
    tick: int
    remaining: float = float("inf")


@dataclass(frozen=True)
class Stuck:
    """A following agent stood still (moved less than ``stuck_distance``) for ``stuck_ticks``
    ticks (seed 002); its path is marked stale and re-planned to its last point."""

    entity: int
    tick: int


@dataclass(frozen=True)
class LinkReached:
    """An agent following a path or a flow field reached off-mesh link ``link`` (its index among the map's links,
    ``[[map.link]]`` in file order) and starts across it (Godot's ``link_reached``): once per
    crossing. ``kind`` is the link's kind (jump, drop, ladder, door, teleport); ``start`` and
    ``end`` (x, y, elevation, m) are where this crossing begins and lands."""

    entity: int
    link: int
    kind: str
    tick: int
    start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    end: tuple[float, float, float] = (0.0, 0.0, 0.0)


BUILT_IN_EVENTS = (TargetReached, WaypointReached, PathChanged, PathFailed, Stuck)
"""The events the built-in systems emit, in the order reports list them."""


def event_count_table(counts: dict[str, int]) -> dict[str, int]:
    """Event counts by type name as every report lists them (the run summary, ``--json``, the
    viewer's side panel): the BUILT_IN_EVENTS in their order, zeros included, then any other
    type counted (a user's own events), by name."""
    names = [event.__name__ for event in BUILT_IN_EVENTS]
    return {name: int(counts.get(name, 0)) for name in names + sorted(set(counts) - set(names))}
