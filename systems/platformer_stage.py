"""The side-view (platformer) work of each stage of the tick, handed over by the systems.

The six systems stay the six stages for side-view characters too (ARCHITECTURE.md): each
system's ``update`` first calls the function here for its stage, which does nothing in a World
without a ``PlatformerMap``:

=================  ===================  ===========================================================
stage (system)     function             work
=================  ===================  ===========================================================
GraphBuild         ``build_level``  rows for new / despawned ``PlatformerBody`` entities; the
                                        level masks per character size, rebuilt after a tile
                                        changed, and then every bot re-plans
Pathfind           ``serve_requests``  ``PathRequest`` of each ``Bot``: at once when new, after
                                        a tile change or when the bot is stuck; else every period
                                        ticks, staggered by entity, and only when the goal tile
                                        moved (a moving target) and the bot stands on ground
PathFollow         ``run_bots``     the seed-002 bot over all bots (path → inputs);
                                        TargetReached / Stuck
Physics            ``move_characters``  inputs → motion for every character
=================  ===================  ===========================================================

Each stage runs the compiled kernels over whole columns; Python runs per bot only for the bots
that plan this tick and the bots with an event.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.core.components import PathRequest
from ecs_nav.core.events import PathChanged, PathFailed, Stuck, TargetReached
from ecs_nav.core.world import World
from ecs_nav.platformer.bot import MOVE_TO, NONE
from ecs_nav.platformer.bots import lower_onto_ground
from ecs_nav.platformer.world import PLATFORMER, Bot, PlatformerBody, PlatformerMap

TARGET_REACH = 1.5
"""A bot that ends its path within this many tiles (box centre to box centre) of its target
entity has reached it; farther (the target moved on) it plans again."""


def side_view(world: World) -> PlatformerMap | None:
    """The World's side-view level and characters, or None for a top-down World."""
    return world.resources.get(PLATFORMER)


# --- GraphBuild ------------------------------------------------------------------------------------


def sync_characters(world: World, side: PlatformerMap) -> bool:
    """Give rows to new ``PlatformerBody`` entities (in entity order) and drop the rows of
    despawned ones; the ``Bot`` tag sets which rows the bot drives. Only when esper's list of
    bodies changed (a component was added or removed somewhere). Returns whether it looked."""
    bodies = world.query(PlatformerBody)
    if bodies is side.bodies_seen:
        return False
    side.bodies_seen = bodies
    present = {int(e): comps[0] for e, comps in bodies}
    for entity in side.entity[~np.isin(side.entity, list(present))].tolist():
        side.remove(entity)
    known = set(side.entity.tolist())
    for entity in sorted(present):
        is_bot = world.try_get(entity, Bot) is not None
        if entity in known:
            side.characters.is_bot[side.row_of(entity)] = is_bot
        else:
            side.add(entity, present[entity], bot=is_bot)
    side.requests_seen = None  # rows may have moved: re-read the requests too
    return True


def build_level(world: World) -> None:
    """GraphBuild's side-view work: characters in sync, level masks built for their sizes;
    after a tile change the masks are rebuilt and every bot with a plan re-plans."""
    side = side_view(world)
    if side is None:
        return
    sync_characters(world, side)
    if side.built_version == side.version:
        return
    c = side.characters
    if side.built_version >= 0:
        c.level_changed()
        n = c.count
        side.pending[:n] |= c.is_bot[:n] & (side.goal[:n, 0] >= 0)
    sizes = {(int(w), int(h)) for w, h in zip(c.width_tiles[: c.count], c.height_tiles[: c.count])}
    for size in sorted(sizes):
        c.masks(*size)
    side.built_version = side.version


# --- Pathfind --------------------------------------------------------------------------------------


def _refresh_requests(world: World, side: PlatformerMap, period: int) -> None:
    """Re-read the bots' PathRequests (esper's list changed): rows, periods, new requests."""
    requests = world.query(PathRequest)
    side.requests_seen = requests
    by_entity = {int(e): comps[0] for e, comps in requests}
    rows, reqs = [], []
    c = side.characters
    for row in np.argsort(side.entity, kind="stable").tolist():
        request = by_entity.get(int(side.entity[row]))
        if request is not None and c.is_bot[row]:
            rows.append(row)
            reqs.append(request)
            if side.served.get(int(side.entity[row])) is not request:
                side.pending[row] = True
    side.request_rows = np.asarray(rows, np.int64)
    side.requests = reqs
    side.request_period = np.asarray([period if r.replan_period is None else r.replan_period for r in reqs],
                                     np.int64)


def goal_tile(world: World, side: PlatformerMap, request: PathRequest) -> tuple[int, int] | None:
    """The tile a request asks for, lowered onto the ground (the seed's clamp of a click):
    its goal point, or the tile its target entity stands in; None when the target is gone, or
    when the request has neither (``goals`` and ``zone`` are top-down goals, which a scene file
    refuses on a side-view character)."""
    if request.target is None:
        if request.goal is None:
            return None
        x, y = request.goal
    else:
        row = side.row_of(request.target)
        if row >= 0:
            x, y = side.characters.tile_of(row)
        elif world.exists(request.target) and world.table.has(request.target):
            x, y = world.table.pos[world.table.row_of(request.target)]
        else:
            return None
    return lower_onto_ground(side.level, (math.floor(x), math.floor(y)))


