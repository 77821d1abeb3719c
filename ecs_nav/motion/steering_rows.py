"""The SteeringSystem's compiled path: every steering row's behaviours, their weighted truncated
sum and seed 004's velocity update in one pass over the agent table's columns.

``ecs_nav.motion.steering``, ``steering_obstacles`` and ``steering_group`` hold the behaviours as
vectorised functions (the reference: Buckland's formulas, tested on their own); this kernel does
the same arithmetic one row at a time, in the same order of operations, so that its forces and
velocities equal the reference path's (``SteeringSystem(compiled=False)``; tests compare the two).
It exists for speed at both ends: a small world pays one kernel call instead of a few hundred numpy
calls, a crowd pays no (k, 2) temporaries per behaviour.

It combines each row as its combiner says (``ecs_nav.motion.steering_combine``): the weighted
truncated sum (code 0), the prioritised running sum (1) or prioritised dithering (2, its numbers
drawn from the splitmix64 chain of
``steering_given.entity_noise`` on the reference path's streams), the latter two from the row's
unweighted forces in the order the reference path stacks them. It computes seek, arrive,
separation, alignment and cohesion over every neighbour (from the neighbour sums of
``ecs_nav.motion.steering_group.flock_sums``), follow_path (seek, arrive or the brake) and follow_flow
(from the field sampled at each agent beforehand, ``ecs_nav.motion.steering_flow.flow_rows``).
The behaviours that need noise, a target entity or a search of their own -- flee, pursuit,
evade, wander, obstacle and wall avoidance, and the group behaviours under a neighbour cap --
come in as forces computed before it, only when some row uses them (``GIVEN``): by
``ecs_nav.motion.steering_given.given_forces`` (the first five), ``wall_avoidance_rows``, and
under a cap ``ecs_nav.motion.steering_capped.capped_group_forces``. So the kernel stays small
and calls no other kernel (one called from another is compiled into it again).

``steer_tick`` is the SteeringSystem's whole tick in one call: it surveys the weights, computes the
forces of ``given_forces``, wall avoidance and the neighbour sums (or, under a cap, the capped
group forces) with their kernels (``neighbour_pass`` of ``ecs_nav.motion.steering_neighbours``: per
``Collider.layer`` when the agents are on several), samples the flow field at the rows that follow
it (``flow_rows``), calls ``steer_rows`` and keeps the new wander targets. A small world then pays
one kernel call a tick instead of a dozen numpy and kernel calls, a crowd no temporaries but the
forces it hands ``steer_rows``. It holds those
kernels compiled into it: a scene compiles it (on a first run without the kernels compiled ahead
of time, ``ecs_nav.compile.aot``) on its first tick with a steering row, whether or not its rows
then use them.

Nothing is written unless every steering row passes: an unknown combiner code, a mass <= 0 or
a non-finite force, velocity or position makes the kernel return ``REFUSED`` with the table
untouched, and the caller takes the reference path, which raises the precise error.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.behaviours import B
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.core.table_columns import (
    COMBINER,
    DECELERATION,
    ELEVATION,
    ENTITY,
    FEELER_LENGTH,
    FOLLOW_STATE,
    FORCE,
    HAS_STEER_TARGET,
    HAS_STEERING,
    HAS_VELOCITY,
    HEADING,
    IS_AGENT,
    LAYER,
    MASS,
    MAX_FORCE,
    MAX_SPEED,
    NEIGHBOUR_RADIUS,
    POS,
    STEER_TARGET,
    VEL,
    WANDER_TARGET,
    WEIGHTS,
    column,
    float_rows,
)
from ecs_nav.motion.steering import DECELERATION_TWEAKER
from ecs_nav.motion.steering_capped import capped_group_forces
from ecs_nav.motion.steering_combine import dithered, prioritised, truncate
from ecs_nav.motion.steering_flow import flow_rows
from ecs_nav.motion.steering_given import COMPUTED, COMPUTED_BEHAVIOURS, given_forces, keep_wander_targets
from ecs_nav.motion.steering_neighbours import neighbour_pass
from ecs_nav.motion.steering_obstacles import wall_force

WRITTEN = 0
REFUSED = 1
"""``steer_rows`` return codes: the table was updated; nothing was written (see the module doc)."""
NEEDS_INPUT = 2
"""``steer_tick``'s third return code: a row follows the flow field and the field was not looked up
(``steering_flow.NOT_FETCHED`` handed in); nothing was written."""
NEEDS_GEOMETRY = 3
"""``steer_tick``'s fourth: a row uses wall or obstacle avoidance and the map's walls and circles
were not handed in; nothing was written."""

STOP_SPEED = 1e-9
"""A STOPPED (path-following) agent slower than this is set to exactly zero velocity."""

GIVEN = ("flee", "pursuit", "evade", "wander", "obstacle_avoidance", "wall_avoidance", "separation", "alignment",
         "cohesion")
"""The behaviours whose forces the caller hands in (``given`` (len(GIVEN), n, 2), in this order);
the group behaviours only under a neighbour cap."""
GIVEN_BEHAVIOURS = np.array([B[b] for b in GIVEN], dtype=np.int64)
"""Their columns in the weights."""

_SEEK, _ARRIVE = B["seek"], B["arrive"]
_SEPARATION, _ALIGNMENT, _COHESION = B["separation"], B["alignment"], B["cohesion"]
_FOLLOW_PATH, _FOLLOW_FLOW = B["follow_path"], B["follow_flow"]
_FIRST_GROUP = GIVEN.index("separation")
WALL_SLOT = GIVEN.index("wall_avoidance")
"""Wall avoidance's slot in ``given``."""
_WALL, _OBSTACLE, _WANDER = B["wall_avoidance"], B["obstacle_avoidance"], B["wander"]
N_BEHAVIOURS = len(B)
"""The behaviours, and the width of the table's weights."""

