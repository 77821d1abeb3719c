"""Measuring crowds that are sent somewhere: who arrived, when, how often each was stuck or
failed to find a path, and when the whole crowd came to rest."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ecs_nav.core.events import PathFailed, Stuck, TargetReached
from ecs_nav.core.world import World

REST_SPEED = 0.05
"""m/s. A crowd is at rest when every agent is slower than this."""


@dataclass
class CrowdOutcome:
    """What happened to a crowd in ``run_crowd``.

    Attributes:
        agents: how many agents the crowd had when the run began.
        arrivals: entity -> how many ``TargetReached`` it sent (more than 1: it was pushed off
            its goal and came back).
        arrival_tick: entity -> the tick of its first ``TargetReached``.
        stuck: entity -> how many ``Stuck`` it sent.
        failed: entity -> how many ``PathFailed`` it sent.
        rest_tick: the first checked tick at which every agent had arrived and all were slower
            than ``REST_SPEED``; None when that never happened.
        ticks: the World's tick when the run ended.
    """

    agents: int
    arrivals: Counter = field(default_factory=Counter)
    arrival_tick: dict = field(default_factory=dict)
    stuck: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    rest_tick: int | None = None
    ticks: int = 0

    @property
    def arrived(self) -> int:
        """How many agents arrived at least once."""
        return len(self.arrivals)

    def report(self) -> str:
        """One line for a test's failure message or a printout."""
        return (f"{self.arrived}/{self.agents} arrived, TargetReached {sum(self.arrivals.values())}, "
                f"Stuck {sum(self.stuck.values())} (most by one agent: {max(self.stuck.values(), default=0)}), "
                f"PathFailed {sum(self.failed.values())}, at rest at tick {self.rest_tick} of {self.ticks}")


def run_crowd(world: World, max_ticks: int, check_every: int = 30) -> CrowdOutcome:
    """Step ``world`` until every agent has arrived and the crowd is at rest (checked every
    ``check_every`` ticks of the World's clock), or for ``max_ticks`` ticks; returns what
    happened. Subscribes to the World's TargetReached, Stuck and PathFailed events for good, and
    counts only what it sees: call it before the agents arrive (an agent that arrived earlier
    sends no TargetReached again, so the crowd never counts as arrived)."""
    t = world.table
    out = CrowdOutcome(agents=int(np.count_nonzero(t.live("is_agent"))))

    def arrived(event: TargetReached) -> None:
        out.arrivals[event.entity] += 1
        out.arrival_tick.setdefault(event.entity, event.tick)

    world.on(TargetReached, arrived)
    world.on(Stuck, lambda event: out.stuck.update([event.entity]))
    world.on(PathFailed, lambda event: out.failed.update([event.entity]))
    for _ in range(max_ticks):
        world.step()
        if world.tick % check_every == 0 and out.arrived >= out.agents:
            vel = t.live("vel")
            if np.all(np.hypot(vel[:, 0], vel[:, 1]) < REST_SPEED):
                out.rest_tick = world.tick
                break
    out.ticks = world.tick
    return out


def farthest_member(world: World, goal: tuple[float, float]) -> int:
    """The agent whose route to ``goal`` ((x, y), m) is longest on the World's nav graph. The
    graph must be built (step the World once first)."""
    from ecs_nav.nav import distance_field

    t, graph = world.table, world.nav_graph
    rows = np.flatnonzero(t.live("is_agent"))
    goal_node = graph.nearest_nodes(np.array([goal], dtype=np.float64))[0]
    distance, _ = distance_field(graph, goal_node)
    nodes = graph.nearest_nodes(t.pos[rows], t.elevation[rows])
    cost = np.where(nodes >= 0, distance[np.maximum(nodes, 0)], -1.0)
    cost[~np.isfinite(cost)] = -1.0
    return int(t.entity[rows[int(np.argmax(cost))]])


def lone_travel_ticks(world: World, goal: tuple[float, float], max_ticks: int) -> int:
    """Ticks the crowd's farthest member (``farthest_member``) takes to reach ``goal``
    ((x, y), m) alone: every other agent of ``world`` is despawned first. Returns
    ``max_ticks + 1`` when it never arrives. Steps (and so changes) ``world``."""
    world.step()  # builds the nav graph
    lone = farthest_member(world, goal)
    for entity in world.entities():
        if entity != lone and world.table.has(entity) and world.table.is_agent[world.table.row_of(entity)]:
            world.despawn(entity)
    start = world.tick
    out = run_crowd(world, max_ticks)
    return out.arrival_tick[lone] - start if lone in out.arrival_tick else max_ticks + 1