def serve_requests(world: World, period: int) -> None:
    """Pathfind's side-view work (see the module docstring); ``period`` is the PathfindSystem's
    replan period for requests that set none."""
    side = side_view(world)
    if side is None:
        return
    sync_characters(world, side)
    if world.query(PathRequest) is not side.requests_seen:
        _refresh_requests(world, side, period)
    c = side.characters
    n = c.count
    forced_all = side.pending[:n] | c.replan[:n]
    rows = side.request_rows
    if rows.size:
        due = (world.tick + side.entity[rows]) % side.request_period == 0
        due |= forced_all[rows]
        for k in np.flatnonzero(due).tolist():
            row = int(rows[k])
            _serve(world, side, row, side.requests[k], bool(forced_all[row]))
    # bots with a path but no request (given from Python): the seed re-plans to the path's end
    orphans = forced_all & c.is_bot[:n] & ~np.isin(np.arange(n), rows) & (c.path_len[:n] > 0)
    for row in np.flatnonzero(orphans).tolist():
        goal = tuple(int(v) for v in c.nodes[row, c.path_len[row] - 1])
        _plan(world, side, row, goal, target=False)


def _serve(world: World, side: PlatformerMap, row: int, request: PathRequest, forced: bool) -> None:
    goal = goal_tile(world, side, request)
    entity = int(side.entity[row])
    side.served[entity] = request
    if goal is None:
        side.pending[row] = False
        if not side.failed[row]:
            side.failed[row] = True
            world.emit(PathFailed(entity, "unreachable", world.tick))
        return
    if not forced:
        unchanged = side.goal[row, 0] == goal[0] and side.goal[row, 1] == goal[1]
        if unchanged or not side.characters.on_ground[row]:
            return  # a periodic re-plan only follows a goal that moved, and takes off from ground
    _plan(world, side, row, goal, target=request.target is not None)


def _plan(world: World, side: PlatformerMap, row: int, goal: tuple[int, int], target: bool) -> None:
    c = side.characters
    entity = int(side.entity[row])
    before = c.path(row)
    goal_moved = side.goal[row, 0] != goal[0] or side.goal[row, 1] != goal[1]
    found = c.move_to(row, goal)
    side.goal[row] = goal
    side.served_target[row] = target
    side.pending[row] = False
    side.stuck_reported[row] = False
    side.arrived[row] = False
    side.following[row] = c.state[row]
    if not found:
        if not side.failed[row] or goal_moved:
            world.emit(PathFailed(entity, "unreachable", world.tick))
        side.failed[row] = True
        return
    side.failed[row] = False
    if not np.array_equal(before, c.path(row)):
        world.emit(PathChanged(entity, "complete", world.tick))
    if c.state[row] == NONE:  # already there
        side.arrived[row] = True
        world.emit(TargetReached(entity, world.tick))


# --- PathFollow ------------------------------------------------------------------------------------


def run_bots(world: World) -> None:
    """PathFollow's side-view work: every bot turns its path into inputs (compiled, all bots);
    a bot that ended its path at the goal emits TargetReached (for a target entity: only when
    still within TARGET_REACH of it, else it plans again); one stuck for 20 frames emits Stuck
    and re-plans on the next Pathfind stage."""
    side = side_view(world)
    if side is None or side.characters.count == 0:
        return
    c = side.characters
    n = c.count
    c.think()
    state = c.state[:n]
    ended = (side.following[:n] == MOVE_TO) & (state == NONE)
    side.following[:n] = state
    if ended.any():
        tx = np.floor(c.x[:n] + 0.5).astype(np.int64)
        ty = np.floor(c.y[:n] + 0.5).astype(np.int64)
        at_goal = (tx == side.goal[:n, 0]) & (ty == side.goal[:n, 1]) & c.on_ground[:n]
        for row in np.flatnonzero(ended).tolist():
            if at_goal[row] and (not side.served_target[row] or _near_target(world, side, row)):
                side.arrived[row] = True
                world.emit(TargetReached(int(side.entity[row]), world.tick))
            else:
                side.pending[row] = True  # short of the goal, or the target moved on: plan again
    stuck = c.replan[:n] & ~side.stuck_reported[:n]
    for row in np.flatnonzero(stuck).tolist():
        side.stuck_reported[row] = True
        world.emit(Stuck(int(side.entity[row]), world.tick))


def _near_target(world: World, side: PlatformerMap, row: int) -> bool:
    request = side.served.get(int(side.entity[row]))
    if request is None or request.target is None:
        return True
    other = side.row_of(request.target)
    if other < 0:
        return False
    c = side.characters
    dx = (c.x[row] + c.width[row] / 2) - (c.x[other] + c.width[other] / 2)
    dy = (c.y[row] + c.height[row] / 2) - (c.y[other] + c.height[other] / 2)
    return math.hypot(dx, dy) <= TARGET_REACH


# --- Physics ---------------------------------------------------------------------------------------


def move_characters(world: World) -> None:
    """Physics' side-view work: every character's inputs → motion against the level (compiled)."""
    side = side_view(world)
    if side is not None and side.characters.count:
        side.characters.move()
