"""Goal spreading for the PathFollowSystem's two followers (paths and flow fields): agents sent to
one point fill the floor round it, nearest first by walking distance (``ecs_nav.motion.goal_slots``
describes the slots, ``ecs_nav.motion.slot_field`` their field and why).

The rules, per goal point shared by two agents or more of one layer (paths: the same
``PathRequest.goal``, or last waypoint of a path given without a request; flow fields: the same
field toward one point); agents chasing a target entity, heading for a zone or several goals,
or leaving on arrival keep group arrival alone:

* **the slots** are built when the first agent of the goal arrives (within its
  ``stopping_distance``, as before): ``goal_slots.build_slot_set``, once per goal and nav graph;
* **walking down the field**: an agent on its way that comes within ``assign_margin`` of where
  the stopped crowd reaches (straight distance to the goal against the crowd's walking distance),
  or touches that crowd, leaves its path (or flow field) and walks down the slot field instead,
  steering at the best free slot within ``LOOK_SPACINGS`` spacings (``slot_field.seek_slots``);
  with no free slot that near it keeps to its path;
* **arriving**: on a sink slot (the best it can reach), within
  ``min(stopping_distance, SLOT_ARRIVAL_FRACTION * radius)``: ``TargetReached``, once. Held back
  by the stopped crowd (group arrival), or without progress down the field for ``STALL_TICKS``,
  it stops where it stands when a free slot lies within ``SLOT_SETTLE_SPACINGS`` spacings; when
  its goal has no free slot left, held back, it stops where it stands (group arrival as before);
* **holding**: a stopped agent holds its place: it keeps the slot it stopped on, others avoid it
  (ORCA: it is a body and does not avoid, ``systems/avoidance.py``), and pushed further than
  ``SLOT_REARM_SPACINGS`` spacings from it, it walks down the field again and stops without a
  second ``TargetReached``.

State: ``world.resources["goal_slots"]`` (``GoalSlots``: the slot sets, hashed by
``World.state_digest``) and the table's ``goal_slot*`` columns (``goal_slots.slot_columns``),
both made when the first slot set is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_nav.core.table import FOLLOW_STOPPED
from ecs_nav.motion.goal_slots import (
    OCCUPIED_FRACTION,
    SEEKING,
    SLOT_GAP,
    SlotSet,
    build_slot_set,
    occupy_slots,
    slot_columns,
)
from ecs_nav.motion.slot_field import (
    ASSIGN_MARGIN,
    CLAIM_SPACINGS,
    DEPTH_WEIGHT,
    EDGE_COST,
    LOOK_SPACINGS,
    PATIENCE,
    SINK_SLACK_SPACINGS,
    SLOT_ARRIVAL_FRACTION,
    SLOT_PROGRESS,
    SLOT_REARM_SPACINGS,
    SLOT_SETTLE_SPACINGS,
    STALL_TICKS,
    WAY_STEPS,
    claim_slots,
    seek_slots,
    slot_field,
    trace_ways,
    track_progress,
)
from ecs_nav.motion.spatial import build_grid

GOAL_SLOTS = "goal_slots"
"""The World resource holding the slot sets (``GoalSlots``)."""

EVICT_PERIOD = 60
"""Ticks between checks for slot sets whose goal no agent asks for any more (then dropped)."""


class GoalSlots:
    """The slot sets of one World, keyed by (goal key, layer)."""

    def __init__(self) -> None:
        self.sets: dict[tuple[int, int], SlotSet] = {}

    def digest_bytes(self) -> bytes:
        return b"".join(self.sets[k].digest_bytes() for k in sorted(self.sets))


@dataclass
class Aim:
    """What ``GoalSpreading.aim`` found for the rows it was given (k,).

    Attributes:
        spread: their goal has slots.
        seeking: walking down the slot field, with a free slot near (steer at ``target``).
        target: (k, 2) the point to steer at (m).
        arrive: on a sink slot, within arrival distance.
        settle: a sink within ``SLOT_SETTLE_SPACINGS`` spacings (held back there: it stops).
        stalled: no progress for ``STALL_TICKS`` near a sink, or for ten times that anywhere
            (it stops where it stands).
        full: their goal's slots are all occupied, or none is free within ``LOOK_SPACINGS``
            spacings of a walker down the field (it stands among the stopped crowd).
        back: stopped off its slot: walks down the field again (re-armed).
    """

    spread: np.ndarray
    seeking: np.ndarray
    target: np.ndarray
    arrive: np.ndarray
    settle: np.ndarray
    stalled: np.ndarray
    full: np.ndarray
    back: np.ndarray

    @property
    def count(self) -> int:
        return int(np.count_nonzero(self.seeking))


class GoalSpreading:
    """Builds and keeps the slot sets and steers the agents of their goals (see the module doc);
    one per PathFollowSystem.

    Args:
        enabled: spread crowds over the floor round their goal; False: group arrival alone.
        slot_gap: m between neighbouring slots' discs (>= 0).
        assign_margin: m; see ``slot_field.ASSIGN_MARGIN`` (>= 0).
    """

    def __init__(self, enabled: bool = True, slot_gap: float = SLOT_GAP, assign_margin: float = ASSIGN_MARGIN):
        if not (slot_gap >= 0 and np.isfinite(slot_gap)):
            raise ValueError(f"PathFollowSystem.slot_gap: must be >= 0 (m), got {slot_gap!r}")
        if not (assign_margin >= 0 and np.isfinite(assign_margin)):
            raise ValueError(f"PathFollowSystem.assign_margin: must be >= 0 (m), got {assign_margin!r}")
        self.enabled = bool(enabled)
        self.slot_gap = float(slot_gap)
        self.assign_margin = float(assign_margin)
        self._checked_tick = -1

    @staticmethod
    def slots(world) -> GoalSlots | None:
        return world.resources.get(GOAL_SLOTS)

    # --- the sets ----------------------------------------------------------------------------

    def arrived(self, world, rows: np.ndarray, goals: np.ndarray) -> None:
        """``rows`` (k,) have just arrived at fixed ``goals`` ((k, 2)): build the slot set of each
        goal that two agents or more of its layer share and that has none yet."""
        if not self.enabled or rows.size == 0:
            return
        table = world.table
        n = table.n
        slots = self.slots(world)
        for k in range(rows.size):
            row = int(rows[k])
            key, layer = int(table.goal_key[row]), int(table.layer[row])
            if key < 0 or (slots is not None and (key, layer) in slots.sets):
                continue
            members = (table.goal_key[:n] == key) & (table.layer[:n] == layer)
            count = int(np.count_nonzero(members))
            if count < 2:
                continue
            if slots is None:
                table.add_columns(slot_columns())
                slots = world.resources[GOAL_SLOTS] = GoalSlots()
            radius = float(table.radius[:n][members].max())
            slots.sets[(key, layer)] = build_slot_set(key, layer, goals[k], radius, count, world.nav_graph,
                                                      world.map, self.slot_gap)

    def _check_sets(self, world, slots: GoalSlots) -> None:
        """Once a tick: rebuild a set whose nav graph changed; every ``EVICT_PERIOD`` ticks drop
        the sets of goals nobody asks for."""
        if self._checked_tick == world.tick:
            return
        self._checked_tick = world.tick
        table = world.table
        graph = world.nav_graph
        evict = world.tick % EVICT_PERIOD == 0
        for (key, layer), s in list(slots.sets.items()):
            members = None
            if evict:
                members = (table.goal_key[:table.n] == key) & (table.layer[:table.n] == layer)
                if not members.any():
                    del slots.sets[(key, layer)]
                    continue
            if graph is not None and s.graph_key is not None and s.graph_key != graph.cache_key():
                if members is None:
                    members = (table.goal_key[:table.n] == key) & (table.layer[:table.n] == layer)
                fresh = build_slot_set(key, layer, s.goal, s.radius, int(members.sum()), graph, world.map,
                                       s.spacing - 2.0 * s.radius)
                fresh.extent = s.extent
                slots.sets[(key, layer)] = fresh

    def _field(self, world, s: SlotSet) -> None:
        """The occupancy and field of ``s`` for this tick (``goal_slots.occupy_slots``,
        ``claim_slots``, ``slot_field``): the stopped agents of its layer occupy slots, its walkers
        down the field claim them."""
        if s.tick == world.tick:
            return
        s.tick = world.tick
        table = world.table
        n = table.n
        count = s.points.shape[0]
        s.occupied = np.zeros(count, np.bool_)
        stopped = np.flatnonzero((table.follow_state[:n] == FOLLOW_STOPPED) & (table.layer[:n] == s.layer))
        if stopped.size and count:
            occ_pos = np.ascontiguousarray(table.pos[stopped])
            occ_radius = np.ascontiguousarray(table.radius[stopped])
            biggest = float(occ_radius.max())
            grid = build_grid(occ_pos, cell_size=max(OCCUPIED_FRACTION * (s.radius + biggest), 1e-3))
            occupy_slots(s.points, s.radius, OCCUPIED_FRACTION, occ_pos, occ_radius, *grid.kernel_args(), biggest,
                         s.occupied)
        claimed = np.zeros(count, np.bool_)
        walkers = np.flatnonzero((table.goal_slot_index[:n] == SEEKING) & (table.goal_slot_key[:n] == s.key)
                                 & (table.layer[:n] == s.layer) & (table.follow_state[:n] != FOLLOW_STOPPED))
        if walkers.size and count:
            claim_slots(np.ascontiguousarray(table.pos[walkers]), s.points, CLAIM_SPACINGS * s.spacing,
                        *s.grid.kernel_args(), claimed)
        s.traffic = s.traffic_next if s.traffic_next is not None else np.zeros(count, np.int64)
        s.traffic_next = np.zeros(count, np.int64)
        s.field, s.source = np.empty(count), np.empty(count, np.bool_)
        heap_key, heap_slot = np.empty(7 * count + 1), np.empty(7 * count + 1, np.int64)
        slot_field(s.distance, s.neighbours, s.occupied, claimed, s.traffic, s.spacing, DEPTH_WEIGHT, EDGE_COST,
                   s.field, s.source, heap_key, heap_slot)

    # --- the tick ----------------------------------------------------------------------------

    def aim(self, world, rows: np.ndarray, fixed: np.ndarray, pos: np.ndarray, goal_gap: np.ndarray) -> Aim | None:
        """Goal spreading for ``rows`` (k,) of one follower this tick, before its arrival tests;
        None when no slot set exists. ``fixed``: (k,) bool, following toward one fixed point
        (not leaving on arrival); ``pos`` (k, 2) their positions; ``goal_gap`` (k,) their straight
        distance to the goal (m). Marks the rows that start walking down the field (and the
        stopped ones pushed off their slot: ``Aim.back``) in the table."""
        slots = self.slots(world)
        if slots is None or not self.enabled:
            return None
        self._check_sets(world, slots)
        table = world.table
        k = rows.size
        spread = np.zeros(k, bool)
        seeking = np.zeros(k, bool)
        target = np.zeros((k, 2))
        arrive, settle, stalled, full, back = (np.zeros(k, bool) for _ in range(5))
        aim = Aim(spread, seeking, target, arrive, settle, stalled, full, back)
        if not fixed.any():
            return aim
        keys, layers = table.goal_key[rows], table.layer[rows]
        index = table.goal_slot_index[rows]
        state = table.follow_state[rows]
        # a slot or a walk down the field of another goal (a new request) is forgotten
        stale = (index != -1) & ((table.goal_slot_key[rows] != keys) | (table.goal_slot_layer[rows] != layers) | ~fixed)
        if stale.any():
            table.goal_slot_index[rows[stale]] = -1
            index = np.where(stale, -1, index)
        for (key, layer), s in slots.sets.items():
            mine = fixed & (keys == key) & (layers == layer)
            if not mine.any() or s.points.shape[0] == 0:
                continue
            spread |= mine
            self._field(world, s)
            full[mine] = not np.isfinite(s.field).any()
            stopped = mine & (state == FOLLOW_STOPPED)
            # stopped on a slot and pushed off where it stopped: walk down the field again
            held = stopped & (index >= 0)
            if held.any():
                gap = np.hypot(*(table.goal_slot[rows[held]] - pos[held]).T)
                off = np.flatnonzero(held)[gap > SLOT_REARM_SPACINGS * s.spacing + 1e-9]
                back[off] = True
            walking = mine & ~stopped
            join = walking & (index != SEEKING) & ((goal_gap <= s.extent + self.assign_margin)
                                                   | (table.blocked_ticks[rows] > 0))
            if join.any() or back.any():
                r = rows[join | (back & mine)]
                table.goal_slot_index[r] = SEEKING
                table.goal_slot_key[r] = key
                table.goal_slot_layer[r] = layer
                table.goal_slot_anchor[r] = table.pos[r]
                table.goal_slot_wait[r] = 0
            walkers = np.flatnonzero(walking & ((index == SEEKING) | join))
            if walkers.size == 0:
                continue
            m = walkers.size
            aim_at, nearest = np.empty((m, 2)), np.empty(m, np.int64)
            near_gap, sink, value, waited = np.empty(m), np.empty(m, np.bool_), np.empty(m), np.empty(m, np.int64)
            track_progress(rows[walkers], table.pos, SLOT_PROGRESS, table.goal_slot_anchor, table.goal_slot_wait,
                           waited)
            slack = (SINK_SLACK_SPACINGS + PATIENCE * waited / STALL_TICKS) * s.spacing  # (patience runs out)
            passing = waited // STALL_TICKS
            seek_slots(np.ascontiguousarray(pos[walkers]), s.points, s.distance, s.field, s.traffic, DEPTH_WEIGHT,
                       slack, passing, LOOK_SPACINGS * s.spacing, *s.grid.kernel_args(), aim_at, nearest, near_gap,
                       sink, value)
            trace_ways(nearest, s.field, s.source, s.distance, DEPTH_WEIGHT, s.neighbours, WAY_STEPS, s.traffic_next)
            has = nearest >= 0
            full[walkers[~has]] = True
            w = walkers[has]
            seeking[w] = True
            target[w] = aim_at[has]
            stop = np.minimum(table.stopping_distance[rows[w]], SLOT_ARRIVAL_FRACTION * table.radius[rows[w]])
            near = near_gap[has] <= SLOT_SETTLE_SPACINGS * s.spacing
            arrive[w] = sink[has] & (near_gap[has] <= stop)
            settle[w] = near & sink[has]
            stalled[w] = (near & sink[has] & (waited[has] >= STALL_TICKS)) | (waited[has] >= 10 * STALL_TICKS)
            table.goal_slot[rows[w]] = aim_at[has]
        return aim

    def settles(self, aim: Aim | None, held: np.ndarray) -> np.ndarray:
        """(k,) bool: which rows stop where they stand: group arrival (``held``: held back by
        the stopped crowd) for rows without slots; under spreading, a walker down the field held
        back near a sink or stalled, or held back with no free slot near (``Aim.full``)."""
        if aim is None:
            return held.copy()
        walker = aim.seeking & ((aim.settle & held) | aim.stalled)
        return (held & ~aim.spread) | walker | (held & aim.spread & aim.full)

    def stopped(self, world, rows: np.ndarray, arrive: np.ndarray, fixed: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """After the arrivals of a tick: ``rows`` (k,) that stop now (``arrive``) toward a fixed
        point (``fixed``) whose goal has slots keep the slot nearest where they stand (the crowd's
        reach, ``SlotSet.extent``, widens to it); returns (k,) bool, those of them that had
        arrived at that goal before (walked back to the crowd): no second ``TargetReached``."""
        again = np.zeros(rows.size, bool)
        slots = self.slots(world)
        at = arrive & fixed
        if slots is None or not self.enabled or not at.any():
            return again
        table = world.table
        r, p = rows[at], pos[at]
        keys, layers = table.goal_key[r], table.layer[r]
        seen = np.zeros(r.size, bool)
        for (key, layer), s in slots.sets.items():
            mine = (keys == key) & (layers == layer)
            if not mine.any() or s.points.shape[0] == 0:
                continue
            seen |= mine
            who = r[mine]
            m = who.size
            aim_at, nearest = np.empty((m, 2)), np.empty(m, np.int64)
            gap, sink, value = np.empty(m), np.empty(m, np.bool_), np.empty(m)
            # (the field given as the distances: every slot counts, occupied or not)
            seek_slots(np.ascontiguousarray(p[mine]), s.points, s.distance, s.distance, np.zeros(s.points.shape[0],
                       np.int64), DEPTH_WEIGHT, np.zeros(m), np.zeros(m, np.int64),
                       LOOK_SPACINGS * s.spacing, *s.grid.kernel_args(), aim_at, nearest, gap, sink, value)
            on = nearest >= 0
            table.goal_slot_index[who] = np.where(on, nearest, -1)
            table.goal_slot[who] = p[mine]  # where it stopped (pushed off it, it walks again)
            reach = np.where(on, s.distance[np.maximum(nearest, 0)], np.hypot(*(table.pos[who] - s.goal).T))
            s.extent = max(s.extent, float(reach.max()))
        r = r[seen]
        again[np.flatnonzero(at)[seen]] = table.goal_slot_reached[r] & (table.goal_slot_key[r] == table.goal_key[r])
        table.goal_slot_reached[r] = True
        table.goal_slot_key[r] = table.goal_key[r]
        table.goal_slot_layer[r] = table.layer[r]
        return again
