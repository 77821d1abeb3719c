"""PathFollowSystem: turns every agent's ``Path`` into the steering target of this tick.

Seeds 004 (path radius, ping-pong), 000 (stop within the stopping distance, face the target,
``TargetReached``) and 002 (pass a node in the direction of travel, skip ahead, stuck frames).

Layout. The sparse ``Path`` components are read through esper; the state the per-tick test needs
lives in the agent table (``steer_target``, ``has_steer_target``, ``follow_state``,
``path_radius``, ``stuck_ticks``, ``stuck_anchor``, ``goal_key``, ``arrival_distance``,
``blocked_ticks``) and in arrays this system keeps aligned with the sorted list of path
entities (current / next waypoint, incoming leg direction, the final target, the position at
the previous tick). The per-tick tests run on whole columns; only
the rows whose waypoint changes this tick go through a Python loop that reads their ``Path``.

Per tick, for the rows that follow a waypoint:

* **reached** (seed 004): ``|pos - waypoint| <= path radius``; or the last step swept past it:
  the closest point of the segment from the position at the previous tick (``last_pos``) to
  ``pos`` is within the radius, or the agent
  crossed the plane through the waypoint perpendicular to the leg that leads to it (seed
  002's "passed the node in the direction of travel"; a distance threshold alone makes a fast
  agent orbit its waypoint).
* **skip ahead** (seed 002): the next waypoint is already within the radius.
* **advance**: once -- to the next waypoint, clamped at the last; patrol -- ping-pong, the
  ``Path.direction`` flips at either end (seed 004); loop -- wrap to the first. Each waypoint
  passed emits ``WaypointReached``. After an advance the new waypoint is tested again (radius
  only), so several waypoints can be passed in one tick.
* **hold**: a loop or patrol of one waypoint has nowhere to go. Its agent arrives at that point
  as at a once-path's goal (``follow_state`` ARRIVE) and, within its ``stopping_distance``,
  holds there (STOPPED: the brake only, so not ``Stuck``); pushed further than that plus
  ``STOP_HYSTERESIS``, it arrives again.
* **final approach** (seed 000), once-paths only (``systems/path_arrival.py``). On the last
  waypoint ``follow_state`` is ARRIVE (the SteeringSystem uses arrive). When the last waypoint
  is reached and the final target differs from it, the steering target becomes the final target
  itself (the goal point, or the target entity's current position), so an agent whose last node
  lies short of the target still walks up to it. Within ``stopping_distance`` of the final
  target (at any index, as in seed 000 where the test is the distance to the target): STOPPED,
  ``TargetReached`` once, and the heading turns toward the target with
  ``Lerp(current, look, dt * turn_speed)``, yaw only: Unity's ``Quaternion.Lerp``, the same
  kernel the PhysicsSystem turns headings with (``ecs_nav.motion.physics.turn_heading``). A STOPPED
  agent re-arms when the target is further than ``stopping_distance + STOP_HYSTERESIS``; with a
  fixed goal, only when pushed ``REARM_RADII`` radii further out than where it stopped and
  touching no arrived agent of its goal (a settled crowd is pushed about as it packs).
* **group arrival** (``ecs_nav.motion.arrival``): a once-path follower held back for ``settle_ticks``
  ticks by agents already arrived at the same goal (same goal point, or same target entity) --
  touching one that lies ahead of it toward its steering target, and advancing slower than
  ``ecs_nav.motion.arrival.BLOCKED_SPEED_FRACTION`` of its max speed -- has arrived too: STOPPED and one
  ``TargetReached``. One that slides round the arrived agents keeps going, so a crowd grows
  round its goal instead of pushing at it.
* **goal spreading** (``systems/goal_spreading.py``): agents sent to one fixed point they share
  do not settle against the arrived crowd where they meet it: they walk down a field over slots
  round the goal to a free place, nearest first by walking distance, and stop there (one
  ``TargetReached``); group arrival then settles only the agents of other goals.
* **leaving**: an agent whose request says ``despawn_on_arrival`` is despawned at the end of
  the tick it arrives.
* **a partial path is not an arrival**: reaching the end of a ``"partial"`` path stops the agent
  there and emits ``PathFailed(status="partial", remaining=distance to the requested goal)``,
  once per arrival at that end, never ``TargetReached``.
* **stuck** (seed 002: "the position did not change"): a following row that stays within
  ``stuck_distance`` of where it last moved for ``stuck_ticks`` ticks emits ``Stuck``, once per
  blockage: not again until it has moved ``ecs_nav.motion.arrival.STUCK_RELEASE`` (or its
  radius) from there, re-plans included. Turning, queueing behind moving agents or orbiting
  slowly moves it, and one that waits with another agent right ahead of it queues, so none of
  them is stuck. A once-path is then marked ``"stale"``: the PathfindSystem re-plans it to
  the request's goal, or, for a Path given without a request, to the path's last point (seed
  002). A patrol or loop without a request keeps its route (a re-plan to one point would lose
  the loop); the event still tells.

* **off-mesh links** (``systems/link_crossing.py``): a step from a link's start node to its end
  node is crossed as a link (``LinkReached``, the link's own shape and speed), not walked; the
  agent is not following (no waypoint tests, arrival or stuck count) until it lands.

Final target: ``PathRequest.goal``; the position of ``PathRequest.target`` (an entity; the last
waypoint once that entity is gone); the last waypoint for a path given without a request and
for a ``"partial"`` path (the goal itself cannot be reached).

Change detection (the contract with whoever writes paths): a path is (re)loaded when its
entity gets a new ``Path`` component or when ``Path.waypoints`` is assigned a new array (the
World records the assignment: ``World.take_rewritten_paths``, so no per-tick scan of every
path). The PathfindSystem assigns the waypoints of every path it writes. A path
whose status is ``"unreachable"``, or that has no waypoints, gives FOLLOW_NONE and no steering
target. ``Path.index`` is the waypoint walked to; this system owns it while it follows.
"""

