"""Assertions about a World whose failure messages say what happened: where an agent that did
not arrive ended up and why it may have stopped, which agent is inside which wall, which column
of which entity holds NaN, where two runs first part."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from ecs_nav.core.components import Path, PathRequest
from ecs_nav.core.events import TargetReached
from ecs_nav.core.world import World
from ecs_nav.testing.event_log import NAVIGATION_EVENTS, SHOWN

WALL_TOLERANCE = 1e-6
"""m. An agent's disc may overlap a wall by this much (rounding) before it counts as inside."""

DEFAULT_BODY_HEIGHT = 2.0
"""m. The agents' height when the World has no PhysicsSystem to say it (a solid whose base is
at or above ``elevation + body height`` is overhead, not a wall)."""


# --- arrival ------------------------------------------------------------------------------------


def goal_of(world: World, entity: int) -> tuple[float, float] | None:
    """Where ``entity`` is headed, (x, y) m: its PathRequest's goal, or its target entity's
    position, or its Path's last waypoint, or its steering target; None when it has none."""
    request = world.try_get(entity, PathRequest)
    table = world.table
    if request is not None and request.goal is not None:
        return request.goal
    if request is not None and request.target is not None and table.has(request.target):
        x, y = table.pos[table.row_of(request.target)]
        return float(x), float(y)
    path = world.try_get(entity, Path)
    if path is not None and path.waypoints.shape[0]:
        return float(path.waypoints[-1, 0]), float(path.waypoints[-1, 1])
    if table.has(entity) and table.has_steer_target[table.row_of(entity)]:
        x, y = table.steer_target[table.row_of(entity)]
        return float(x), float(y)
    return None


def assert_arrives(world: World, entity: int, within: int) -> int:
    """Step ``world`` until ``entity`` sends ``TargetReached``, for at most ``within`` ticks;
    returns how many ticks it took (1 when it arrives on the first tick stepped).

    When it does not arrive, the AssertionError says where it is, how far from its goal
    (``goal_of``), its closest approach and when, its speed, its Path's status and waypoint,
    and the events it sent meanwhile (``Stuck``, ``PathFailed``, ...); or the tick it was
    despawned."""
    if not world.exists(entity):
        raise ValueError(f"assert_arrives: entity {entity} does not exist")
    start = world.tick
    story: Counter = Counter()
    arrived: list[int] = []

    def note(event) -> None:
        if getattr(event, "entity", None) == entity:
            story[type(event).__name__] += 1
            if isinstance(event, TargetReached):
                arrived.append(event.tick)

    for event_type in NAVIGATION_EVENTS:
        world.on(event_type, note)
    closest, closest_tick = np.inf, start
    try:
        for _ in range(within):
            world.step()
            if arrived:
                return world.tick - start
            if not world.exists(entity):
                raise AssertionError(f"entity {entity} was despawned at tick {world.tick - 1}, "
                                     f"{world.tick - start} ticks in, before it arrived")
            goal = goal_of(world, entity)
            if goal is not None and world.table.has(entity):
                d = float(np.hypot(*(world.table.pos[world.table.row_of(entity)] - goal)))
                if d < closest:
                    closest, closest_tick = d, world.tick - 1
    finally:
        for event_type in NAVIGATION_EVENTS:
            world.off(event_type, note)
    raise AssertionError(f"entity {entity} did not arrive within {within} ticks "
                         f"({within * world.dt:g} s, ticks {start}..{world.tick - 1}): "
                         + _whereabouts(world, entity, closest, closest_tick, story))


def _whereabouts(world: World, entity: int, closest: float, closest_tick: int, story: Counter) -> str:
    parts = []
    goal = goal_of(world, entity)
    if world.table.has(entity):
        row = world.table.row_of(entity)
        x, y = world.table.pos[row]
        where = f"it is at ({x:.2f}, {y:.2f})"
        if goal is not None:
            where += f", {np.hypot(x - goal[0], y - goal[1]):.2f} m from its goal ({goal[0]:.2f}, {goal[1]:.2f})"
            where += f", closest {closest:.2f} m at tick {closest_tick}"
        else:
            where += ", with no goal (no PathRequest, Path or steering target)"
        parts.append(where)
        parts.append(f"speed {np.hypot(*world.table.vel[row]):.2f} m/s")
    path = world.try_get(entity, Path)
    if path is not None:
        parts.append(f"Path status {path.status!r}, heading for waypoint {path.index} of {path.waypoints.shape[0]}")
    elif world.try_get(entity, PathRequest) is not None:
        parts.append("no Path yet (is a PathfindSystem running, and a nav graph built?)")
    else:
        parts.append("no Path or PathRequest: TargetReached comes from following one (an agent that only steers "
                     "to a target never sends it)")
    if world.system("PathFollowSystem") is None:
        parts.append("no PathFollowSystem in this World: it is what sends TargetReached")
    events = ", ".join(f"{name} x{k}" for name, k in sorted(story.items())) or "none"
    parts.append(f"its events meanwhile: {events}")
    return "; ".join(parts)


