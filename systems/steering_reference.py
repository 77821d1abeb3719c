"""The SteeringSystem's reference path: every steering row through the vectorised functions of
``ecs_nav.motion.steering``, ``steering_obstacles`` and ``steering_group`` (Buckland's formulas,
one numpy pass per behaviour). It serves the rows the row kernel (``ecs_nav.motion.steering_rows``)
leaves to it -- refusals of non-finite values and unknown combiner codes --
``SteeringSystem(compiled=False)``, the inputs the kernel is handed by column (flee, pursuit,
evade, wander, capped group behaviours) and ``SteeringSystem.behaviour_forces``. See
``systems/steering.py`` for what each behaviour reads.

``geometry(world)`` is the system's cached static geometry: ((centres, radii, grid) or None,
(wall a, wall b, grid) or None); ``max_neighbours`` its cap on neighbours (None: all).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.core.finite import refuse_non_finite
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.motion import steering as st
from ecs_nav.motion import steering_group, steering_obstacles
from ecs_nav.motion.neighbours import neighbours_within
from ecs_nav.motion.spatial import layer_members
from ecs_nav.motion.steering_flow import SEARCH_CELLS
from ecs_nav.motion.steering_given import DITHER_PROBABILITIES, DITHER_STREAM, WANDER_STREAM
from ecs_nav.motion.steering_rows import N_BEHAVIOURS, STOP_SPEED

B = st.B

GROUP = (B["separation"], B["alignment"], B["cohesion"])
SUM_ORDER = tuple(B[b] for b in ("seek", "arrive", "flee", "pursuit", "evade", "wander", "obstacle_avoidance",
                                 "wall_avoidance", "separation", "alignment", "cohesion", "follow_path",
                                 "follow_flow"))
"""The order the weighted forces are added in, on both paths (the same floating-point sums)."""


def reference_update(world, geometry, max_neighbours, system_name: str = "SteeringSystem") -> None:
    """The vectorised path: every steering row through the functions of ``ecs_nav.motion.steering``,
    ``steering_obstacles`` and ``steering_group``."""
    table = world.table
    n = table.n
    steering = table.has_steering[:n]
    if steering.all():  # the common case: whole-column views, no fancy-index copies
        sel, srows = slice(0, n), np.arange(n)
    else:
        srows = np.flatnonzero(steering)
        sel = srows
    if srows.size == 0:
        return

    def col(name):
        return getattr(table, name)[sel]

    ents = col("entity")
    combiner = col("combiner")
    codes = np.unique(combiner)
    if np.any((codes < 0) | (codes > 2)):
        bad = ~np.isin(combiner, (0, 1, 2))
        raise ValueError(f"SteeringSystem: unknown combiner code(s) {sorted(set(combiner[bad].tolist()))} "
                         f"for entities {ents[bad].tolist()[:10]}")
    forces, new_wander = behaviour_stack(world, srows, sel, geometry, max_neighbours)
    W = col("weights")
    # the weighted sum in the row kernel's order of accumulation; a STOPPED follower's stack
    # holds only its brake
    total = np.zeros((srows.size, 2))
    for b in SUM_ORDER:
        total += forces[:, b] * W[:, b, None]
    fp = B["follow_path"]
    hold = np.flatnonzero((W[:, fp] != 0.0) & (col("follow_state") == FOLLOW_STOPPED))
    if hold.size:
        total[hold] = forces[hold, fp] * W[hold, fp, None]

    # --- combine per row ----------------------------------------------------------------
    max_force = col("max_force")
    force = st.truncate(total, max_force)  # the weighted truncated sum
    for code in codes:
        if code == 0:
            continue
        i = np.flatnonzero(combiner == code)
        if code == 1:
            force[i] = st.combine_prioritized(forces[i], W[i], max_force[i])
        else:
            u = np.concatenate([st.entity_uniforms(world.seed, ents[i], world.tick, stream=DITHER_STREAM + s)
                                for s in range((N_BEHAVIOURS + 1) // 2)], axis=1)[:, :N_BEHAVIOURS]
            force[i] = st.combine_dithered(forces[i], W[i], DITHER_PROBABILITIES, max_force[i], (u + 1.0) / 2.0)
    refuse_non_finite(system_name, ents, **{"steering force": force})

    # --- seed 004's pipeline --------------------------------------------------------------
    moving = col("has_velocity")
    all_moving = bool(moving.all())
    new_vel = None
    if moving.any():
        i = slice(None) if all_moving else np.flatnonzero(moving)
        vel = col("vel")
        new_vel = st.apply_steering(vel[i], force[i], col("mass")[i], col("max_speed")[i], max_force[i],
                                    world.dt)
        refuse_non_finite(system_name, ents[i], velocity=new_vel)
        halt = ((W[i, fp] != 0.0) & (col("follow_state")[i] == FOLLOW_STOPPED)
                & (np.hypot(new_vel[:, 0], new_vel[:, 1]) < STOP_SPEED))
        new_vel[halt] = 0.0
    if new_wander is not None:
        refuse_non_finite(system_name, table.entity[new_wander[0]], **{"wander target": new_wander[1]})

    table.force[sel] = force
    if new_vel is not None:
        table.vel[srows if all_moving else srows[moving]] = new_vel
    if new_wander is not None:
        table.wander_target[new_wander[0]] = new_wander[1]

def behaviour_stack(world, srows, sel, geometry, max_neighbours, only=None):
    """(k, B, 2) unweighted force of every behaviour for the steering rows ``srows`` (``sel``
    selects the same rows: a slice or the array), zero where a behaviour is off or lacks its
    input; a STOPPED follower's row holds only its brake. Also (rows, targets) of wander's
    new targets, or None. ``only``: a (B,) mask of the behaviours to compute (None: all).
    Reads the world, writes nothing."""
    table = world.table
    k = srows.size

    def col(name):
        return getattr(table, name)[sel]

    W = col("weights")
    on = W != 0.0
    used = on.any(axis=0)
    if only is not None:
        used &= only
    pos, vel, heading, max_speed = col("pos"), col("vel"), col("heading"), col("max_speed")
    ents = col("entity")
    has_t = col("has_steer_target")
    target = col("steer_target")
    forces = np.zeros((k, N_BEHAVIOURS, 2))
    new_wander = None

    def rows_for(b, extra=None):
        m = on[:, b] if extra is None else on[:, b] & extra
        if m.all():
            return slice(None)
        return np.flatnonzero(m)

    def put(b, i, f):
        forces[i, b] = f

    # target entities (pursuit, evade, flee): rows resolved only where one is set
    trow = np.full(k, -1, np.int64)
    has_te = np.zeros(k, bool)
    if used[B["pursuit"]] or used[B["evade"]] or used[B["flee"]]:
        te = col("target_entity")
        has_te = te >= 0
        if has_te.any():
            trow[has_te] = table.rows_of(te[has_te])
            has_te = trow >= 0

    if used[B["seek"]]:
        i = rows_for(B["seek"], has_t)
        put(B["seek"], i, st.seek(pos[i], vel[i], target[i], max_speed[i]))
    if used[B["arrive"]]:
        i = rows_for(B["arrive"], has_t)
        put(B["arrive"], i, st.arrive(pos[i], vel[i], target[i], max_speed[i], col("deceleration")[i]))
    if used[B["flee"]]:
        i = rows_for(B["flee"], has_te | has_t)
        src = np.where(has_te[i, None], table.pos[np.maximum(trow[i], 0)], target[i])
        put(B["flee"], i, st.flee(pos[i], vel[i], src, max_speed[i], col("panic_distance")[i]))
    if used[B["pursuit"]]:
        i = rows_for(B["pursuit"], has_te)
        t = trow[i]
        put(B["pursuit"], i, st.pursuit(pos[i], vel[i], heading[i], max_speed[i], table.pos[t],
                                        table.vel[t], table.heading[t]))
    if used[B["evade"]]:
        i = rows_for(B["evade"], has_te)
        t = trow[i]
        put(B["evade"], i, st.evade(pos[i], vel[i], max_speed[i], table.pos[t], table.vel[t],
                                    col("threat_range")[i]))
    if used[B["wander"]]:
        i = rows_for(B["wander"])
        u = st.entity_uniforms(world.seed, ents[i], world.tick, stream=WANDER_STREAM)
        f, wt = st.wander(pos[i], vel[i], heading[i], col("wander_target")[i], col("wander_radius")[i],
                          col("wander_distance")[i], col("wander_jitter")[i], world.dt, u)
        put(B["wander"], i, f)
        new_wander = (srows[i], wt)
    if used[B["obstacle_avoidance"]] or used[B["wall_avoidance"]]:
        circles, walls = geometry(world)
        if used[B["obstacle_avoidance"]] and circles is not None:
            i = rows_for(B["obstacle_avoidance"])
            put(B["obstacle_avoidance"], i, steering_obstacles.obstacle_avoidance(
                pos[i], vel[i], heading[i], col("radius")[i], max_speed[i], circles[0], circles[1],
                col("detection_box_length")[i], grid=circles[2]))
        if used[B["wall_avoidance"]] and walls is not None:
            i = rows_for(B["wall_avoidance"])
            put(B["wall_avoidance"], i, steering_obstacles.wall_avoidance(
                pos[i], heading[i], walls[0], walls[1], col("feeler_length")[i], grid=walls[2]))
    if any(used[b] for b in GROUP):
        for b, i, f in group_forces(world, srows, on, max_neighbours):
            put(b, i, f)
    fp = B["follow_path"]
    if used[fp]:
        state = col("follow_state")
        i = rows_for(fp, (state == FOLLOW_SEEK) & has_t)
        put(fp, i, st.seek(pos[i], vel[i], target[i], max_speed[i]))
        i = rows_for(fp, (state == FOLLOW_ARRIVE) & has_t)
        put(fp, i, st.arrive(pos[i], vel[i], target[i], max_speed[i], col("deceleration")[i]))
    if used[B["follow_flow"]]:
        i = rows_for(B["follow_flow"])
        direction = flow_directions(world, srows[i])  # only the rows that follow it
        if direction is not None:
            put(B["follow_flow"], i, st.follow_flow(vel[i], direction, max_speed[i]))

    # an agent stopped at its goal holds still: only the brake acts (seed 000's "stop"), so
    # separation does not spread a settled crowd apart again
    if used[fp]:
        hold = np.flatnonzero(on[:, fp] & (col("follow_state") == FOLLOW_STOPPED))
        if hold.size:
            forces[hold] = 0.0
            forces[hold, fp] = -vel[hold] * (col("mass")[hold] / world.dt)[:, None]
    return forces, new_wander

def group_forces(world, srows, on, max_neighbours):
    """Separation, alignment and cohesion over the neighbour CSR of all agents, each layer's
    agents (``Collider.layer``) over their own layer only; yields (behaviour, rows, force)."""
    table = world.table
    n = table.n
    grows = np.flatnonzero(table.is_agent[:n] | table.has_steering[:n])
    at = np.searchsorted(grows, srows)  # srows is a subset of grows
    radius = np.zeros(grows.size)
    layer = table.layer[grows]
    if grows.size == n:  # every row takes part (the usual crowd): views, not gathers
        grows = slice(0, n)
    wants = on[:, list(GROUP)].any(axis=1)
    radius[at[wants]] = table.neighbour_radius[srows[wants]]
    gpos, gvel, gheading, gspeed = table.pos[grows], table.vel[grows], table.heading[grows], table.max_speed[grows]
    sep_b, ali_b, coh_b = GROUP
    used = {b: on[:, b].any() for b in GROUP}
    forces = {b: np.zeros((radius.size, 2)) for b in GROUP if used[b]}
    for part in layer_members(layer):
        if max_neighbours is None:  # every neighbour counts: one pass, no neighbour lists
            found = steering_group.flock(gpos[part], gvel[part], gheading[part], gspeed[part], radius[part],
                             alignment=used[ali_b], cohesion=used[coh_b])
            for b, force in zip(GROUP, found):
                if used[b]:
                    forces[b][part] = force
            continue
        offsets, nrows = neighbours_within(gpos[part], radius[part], max_neighbours)
        if used[sep_b]:
            forces[sep_b][part] = steering_group.separation(gpos[part], offsets, nrows)
        if used[ali_b]:
            forces[ali_b][part] = steering_group.alignment(gheading[part], offsets, nrows)
        if used[coh_b]:
            forces[coh_b][part] = steering_group.cohesion(gpos[part], gvel[part], gspeed[part], offsets, nrows)
    for b, force in forces.items():
        i = np.flatnonzero(on[:, b])
        yield b, i, force[at[i]]

def flow_directions(world, srows):
    """(k, 2) flow direction at each steering agent's nearest node, or None without a field (the
    reference of ``ecs_nav.motion.steering_flow.flow_rows``)."""
    field = world.resources.get("flow_field")
    graph = world.nav_graph
    if field is None or graph is None:
        return None
    field = np.asarray(getattr(field, "direction", field), dtype=np.float64)
    if field.ndim != 2 or field.shape != (graph.node_count, 2):
        raise ValueError(f"flow_field: expected ({graph.node_count}, 2) directions per node, got {field.shape}")
    table = world.table
    nodes = graph.nearest_nodes(table.pos[srows], table.elevation[srows], SEARCH_CELLS)
    out = np.zeros((srows.size, 2))
    ok = nodes >= 0
    out[ok] = field[nodes[ok]]
    out[~np.isfinite(out).all(axis=1)] = 0.0
    return out
