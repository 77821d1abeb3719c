"""PhysicsSystem: the single owner of position (ARCHITECTURE.md, step 5 of the tick).

Per tick, over the *moving* rows (``is_agent & has_velocity``), with the compiled kernels of
``ecs_nav.physics`` over whole columns (no per-agent Python):

1. ``prev_pos = pos``; velocity truncated to ``max_speed`` (the architecture's "integrates,
   truncates": the SteeringSystem already truncates, this only guards velocities written
   directly, e.g. by a scene or a player controller);
2. ``new = pos + vel * dt`` with the World's fixed dt;
3. map collisions: ``MapGeometry.resolve_circles``'s kernel (``map_kernels.resolve_disc``; steps
   1-3 and the slide of step 6 run as one kernel, ``physics.move_on_map``) -- a disc cannot
   enter a solid rising more than ``max_climb`` above its surface, it slides along walls,
   motion is sub-stepped so nothing tunnels, elevation follows box tops/ramps; a disc on the
   floor whose swept box lies on free cells of the map's ``physics.open_cells`` raster touches
   no shape and moves as it would after that sweep, without it;
4. agent-agent non-penetration: ``physics.relax_agents`` (DetourCrowd's few Jacobi passes over
   a uniform grid built once per tick; after the first pass only agents still in contact, or
   near one that moved, are visited) over every row with a Collider; rows that do not move
   (a Collider without Agent/Velocity) push but are never pushed; two agents push only where
   their bodies overlap in height (``|elevation_i - elevation_j| < body_height``: one on a
   wall top and one at its foot do not);
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

Sub-steps: agent-agent contacts are not swept (map walls are), so a tick in which some
colliding agent would move more than its radius is cut into that many sub-steps of steps 1-6
(at most ``max_substeps``, default 8); then the relative step of two agents never exceeds the
sum of their radii and neither can pass through the other between two relaxations. A crowd at
ordinary speeds (a step well under a radius) runs one step; only an agent faster than
``max_substeps`` radii per tick can still pass through another.
"""

from __future__ import annotations

import math

import numpy as np
from ecs_nav.systems.platformer_stage import move_characters

from ecs_nav import physics as kernels
from ecs_nav.finite import all_finite
from ecs_nav.map_kernels import MIN_COLLISION_RADIUS
from ecs_nav.world import System, refuse_non_finite

HEADING_EPSILON = 1e-3
"""Speeds (units/s) at or below this leave the heading as it is (no direction to face)."""

RELAX_TOLERANCE = 1e-3
"""Relaxation stops once a pass corrects no agent by more than this (length units)."""

MAX_SUBSTEPS = 8
"""Default cap on the sub-steps of one tick (see ``PhysicsSystem``)."""

COLLISION_TOLERANCE = 1e-9
"""A resolved position this close to the integrated one (relative to the step) is no collision."""