# --- walls --------------------------------------------------------------------------------------


def agents_in_walls(world: World, tolerance: float = WALL_TOLERANCE) -> list[tuple[int, float]]:
    """(entity, depth in m) of each agent whose disc overlaps a wall of ``world.map`` by more
    than ``tolerance`` m at its elevation, in entity order (the PhysicsSystem's wall rule: its
    ``max_climb`` and body height)."""
    if world.map is None:
        raise ValueError("this World has no map, so it has no walls to be inside (set world.map)")
    t = world.table
    rows = np.flatnonzero(t.live("is_agent"))
    if rows.size == 0:
        return []
    body = getattr(world.system("PhysicsSystem"), "body_height", DEFAULT_BODY_HEIGHT)
    depth = world.map.penetration(t.pos[rows], t.radius[rows], t.elevation[rows], t.max_climb[rows], body)
    inside = depth > tolerance
    return sorted((int(e), float(d)) for e, d in zip(t.entity[rows][inside], depth[inside]))


def assert_no_agent_in_walls(world: World, ticks: int = 0, tolerance: float = WALL_TOLERANCE) -> None:
    """Assert that no agent's disc is inside a wall now and, stepping ``world`` ``ticks`` times,
    after each tick. The message names the tick and each agent inside: its position, radius
    and how deep it is."""
    for k in range(ticks + 1):
        if k:
            world.step()
        inside = agents_in_walls(world, tolerance)
        if inside:
            t = world.table
            shown = []
            for entity, depth in inside[:SHOWN]:
                row = t.row_of(entity)
                shown.append(f"entity {entity} at ({t.pos[row, 0]:.3f}, {t.pos[row, 1]:.3f}), radius "
                             f"{t.radius[row]:g} m, {depth:.3f} m into a wall")
            more = f"; ... ({len(inside)} in all)" if len(inside) > SHOWN else ""
            when = "before the first tick" if world.tick == 0 else f"after tick {world.tick - 1}"
            raise AssertionError(f"{len(inside)} agent(s) inside a wall {when}: " + "; ".join(shown) + more)


# --- NaN ----------------------------------------------------------------------------------------


def assert_no_nan(world: World) -> None:
    """Assert that no live row of any float column of the agent table holds NaN. The message
    names each column with NaN and its entities (and the first one's values). Infinity is
    allowed: some fields mean "no limit" by it (``panic_distance``)."""
    snapshot = world.table.snapshot()
    entities = snapshot["entity"]
    bad = []
    for name, column in snapshot.items():
        if column.dtype.kind != "f" or column.size == 0:
            continue
        rows = np.isnan(column.reshape(column.shape[0], -1)).any(axis=1)
        if rows.any():
            ids = entities[rows]
            first = column[np.flatnonzero(rows)[0]]
            listed = ", ".join(map(str, ids[:SHOWN].tolist()))
            listed += f" ... ({ids.size} in all)" if ids.size > SHOWN else ""
            bad.append(f"column {name!r} of entit{'y' if ids.size == 1 else 'ies'} {listed} "
                       f"(entity {ids[0]}: {np.array2string(np.asarray(first), precision=3)})")
    if bad:
        raise AssertionError(f"NaN in the agent table at tick {world.tick}: " + "; ".join(bad))


# --- determinism --------------------------------------------------------------------------------


