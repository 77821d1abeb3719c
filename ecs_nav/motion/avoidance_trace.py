"""Which agent's ORCA choice to record, and the last one recorded: the viewer's "avoidance" layer.

The viewer puts an ``AvoidanceTrace`` naming the selected agent into
``world.resources[AVOIDANCE_TRACE]``; after choosing every avoiding agent's velocity, the
SteeringSystem's avoidance stage (``ecs_nav.systems.avoidance``) asks
``ecs_nav.motion.orca.agent_half_planes`` for that agent's half-planes, from the same inputs, so
a World without the resource computes nothing more. The record is an observation: no system
reads it, and it is not part of ``state_digest``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ecs_nav.core.resource_names import AVOIDANCE_TRACE


@dataclass
class AvoidanceTrace:
    """The entity whose ORCA choice is recorded and its last record.

    Attributes:
        entity: the entity to trace (-1: none).
        position: (2,) where it stood when it chose, m.
        lines: (m, 4) its half-planes of velocities: a point on the boundary (m/s) and the
            boundary's unit direction; the permitted velocities lie on its left.
        obstacle_lines: how many of ``lines``, first, are the walls' (the rest are agents').
        preferred: (2,) its preferred velocity, after the drift of its side, m/s.
        chosen: (2,) the velocity ORCA chose, m/s.
        max_speed: its maximum speed, m/s (the disc the choice lies in).
        tick: the tick it was recorded on (-1: none yet, or the entity did not avoid then).
    """

    entity: int = -1
    position: np.ndarray = field(default_factory=lambda: np.zeros(2))
    lines: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    obstacle_lines: int = 0
    preferred: np.ndarray = field(default_factory=lambda: np.zeros(2))
    chosen: np.ndarray = field(default_factory=lambda: np.zeros(2))
    max_speed: float = 0.0
    tick: int = -1

    def record(self, position, view: dict, max_speed: float, tick: int) -> None:
        """Keep one choice: ``view`` as ``ecs_nav.motion.orca.agent_half_planes`` returns it."""
        self.position = np.array(position, dtype=np.float64).reshape(2)
        self.lines = np.array(view["lines"], dtype=np.float64).reshape(-1, 4)
        self.obstacle_lines = int(view["obstacle_lines"])
        self.preferred = np.array(view["preferred"], dtype=np.float64).reshape(2)
        self.chosen = np.array(view["chosen"], dtype=np.float64).reshape(2)
        self.max_speed = float(max_speed)
        self.tick = int(tick)

    def describe(self) -> str:
        """One line for the viewer's panel."""
        if self.tick < 0:
            return f"#{self.entity}: waits for a tick in which it avoids"
        agents = self.lines.shape[0] - self.obstacle_lines
        walls = self.obstacle_lines
        return (f"#{self.entity}: {agents} agent{'s' * (agents != 1)}, {walls} wall{'s' * (walls != 1)}, "
                f"{float(np.hypot(*self.chosen)):.2f} m/s, tick {self.tick}")


def trace_avoidance(world, entity: int | None) -> AvoidanceTrace | None:
    """Record ``entity``'s ORCA choice from the next tick on (None: stop recording; the resource
    is removed). Returns the trace (kept when it already names ``entity``)."""
    resources = world.resources
    if entity is None:
        resources.pop(AVOIDANCE_TRACE, None)
        return None
    trace = resources.get(AVOIDANCE_TRACE)
    if trace is None or trace.entity != int(entity):
        trace = resources[AVOIDANCE_TRACE] = AvoidanceTrace(int(entity))
    return trace
