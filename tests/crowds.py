"""Measuring crowds that are sent somewhere: who arrived, when, how often each was stuck, and
when the crowd came to rest. Shared by the group-arrival and flow-field crowd tests."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ecs_nav import PathFailed, Stuck, TargetReached

REST_SPEED = 0.05
"""A crowd is at rest when every agent is slower than this (m/s)."""


@dataclass
class CrowdOutcome:
    agents: int
    arrivals: Counter = field(default_factory=Counter)  # entity -> TargetReached count
    arrival_tick: dict = field(default_factory=dict)  # entity -> first TargetReached tick
    stuck: Counter = field(default_factory=Counter)  # entity -> Stuck count
    failed: Counter = field(default_factory=Counter)  # entity -> PathFailed count
    rest_tick: int | None = None  # first tick at which every agent had arrived and was at rest
    ticks: int = 0

    @property
    def arrived(self) -> int:
        return len(self.arrivals)

    def report(self) -> str:
        return (f"{self.arrived}/{self.agents} arrived, TargetReached {sum(self.arrivals.values())}, "
                f"Stuck {sum(self.stuck.values())} (most by one agent: {max(self.stuck.values(), default=0)}), "
                f"PathFailed {sum(self.failed.values())}, at rest at tick {self.rest_tick} of {self.ticks}")


def run_crowd(world, max_ticks: int, check_every: int = 30) -> CrowdOutcome:
    """Step ``world`` until every agent has arrived and the crowd is at rest, or ``max_ticks``."""
    t = world.table
    out = CrowdOutcome(agents=int(np.count_nonzero(t.is_agent[: t.n])))

    def arrived(ev):
        out.arrivals[ev.entity] += 1
        out.arrival_tick.setdefault(ev.entity, ev.tick)

    world.on(TargetReached, arrived)
    world.on(Stuck, lambda ev: out.stuck.update([ev.entity]))
    world.on(PathFailed, lambda ev: out.failed.update([ev.entity]))
    for _ in range(max_ticks):
        world.step()
        if world.tick % check_every == 0 and out.arrived >= out.agents:
            n = t.n
            if np.all(np.hypot(t.vel[:n, 0], t.vel[:n, 1]) < REST_SPEED):
                out.rest_tick = world.tick
                break
    out.ticks = world.tick
    return out


def farthest_member(world, goal) -> int:
    """The agent whose route to ``goal`` (a point) is longest on the world's nav graph (the graph
    must be built: step the world once first)."""
    from ecs_nav.nav import distance_field

    t, graph = world.table, world.nav_graph
    n = t.n
    rows = np.flatnonzero(t.is_agent[:n])
    goal_node = graph.nearest_nodes(np.array([goal], dtype=np.float64))[0]
    distance, _ = distance_field(graph, goal_node)
    nodes = graph.nearest_nodes(t.pos[rows], t.elevation[rows])
    cost = np.where(nodes >= 0, distance[np.maximum(nodes, 0)], -1.0)
    cost[~np.isfinite(cost)] = -1.0
    return int(t.entity[rows[int(np.argmax(cost))]])


def lone_travel_ticks(world, goal, max_ticks: int) -> int:
    """Ticks the crowd's farthest member takes to reach ``goal`` alone: every other agent of
    ``world`` is removed first. Returns max_ticks + 1 when it never arrives."""
    world.step()  # builds the nav graph
    lone = farthest_member(world, goal)
    for e in world.entities():
        if e != lone and world.table.has(e) and world.table.is_agent[world.table.row_of(e)]:
            world.despawn(e)
    start = world.tick
    out = run_crowd(world, max_ticks)
    return out.arrival_tick[lone] - start if lone in out.arrival_tick else max_ticks + 1
