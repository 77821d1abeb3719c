"""PhysicsSystem: the single owner of position (ARCHITECTURE.md, step 5 of the tick).

Two paths give the same results, bit for bit (tests compare them on randomised worlds and on
every built-in scene that moves agents):

* the one-call tick (``ecs_nav.motion.physics_rows.move_rows``): one kernel gathers the moving rows
  and runs the steps below with the kernels of ``ecs_nav.motion.physics``; a small world pays one
  call instead of about forty numpy calls and eight kernel calls;
* the reference path (``compiled=False``, and a tick the kernel refuses, where it raises the
  precise error): those kernels called from Python on columns gathered by numpy.

Per tick, over the *moving* rows (``is_agent & has_velocity``), with the compiled kernels of
``ecs_nav.motion.physics`` over whole columns (no per-agent Python):

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
   uniform grids built once per tick, one a size class of agents; after the first pass only
   agents still in contact, or near one that moved, are visited; an agent examines at most
   ``relax.MAX_PAIR_CHECKS`` others a pass, so no crowd, not even one placed on one point,
   makes a tick's work grow faster than its agents; two agents at one point part along the
   line between where they stood before the step, or along their pair's own direction) over
   every row with a Collider; rows that do not move
   (a Collider without Agent/Velocity) push but are never pushed; two agents push only where
   their bodies overlap in height (``|elevation_i - elevation_j| < body_height``: one on a
   wall top and one at its foot do not) and only on the same ``Collider.layer``
   (``physics.relax_layers``: each layer relaxed as a world of its own; the sub-steps of step
   1-3 stay the world's, set by its fastest agent);
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

from ecs_nav.compile.aot import pin, same_types
from ecs_nav.core.finite import all_finite, refuse_non_finite
from ecs_nav.core.system import System
from ecs_nav.geometry.kernels import MIN_COLLISION_RADIUS
from ecs_nav.motion import physics as kernels
from ecs_nav.motion.physics_rows import MOVED, move_rows

HEADING_EPSILON = 1e-3
"""Speeds (units/s) at or below this leave the heading as it is (no direction to face)."""

RELAX_TOLERANCE = 1e-3
"""Relaxation stops once a pass corrects no agent by more than this (length units)."""

MAX_SUBSTEPS = 8
"""Default cap on the sub-steps of one tick (see ``PhysicsSystem``)."""

COLLISION_TOLERANCE = 1e-9
"""A resolved position this close to the integrated one (relative to the step) is no collision."""

_NO_OPEN_CELLS = tuple(kernels.NO_OPEN_CELLS)
"""``NO_OPEN_CELLS`` as the plain tuple the kernels are handed (``ecs_nav.motion.physics``: a NamedTuple
argument costs ~0.6 µs a call to type, a plain tuple ~0.1 µs)."""


class Setting:
    """A PhysicsSystem setting: validated and converted when set (the one-call tick's compiled
    version takes each as the type it was looked up with), kept in ``_<name>``, which the tick
    reads."""

    def __init__(self, convert, valid, expected: str):
        self.convert, self.valid, self.expected = convert, valid, expected

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.slot = name, f"_{name}"

    def __get__(self, system, owner=None):
        return self if system is None else getattr(system, self.slot)

    def __set__(self, system, value) -> None:
        if not self.valid(value):
            raise ValueError(f"PhysicsSystem.{self.name}: must be {self.expected}, got {value!r}")
        setattr(system, self.slot, self.convert(value))


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
        compiled: run the tick as one kernel (``ecs_nav.motion.physics_rows``); False: the reference
            path, the kernels of ``ecs_nav.motion.physics`` called on columns gathered by numpy (the same
            results bit for bit; tests compare the two). Either way a non-finite result is refused
            by the reference path, which names the entities.

    Each setting is also an attribute, validated and converted when set.
    """

    name = "PhysicsSystem"
    relax_iterations = Setting(int, lambda v: int(v) >= 0, ">= 0")
    body_height = Setting(float, lambda v: v > 0 and np.isfinite(v), "a positive number")
    heading_epsilon = Setting(float, lambda v: v >= 0 and np.isfinite(v), ">= 0")
    relax_tolerance = Setting(float, lambda v: v >= 0 and np.isfinite(v), ">= 0")
    max_substeps = Setting(int, lambda v: not isinstance(v, bool) and int(v) >= 1, ">= 1")

    def __init__(self, relax_iterations: int = 16, body_height: float = 2.0,
                 heading_epsilon: float = HEADING_EPSILON, relax_tolerance: float = RELAX_TOLERANCE,
                 max_substeps: int = MAX_SUBSTEPS, compiled: bool = True):
        self.relax_iterations = relax_iterations
        self.body_height = body_height
        self.heading_epsilon = heading_epsilon
        self.relax_tolerance = relax_tolerance
        self.max_substeps = max_substeps
        self.compiled = bool(compiled)
        self._open_cells_of = None  # the packed map the OpenCells below were made for
        self._open_cells_value = _NO_OPEN_CELLS
        self._move_rows = (None, None, None)
        """``aot.pin``'s (``move_rows``, its compiled version for this system's argument types, and
        those types where ``aot.checking_calls()``: the test suite checks every call).
        The types stay: the table's views and the packed maps have the same types by construction
        (``tests/test_physics_rows.py`` checks every kind of map), and the settings are converted
        as they are set (``Setting``)."""

    def update(self, world) -> None:
        move_characters(world)  # side-view characters (key inputs -> motion): systems/platformer_stage.py
        t = world.table
        n = t.n
        if n == 0:
            return
        gmap = world.map
        G = gmap.kernel_data() if gmap is not None else kernels.NO_MAP
        F = self._open_cells(G) if gmap is not None else _NO_OPEN_CELLS
        if self.compiled:
            args = (n, t.capacity, t.layout, t.float_view, t.pair_view, t.flag_view, t.int64_view, G, F,
                    gmap is not None, float(world.dt), self._max_substeps, MIN_COLLISION_RADIUS, self._body_height,
                    self._relax_iterations, self._relax_tolerance, COLLISION_TOLERANCE, self._heading_epsilon)
            kernel, call, types = self._move_rows
            if kernel is not move_rows:  # the first tick (or move_rows replaced, as a test's spy does)
                kernel, call, types = self._move_rows = pin(move_rows, args)
            elif types is not None:
                same_types(kernel, types, args)
            if call(*args) == MOVED:
                return
        self._reference_update(world, G, F)  # (a refused tick: it raises, naming the entities)

    def _reference_update(self, world, G, F) -> None:
        """The tick through the kernels of ``ecs_nav.motion.physics`` on columns gathered by numpy."""
        t = world.table
        n = t.n
        moving = t.is_agent[:n] & t.has_velocity[:n]
        k = np.count_nonzero(moving)
        if k == 0:
            return
        # every row moving (the usual crowd): slices, not gathers. pos0 is then a view of the
        # table, only read until the write below; what the kernels update in place is copied
        every = k == n
        sel = slice(0, n) if every else moving.nonzero()[0]
        pos0, vel, elev = t.pos[:n][sel], t.vel[:n][sel], t.elevation[:n][sel]
        if every:
            vel, elev = vel.copy(), elev.copy()
        if not (all_finite(vel) and all_finite(pos0)):
            self._refuse(t, sel, velocity=vel, position=pos0)

        # the per-row inputs of every sub-step, gathered once
        radius, max_speed, max_climb = t.radius[:n], t.max_speed[:n][sel], t.max_climb[:n]
        collide = t.has_collider[:n] & (radius > 0)  # rows that push (and, moving, are pushed)
        substeps = 1
        if self.max_substeps > 1:  # (no colliding moving row: the need is 0, one step)
            need = kernels.substep_need(vel, max_speed, radius[sel], collide[sel], world.dt, MIN_COLLISION_RADIUS)
            substeps = int(min(max(math.ceil(need), 1), self.max_substeps)) if math.isfinite(need) else 1
        relax = None
        n_collide = np.count_nonzero(collide) if self.relax_iterations > 0 else 0
        if n_collide >= 2:
            csel = slice(0, n) if n_collide == n else collide.nonzero()[0]
            relax = (csel, radius[csel], max_climb[csel], moving[csel], t.entity[:n][csel], t.layer[:n][csel])
        step = (G, F, world.map is not None, max_speed, radius[sel], max_climb[sel], relax)
        pos = pos0
        for _ in range(substeps):
            pos, vel, elev = self._move(t, sel, step, pos, vel, elev, world.dt / substeps)

        # 7. heading toward the velocity
        heading = t.heading[:n][sel]
        if every:
            heading = heading.copy()
        kernels.turn_heading(heading, vel, t.turn_speed[:n][sel], world.dt, self.heading_epsilon)

        # NaN guard: nothing is written unless everything is finite
        if not (all_finite(pos) and all_finite(vel) and all_finite(heading) and all_finite(elev)):
            self._refuse(t, sel, position=pos, velocity=vel, heading=heading, elevation=elev)
        t.prev_pos[:n][sel] = pos0
        t.pos[:n][sel] = pos
        t.vel[:n][sel] = vel
        t.elevation[:n][sel] = elev
        t.heading[:n][sel] = heading

    def _refuse(self, t, sel, **arrays) -> None:
        """``refuse_non_finite`` for the moving rows ``sel``: raises, naming their entities."""
        n = t.n
        refuse_non_finite(self.name, t.entity[:n][sel], **arrays)

    def _open_cells(self, G):
        """The ``OpenCells`` of the packed map ``G`` as a plain tuple (what the kernels take
        fastest), kept until the map is packed again (a change to the map makes a new
        ``kernel_data()`` tuple; the old one is held here, so its identity is not reused)."""
        if self._open_cells_of is not G:
            self._open_cells_of, self._open_cells_value = G, tuple(kernels.open_cells(G))
        return self._open_cells_value

    def _move(self, t, sel, step, pos0, vel, elev, dt):
        """Steps 1-6 over ``dt`` for the moving rows ``sel``: returns their (position, velocity,
        elevation). ``vel`` and ``elev`` are updated in place (the caller's copies); ``step``
        holds the tick's inputs (packed map, its OpenCells, whether there is a map, the rows'
        max_speed, radius and max_climb, and the relaxation's rows and columns or None)."""
        G, F, use_map, max_speed, radius, max_climb, relax = step
        # 1-3. integrate, map collisions, the slide (one kernel: integrate, resolve_map, slide_velocity)
        if use_map:
            target, pos, elev_in, elev = np.empty_like(pos0), np.empty_like(pos0), elev, np.empty_like(elev)
            kernels.move_on_map(G, F, pos0, vel, max_speed, dt, radius, elev_in, max_climb, self.body_height,
                                COLLISION_TOLERANCE, target, pos, elev)
        else:
            target = pos = kernels.integrate(pos0, vel, max_speed, dt)
        if not all_finite(target):
            self._refuse(t, sel, **{"position (pos + vel * dt)": target})
        if relax is None:
            return pos, vel, elev

        # 4-5. agent-agent relaxation over every row with a collider (moving rows movable),
        # each pass followed by the map for the rows it moved
        csel, c_radius, c_climb, c_movable, c_ids, c_layer = relax
        if isinstance(sel, slice):  # every row moves: the moved rows are the whole table
            all_pos, all_elev = pos.copy(), elev  # (elev: this tick's copy, no longer needed as it is)
            all_prev = pos0  # where they stood before this step (two that come to coincide part along it)
        else:
            n = t.n
            all_pos, all_elev = t.pos[:n].copy(), t.elevation[:n].copy()
            all_pos[sel], all_elev[sel] = pos, elev
            all_prev = t.pos[:n].copy()
            all_prev[sel] = pos0
        c_pos, c_elev = all_pos[csel], all_elev[csel]  # views when every row collides
        kernels.relax_layers(G, F, use_map, c_pos, all_prev[csel], c_elev, c_radius, c_climb, c_movable, c_ids,
                             c_layer, self.body_height, self.relax_iterations, self.relax_tolerance)
        if not isinstance(csel, slice):
            all_pos[csel], all_elev[csel] = c_pos, c_elev
        relaxed = all_pos[sel]
        # the contacts removed motion: drop the velocity component against the correction
        kernels.drop_velocity_into(vel, relaxed - pos)
        return relaxed, vel, all_elev[sel]