assert GIVEN[:len(COMPUTED)] == COMPUTED  # given_forces writes the first slots


@kernel
def _seek(px, py, vx, vy, tx, ty, max_speed):
    dx = tx - px
    dy = ty - py
    d = math.sqrt(dx * dx + dy * dy)
    if d > 0.0:
        return dx / d * max_speed - vx, dy / d * max_speed - vy
    return 0.0 * max_speed - vx, 0.0 * max_speed - vy


@kernel
def _arrive(px, py, vx, vy, tx, ty, max_speed, deceleration):
    dx = tx - px
    dy = ty - py
    dist = math.sqrt(dx * dx + dy * dy)
    if not (dist > 0.0):
        return 0.0, 0.0
    speed = dist / (deceleration * DECELERATION_TWEAKER)
    if not (speed < max_speed or speed != speed):  # np.minimum: NaN wins
        speed = max_speed
    per_dist = speed / dist
    return dx * per_dist - vx, dy * per_dist - vy


@kernel
def steer_rows(n, has_steering, has_velocity, combiner, weights, pos, vel, heading, max_speed, max_force, mass,
               deceleration, has_steer_target, steer_target, follow_state, force, given, given_on,
               flow, group_all, group_index, group_count, group_sums, entity, seed, tick, dt):
    """Steer rows [0, n) of the table where ``has_steering``; returns WRITTEN or REFUSED.

    Table columns (capacity-long, as the AgentTable holds them): ``force`` and ``vel`` are
    written, the rest read. ``given`` (len(GIVEN), n, 2): the GIVEN behaviours' forces by slot
    and table row, read for slot s where ``given_on[s]`` (the other slots may hold anything).
    ``flow`` (n, 2): the flow direction at each agent (empty: no field). ``group_all``:
    separation, alignment and cohesion over every neighbour from ``ecs_nav.motion.steering_group.flock_sums``'
    (count, sums) of the agents, row i's at ``group_index[i]``.

    Each row is combined by its ``combiner``: 0 the weighted truncated sum, 1 the prioritised
    running sum, 2 prioritised dithering, whose numbers come from ``entity`` (the table's column),
    ``seed`` (uint64) and ``tick`` as the reference path draws them (``DITHER_STREAM`` and up);
    another code is refused.
    """
    scratch = np.empty((2 * n + N_BEHAVIOURS, 2))  # one allocation: a small world's tick is a few of them
    out_force, out_vel = scratch[:n], scratch[n:2 * n]
    fb = scratch[2 * n:]  # a combined row's unweighted forces, as the reference path stacks them
    has_flow = flow.shape[0] > 0
    n_given = given_on.shape[0]
    for i in range(n):
        if not has_steering[i]:
            continue
        code = combiner[i]
        if code < 0 or code > 2:
            return REFUSED
        if code != 0:
            fb[:] = 0.0
        w = weights[i]
        px, py = pos[i, 0], pos[i, 1]
        vx, vy = vel[i, 0], vel[i, 1]
        ms = max_speed[i]
        has_t = has_steer_target[i]
        tx, ty = steer_target[i, 0], steer_target[i, 1]
        sx = 0.0
        sy = 0.0
        # the reference path's order of accumulation (systems/steering.py)
        if w[_SEEK] != 0.0 and has_t:
            fx, fy = _seek(px, py, vx, vy, tx, ty, ms)
            fb[_SEEK, 0], fb[_SEEK, 1] = fx, fy
            sx += fx * w[_SEEK]
            sy += fy * w[_SEEK]
        if w[_ARRIVE] != 0.0 and has_t:
            fx, fy = _arrive(px, py, vx, vy, tx, ty, ms, deceleration[i])
            fb[_ARRIVE, 0], fb[_ARRIVE, 1] = fx, fy
            sx += fx * w[_ARRIVE]
            sy += fy * w[_ARRIVE]
        for s in range(_FIRST_GROUP):  # flee, pursuit, evade, wander, obstacle and wall avoidance
            b = GIVEN_BEHAVIOURS[s]
            if given_on[s] and w[b] != 0.0:
                fb[b, 0], fb[b, 1] = given[s, i, 0], given[s, i, 1]
                sx += given[s, i, 0] * w[b]
                sy += given[s, i, 1] * w[b]
        if group_all:
            g = group_index[i]
            count = group_count[g]
            if w[_SEPARATION] != 0.0:
                fb[_SEPARATION, 0], fb[_SEPARATION, 1] = group_sums[g, 0], group_sums[g, 1]
                sx += group_sums[g, 0] * w[_SEPARATION]
                sy += group_sums[g, 1] * w[_SEPARATION]
            if w[_ALIGNMENT] != 0.0:
                fx, fy = 0.0, 0.0
                if count > 0:
                    fx = group_sums[g, 4] / count - heading[i, 0]
                    fy = group_sums[g, 5] / count - heading[i, 1]
                fb[_ALIGNMENT, 0], fb[_ALIGNMENT, 1] = fx, fy
                sx += fx * w[_ALIGNMENT]
                sy += fy * w[_ALIGNMENT]
            if w[_COHESION] != 0.0:
                fx, fy = 0.0, 0.0
                if count > 0:
                    fx, fy = _seek(px, py, vx, vy, group_sums[g, 2] / count, group_sums[g, 3] / count, ms)
                    d = math.sqrt(fx * fx + fy * fy)
                    if d > 0.0:
                        fx, fy = fx / d, fy / d
                    else:
                        fx, fy = 0.0, 0.0
                fb[_COHESION, 0], fb[_COHESION, 1] = fx, fy
                sx += fx * w[_COHESION]
                sy += fy * w[_COHESION]
        else:
            for s in range(_FIRST_GROUP, n_given):  # under a neighbour cap
                b = GIVEN_BEHAVIOURS[s]
                if given_on[s] and w[b] != 0.0:
                    fb[b, 0], fb[b, 1] = given[s, i, 0], given[s, i, 1]
                    sx += given[s, i, 0] * w[b]
                    sy += given[s, i, 1] * w[b]
        state = follow_state[i]
        stopped = False
        if w[_FOLLOW_PATH] != 0.0:
            if state == FOLLOW_SEEK and has_t:
                fx, fy = _seek(px, py, vx, vy, tx, ty, ms)
                fb[_FOLLOW_PATH, 0], fb[_FOLLOW_PATH, 1] = fx, fy
                sx += fx * w[_FOLLOW_PATH]
                sy += fy * w[_FOLLOW_PATH]
            elif state == FOLLOW_ARRIVE and has_t:
                fx, fy = _arrive(px, py, vx, vy, tx, ty, ms, deceleration[i])
                fb[_FOLLOW_PATH, 0], fb[_FOLLOW_PATH, 1] = fx, fy
                sx += fx * w[_FOLLOW_PATH]
                sy += fy * w[_FOLLOW_PATH]
            elif state == FOLLOW_STOPPED:
                stopped = True
        if w[_FOLLOW_FLOW] != 0.0 and has_flow:
            fx = flow[i, 0] * ms - vx
            fy = flow[i, 1] * ms - vy
            fb[_FOLLOW_FLOW, 0], fb[_FOLLOW_FLOW, 1] = fx, fy
            sx += fx * w[_FOLLOW_FLOW]
            sy += fy * w[_FOLLOW_FLOW]
        if stopped:  # it holds still: only the brake acts
            per_second = mass[i] / dt
            sx = -vx * per_second * w[_FOLLOW_PATH]
            sy = -vy * per_second * w[_FOLLOW_PATH]
            if code != 0:
                fb[:] = 0.0
                fb[_FOLLOW_PATH, 0], fb[_FOLLOW_PATH, 1] = -vx * per_second, -vy * per_second
        mf = max_force[i]
        if code == 0:
            fx, fy = truncate(sx, sy, mf)
        elif code == 1:
            fx, fy = prioritised(fb, w, mf)
        else:
            fx, fy = dithered(fb, w, mf, seed, tick, entity[i])
        if not (math.isfinite(fx) and math.isfinite(fy)):
            return REFUSED
        out_force[i, 0], out_force[i, 1] = fx, fy
        if has_velocity[i]:
            m = mass[i]
            if not (m > 0.0):
                return REFUSED
            ax, ay = truncate(fx, fy, mf)
            nvx, nvy = truncate(vx + ax / m * dt, vy + ay / m * dt, ms)
            if not (math.isfinite(nvx) and math.isfinite(nvy)):
                return REFUSED
            if stopped and math.hypot(nvx, nvy) < STOP_SPEED:
                nvx, nvy = 0.0, 0.0
            out_vel[i, 0], out_vel[i, 1] = nvx, nvy
    for i in range(n):
        if not has_steering[i]:
            continue
        force[i, 0], force[i, 1] = out_force[i, 0], out_force[i, 1]
        if has_velocity[i]:
            vel[i, 0], vel[i, 1] = out_vel[i, 0], out_vel[i, 1]
    return WRITTEN


