"""Systems and their place in the tick: the ``System`` base, ``FunctionSystem`` (a plain function
run as a system) and the fixed order of the built-ins (``SYSTEM_ORDER``), with the esper
priorities a World registers them and the user's own systems at (``World.add_systems``)."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING

import esper

if TYPE_CHECKING:
    from ecs_nav.core.world import World

SYSTEM_ORDER = ("GraphBuildSystem", "PathfindSystem", "PathFollowSystem", "SteeringSystem",
                "PhysicsSystem", "RenderSystem")
"""The fixed order of the tick (ARCHITECTURE.md). Each system has an esper priority; the World
runs its systems from the highest priority down (``World.step``)."""

SYSTEM_GAP = 1000
"""esper priorities of neighbouring built-ins lie this far apart; systems of the user's own take
the priorities in between, so at most SYSTEM_GAP - 1 of them share one place."""

def system_priority(name: str) -> int:
    """esper priority of the built-in system named ``name`` (first in SYSTEM_ORDER = highest)."""
    return (len(SYSTEM_ORDER) - SYSTEM_ORDER.index(name)) * SYSTEM_GAP


def system_place(before: str | None = None, after: str | None = None) -> int:
    """The place in the tick of a user system given ``before=`` and/or ``after=`` a built-in:
    place ``p`` lies between ``SYSTEM_ORDER[p - 1]`` and ``SYSTEM_ORDER[p]`` (0: before the first
    built-in, ``len(SYSTEM_ORDER)``: after the last): right after ``after``, else right before
    ``before`` (with both: right after ``after``, which must not come after ``before``). A
    built-in need not be registered to be named: its place is fixed.
    Raises ValueError naming the argument when a name is not a built-in or no place fits."""
    for label, anchor in (("before", before), ("after", after)):
        if anchor is not None and anchor not in SYSTEM_ORDER:
            close = difflib.get_close_matches(str(anchor), SYSTEM_ORDER, n=1, cutoff=0.6)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise ValueError(f"add_systems.{label}: {anchor!r} is not a built-in system{hint}; "
                             f"built-ins, in tick order: {', '.join(SYSTEM_ORDER)}")
    if before is None and after is None:
        raise ValueError("add_systems: a system of your own needs a place: before= or after= a built-in "
                         f"({', '.join(SYSTEM_ORDER)}), e.g. after=\"PhysicsSystem\"")
    right_after = None if after is None else SYSTEM_ORDER.index(after) + 1
    right_before = None if before is None else SYSTEM_ORDER.index(before)
    if right_after is not None and right_before is not None and right_after > right_before:
        raise ValueError(f"add_systems: no place in the tick is after {after} and before {before} "
                         f"(tick order: {', '.join(SYSTEM_ORDER)})")
    return right_after if right_after is not None else right_before


def place_priority(place: int, taken: int) -> int:
    """esper priority of the next user system at ``place`` when ``taken`` already stand there:
    below the built-in before the place, above the one after it, below those added earlier."""
    if not 0 <= taken < SYSTEM_GAP - 1:
        raise ValueError(f"add_systems: at most {SYSTEM_GAP - 1} systems of your own fit at one place")
    return (len(SYSTEM_ORDER) + 1 - place) * SYSTEM_GAP - (taken + 1)


class System(esper.Processor):
    """Base of the ECS systems: a thin esper Processor whose ``update(world)`` is its tick's work.

    A subclass overrides ``update``; ``World.step`` runs the systems given to ``add_systems``
    (it calls ``update`` and times it, ``World.run_timed``), not processors added to esper
    directly. The six built-ins set ``name`` to one of SYSTEM_ORDER; the World registers them with
    the matching priority. A system of the user's own keeps any other name (its class name when
    ``name`` is empty) and is given a place with ``World.add_system(s, after="PhysicsSystem")``.
    ``reads_only`` marks systems (the renderer, a recorder) that never change simulation state.
    An ``update`` that raises stops its tick there, and the tick does not count (``World.step``
    says what state the World is in then); ``update`` calling ``world.step()`` is refused.
    """

    name: str = ""
    reads_only: bool = False

    def process(self, world: World) -> None:
        """esper's entry (``esper.process``): ``update``, timed as ``World.step`` times it."""
        world.run_timed((self,))

    def update(self, world: World) -> None:
        raise NotImplementedError(f"{type(self).__name__}: a System subclass overrides update(self, world), "
                                  "its tick's work")

    def state(self) -> bytes:
        """Bytes of any simulation state the system keeps itself (for ``state_digest``)."""
        return b""


class FunctionSystem(System):
    """A plain function ``fn(world)`` run as a system of the user's own (Bevy's function
    systems); named after the function unless ``name`` is given."""

    def __init__(self, fn: Callable[[World], None], name: str | None = None, reads_only: bool = False):
        if not callable(fn):
            raise TypeError(f"add_systems: expected a System or a function of the world, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.reads_only = reads_only

    def update(self, world: World) -> None:
        self.fn(world)
