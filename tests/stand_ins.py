"""Stand-ins for systems, so a test exercises one system without the others."""

import numpy as np

from ecs_nav.world import System


class Integrate(System):
    """Minimal physics stand-in: position += velocity * dt; heading follows velocity."""

    name = "PhysicsSystem"

    def update(self, world):
        t = world.table
        n = t.n
        moving = t.has_velocity[:n]
        t.pos[:n][moving] += t.vel[:n][moving] * world.dt
        speed = np.hypot(t.vel[:n, 0], t.vel[:n, 1])
        turn = moving & (speed > 1e-6)
        t.heading[:n][turn] = t.vel[:n][turn] / speed[turn, None]
