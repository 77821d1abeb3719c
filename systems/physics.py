"""PhysicsSystem: the single owner of position (ARCHITECTURE.md, step 5 of the tick).

Per tick, over the *moving* rows (``is_agent & has_velocity``), all vectorised:

1. ``prev_pos = pos``; velocity truncated to ``max_speed`` (the architecture's "integrates,
   truncates": the SteeringSystem already truncates, this only guards velocities written
   directly, e.g. by a scene or a player controller);
2. ``new = pos + vel * dt`` with the World's fixed dt;
3. map collisions: ``MapGeometry.resolve_circles(prev, new, radius, elevation, max_climb)``
   -- a disc cannot enter a solid rising more than ``max_climb`` above its surface, it slides
   along walls, motion is sub-stepped so nothing tunnels, elevation follows box tops/ramps;
4. agent-agent non-penetration: ``spatial.relax_overlaps`` (DetourCrowd's few Jacobi passes,
   its uniform grid rebuilt from the current positions each pass) over every row with a
   Collider; rows that do not move (a Collider without Agent/Velocity) push but are never
   pushed;
5. after *each* relaxation pass the rows it moved are resolved against the map, swept from
   their collision-free position to the relaxed one, so relaxation never pushes an agent into
   (or through) a wall; an agent the map held back (it kept less than half of its correction:
   pinned against a wall) is not movable for the remaining passes of the tick, so the agents
   pressing on it take the whole overlap instead of half of it;
6. velocity after a collision (decision): where the map removed motion (the resolved position
   differs from ``pos + vel * dt``), ``vel`` becomes the displacement actually made over dt --
   for a slide along a wall that is the tangential component, head-on it is zero -- never
   faster than before. Where agent-agent contacts corrected a position, the component of
   ``vel`` against that correction is removed (an inelastic contact); the correction itself is
   *not* added to velocity (it is a correction, not motion: adding it would inject energy
   into a packed crowd). So velocity does not keep pushing into a wall or another agent, and
   the steering of the next tick sees how the agent really moves. Buckland and DetourCrowd
   keep the *desired* velocity separate; here the desired velocity is the steering target,
   recomputed every tick, so nothing is lost;
7. heading turns toward the velocity direction with the seed's yaw ``Lerp(current,
   lookRotation, dt * turn_speed)`` -- Unity's ``Quaternion.Lerp`` restricted to yaw:
   normalised lerp of the half-angle quaternions along the shorter arc, ``t`` clamped to
   [0, 1] -- where the speed exceeds ``heading_epsilon``; heading stays a unit vector.

Rows that are not agents with a velocity are never moved. Without ``world.map`` there are no
map collisions and elevation is left as it is; integration, agent-agent relaxation and heading
still run.

NaN guard: every result is computed first and checked; if a velocity, position, elevation or
heading of a moving row is not finite, ``FloatingPointError`` names the entity ids and the
table is left untouched (refuse rather than propagate).

Limitations: relaxation is in the ground plane, so two agents at different elevations (one on
a wall top, one at its foot) whose discs overlap in plan are pushed apart too. Agent-agent
contacts are not swept: an agent that moves about a diameter in one tick can end coincident
with another and be separated on the far side (map walls are swept, agents are not).
"""

from __future__ import annotations

import numpy as np

from ecs_nav import spatial
from ecs_nav.world import System

HEADING_EPSILON = 1e-3
"""Speeds (units/s) at or below this leave the heading as it is (no direction to face)."""

RELAX_TOLERANCE = 1e-3
"""Relaxation stops once a pass corrects no agent by more than this (length units)."""

COLLISION_TOLERANCE = 1e-9
"""A resolved position this close to the integrated one (relative to the step) is no collision."""