def state_differences(first: World, second: World) -> list[str]:
    """What differs between the simulation states of two Worlds, in words (empty: nothing that
    ``state_digest`` hashes): tick, entities, each table column (first differing entity and both
    values), paths, RNG, nav graph version, systems' own state, resources."""
    out = []
    if first.tick != second.tick:
        out.append(f"tick {first.tick} vs {second.tick}")
    a, b = first.table.snapshot(), second.table.snapshot()
    if not np.array_equal(a["entity"], b["entity"]):
        only_a = np.setdiff1d(a["entity"], b["entity"]).tolist()
        only_b = np.setdiff1d(b["entity"], a["entity"]).tolist()
        out.append(f"table entities differ: only in the first {only_a[:SHOWN]}, only in the second {only_b[:SHOWN]}")
    else:
        for name in a:
            x, y = a[name], b[name]
            if x.tobytes() == y.tobytes():
                continue
            rows = np.flatnonzero((x.reshape(x.shape[0], -1) != y.reshape(y.shape[0], -1)).any(axis=1))
            row = int(rows[0]) if rows.size else 0  # NaN payloads: the bytes differ, the values compare unequal
            out.append(f"column {name!r}: entity {a['entity'][row]} has {x[row].tolist()} vs {y[row].tolist()}"
                       + (f" ({rows.size} entities differ)" if rows.size > 1 else ""))
    paths_a = {entity: path for entity, (path,) in first.query(Path)}
    paths_b = {entity: path for entity, (path,) in second.query(Path)}
    for entity in sorted(set(paths_a) | set(paths_b)):
        pa, pb = paths_a.get(entity), paths_b.get(entity)
        if pa is None or pb is None:
            out.append(f"entity {entity} has a Path only in the {'first' if pb is None else 'second'}")
        elif not (np.array_equal(pa.nodes, pb.nodes) and pa.waypoints.tobytes() == pb.waypoints.tobytes()
                  and (pa.index, pa.status, pa.direction, pa.mode) == (pb.index, pb.status, pb.direction, pb.mode)):
            out.append(f"entity {entity}'s Path: status {pa.status!r} index {pa.index} of {len(pa.waypoints)} "
                       f"vs status {pb.status!r} index {pb.index} of {len(pb.waypoints)}")
    if repr(first.rng.bit_generator.state) != repr(second.rng.bit_generator.state):
        out.append("the RNG state differs (a different seed, or more draws in one)")
    va, vb = getattr(first.nav_graph, "version", -1), getattr(second.nav_graph, "version", -1)
    if va != vb:
        out.append(f"nav graph version {va} vs {vb}")
    systems_b = {s.name: s for s in second.systems}
    for system in first.systems:
        other = systems_b.get(system.name)
        if other is None:
            out.append(f"{system.name} runs only in the first")
        elif not system.reads_only and system.state() != other.state():
            out.append(f"{system.name}'s own state differs")
    for name in sorted(set(first.resources) | set(second.resources)):
        da = getattr(first.resources.get(name), "digest_bytes", None)
        db = getattr(second.resources.get(name), "digest_bytes", None)
        if (da is None) != (db is None) or (da is not None and da() != db()):
            out.append(f"resource {name!r} differs")
    return out


def assert_same_digest(first: World, second: World) -> str:
    """Assert that two Worlds have the same ``state_digest()``; returns it. The message lists
    what differs (``state_differences``)."""
    da, db = first.state_digest(), second.state_digest()
    if da != db:
        found = state_differences(first, second) or ["nothing found by field: compare state_digest's inputs"]
        raise AssertionError(f"state digests differ ({da[:12]}... vs {db[:12]}...): " + "; ".join(found[:SHOWN * 2]))
    return da


def assert_deterministic(make_world: Callable[[], World], ticks: int, every: int = 1) -> str:
    """Build two Worlds with ``make_world()`` (no arguments), step both ``ticks`` times and
    assert that their digests agree before the first tick, every ``every`` ticks and at the end;
    returns the final digest. The message names the first tick checked at which they differ and
    what differs. Both Worlds are closed afterwards."""
    first = make_world()
    try:
        second = make_world()
        try:
            _same(first, second, "before the first tick")
            for k in range(1, ticks + 1):
                first.step()
                second.step()
                if k % every == 0 or k == ticks:
                    _same(first, second, f"after tick {first.tick - 1}")
            return first.state_digest()
        finally:
            second.close()
    finally:
        first.close()


def _same(first: World, second: World, when: str) -> None:
    try:
        assert_same_digest(first, second)
    except AssertionError as exc:
        raise AssertionError(f"two runs of one World part {when}: {exc}") from None