from __future__ import annotations

import numpy as np
from ecs_nav.systems.flow_follow import FlowFollower
from ecs_nav.systems.goal_spreading import GoalSpreading
from ecs_nav.systems.link_crossing import LinkCrossings
from ecs_nav.systems.path_arrival import REARM_RADII, approach
from ecs_nav.systems.platformer_stage import run_bots

from ecs_nav.compile.aot import DirectCall
from ecs_nav.core.components import Path, PathRequest
from ecs_nav.core.events import Stuck, WaypointReached
from ecs_nav.core.system import System
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_NONE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.motion.arrival import (
    SETTLE_TICKS,
    STUCK_DISTANCE,
    STUCK_REPORTED,
    goal_key_of_entity,
    goal_key_of_point,
    standing_still,
)
from ecs_nav.motion.follow_rows import waypoint_hits
from ecs_nav.motion.goal_slots import SLOT_GAP
from ecs_nav.motion.slot_field import ASSIGN_MARGIN
from ecs_nav.motion.steering import normalize

STOP_HYSTERESIS = 0.5
"""A STOPPED agent re-arms (may emit TargetReached again) once the target is further than
stopping_distance + this."""

_MODE_ONCE, _MODE_PATROL, _MODE_LOOP = 0, 1, 2
_MODES = {"once": _MODE_ONCE, "patrol": _MODE_PATROL, "loop": _MODE_LOOP}
_NO_ROWS = np.zeros(0, np.int64)