class PhysicsSystem(System):
    """Integrates velocity, resolves map and agent-agent collisions, updates heading.

    Args:
        relax_iterations: the most agent-agent relaxation passes per tick (DetourCrowd runs 4;
            16 here because each pass is followed by the map, and an agent pinned against a wall
            takes none of the correction, which slows the convergence of a pile-up; the passes
            stop at ``relax_tolerance`` and after the first visit only agents in contact, so the
            extra passes cost only where a pile-up needs them: the 10k-agent bench averages
            4.3 passes a tick either way).
        relax_tolerance: stop the passes early once a pass moves no agent farther than this
            (length units); a tick without contacts costs one pass.
        body_height: the agents' height: a solid whose base is at or above ``elevation +
            body_height`` is overhead, not a wall.
        heading_epsilon: minimum speed for the heading to turn toward the velocity.
        max_substeps: the most sub-steps a tick is cut into so that no colliding agent moves
            more than its radius between two relaxations (agents faster than ``max_substeps``
            radii per tick can still pass through each other); 1 turns sub-stepping off.
    """

    name = "PhysicsSystem"

    def __init__(self, relax_iterations: int = 16, body_height: float = 2.0,
                 heading_epsilon: float = HEADING_EPSILON, relax_tolerance: float = RELAX_TOLERANCE,
                 max_substeps: int = MAX_SUBSTEPS):
        if int(relax_iterations) < 0:
            raise ValueError(f"PhysicsSystem.relax_iterations: must be >= 0, got {relax_iterations!r}")
        if not (body_height > 0 and np.isfinite(body_height)):
            raise ValueError(f"PhysicsSystem.body_height: must be a positive number, got {body_height!r}")
        if not (heading_epsilon >= 0 and np.isfinite(heading_epsilon)):
            raise ValueError(f"PhysicsSystem.heading_epsilon: must be >= 0, got {heading_epsilon!r}")
        if not (relax_tolerance >= 0 and np.isfinite(relax_tolerance)):
            raise ValueError(f"PhysicsSystem.relax_tolerance: must be >= 0, got {relax_tolerance!r}")
        if isinstance(max_substeps, bool) or int(max_substeps) < 1:
            raise ValueError(f"PhysicsSystem.max_substeps: must be >= 1, got {max_substeps!r}")
        self.max_substeps = int(max_substeps)
        self.relax_iterations = int(relax_iterations)
        self.relax_tolerance = float(relax_tolerance)
        self.body_height = float(body_height)
        self.heading_epsilon = float(heading_epsilon)
        self._open_cells_of = None  # the packed map the OpenCells below were made for
        self._open_cells_value = kernels.NO_OPEN_CELLS

    def update(self, world) -> None:
        move_characters(world)  # side-view characters (key inputs -> motion): systems/platformer_stage.py
        t = world.table
        n = t.n
        moving = t.is_agent[:n] & t.has_velocity[:n]
        rows = moving.nonzero()[0]
        if rows.size == 0:
            return
        # every row moving (the usual crowd): slices, not gathers
        sel = slice(0, n) if rows.size == n else rows
        entities = t.entity[:n][sel]

        pos0 = t.pos[:n][sel].copy()
        vel = t.vel[:n][sel].copy()
        if not (all_finite(vel) and all_finite(pos0)):
            refuse_non_finite(self.name, entities, velocity=vel, position=pos0)
        pos, elev = pos0, t.elevation[:n][sel].copy()
        substeps = self._substeps(world, sel, vel)
        for _ in range(substeps):
            pos, vel, elev = self._move(world, sel, moving, entities, pos, vel, elev, world.dt / substeps)

        # 7. heading toward the velocity
        heading = t.heading[:n][sel].copy()
        kernels.turn_heading(heading, vel, t.turn_speed[:n][sel], world.dt, self.heading_epsilon)

        # NaN guard: nothing is written unless everything is finite
        if not (all_finite(pos) and all_finite(vel) and all_finite(heading) and all_finite(elev)):
            refuse_non_finite(self.name, entities, position=pos, velocity=vel, heading=heading, elevation=elev)
        t.prev_pos[:n][sel] = pos0
        t.pos[:n][sel] = pos
        t.vel[:n][sel] = vel
        t.elevation[:n][sel] = elev
        t.heading[:n][sel] = heading

    def _open_cells(self, G):
        """The ``OpenCells`` of the packed map ``G``, kept until the map is packed again (a
        change to the map makes a new ``kernel_data()`` tuple; the old one is held here, so its
        identity is not reused)."""
        if self._open_cells_of is not G:
            self._open_cells_of, self._open_cells_value = G, kernels.open_cells(G)
        return self._open_cells_value

    def _substeps(self, world, sel, vel) -> int:
        """Sub-steps this tick: enough that no colliding agent moves more than its radius in one
        (then no two can pass through each other between relaxations), at most max_substeps."""
        t = world.table
        if self.max_substeps == 1:
            return 1
        n = t.n
        radius = t.radius[:n][sel]
        collides = t.has_collider[:n][sel] & (radius > 0)
        if not np.count_nonzero(collides):
            return 1
        need = kernels.substep_need(vel, t.max_speed[:n][sel], radius, collides, world.dt, MIN_COLLISION_RADIUS)
        return int(min(max(math.ceil(need), 1), self.max_substeps)) if math.isfinite(need) else 1

    def _move(self, world, sel, moving, entities, pos0, vel, elev, dt):
        """Steps 1-6 over ``dt``: returns (position, velocity, elevation) of the moving rows."""
        t = world.table
        n = t.n
        vel = vel.copy()
        radius = t.radius[:n]
        max_climb = t.max_climb[:n]
        gmap = world.map
        G = gmap.kernel_data() if gmap is not None else kernels.NO_MAP
        F = self._open_cells(G) if gmap is not None else kernels.NO_OPEN_CELLS

        # 1-3. integrate, map collisions, the slide (one kernel: integrate, resolve_map, slide_velocity)
        with np.errstate(over="ignore", invalid="ignore"):
            if gmap is not None:
                target, pos, elev = kernels.move_on_map(G, F, pos0, vel, t.max_speed[:n][sel], dt, radius[sel],
                                                        elev, max_climb[sel], self.body_height, COLLISION_TOLERANCE)
            else:
                target = pos = kernels.integrate(pos0, vel, t.max_speed[:n][sel], dt)
        if not all_finite(target):
            refuse_non_finite(self.name, entities, **{"position (pos + vel * dt)": target})

        # 4-5. agent-agent relaxation over every row with a collider (moving rows movable),
        # each pass followed by the map for the rows it moved
        collide = t.has_collider[:n] & (radius > 0)
        crow = collide.nonzero()[0]
        if self.relax_iterations > 0 and crow.size >= 2:
            csel = slice(0, n) if crow.size == n else crow
            if isinstance(sel, slice):  # every row moves: the moved rows are the whole table
                all_pos, all_elev = pos.copy(), elev.copy()
            else:
                all_pos, all_elev = t.pos[:n].copy(), t.elevation[:n].copy()
                all_pos[sel], all_elev[sel] = pos, elev
            c_pos, c_elev = all_pos[csel], all_elev[csel]  # views when every row collides
            kernels.relax_agents(G, F, gmap is not None, c_pos, c_elev, radius[csel], max_climb[csel],
                                 moving[csel], t.entity[:n][csel], self.body_height, self.relax_iterations,
                                 self.relax_tolerance)
            all_pos[csel], all_elev[csel] = c_pos, c_elev
            relaxed = all_pos[sel]
            # the contacts removed motion: drop the velocity component against the correction
            kernels.drop_velocity_into(vel, relaxed - pos)
            pos, elev = relaxed, all_elev[sel]
        return pos, vel, elev
