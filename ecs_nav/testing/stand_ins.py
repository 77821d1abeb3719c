"""Stand-in systems: simple, predictable replacements for a stage, so a test exercises one
system without the others (a follower's logic without the physics' collisions, the physics
without the steering's behaviours)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ecs_nav.core.system import System
from ecs_nav.core.world import World


class Integrate(System):
    """In place of the PhysicsSystem: ``pos += vel * dt`` for every row with a Velocity, and the
    heading turns at once to the velocity's direction (rows slower than 1e-6 m/s keep theirs).
    No map collisions, no agent-agent contacts, no speed limit, elevation untouched."""

    name = "PhysicsSystem"

    def update(self, world: World) -> None:
        t = world.table
        n = t.n
        moving = t.has_velocity[:n]
        t.pos[:n][moving] += t.vel[:n][moving] * world.dt
        speed = np.hypot(t.vel[:n, 0], t.vel[:n, 1])
        turn = moving & (speed > 1e-6)
        t.heading[:n][turn] = t.vel[:n][turn] / speed[turn, None]


class DriveTo(System):
    """In place of the SteeringSystem: each listed entity's velocity points straight at its
    target at its ``Agent.max_speed`` (m/s), slowing so as to stop on the target at the end of a
    tick; no forces, no behaviours. Entities not listed keep their velocity.

    Args:
        targets: entity -> (x, y) target point, m. The mapping is read every tick, so a test may
            change it between ticks.
    """

    name = "SteeringSystem"

    def __init__(self, targets: Mapping[int, tuple[float, float]]):
        self.targets = targets

    def update(self, world: World) -> None:
        t = world.table
        for entity, target in self.targets.items():
            row = t.row_of(entity)
            offset = np.asarray(target, dtype=np.float64) - t.pos[row]
            distance = float(np.linalg.norm(offset))
            speed = min(float(t.max_speed[row]), distance / world.dt)
            t.vel[row] = offset / distance * speed if distance > 1e-12 else 0.0