class PathFollowSystem(System):
    """Follows ``Path`` components; see the module docstring.

    Args:
        stuck_ticks: ticks standing still before ``Stuck`` (seed 002: 20 frames).
        stop_hysteresis: see STOP_HYSTERESIS.
        stuck_distance: see STUCK_DISTANCE.
        group_arrival: settle against arrived agents of the same goal (``ecs_nav.motion.arrival``).
        settle_ticks: see SETTLE_TICKS.
        goal_spreading: agents sent to one point fill the floor round it, each stopping on a slot
            of its own (``systems/goal_spreading.py``; only with ``group_arrival``); False: they
            settle against the arrived crowd.
        slot_gap: m between neighbouring slots' discs (>= 0; ``goal_slots.SLOT_GAP``).
        assign_margin: m; how near (straight) to where the stopped crowd reaches an agent on its
            way starts walking down the slot field (>= 0; ``slot_field.ASSIGN_MARGIN``).
    """

    name = "PathFollowSystem"

    def __init__(self, stuck_ticks: int = 20, stop_hysteresis: float = STOP_HYSTERESIS,
                 stuck_distance: float = STUCK_DISTANCE, group_arrival: bool = True,
                 settle_ticks: int = SETTLE_TICKS, goal_spreading: bool = True, slot_gap: float = SLOT_GAP,
                 assign_margin: float = ASSIGN_MARGIN):
        if int(stuck_ticks) < 1:
            raise ValueError(f"PathFollowSystem.stuck_ticks: must be >= 1, got {stuck_ticks!r}")
        if not (stuck_distance >= 0 and np.isfinite(stuck_distance)):
            raise ValueError(f"PathFollowSystem.stuck_distance: must be >= 0, got {stuck_distance!r}")
        self.stuck_ticks = int(stuck_ticks)
        self.stop_hysteresis = float(stop_hysteresis)
        self.stuck_distance = float(stuck_distance)
        self.group_arrival = bool(group_arrival)
        if int(settle_ticks) < 1:
            raise ValueError(f"PathFollowSystem.settle_ticks: must be >= 1, got {settle_ticks!r}")
        self.settle_ticks = int(settle_ticks)
        self.spreading = GoalSpreading(goal_spreading and self.group_arrival, slot_gap, assign_margin)
        self.flow = FlowFollower(self.stop_hysteresis, REARM_RADII, self.settle_ticks, self.stuck_ticks,
                                 self.stuck_distance, self.group_arrival, self.spreading)  # flow-field followers
        self.links = LinkCrossings()  # agents crossing off-mesh links (systems/link_crossing.py)
        self._structure = -1  # the World's structure version of Path the cache was built at
        self._despawn_cursor = 0
        self._waypoint_hits = DirectCall(lambda: waypoint_hits)
        """``waypoint_hits`` without numba's dispatch: the table's columns and this cache's arrays
        have the same types by construction (``tests/test_path_follow.py`` checks them)."""
        self._empty()

    @property
    def goal_spreading(self) -> bool:
        """Whether crowds sent to one point spread over the floor round it (see ``__init__``);
        settable: False from then on leaves new arrivals to group arrival alone."""
        return self.spreading.enabled

    @goal_spreading.setter
    def goal_spreading(self, on: bool) -> None:
        self.spreading.enabled = bool(on) and self.group_arrival

    # --- the cache aligned with the sorted path entities -----------------------------------------

    def _empty(self, m: int = 0) -> None:
        """A cache for m paths, nothing loaded yet."""
        self.ents = np.zeros(m, np.int64)
        self.rows = np.zeros(m, np.int64)
        self.paths: list[Path] = []
        self.path_id = np.zeros(m, np.int64)
        self.mode = np.zeros(m, np.int8)
        self.active = np.zeros(m, bool)  # has a waypoint to follow
        self.cur = np.zeros((m, 2))  # current waypoint
        self.cur_z = np.zeros(m)  # its elevation
        self.nxt_z = np.zeros(m)  # the elevation of the one after it
        self.planned = np.zeros(m, bool)  # planned on the nav graph: waypoint elevations are real
        self.nxt = np.zeros((m, 2))  # the waypoint after it (skip ahead)
        self.has_nxt = np.zeros(m, bool)
        self.leg = np.zeros((m, 2))  # unit direction of the leg leading to cur (zero: none)
        self.last_once = np.zeros(m, bool)  # on the last waypoint of a once-path
        self.final_leg = np.zeros(m, bool)  # last waypoint reached: steering at the final target
        self.final = np.zeros((m, 2))  # fixed final target (goal or last waypoint)
        self.partial = np.zeros(m, bool)  # a partial path: its end is not the goal
        self.goal = np.zeros((m, 2))  # the requested goal of a partial path (PathFailed.remaining)
        self.at_end = np.zeros(m, bool)  # stopped at the end of a partial path
        self.has_request = np.zeros(m, bool)  # a PathRequest re-plans it (else: its last point)
        self.leave = np.zeros(m, bool)  # despawned on arrival (PathRequest.despawn_on_arrival)
        self.target_ent = np.full(m, -1, np.int64)  # final target entity (-1: fixed point)
        self.target_row = np.full(m, -1, np.int64)
        self.last_pos = np.zeros((m, 2))  # position at the previous tick (the swept test)
        self.may_hold = False  # some path may be a loop or patrol of one waypoint (see hold)

    _ARRAYS = ("mode", "active", "cur", "cur_z", "nxt_z", "planned", "nxt", "has_nxt", "leg", "last_once", "final_leg",
               "final", "partial", "goal", "at_end", "has_request", "leave", "target_ent", "last_pos")

    def state(self) -> bytes:
        parts = [self.ents.tobytes(), self.flow.state(), self.links.state()]
        parts += [np.ascontiguousarray(getattr(self, a)).tobytes() for a in self._ARRAYS]
        return b"".join(parts)

    def _rebuild(self, world, items) -> np.ndarray:
        """New cache for the query result ``items``; returns the positions to (re)load."""
        table = world.table
        ents = np.fromiter((e for e, _ in items), np.int64, len(items))
        order = np.argsort(ents, kind="stable")
        ents = ents[order]
        paths = [items[j][1][0] for j in order]
        rows = table.rows_of(ents)
        keep = rows >= 0
        if not keep.all():
            ents, rows = ents[keep], rows[keep]
            paths = [p for p, k in zip(paths, keep) if k]
        m = len(ents)
        old_ents, old = self.ents, {a: getattr(self, a) for a in self._ARRAYS}
        old_paths, old_path_id = self.paths, self.path_id  # noqa: F841 (alive: ids stay unique)
        # rows that lost their Path: no longer following
        gone = np.setdiff1d(old_ents, ents)
        if gone.size:
            gone_rows = table.rows_of(gone)
            gone_rows = gone_rows[gone_rows >= 0]
            table.follow_state[gone_rows] = FOLLOW_NONE
            table.has_steer_target[gone_rows] = False
        self._empty(m)
        self.ents, self.rows, self.paths = ents, rows, paths
        self.path_id = np.fromiter(map(id, paths), np.int64, m)
        self.last_pos = table.pos[rows].copy()
        # carry the cache over for entities whose Path object is the same one
        reload = np.ones(m, bool)
        if old_ents.size and m:
            at = np.clip(np.searchsorted(old_ents, ents), 0, old_ents.size - 1)
            # ids compare identities: the old objects are alive here, so no new one shares an id
            same = (old_ents[at] == ents) & (old_path_id[at] == self.path_id)
            src = at[same]
            for a in self._ARRAYS:
                getattr(self, a)[same] = old[a][src]
            reload &= ~same
        self.target_row = table.rows_of(self.target_ent) if m else np.zeros(0, np.int64)
        self.target_row[self.target_ent < 0] = -1
        self.may_hold = bool(np.count_nonzero(self.active & ~self.has_nxt & (self.mode != _MODE_ONCE)))
        return np.flatnonzero(reload)

    def _forget(self, world, gone: np.ndarray) -> None:
        """Despawns only: drop the gone entities from the cache and re-read every row (a
        despawn moves the table's last row into the hole) -- no esper query, whose list esper
        rebuilds in O(entities) after any change."""
        keep = ~np.isin(self.ents, gone)
        if not keep.all():
            self.ents = self.ents[keep]
            self.paths = [p for p, k in zip(self.paths, keep) if k]
            self.path_id = self.path_id[keep]
            for a in self._ARRAYS:
                setattr(self, a, getattr(self, a)[keep])
        table = world.table
        self.rows = table.rows_of(self.ents)
        self.target_row = table.rows_of(self.target_ent) if self.ents.size else np.zeros(0, np.int64)
        self.target_row[self.target_ent < 0] = -1

    # --- loading one path and stepping its waypoint (the few rows that change) ---------------------

    def _load(self, world, i: int) -> None:
        """(Re)start following the Path at cache position i from its own index."""
        table, path, row = world.table, self.paths[i], int(self.rows[i])
        wp = path.waypoints
        k = wp.shape[0]
        pos = table.pos[row]
        # a replan that keeps the leg being walked (same mode, same waypoint at the index) keeps
        # the leg's direction, the last position and the stuck count: the passed-the-waypoint
        # test still fires (no orbit after a replan) and standing still still counts
        keep_leg = bool(self.active[i] and k > 0 and path.status != "unreachable"
                        and _MODES[path.mode] == self.mode[i] and 0 <= path.index < k
                        and np.array_equal(wp[path.index, :2], self.cur[i]))
        if self.active[i] and self.mode[i] != _MODE_ONCE and table.follow_state[row] == FOLLOW_STOPPED:
            table.follow_state[row] = FOLLOW_SEEK  # a hold, not a once-path's arrival: it does not carry over
        self.mode[i] = _MODES[path.mode]
        self.target_ent[i] = -1
        self.target_row[i] = -1
        self.at_end[i] = False
        if not keep_leg:
            self.final_leg[i] = False
            self.last_pos[i] = pos
            if table.stuck_ticks[row] != STUCK_REPORTED:  # (a re-plan after Stuck does not report it again)
                table.stuck_ticks[row] = -1  # the anchor is set now: this tick does not count
                table.stuck_anchor[row] = pos
        if k == 0 or path.status == "unreachable":
            self.active[i] = False
            self.last_once[i] = False
            table.follow_state[row] = FOLLOW_NONE
            table.has_steer_target[row] = False
            table.goal_key[row] = -1
            return
        self.active[i] = True
        self.planned[i] = path.graph_version >= 0
        table.path_radius[row] = path.radius
        path.index = min(max(int(path.index), 0), k - 1)
        if path.direction not in (1, -1):
            path.direction = 1
        # final target, and who shares it (group arrival)
        self.final[i] = wp[-1, :2]
        self.partial[i] = path.status == "partial"
        self.goal[i] = wp[-1, :2]
        key = goal_key_of_point(*wp[-1, :2]) if self.mode[i] == _MODE_ONCE else -1
        request = world.try_get(int(self.ents[i]), PathRequest)
        self.has_request[i] = request is not None
        self.leave[i] = request is not None and request.despawn_on_arrival
        if request is not None:
            if request.goal is not None:
                self.goal[i] = request.goal
                key = goal_key_of_point(*request.goal)
                if not self.partial[i]:
                    self.final[i] = request.goal
            elif request.target is not None and table.has(request.target):
                key = goal_key_of_entity(request.target)
                self.goal[i] = table.pos[table.row_of(request.target)]
                if not self.partial[i]:
                    self.target_ent[i] = request.target
                    self.target_row[i] = table.row_of(request.target)
        # (only a once-path arrives at a goal: a loop or patrol with a request is no arrived agent)
        table.goal_key[row] = key if self.mode[i] == _MODE_ONCE and not self.partial[i] else -1
        if keep_leg:
            self._set_waypoint(world, i, leg_from=None)
            return
        # a planned path starts at the node the agent stands on (seed 000's path[0]): drop it
        # when the agent is already past it toward the next one
        if self.mode[i] == _MODE_ONCE and path.index == 0 and k > 1:
            if (np.dot(pos - wp[0, :2], wp[1, :2] - wp[0, :2]) > 0
                    and not (self.planned[i] and self.links.link_of_step(world, wp[0], wp[1]) >= 0)):
                path.index = 1
        self._set_waypoint(world, i, leg_from=pos.copy())
        # already inside later waypoints' radius: skip them (no events: nothing was walked)
        self._skip_reached(world, i, emit=False)

    def _advance_index(self, path: Path, mode: int, k: int) -> bool:
        """Step path.index once (a patrol turns at either end); False when there is nowhere to
        go (a once-path on its last waypoint, a one-waypoint loop or patrol)."""
        nxt = self._peek_next(path, mode, k)
        if nxt < 0:
            return False
        if mode == _MODE_PATROL and nxt != path.index + path.direction:
            path.direction = -path.direction
        path.index = nxt
        return True

    def _peek_next(self, path: Path, mode: int, k: int) -> int:
        """The waypoint index an advance would go to (-1: none)."""
        if mode == _MODE_ONCE:
            return path.index + 1 if path.index < k - 1 else -1
        if mode == _MODE_LOOP:
            return (path.index + 1) % k if k > 1 else -1
        if k == 1:
            return -1
        nxt = path.index + path.direction
        return nxt if 0 <= nxt < k else path.index - path.direction

    def _set_waypoint(self, world, i: int, leg_from) -> None:
        """Write path.index's waypoint into the cache and the table row; the leg leading to it
        starts at ``leg_from`` (None: keep the leg)."""
        table, path, row = world.table, self.paths[i], int(self.rows[i])
        wp = path.waypoints
        k = wp.shape[0]
        mode = int(self.mode[i])
        cur = wp[path.index, :2]
        self.cur[i] = cur
        self.cur_z[i] = wp[path.index, 2]
        if leg_from is not None:
            self.leg[i] = normalize(cur - np.asarray(leg_from, dtype=np.float64))
        j = self._peek_next(path, mode, k)
        self.has_nxt[i] = j >= 0
        self.nxt[i] = wp[j, :2] if j >= 0 else cur
        self.nxt_z[i] = wp[j, 2] if j >= 0 else wp[path.index, 2]
        self.last_once[i] = mode == _MODE_ONCE and path.index == k - 1
        self.may_hold |= j < 0 and mode != _MODE_ONCE
        table.steer_target[row] = cur
        table.has_steer_target[row] = True
        # a STOPPED agent stays stopped through re-plans (TargetReached once per arrival); it
        # re-arms only by distance
        if table.follow_state[row] != FOLLOW_STOPPED or mode != _MODE_ONCE:
            # nowhere to go after it (a once-path's last waypoint, a loop or patrol of one): arrive
            table.follow_state[row] = FOLLOW_ARRIVE if j < 0 else FOLLOW_SEEK
        if self.final_leg[i]:  # a kept final leg steers at the final target (set every tick)
            table.steer_target[row] = self.final[i]

    def _skip_reached(self, world, i: int, emit: bool) -> None:
        """Advance while the current waypoint is within the radius (bounded by the path length)."""
        table, path, row = world.table, self.paths[i], int(self.rows[i])
        pos = table.pos[row]
        r2 = float(table.path_radius[row]) ** 2
        for _ in range(path.waypoints.shape[0]):
            d = pos - self.cur[i]
            if d[0] * d[0] + d[1] * d[1] > r2 or not self._level_with(table, row, i, self.cur_z[i]):
                return
            if self.last_once[i]:
                self._enter_final_leg(world, i, emit)
                return
            if not self._step(world, i, emit):
                return

    def _hold(self, table, active: np.ndarray) -> None:
        """A loop or patrol of one waypoint has nowhere to go: its agent arrives at the point as
        an agent arrives at a once-path's goal. Within its ``stopping_distance`` (and level with
        the point) it is STOPPED, holding there (the brake only: not Stuck, not stuck time in a
        recording); it arrives again once further than that plus ``stop_hysteresis``."""
        hold = np.flatnonzero(active & ~self.has_nxt & (self.mode != _MODE_ONCE))
        if hold.size == 0:
            return
        rows = self.rows[hold]
        d = table.pos[rows] - self.cur[hold]
        distance = np.hypot(d[:, 0], d[:, 1])
        level = ~self.planned[hold] | (np.abs(table.elevation[rows] - self.cur_z[hold]) < table.max_climb[rows])
        stop = table.stopping_distance[rows]
        stopped = table.follow_state[rows] == FOLLOW_STOPPED
        held = level & np.where(stopped, distance <= stop + self.stop_hysteresis, distance <= stop)
        table.follow_state[rows] = np.where(held, FOLLOW_STOPPED, FOLLOW_ARRIVE)

    def _level_with(self, table, row: int, i: int, z: float) -> bool:
        """Whether the agent stands level with a waypoint at elevation ``z`` (see the tick)."""
        return not self.planned[i] or abs(float(table.elevation[row]) - z) < float(table.max_climb[row])

    def _step(self, world, i: int, emit: bool) -> bool:
        path = self.paths[i]
        passed = path.index
        if not self._advance_index(path, int(self.mode[i]), path.waypoints.shape[0]):
            return False
        if emit:
            world.emit(WaypointReached(int(self.ents[i]), int(passed), world.tick))
        self._set_waypoint(world, i, leg_from=self.cur[i].copy())
        return not self.links.begin(world, self, i, int(passed))  # (a link: crossed, not walked)

    def land(self, world, i: int, reload: bool) -> None:
        """The agent at cache position ``i`` landed at the end of a link (``systems/link_crossing.py``):
        follow on from the link's end waypoint, or from its rewritten Path (``reload``)."""
        table, row = world.table, int(self.rows[i])
        pos = table.pos[row].copy()
        self.active[i] = True
        self.last_pos[i] = pos
        if table.stuck_ticks[row] != STUCK_REPORTED:
            table.stuck_ticks[row] = -1
            table.stuck_anchor[row] = pos
        if reload:
            self._load(world, i)
            return
        self._set_waypoint(world, i, leg_from=None)
        self._skip_reached(world, i, emit=True)

    def _enter_final_leg(self, world, i: int, emit: bool) -> None:
        if self.final_leg[i]:
            return
        self.final_leg[i] = True
        if emit:
            world.emit(WaypointReached(int(self.ents[i]), int(self.paths[i].index), world.tick))

    # --- the tick ----------------------------------------------------------------------------

    def update(self, world) -> None:
        run_bots(world)  # side-view bots (path -> key inputs): systems/platformer_stage.py
        self.flow.update(world)  # flow-field followers: systems/flow_follow.py
        table = world.table
        rewritten = world.take_rewritten_paths()
        gone, self._despawn_cursor = world.despawned_since(self._despawn_cursor)
        reload = _NO_ROWS
        structure = world.structure_version(Path)
        if structure != self._structure:  # a Path given or taken: read esper's list again
            reload = self._rebuild(world, world.query(Path))
            self._structure = structure
        elif gone.size:  # only despawns (rows moved): drop the gone, re-point the rest
            self._forget(world, gone)
        m = len(self.ents)
        if m == 0:
            return
        # paths given a new waypoints array (the PathfindSystem's included)
        if rewritten.size or reload.size:
            changed = np.isin(self.ents, rewritten) if rewritten.size else np.zeros(m, bool)
            changed[reload] = True
            for i in np.flatnonzero(changed).tolist():
                if self.links.holds(int(self.ents[i])):  # on a link: read once it lands
                    self.links.mark_reload(int(self.ents[i]))
                    continue
                self._load(world, i)

        rows = self.rows
        active = self.active
        last = self.last_pos

        # --- waypoint tests: one compiled pass (ecs_nav.motion.follow_rows) ---------------------
        pos, hits = np.empty((m, 2)), np.empty(m, np.bool_)
        if self._waypoint_hits(rows, table.pos, table.path_radius, table.elevation, table.max_climb, active,
                               self.final_leg, self.cur, self.cur_z, last, self.leg, self.planned, self.nxt,
                               self.nxt_z, self.has_nxt, self.last_once, pos, hits):
            hit_rows = hits.nonzero()[0].tolist()
        else:
            hit_rows = []
        for i in hit_rows:
            if self.last_once[i]:
                self._enter_final_leg(world, i, emit=True)
                continue
            if self._step(world, i, emit=True):
                self._skip_reached(world, i, emit=True)

        if len(self.links):  # agents on off-mesh links: moved along them, landed at their ends
            self.links.advance(world, self, pos)

        if self.may_hold:
            self._hold(table, active)

        # --- final target: arrival, group arrival, re-arming, facing (systems/path_arrival.py)
        once = active & (self.mode == _MODE_ONCE)
        if np.count_nonzero(once):
            approach(self, world, once, pos, last)

        # --- stuck: standing still while following (seed 002) -------------------------------
        stuck = standing_still(table, rows, active, self.stuck_ticks, self.stuck_distance)
        for i in stuck.nonzero()[0].tolist():
            if self.has_request[i] or self.mode[i] == _MODE_ONCE:
                self.paths[i].status = "stale"  # the PathfindSystem re-plans it
            world.emit(Stuck(int(self.ents[i]), world.tick))
        self.last_pos = pos
