"""Reciprocal velocity avoidance (ORCA) for the agents with an ``Avoidance``: the last stage of the
SteeringSystem's tick, between steering and the PhysicsSystem's integration (where DetourCrowd
puts its avoidance).

ORCA takes two velocities per agent: its *preferred* velocity, the ``vel`` steering has just
written (the path, the flow field, the behaviours), and its *current* velocity, which its
neighbours also take it to have. As in RVO2, an avoiding agent's current velocity is the one
ORCA chose for it the tick before (the table's ``avoid_velocity``: 0 at first, and the velocity
it moved with while it did not avoid), not the
PhysicsSystem's output: that one has lost, at every touch, its part against the contact, and
agents that avoid by what they chose pass each other where agents that avoid by what contacts
left of it jam (a circle of 64 swapping places: 43 s against never, ``bench/orca_circle.py``).
A row that does not avoid is seen with the ``vel`` it will move with this tick, and only when
it is a body (a Collider of radius > 0).

``ecs_nav.motion.orca.orca_velocities`` chooses every avoiding row's velocity in one call,
against the map's obstacle polygons (``ecs_nav.motion.orca_obstacles``, packed again only when
the map changes); the stage writes it to ``vel`` and ``avoid_velocity``. Position stays the
PhysicsSystem's.

An avoiding row is one whose ``Avoidance.enabled`` is set and that has a Velocity. A World in
which no entity ever had an Avoidance has no avoidance columns, and the stage costs one
attribute lookup a tick.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.core.finite import refuse_non_finite
from ecs_nav.core.resource_names import AVOIDANCE_TRACE
from ecs_nav.core.table import FOLLOW_STOPPED
from ecs_nav.motion.orca import agent_half_planes, orca_velocities
from ecs_nav.motion.orca_neighbours import Crowd
from ecs_nav.motion.orca_obstacles import NO_OBSTACLES, map_obstacles

BODY_HEIGHT = 2.0
"""m. Agents whose elevations differ by this much or more do not avoid each other (the
PhysicsSystem's default ``body_height``: an agent on a wall top and one at its foot)."""


class AvoidanceStage:
    """ORCA over the table's avoiding rows; see the module docstring.

    Args:
        wall_min_height: m; boxes and circles whose top is at most this above the floor are
            steps, not obstacles (as for steering's wall avoidance).
        body_height: m; see ``BODY_HEIGHT``.
    """

    def __init__(self, wall_min_height: float = 0.5, body_height: float = BODY_HEIGHT):
        self.wall_min_height = float(wall_min_height)
        self.body_height = float(body_height)
        self._map_key = None
        self._obstacles = NO_OBSTACLES

    def obstacles(self, world):
        """The map's obstacles as ``orca_obstacles.Obstacles``, packed again when the map changes."""
        gmap = world.map
        key = None if gmap is None else (id(gmap), gmap.version)
        if key != self._map_key:
            self._map_key = key
            self._obstacles = map_obstacles(gmap, self.wall_min_height)
        return self._obstacles

    def record(self, world, trace, crowd) -> None:
        """Keep the traced entity's half-planes, preferred and chosen velocity in ``trace``
        (``ecs_nav.motion.avoidance_trace``), from this tick's inputs ``crowd``; nothing when it
        does not avoid this tick."""
        t = world.table
        row = t.row_of(trace.entity) if t.has(trace.entity) else -1
        if not 0 <= row < crowd.pos.shape[0] or not crowd.avoids[row]:
            return
        view = agent_half_planes(row, crowd, self.body_height, float(world.dt), self.obstacles(world))
        trace.record(crowd.pos[row], view, float(crowd.max_speed[row]), world.tick)

    def update(self, world) -> None:
        """Replace the avoiding rows' steered velocity by ORCA's choice."""
        t = world.table
        avoids = getattr(t, "avoids", None)
        if avoids is None:
            return
        n = t.n
        avoiding = avoids[:n] & t.has_velocity[:n]
        slot = getattr(t, "goal_slot_index", None)
        if slot is not None:  # a crowd's member at rest on its slot holds its place (systems/goal_spreading.py)
            avoiding &= (slot[:n] < 0) | (t.follow_state[:n] != FOLLOW_STOPPED)
        if not np.any(avoiding):
            return
        preferred = t.vel[:n]
        velocity = np.where(avoiding[:, None], t.avoid_velocity[:n], preferred)
        radius = t.radius[:n]
        visible = (t.has_collider[:n] & (radius > 0)) | avoiding
        out = np.empty_like(preferred)
        c = Crowd(t.pos[:n], velocity, preferred, radius, t.max_speed[:n], avoiding, visible, t.entity[:n], t.layer[:n],
                  t.elevation[:n], t.avoid_neighbour_dist[:n], t.avoid_max_neighbours[:n], t.avoid_time_horizon[:n],
                  t.avoid_time_horizon_obst[:n], t.avoid_layers[:n], t.avoid_mask[:n], t.avoid_priority[:n],
                  t.avoid_side[:n])
        orca_velocities(c.pos, c.velocity, c.preferred, c.radius, c.max_speed, c.avoids, c.visible, c.ids, c.layer,
                        c.elevation, self.body_height, c.neighbour_dist, c.max_neighbours, c.time_horizon,
                        c.time_horizon_obst, c.avoid_layers, c.avoid_mask, c.priority, c.side, float(world.dt),
                        self.obstacles(world), out)
        trace = world.resources.get(AVOIDANCE_TRACE)
        if trace is not None:  # the viewer's "avoidance" layer
            self.record(world, trace, c)
        chosen = out[avoiding]
        if not np.all(np.isfinite(chosen)):
            refuse_non_finite("SteeringSystem (avoidance)", t.entity[:n][avoiding], velocity=chosen)
        t.vel[:n][avoiding] = chosen
        # a row that does not avoid keeps the velocity it moves with, so that avoiding again it
        # starts from its real motion, not from what ORCA chose before it stopped
        t.avoid_velocity[:n] = t.vel[:n]