def yaw_lerp(heading: np.ndarray, target: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Unity's ``Quaternion.Lerp(current, target, t)`` for rotations about the vertical axis.

    ``heading`` and ``target`` are (k, 2) unit vectors, ``t`` (k,) in [0, 1]. A yaw ``a`` is the
    quaternion (cos a/2, sin a/2); the lerp takes the shorter arc (flips the target when the
    dot product is negative), normalises, and converts back. Returns (k, 2) unit vectors."""
    a = np.arctan2(heading[:, 1], heading[:, 0])
    b = np.arctan2(target[:, 1], target[:, 0])
    qa = np.stack([np.cos(a / 2), np.sin(a / 2)], axis=1)
    qb = np.stack([np.cos(b / 2), np.sin(b / 2)], axis=1)
    dot = np.einsum("ij,ij->i", qa, qb)
    qb = np.where((dot < 0)[:, None], -qb, qb)
    q = qa + (qb - qa) * t[:, None]
    yaw = 2.0 * np.arctan2(q[:, 1], q[:, 0])
    return np.stack([np.cos(yaw), np.sin(yaw)], axis=1)


def _refuse(what: str, entities: np.ndarray, bad: np.ndarray) -> None:
    ids = [int(e) for e in entities[bad]]
    shown = ", ".join(map(str, ids[:20])) + (f" ... ({len(ids)} in all)" if len(ids) > 20 else "")
    raise FloatingPointError(f"PhysicsSystem: non-finite {what} for entity id(s) {shown}; refusing to update")


class PhysicsSystem(System):
    """Integrates velocity, resolves map and agent-agent collisions, updates heading.

    Args:
        relax_iterations: the most agent-agent relaxation passes per tick (DetourCrowd runs 4;
            8 here because each pass is followed by the map, and an agent pinned against a wall
            takes none of the correction, which halves the convergence of a pass).
        relax_tolerance: stop the passes early once a pass moves no agent farther than this
            (length units); a tick without contacts costs one pass.
        body_height: the agents' height: a solid whose base is at or above ``elevation +
            body_height`` is overhead, not a wall.
        heading_epsilon: minimum speed for the heading to turn toward the velocity.
    """

    name = "PhysicsSystem"

    def __init__(self, relax_iterations: int = 8, body_height: float = 2.0,
                 heading_epsilon: float = HEADING_EPSILON, relax_tolerance: float = RELAX_TOLERANCE):
        if int(relax_iterations) < 0:
            raise ValueError(f"PhysicsSystem.relax_iterations: must be >= 0, got {relax_iterations!r}")
        if not (body_height > 0 and np.isfinite(body_height)):
            raise ValueError(f"PhysicsSystem.body_height: must be a positive number, got {body_height!r}")
        if not (heading_epsilon >= 0 and np.isfinite(heading_epsilon)):
            raise ValueError(f"PhysicsSystem.heading_epsilon: must be >= 0, got {heading_epsilon!r}")
        if not (relax_tolerance >= 0 and np.isfinite(relax_tolerance)):
            raise ValueError(f"PhysicsSystem.relax_tolerance: must be >= 0, got {relax_tolerance!r}")
        self.relax_iterations = int(relax_iterations)
        self.relax_tolerance = float(relax_tolerance)
        self.body_height = float(body_height)
        self.heading_epsilon = float(heading_epsilon)

    def update(self, world) -> None:
        t = world.table
        dt = world.dt
        moving = t.live("is_agent") & t.live("has_velocity")
        rows = np.flatnonzero(moving)
        if rows.size == 0:
            return
        entities = t.live("entity")[rows]

        pos0 = t.live("pos")[rows].copy()
        vel = t.live("vel")[rows].copy()
        bad = ~np.all(np.isfinite(vel), axis=1)
        if bad.any():
            _refuse("velocity", entities, bad)
        bad = ~np.all(np.isfinite(pos0), axis=1)
        if bad.any():
            _refuse("position", entities, bad)

        max_speed = t.live("max_speed")[rows]
        speed = np.hypot(vel[:, 0], vel[:, 1])
        over = speed > max_speed
        if over.any():
            vel[over] *= (max_speed[over] / speed[over])[:, None]
            speed = np.hypot(vel[:, 0], vel[:, 1])

        with np.errstate(over="ignore", invalid="ignore"):
            target = pos0 + vel * dt
        bad = ~np.all(np.isfinite(target), axis=1)
        if bad.any():
            _refuse("position (pos + vel * dt)", entities, bad)

        radius = t.live("radius")[rows]
        max_climb = t.live("max_climb")[rows]
        elev = t.live("elevation")[rows].copy()
        gmap = world.map

        # 3. map collisions
        if gmap is not None:
            pos, elev = gmap.resolve_circles(pos0, target, radius, elev, max_climb, self.body_height)
            step = np.hypot(*(target - pos0).T)
            miss = np.hypot(*(pos - target).T)
            blocked = miss > COLLISION_TOLERANCE * (1.0 + step)
            if blocked.any():
                actual = (pos[blocked] - pos0[blocked]) / dt
                actual_speed = np.hypot(actual[:, 0], actual[:, 1])
                limit = speed[blocked]
                scale = np.where(actual_speed > limit, limit / np.maximum(actual_speed, 1e-300), 1.0)
                vel[blocked] = actual * scale[:, None]
        else:
            pos = target

        # 4-5. agent-agent relaxation over every row with a collider (moving rows movable),
        # each pass followed by the map for the rows it moved
        collide = t.live("has_collider") & (t.live("radius") > 0)
        if self.relax_iterations > 0 and np.count_nonzero(collide) >= 2:
            crow = np.flatnonzero(collide)
            c_radius = t.live("radius")[crow]
            c_movable = moving[crow]
            c_ids = t.live("entity")[crow]
            c_pos = t.live("pos")[crow].copy()
            # where the moving rows sit among the collider rows (-1: a moving row without one)
            slot = np.full(t.n, -1, np.int64)
            slot[crow] = np.arange(crow.size)
            mine = slot[rows]
            has = mine >= 0
            c_pos[mine[has]] = pos[has]
            local_of = np.full(crow.size, -1, np.int64)
            local_of[mine[has]] = np.flatnonzero(has)
            before = pos.copy()
            for _ in range(self.relax_iterations):
                relaxed = spatial.relax_overlaps(c_pos, c_radius, iterations=1, movable=c_movable,
                                                 entity_ids=c_ids)
                shift = relaxed - c_pos
                shift2 = np.einsum("ij,ij->i", shift, shift)
                moved = np.flatnonzero(shift2 > 0)
                if moved.size == 0:
                    break
                settled = shift2.max() < self.relax_tolerance ** 2
                if gmap is not None:
                    # swept from the collision-free position: never into or through a wall
                    local = local_of[moved]  # only movable (moving) rows move
                    p2, e2 = gmap.resolve_circles(c_pos[moved], relaxed[moved], radius[local],
                                                  elev[local], max_climb[local], self.body_height)
                    # an agent the map held back (pinned against a wall) is fixed for the rest
                    # of the tick: the agents pressing on it take the whole correction
                    held = np.einsum("ij,ij->i", p2 - c_pos[moved], shift[moved]) < 0.5 * shift2[moved]
                    if held.any():
                        c_movable = c_movable.copy()
                        c_movable[moved[held]] = False
                    relaxed[moved] = p2
                    elev = elev.copy()
                    elev[local] = e2
                c_pos = relaxed
                if settled:
                    break
            pos = pos.copy()
            pos[has] = c_pos[mine[has]]
            # the contacts removed motion: drop the velocity component against the correction
            corr = pos - before
            norm2 = np.einsum("ij,ij->i", corr, corr)
            push = np.einsum("ij,ij->i", vel, corr)
            against = (push < 0) & (norm2 > 0)
            if against.any():
                vel[against] -= (push[against] / norm2[against])[:, None] * corr[against]

        # 7. heading toward the velocity
        heading = t.live("heading")[rows].copy()
        speed = np.hypot(vel[:, 0], vel[:, 1])
        turn = speed > self.heading_epsilon
        if turn.any():
            direction = vel[turn] / speed[turn][:, None]
            lerp_t = np.clip(dt * t.live("turn_speed")[rows][turn], 0.0, 1.0)
            heading[turn] = yaw_lerp(heading[turn], direction, lerp_t)

        # NaN guard: nothing is written unless everything is finite
        for what, arr in (("position", pos), ("velocity", vel), ("heading", heading)):
            bad = ~np.all(np.isfinite(arr), axis=1)
            if bad.any():
                _refuse(what, entities, bad)
        bad = ~np.isfinite(elev)
        if bad.any():
            _refuse("elevation", entities, bad)

        t.live("prev_pos")[rows] = pos0
        t.live("pos")[rows] = pos
        t.live("vel")[rows] = vel
        t.live("elevation")[rows] = elev
        t.live("heading")[rows] = heading
