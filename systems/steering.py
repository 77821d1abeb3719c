"""SteeringSystem: every agent's steering force from its SteeringWeights, then its velocity.

Seeds 001 (the behaviours, Buckland ch. 3) and 004 (the pipeline). Two paths give the same
forces and velocities (the same formulas in the same order of operations; tests compare them on
randomised worlds to 1e-12, and their state digests):

* the compiled tick (``ecs_nav.motion.steering_rows.steer_tick``), used for every tick, one call:
  the row kernel (``steer_rows``), one compiled pass over the table's columns, computes each
  row's seek, arrive, follow_path, follow_flow and group behaviours, combines them by the row's
  combiner (the weighted truncated sum, the prioritised running sum or dithering) and computes
  the new velocity. Before it, in the same call and only when some row uses them: the
  neighbour sums (``neighbour_pass``, one pass over a grid of the agents), wall avoidance
  (``wall_avoidance_rows``), flee, pursuit, evade, wander and obstacle avoidance
  (``ecs_nav.motion.steering_given.given_forces``), the flow field sampled at each agent
  (``ecs_nav.motion.steering_flow.flow_rows``) and the group behaviours under a neighbour cap
  (``ecs_nav.motion.steering_capped``). A small world pays one kernel call, not a numpy call per
  behaviour, and a crowd no (k, 2) temporaries. It is compiled on the first tick that has a
  steering row. The map's walls and circles and the flow field are handed in from the first
  tick a row uses them on (that tick the kernel asks for them, writing nothing, and is called
  again).
* the reference path: the vectorised functions of ``ecs_nav.motion.steering``, ``steering_obstacles``
  and ``steering_group``, each behaviour computed for
  the rows whose weight for it is non-zero, stacked (k, B, 2) and combined per row. It serves
  a tick the kernel refuses (a non-finite value, a mass <= 0 or an unknown combiner code: the
  reference path then raises the precise error), ``compiled=False`` and ``behaviour_forces``.

Inputs per behaviour:

* seek, arrive: ``steer_target`` where ``has_steer_target`` (the SteeringWeights target, or the
  waypoint the PathFollowSystem chose); zero without one.
* flee: from the ``target_entity``'s position when the row has a live target entity, else from
  ``steer_target``; ``panic_distance``.
* pursuit, evade: against the ``target_entity`` row (position, velocity, heading); zero without one.
* wander: ``entity_uniforms(world.seed, entity ids, world.tick, stream=WANDER_STREAM)`` (the
  compiled path draws the same numbers, ``steering_given.entity_noise``); the jittered
  ``wander_target`` is written back.
* obstacle_avoidance: the map's circles only (``world.map.circles``). Other agents are not
  obstacles here: separation and the PhysicsSystem's relaxation keep agents apart.
* wall_avoidance: the map's bounds edges and the edges of the boxes taller than
  ``wall_min_height`` above the floor, as two-sided segments (ramps are left out: they are
  walked onto). Segments and their grid are cached per map version.
* separation, alignment, cohesion: neighbours within ``neighbour_radius`` from
  ``ecs_nav.motion.neighbours.neighbours_within`` over all agents (``is_agent`` or ``has_steering``) of
  the agent's own ``Collider.layer`` (an entity without a Collider is on layer 0).
* follow_path: by ``follow_state`` -- SEEK: seek ``steer_target``; ARRIVE: arrive at it with the
  agent's deceleration; STOPPED: brake, ``force = -vel * mass / dt``, the force that cancels
  the velocity within one tick (then truncated to max_force; seed 000's "stop"), and every
  other behaviour of the row is dropped while it is STOPPED (a settled crowd holds still
  instead of spreading apart by separation; the PhysicsSystem still resolves contacts). A literal
  ``-vel`` decays the speed with a one-second time constant, which overshoots the stopping
  distance. A STOPPED agent's speed below ``STOP_SPEED`` is snapped to zero.
* follow_flow: ``world.resources["flow_field"]`` -- an (n_nodes, 2) array (or an object with a
  ``direction`` attribute holding one) of unit directions per node slot of ``world.nav_graph``,
  sampled at each agent's nearest walkable node within the graph's ``max_climb`` of its
  elevation (``ecs_nav.motion.steering_flow``; zero off the graph, or where the field's
  direction is not finite). Absent: zero force.

Combiners per row (``combiner`` column): 0 weighted truncated sum, 1 prioritised running sum,
2 prioritised dithering with ``DITHER_PROBABILITIES`` and uniforms from ``entity_uniforms``
(streams ``DITHER_STREAM`` and up; the compiled path draws the same numbers). Then seed 004's
pipeline (``apply_steering``):
``vel = truncate(vel + truncate(force, max_force) / mass * dt, max_speed)`` for the rows with
``has_steering`` and ``has_velocity``. The PhysicsSystem integrates position.

Avoidance: the rows with an enabled ``Avoidance`` then take, instead of the velocity steering
gave them (their preferred velocity), the one ORCA chooses (``ecs_nav.systems.avoidance``: RVO2's
reciprocal velocity obstacles against the other agents and the map's walls).

A non-finite force, velocity or wander target raises ``FloatingPointError`` naming the
entities, before anything is written: the system refuses rather than propagates (the row kernel
writes nothing and hands the tick to the reference path, which raises).
"""