@kernel
def steering_survey(has_steering, is_agent, weights, neighbour_radius, group_first, group_last, used, radius):
    """What the SteeringSystem decides before ``steer_rows``, in one pass over the rows
    [0, len(radius)) (for a small world a handful of numpy reductions cost more than the data):
    ``used[b]`` whether any row has a non-zero (or NaN) weight b; ``radius[i]`` row i's
    ``neighbour_radius`` if it steers with a non-zero weight in columns group_first..group_last,
    else 0 (the radius ``flock_sums`` takes). Both written in place. Returns (the count of the
    group's member rows -- ``is_agent`` or ``has_steering`` --, the largest radius of a member:
    NaN if one is NaN, as ``np.max``; -inf without members)."""
    used[:] = False
    n_members = 0
    top = -math.inf
    nan = False
    for i in range(radius.shape[0]):
        group = False
        for b in range(weights.shape[1]):
            if weights[i, b] != 0.0:
                used[b] = True
                if group_first <= b <= group_last:
                    group = True
        steers = has_steering[i]
        r = neighbour_radius[i] if steers and group else 0.0
        radius[i] = r
        if steers or is_agent[i]:
            n_members += 1
            if r != r:
                nan = True
            elif r > top:
                top = r
    return n_members, math.nan if nan else top


