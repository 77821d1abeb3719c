"""Recording a World's events for assertions: which were emitted, for whom, and when."""

from __future__ import annotations

from collections import Counter

from ecs_nav.core.events import PathChanged, PathFailed, Stuck, TargetReached, WaypointReached
from ecs_nav.core.world import World

NAVIGATION_EVENTS = (TargetReached, WaypointReached, PathChanged, PathFailed, Stuck)
"""The event types the built-in systems emit (``ecs_nav.core.events``)."""

SHOWN = 5
"""Events quoted in a failure message at most."""


class EventLog(list):
    """The events of the recorded types, in emission order (a list), from the tick recording
    began; made by ``record_events``.

    Attributes:
        world: the World recorded.
        types: the event types recorded.
        since_tick: the World's tick when recording began.
    """

    def __init__(self, world: World, types: tuple[type, ...]):
        super().__init__()
        self.world, self.types, self.since_tick = world, types, world.tick

    def of(self, event_type: type, entity: int | None = None) -> list:
        """The recorded ``event_type`` events (of ``entity`` only, when given), in order.
        ValueError when this log does not record ``event_type``: an assertion about it could
        never fail."""
        if event_type not in self.types:
            recorded = ", ".join(t.__name__ for t in self.types)
            raise ValueError(f"this EventLog does not record {event_type.__name__} (it records {recorded}): "
                             f"record_events(world, {event_type.__name__}, ...)")
        return [e for e in self if type(e) is event_type and (entity is None or getattr(e, "entity", None) == entity)]

    def counts(self) -> dict[str, int]:
        """Recorded events by type name."""
        return dict(Counter(type(e).__name__ for e in self))

    def describe(self) -> str:
        """What was recorded, in words: the ticks covered and the count of each type."""
        counts = ", ".join(f"{name} x{k}" for name, k in sorted(self.counts().items())) or "no events"
        return f"{counts} over ticks {self.since_tick}..{self.world.tick - 1}"


def record_events(world: World, *event_types: type) -> EventLog:
    """Start recording ``world``'s events of ``event_types`` (default: ``NAVIGATION_EVENTS``,
    all the built-in ones); returns the log, which fills as the World ticks."""
    log = EventLog(world, tuple(event_types) or NAVIGATION_EVENTS)
    for event_type in log.types:
        world.on(event_type, log.append)
    return log


def _who(entity: int | None) -> str:
    return "" if entity is None else f" for entity {entity}"


def assert_emitted(log: EventLog, event_type: type, *, entity: int | None = None, at_least: int = 1) -> list:
    """Assert that at least ``at_least`` ``event_type`` events (of ``entity``, when given) were
    recorded in ``log``; returns them. The failure message says what was recorded instead."""
    found = log.of(event_type, entity)
    if len(found) < at_least:
        wanted = "no" if not found else f"only {len(found)}"
        raise AssertionError(f"{wanted} {event_type.__name__}{_who(entity)} (expected at least {at_least}); "
                             f"recorded: {log.describe()}")
    return found


def assert_not_emitted(log: EventLog, event_type: type, *, entity: int | None = None) -> None:
    """Assert that no ``event_type`` event (of ``entity``, when given) was recorded in ``log``.
    The failure message quotes the first ones, with their ticks."""
    found = log.of(event_type, entity)
    if found:
        shown = "; ".join(map(repr, found[:SHOWN])) + (f"; ... ({len(found)} in all)" if len(found) > SHOWN else "")
        raise AssertionError(f"{len(found)} {event_type.__name__}{_who(entity)} emitted, expected none: {shown}")