from __future__ import annotations

import numpy as np
from ecs_nav.systems.avoidance import AvoidanceStage
from ecs_nav.systems.steering_reference import (  # the streams and probabilities: re-exported
    DITHER_PROBABILITIES,
    DITHER_STREAM,
    WANDER_STREAM,
    behaviour_stack,
    reference_update,
)

from ecs_nav.compile.aot import pin, same_types
from ecs_nav.core.system import System
from ecs_nav.motion import steering as st
from ecs_nav.motion.steering_flow import NO_FIELD, NOT_FETCHED, FlowInputs, flow_inputs
from ecs_nav.motion.steering_obstacles import MIN_WALL_LENGTH, obstacle_grid, wall_grid
from ecs_nav.motion.steering_rows import NEEDS_GEOMETRY, NEEDS_INPUT, WRITTEN, steer_tick

__all__ = ["DITHER_PROBABILITIES", "DITHER_STREAM", "WANDER_STREAM", "SteeringSystem"]

B = st.B

_NO_WALLS = (np.zeros((0, 2)), np.zeros((0, 2)), 0.0, 0.0, 1.0, 1, 1, np.zeros(2, np.int64), np.zeros(0, np.int64))
"""``steer_tick``'s walls of a world without any: (walls_a, walls_b, *grid.kernel_args())."""
_NO_CIRCLES = (np.zeros((0, 2)), np.zeros(0), 0.0, 0.0, 1.0, 1, 1, np.zeros(2, np.int64), np.zeros(0, np.int64))
"""``given_forces``' circles of a world without any: (centres, radii, *grid.kernel_args())."""
_NO_MAP = object()
"""No map looked at yet (``world.map`` is a MapGeometry or None)."""
_QUIET = {"invalid": "ignore", "over": "ignore", "divide": "ignore"}
"""``np.errstate`` around the numpy paths: a non-finite input makes them warn on their way to a
non-finite output, which is refused with the entities named. The kernels raise no numpy
warnings, so the row kernel's tick does without it (entering one costs ~0.7 µs)."""