@kernel
def wall_avoidance_rows(n, has_steering, weights, pos, heading, feeler_length, walls, out):
    """Wall avoidance (``ecs_nav.motion.steering_obstacles.wall_force``) of the steering rows [0, n) with a non-zero
    wall avoidance weight, written to their rows of ``out`` (n, 2) (the other rows are left as
    they are). ``walls``: (walls_a, walls_b, *grid.kernel_args()) of the walls longer than
    ``MIN_WALL_LENGTH``."""
    walls_a, walls_b, ox, oy, inv_cell, cols, rows, cell_start, cell_items = walls
    for i in range(n):
        if has_steering[i] and weights[i, _WALL] != 0.0:
            out[i, 0], out[i, 1] = wall_force(pos[i, 0], pos[i, 1], heading[i, 0], heading[i, 1], feeler_length[i],
                                              walls_a, walls_b, ox, oy, inv_cell, cols, rows, cell_start, cell_items)


@kernel
def steer_tick(n, capacity, layout, floats, pairs, flags, codes, ints, row_by_entity, max_neighbours, geometry_given,
               walls, circles, flow_field, seed, tick, dt):
    """The SteeringSystem's whole tick in one call: ``steering_survey``, ``given_forces``,
    ``wall_avoidance_rows``, ``neighbour_pass``, ``flow_rows``, ``steer_rows`` and
    ``keep_wander_targets``. Returns ``steer_rows``' code (REFUSED at once when a steering row's
    combiner code is unknown; REFUSED when a group radius or a new wander target is not finite),
    or, with nothing written, NEEDS_INPUT when some row follows the flow field and
    ``flow_field`` is ``steering_flow.NOT_FETCHED``, or NEEDS_GEOMETRY when a row uses wall
    or obstacle avoidance and not ``geometry_given``. ``flow_field``: a ``steering_flow.FlowInputs``
    (``NO_FIELD``: follow_flow gives no force). ``row_by_entity``: the table's (the rows of
    target entities); ``circles``: as ``given_forces`` takes them; ``seed`` (uint64) and ``tick``:
    wander's and dithering's noise. ``capacity``, ``layout`` and the AgentTable's buffer as
    ``floats``, ``pairs``, ``flags`` and ``codes`` (its ``float_view``, ``pair_view``,
    ``flag_view``, ``int8_view``; ``ints``: its ``int64_view``: ``ecs_nav.core.table_columns``) hold
    the columns ``steer_rows`` reads and writes, and ``feeler_length``, ``neighbour_radius`` and
    ``layer`` read. ``max_neighbours``: the group behaviours' cap on neighbours (the closest
    kept, ``capped_group_forces``), -1 for none, below -1 refused. ``walls``: as
    ``wall_avoidance_rows`` takes them; empty arrays without any wall, or when not given (a world
    without wall or obstacle avoidance does not fetch them: 0.4 µs a tick, measured 2026-11-27 on a
    2-core AMD EPYC VM); the same for ``circles``."""
    has_steering, is_agent = column(flags, layout[HAS_STEERING], capacity), column(flags, layout[IS_AGENT], capacity)
    has_velocity = column(flags, layout[HAS_VELOCITY], capacity)
    has_steer_target = column(flags, layout[HAS_STEER_TARGET], capacity)
    combiner, follow_state = column(codes, layout[COMBINER], capacity), column(codes, layout[FOLLOW_STATE], capacity)
    weights = float_rows(floats, layout[WEIGHTS], capacity, N_BEHAVIOURS)
    pos, vel = column(pairs, layout[POS], capacity), column(pairs, layout[VEL], capacity)
    heading, force = column(pairs, layout[HEADING], capacity), column(pairs, layout[FORCE], capacity)
    steer_target = column(pairs, layout[STEER_TARGET], capacity)
    max_speed, max_force = column(floats, layout[MAX_SPEED], capacity), column(floats, layout[MAX_FORCE], capacity)
    mass, deceleration = column(floats, layout[MASS], capacity), column(floats, layout[DECELERATION], capacity)
    neighbour_radius = column(floats, layout[NEIGHBOUR_RADIUS], capacity)
    feeler_length = column(floats, layout[FEELER_LENGTH], capacity)
    layer = column(ints, layout[LAYER], capacity)
    elevation = column(floats, layout[ELEVATION], capacity)
    if max_neighbours < -1:
        return REFUSED  # a negative cap (the reference path raises)
    for i in range(n):
        if has_steering[i] and not (0 <= combiner[i] <= 2):
            return REFUSED  # an unknown combiner (the reference path names it)
    n_behaviours = weights.shape[1]
    used, radius = np.empty(n_behaviours, np.bool_), np.empty(n)
    n_members, max_radius = steering_survey(has_steering[:n], is_agent[:n], weights[:n], neighbour_radius[:n],
                                            _SEPARATION, _COHESION, used, radius)
    group = used[_SEPARATION] or used[_ALIGNMENT] or used[_COHESION]
    capped = group and max_neighbours >= 0
    if used[_FOLLOW_FLOW] and not flow_field.fetched:
        return NEEDS_INPUT
    if (used[_WALL] or used[_OBSTACLE]) and not geometry_given:
        return NEEDS_GEOMETRY
    if group and not math.isfinite(max_radius):
        return REFUSED  # (the reference path raises)
    given_on = np.zeros(len(GIVEN), np.bool_)
    walls_on = used[_WALL] and walls[0].shape[0] > 0
    computed = False
    for b in COMPUTED_BEHAVIOURS:
        computed = computed or used[b]
    given = np.empty((len(GIVEN), n if walls_on or computed or capped else 0, 2))
    new_wander = np.empty((n if used[_WANDER] else 0, 2))
    if computed and not given_forces(n, capacity, layout, floats, pairs, flags, ints, row_by_entity, used, circles,
                                     seed, tick, dt, given, given_on, new_wander):
        return REFUSED  # a wander target that is not finite (the reference path names the entities)
    if walls_on:
        given_on[WALL_SLOT] = True
        wall_avoidance_rows(n, has_steering, weights, pos, heading, feeler_length, walls, given[WALL_SLOT])
    if capped:  # the closest max_neighbours neighbours: their forces handed in
        if not capped_group_forces(n, is_agent, has_steering, weights, pos, vel, heading, max_speed, radius, layer,
                                   n_members, max_neighbours, used, given, _FIRST_GROUP):
            return REFUSED  # (the reference path names the entities)
        for s in range(_FIRST_GROUP, len(GIVEN)):
            given_on[s] = used[GIVEN_BEHAVIOURS[s]]
        index, count, sums = np.full(n, -1, np.int64), np.zeros(0, np.int64), np.zeros((0, 6))
    elif group:
        finite, index, count, sums = neighbour_pass(n, is_agent, has_steering, pos, heading, radius, layer,
                                                    n_members, max_radius, used[_ALIGNMENT])
        if not finite:
            return REFUSED  # (the reference path names the entities)
    else:
        index, count, sums = np.full(n, -1, np.int64), np.zeros(0, np.int64), np.zeros((0, 6))
    flow = np.empty((n if used[_FOLLOW_FLOW] and flow_field.present else 0, 2))  # empty: no field, no force
    if flow.shape[0]:
        flow_rows(n, has_steering, weights, pos, elevation, flow_field, flow)
    status = steer_rows(n, has_steering, has_velocity, combiner, weights, pos, vel, heading, max_speed, max_force,
                        mass, deceleration, has_steer_target, steer_target, follow_state, force, given, given_on,
                        flow, group and not capped, index, count, sums,
                        column(ints, layout[ENTITY], capacity), seed, tick, dt)
    if status == WRITTEN and used[_WANDER]:
        keep_wander_targets(n, has_steering, weights, new_wander, column(pairs, layout[WANDER_TARGET], capacity))
    return status