class SteeringSystem(System):
    """Computes ``force`` and ``vel`` for every steering agent; see the module docstring.

    Args:
        max_neighbours: cap on neighbours per agent for the group behaviours (closest kept);
            None keeps all within the radius.
        wall_min_height: boxes whose top is at most this above the floor are steps, not walls.
        compiled: steer every row with the row kernel (``ecs_nav.motion.steering_rows``);
            False: every row through the vectorised reference path (the same forces; tests
            compare the two).
    """

    name = "SteeringSystem"

    def __init__(self, max_neighbours: int | None = None, wall_min_height: float = 0.5, compiled: bool = True):
        self.max_neighbours = max_neighbours
        self.compiled = bool(compiled)
        self.reference_ticks = 0
        """Ticks steered by the reference path (``compiled=False``, or an input the kernel
        refused)."""
        self._kernel_walls = None  # (the cached walls they come from, the walls wall_avoidance_rows takes)
        self._steered = False
        """A row has steered: from then on ``steer_tick`` is called without counting them first."""
        self._geometry_wanted = False
        """A row has used wall or obstacle avoidance: from then on ``steer_tick`` is handed the walls
        and circles."""
        self._kernel_circles = None  # (the cached circles they come from, the circles given_forces takes)
        self._field_wanted = False
        """A row has followed the flow field: from then on ``steer_tick`` is handed it."""
        self._field = (_NO_MAP, None, None, None)
        """(the field's array, the nav graph, its version, their ``FlowInputs``): ``_flow_field``'s."""
        self._seed = (None, None)  # (world.seed, it as the uint64 the noise kernels take)
        self._tick_geometry = (_NO_MAP, None, (_NO_WALLS, _NO_CIRCLES))
        """(the map, its version, the walls and circles ``steer_tick`` takes for it): one identity
        and one version check a tick while the map stays the same."""
        self._tick = (None, None, None)
        """``aot.pin``'s (``steer_tick``, its compiled version for this system's argument types, and
        those types where ``aot.checking_calls()``: the test suite checks every call).
        The types stay: the table's views, and the walls with or without any, have the same types by
        construction (``tests/test_steering_rows.py`` checks the walls of every kind of map)."""
        self.wall_min_height = float(wall_min_height)
        self.avoidance = AvoidanceStage(self.wall_min_height)
        """ORCA for the rows with an Avoidance, after steering (``ecs_nav.systems.avoidance``)."""
        self._map_key = None
        self._circles = None  # (centres, radii, grid) or None
        self._walls = None  # (a, b, grid) or None

    @property
    def max_neighbours(self) -> int | None:
        """The cap on neighbours per agent for the group behaviours (closest kept); None: all."""
        return self._max_neighbours

    @max_neighbours.setter
    def max_neighbours(self, value: int | None) -> None:
        self._max_neighbours = value
        self._cap = -1 if value is None else int(value) if value >= 0 else -2
        """``steer_tick``'s ``max_neighbours``: -1 for none; -2 for a negative cap, which the
        kernels refuse (the reference path raises)."""

    # --- static geometry, cached per map version ---------------------------------------------

    def _geometry(self, world):
        gmap = world.map
        key = None if gmap is None else (id(gmap), gmap.version)
        if key != self._map_key:
            with np.errstate(**_QUIET):
                self._build_geometry(gmap, key)
        return self._circles, self._walls

    def _build_geometry(self, gmap, key) -> None:
        self._map_key = key
        self._circles = self._walls = None
        if gmap is None:
            return
        circles = gmap.circles
        if circles:
            c = np.array([ci.center for ci in circles], dtype=np.float64)
            r = np.array([ci.radius for ci in circles], dtype=np.float64)
            self._circles = (c, r, obstacle_grid(c, r, max(4.0, 2.0 * float(r.max()))))
        x0, y0, x1, y1 = gmap.bounds
        corners = [np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])]
        for box in gmap.boxes:
            if box.top - gmap.floor > self.wall_min_height and box.size[0] > 0 and box.size[1] > 0:
                bx0, by0, bx1, by1 = box.aabb()
                corners.append(np.array([[bx0, by0], [bx1, by0], [bx1, by1], [bx0, by1]]))
        quads = np.stack(corners)
        a = quads.reshape(-1, 2)
        b = np.roll(quads, -1, axis=1).reshape(-1, 2)
        self._walls = (a, b, wall_grid(a, b, 4.0))

    def _wall_inputs(self, world):
        """(walls_a, walls_b, *grid.kernel_args()) of the segments longer than MIN_WALL_LENGTH
        (what ``wall_avoidance`` keeps), or None without walls; cached with the geometry."""
        _, walls = self._geometry(world)
        if self._kernel_walls is None or self._kernel_walls[0] is not walls:
            with np.errstate(**_QUIET):
                self._keep_walls(walls)
        return self._kernel_walls[1]

    def _keep_walls(self, walls) -> None:
        kept = None
        if walls is not None:
            a, b, grid = walls
            keep = st.length(b - a) > MIN_WALL_LENGTH
            if not keep.all():
                a, b = np.ascontiguousarray(a[keep]), np.ascontiguousarray(b[keep])
                grid = wall_grid(a, b, 4.0)
            if a.shape[0]:
                kept = (np.ascontiguousarray(a), np.ascontiguousarray(b), *grid.kernel_args())
        self._kernel_walls = (walls, kept)

    def _circle_inputs(self, world):
        """(centres, radii, *grid.kernel_args()) of the map's circles (``given_forces``'), or None
        without any; cached with the geometry."""
        circles, _ = self._geometry(world)
        if self._kernel_circles is None or self._kernel_circles[0] is not circles:
            kept = None if circles is None else (circles[0], circles[1], *circles[2].kernel_args())
            self._kernel_circles = (circles, kept)
        return self._kernel_circles[1]

    def _kernel_geometry(self, world):
        """(walls, circles) as ``steer_tick`` takes them, the empty ones where the map has none."""
        gmap = world.map
        held_map, held_version, both = self._tick_geometry
        if held_map is gmap and (gmap is None or held_version == gmap.version):
            return both
        both = (self._wall_inputs(world) or _NO_WALLS, self._circle_inputs(world) or _NO_CIRCLES)
        self._tick_geometry = (gmap, None if gmap is None else gmap.version, both)
        return both

    def _noise_seed(self, world) -> np.uint64:
        """The world's seed as the uint64 the noise kernels take (``entity_uniforms``' ``seed % 2**64``)."""
        if self._seed[0] != world.seed:
            self._seed = (world.seed, np.uint64(int(world.seed) % 2**64))
        return self._seed[1]

    # --- the tick ----------------------------------------------------------------------------

    def update(self, world) -> None:
        if not (self.compiled and self._steer_compiled(world)):
            with np.errstate(**_QUIET):
                self.reference_ticks += 1
                reference_update(world, self._geometry, self.max_neighbours, self.name)
        self.avoidance.update(world)  # (one attribute lookup unless some entity has an Avoidance)

    def _steer_tick(self, world, table, n) -> int:
        walls, circles = self._kernel_geometry(world) if self._geometry_wanted else (_NO_WALLS, _NO_CIRCLES)
        field = self._flow_field(world) if self._field_wanted else NOT_FETCHED
        args = (n, table.capacity, table.layout, table.float_view, table.pair_view, table.flag_view, table.int8_view,
                table.int64_view, table.row_by_entity, self._cap, self._geometry_wanted, walls,
                circles, field, self._noise_seed(world), int(world.tick), float(world.dt))
        kernel, call, types = self._tick
        if kernel is not steer_tick:  # the first call (or steer_tick replaced, as a test's spy does)
            kernel, call, types = self._tick = pin(steer_tick, args)
        elif types is not None:
            same_types(kernel, types, args)
        return call(*args)

    def _steer_compiled(self, world) -> bool:
        """``steer_tick`` (``ecs_nav.motion.steering_rows``) over the whole table, one call; False
        when it wrote nothing (a row it leaves to the reference path). The map's walls and circles,
        and the flow field, are handed in from the first tick a row asks for them on."""
        table = world.table
        n = table.n
        if n == 0:
            return True
        if not self._steered and not np.count_nonzero(table.has_steering[:n]):
            return True  # before a row has steered, nothing compiled (with no steering row steer_tick writes nothing)
        self._steered = True
        status = self._steer_tick(world, table, n)
        while status == NEEDS_GEOMETRY or status == NEEDS_INPUT:  # each asked for once: handed in from then on
            if status == NEEDS_GEOMETRY:
                self._geometry_wanted = True
            else:
                self._field_wanted = True
            status = self._steer_tick(world, table, n)
        return status == WRITTEN

    def _flow_field(self, world) -> FlowInputs:
        """``steer_tick``'s flow field (``steering_flow.flow_inputs`` of ``world.resources["flow_field"]``
        on ``world.nav_graph``), kept while the field's array, the graph and its version stay the
        same and the array is read in place (float64, C-contiguous, writable)."""
        field, graph = world.resources.get("flow_field"), world.nav_graph
        raw = getattr(field, "direction", field)
        held_raw, held_graph, held_version, inputs = self._field
        if raw is held_raw and graph is held_graph and (graph is None or graph.version == held_version):
            return inputs
        try:
            inputs = flow_inputs(raw, graph)
        except ValueError:
            n = world.table.n
            if not np.count_nonzero(world.table.has_steering[:n] & (world.table.weights[:n, B["follow_flow"]] != 0.0)):
                return NO_FIELD  # no row reads it (the reference path raises only for a field a row follows)
            raise
        if not inputs.present or inputs.direction is raw:
            self._field = (raw, graph, None if graph is None else graph.version, inputs)
        return inputs

    def behaviour_forces(self, world, entity: int) -> dict[str, tuple[float, float]]:
        """The force (N, before weighting and combining) that each behaviour with a non-zero
        weight produces for ``entity`` on the world's current state, by behaviour name, through
        the vectorised reference path on that one row. Read-only: nothing in the world changes
        (wander's jittered target is not kept). As in a tick, a follower STOPPED on its path
        shows only its brake; its other behaviours read (0, 0).

        Raises KeyError for an entity without a row, ValueError for one without SteeringWeights.
        """
        table = world.table
        row = table.row_of(entity)
        if not table.has_steering[row]:
            raise ValueError(f"{self.name}: entity {entity} has no SteeringWeights")
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            forces, _ = behaviour_stack(world, np.array([row]), np.array([row]), self._geometry, self.max_neighbours)
        weights = table.weights[row]
        return {name: (float(forces[0, b, 0]), float(forces[0, b, 1]))
                for b, name in enumerate(st.BEHAVIOURS) if weights[b] != 0.0}
