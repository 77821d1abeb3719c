"""The PathFollowSystem's flow-field half: agents whose PathRequest asks for a flow field (seed 003).

Seed 003's movement is "velocity = field(tile) * desired speed, or use it as the desired
velocity of steering behaviours"; here the field is the steering input, as a Path's waypoint
is: every tick each following row (``field_id >= 0`` in the agent table) samples its shared
field at its own position (``FlowField.sample``: interpolated, so motion is smooth across
tiles) and gets ``steer_target = pos + direction * ahead`` with ``ahead`` the distance to the
goal clamped to [``MIN_LOOKAHEAD``, ``LOOKAHEAD``] -- so arrive slows it only on the last metre --
and ``follow_state`` ARRIVE (SEEK for an agent that leaves on arrival: it walks out at full
speed). The ``follow_path`` behaviour then seeks or arrives at
it, so the same SteeringWeights serve paths and fields.

Arrival, the same rules as paths (``ecs_nav.motion.arrival``):
- within ``stopping_distance`` of the goal (the field's distance; inside a zone goal: 0; for a
  target entity: the straight distance to where it stands now), or held back by agents already
  arrived at the same field (group arrival): STOPPED, one ``TargetReached``, and the entity is
  despawned at the end of the tick when its request says ``despawn_on_arrival`` (the field
  counts arrivals per goal point: ``SharedField.arrivals``);
- goal spreading for a field toward one point, as for paths (``systems/goal_spreading.py``):
  near the stopped crowd an agent leaves the field and walks down the slot field to a free place;
- a STOPPED agent re-arms when pushed away (as for paths);
- no field yet, or a position from which the field reaches no goal: no steering target, and one
  ``PathFailed(status="unreachable")`` per such episode;
- standing still while following for ``stuck_ticks`` ticks: ``Stuck``, once per blockage (a
  field needs no re-plan; the event tells).

Off-mesh links: where the field's next step is a link, the agent crosses it as a link
(``systems/flow_links.py``) and is left alone here until it lands.
"""

from __future__ import annotations

import numpy as np
from ecs_nav.systems.flow_links import FlowLinks
from ecs_nav.systems.goal_spreading import GoalSpreading

from ecs_nav.core.events import PathFailed, Stuck, TargetReached
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_NONE, FOLLOW_STOPPED
from ecs_nav.motion.arrival import arrived_rows, held_back, standing_still, touching_arrived
from ecs_nav.nav.fields import FIELDS, steer_along

MIN_LOOKAHEAD = 0.5
"""The steering target is never closer than this (m) ahead, so seek keeps a direction."""

LOOKAHEAD = 3.0
"""Nor further than this (m): the target is a point on the way, not beyond walls."""


class FlowFollower:
    """Steers the flow-field followers (see the module doc); owned by the PathFollowSystem."""

    def __init__(self, stop_hysteresis: float, rearm_radii: float, settle_ticks: int, stuck_ticks: int,
                 stuck_distance: float, group_arrival: bool, spreading: GoalSpreading | None = None):
        self.stop_hysteresis = stop_hysteresis
        self.rearm_radii = rearm_radii
        self.settle_ticks = settle_ticks
        self.stuck_ticks = stuck_ticks
        self.stuck_distance = stuck_distance
        self.group_arrival = group_arrival
        self.spreading = GoalSpreading(enabled=False) if spreading is None else spreading
        self.failed = np.zeros(0, np.int64)  # entities told PathFailed and not yet back on a field (sorted)
        self.links = FlowLinks()  # agents crossing off-mesh links: systems/flow_links.py

    def update(self, world) -> None:
        fields = world.resources.get(FIELDS)
        table = world.table
        n = table.n
        if fields is None or n == 0:
            return
        rows = (table.field_id[:n] >= 0).nonzero()[0]
        rows = self.links.update(world, fields, rows)  # (those on an off-mesh link are placed there)
        if rows.size == 0:
            return
        every = rows.size == n  # the usual crowd: whole-column views instead of gathers

        def put(name, mask, value):
            """column[row] = value[row] (or the scalar) for the following rows where ``mask``."""
            column = getattr(table, name)
            if every:  # no gather: a masked copy (a boolean index would compact the values first)
                np.copyto(column[:n], value, where=mask if column.ndim == 1 else mask[:, None])
            else:
                column[rows[mask]] = value if np.ndim(value) == 0 else value[mask]

        def get(name):
            return getattr(table, name)[:n] if every else getattr(table, name)[rows]

        pos = get("pos")
        direction, dist, goal_dist = self._sample(world, fields, rows, pos, get("field_id"))
        # steering target: a little way along the field; arrival within the stopping distance
        reach, stopped, walking, arrive = steer_along(
            np.arange(n) if every else rows, table.pos, direction, dist, goal_dist, table.follow_state,
            table.despawn_on_arrival, table.stopping_distance, MIN_LOOKAHEAD, LOOKAHEAD, table.steer_target,
            table.has_steer_target)
        ents = get("entity")
        self._report_unreachable(world, rows, ents, reach, stopped)
        leave = get("despawn_on_arrival")

        # goal spreading (systems/goal_spreading.py): a row walking down the slot field steers at the
        # slot it sees best and arrives by the field
        spreading = self.spreading
        fixed = aim = None
        if spreading.enabled and spreading.slots(world) is not None:
            fixed = self._one_point(fields, get("field_id")) & ~leave
            aim = spreading.aim(world, rows, fixed, pos, goal_dist)
            if aim.count:
                seeking = aim.seeking & walking
                table.steer_target[rows[seeking]] = aim.target[seeking]
                ahead = aim.target[seeking] - pos[seeking]
                direction = direction.copy()
                direction[seeking] = ahead / np.maximum(np.hypot(ahead[:, 0], ahead[:, 1]), 1e-12)[:, None]
                arrive &= ~aim.seeking
            arrive |= aim.arrive

        # group arrival, re-arming
        stop = get("stopping_distance")
        if self.group_arrival:
            candidates = walking & ~arrive
            if not arrived_rows(table).size:  # nobody has arrived anywhere: nobody is held back
                candidates[:] = False
            put("blocked_ticks", ~candidates, 0)
            if candidates.any():
                moved = (pos - get("prev_pos"))[candidates]
                held = np.zeros(rows.size, bool)
                held[candidates] = held_back(table, rows[candidates], direction[candidates], moved, world.dt,
                                             self.settle_ticks)
                arrive |= spreading.settles(aim, held)
        rearm = stopped & ~leave
        if rearm.any():
            margin = np.maximum(self.stop_hysteresis, self.rearm_radii * get("radius"))
            rearm &= goal_dist > np.maximum(stop, get("arrival_distance")) + margin
            slotted = np.zeros(rows.size, bool)
            if aim is not None:  # one stopped on a slot re-arms when pushed off it
                slotted = aim.spread & (table.goal_slot_index[rows] != -1)
                rearm[slotted] = (aim.back & stopped & ~leave)[slotted]
            if self.group_arrival and rearm.any():
                check = rearm & ~slotted
                rearm[check] = ~touching_arrived(table, rows[check], direction[check])
            if rearm.any():
                table.follow_state[rows[rearm]] = FOLLOW_ARRIVE
                table.stuck_ticks[rows[rearm]] = -1
                table.stuck_anchor[rows[rearm]] = pos[rearm]
        if arrive.any():
            arriving = rows[arrive]
            table.follow_state[arriving] = FOLLOW_STOPPED
            table.arrival_distance[arriving] = goal_dist[arrive]
            for f in np.unique(table.field_id[arriving]):
                at = arriving[table.field_id[arriving] == f]
                fields.get(int(f)).count_arrivals(table.pos[at])
            again = np.zeros(rows.size, bool)
            first = arrive & ~leave
            if spreading.enabled and first.any():  # a shared goal's first arrival: its slots
                first &= self._one_point(fields, get("field_id")) if fixed is None else fixed
                if first.any():
                    goal_points = np.array([fields.get(int(f)).goal.points[0] for f in table.field_id[rows[first]]])
                    spreading.arrived(world, rows[first], goal_points)
                    again = spreading.stopped(world, rows, arrive, first, pos)  # walked back: arrived already
            for e, gone, quiet in zip(ents[arrive].tolist(), leave[arrive].tolist(), again[arrive].tolist()):
                if quiet:
                    continue
                world.emit(TargetReached(int(e), world.tick))
                if gone:
                    world.despawn(int(e))

        # stuck: standing still while following
        stuck = standing_still(table, slice(0, n) if every else rows, reach, self.stuck_ticks, self.stuck_distance)
        for e in ents[stuck].tolist():
            world.emit(Stuck(int(e), world.tick))

    @staticmethod
    def _one_point(fields, field_id: np.ndarray) -> np.ndarray:
        """(k,) bool: which rows follow a field toward one fixed point (goal spreading's goals)."""
        ids, inverse = np.unique(field_id, return_inverse=True)
        point = np.array([(s := fields.get(int(f))) is not None and s.goal.entity < 0 and s.goal.zone is None
                          and len(s.goal.points) == 1 for f in ids.tolist()], bool)
        return point[inverse.reshape(-1)]

    @staticmethod
    def _sample(world, fields, rows, pos, field_id):
        """Per row: the field's direction (k, 2), its distance to the goal (k,) (inf: no field or
        no way), and the distance that decides arrival (0 inside a zone goal; the straight
        distance to a target entity's current position)."""
        table = world.table
        k = rows.size
        z = table.elevation[rows]  # on a graph of several floors, each samples its own
        direction = np.zeros((k, 2))
        dist = np.full(k, np.inf)
        goal_dist = np.full(k, np.inf)
        if field_id.min() == field_id.max():  # one field for all (the usual crowd): no grouping
            shared = fields.get(int(field_id[0]))
            goal = shared.goal if shared is not None else None
            if shared is not None and shared.flow is not None and goal.entity < 0 and goal.zone is None:
                direction, dist = shared.flow.sample(pos, z)  # a fixed goal: arrival reads the field's distance
                return direction, dist, dist
            groups = [(int(field_id[0]), slice(None))]
        else:
            ids, inverse = np.unique(field_id, return_inverse=True)
            groups = [(f, np.flatnonzero(inverse == j)) for j, f in enumerate(ids.tolist())]
        for f, m in groups:
            shared = fields.get(f)
            if shared is None or shared.flow is None:
                continue
            d, s = shared.flow.sample(pos[m], z[m])
            direction[m], dist[m] = d, s
            goal = shared.goal
            if goal.entity >= 0 and table.has(goal.entity):
                to_target = table.pos[table.row_of(goal.entity)] - pos[m]
                goal_dist[m] = np.where(np.isfinite(s), np.hypot(to_target[:, 0], to_target[:, 1]), np.inf)
            else:
                goal_dist[m] = np.where(goal.contains(pos[m]), 0.0, s)
        return direction, dist, goal_dist

    def _report_unreachable(self, world, rows, ents, reach, stopped) -> None:
        """Rows with no way along their field: no steering target, one PathFailed per episode."""
        table = world.table
        lost = ~reach & ~stopped
        if not lost.any():
            if self.failed.size:
                self.failed = np.zeros(0, np.int64)  # every one of them is back on a field, or gone
            return
        table.follow_state[rows[lost]] = FOLLOW_NONE
        # column operations, not a per-entity loop: a cut-off crowd stays lost tick after tick
        lost_ents = ents[lost]
        fresh = lost_ents[~np.isin(lost_ents, self.failed)]
        for e in fresh.tolist():
            world.emit(PathFailed(int(e), "unreachable", world.tick))
        if self.failed.size or fresh.size:  # keep those still lost; the others are back or gone
            self.failed = np.union1d(self.failed[np.isin(self.failed, lost_ents)], fresh)

    def state(self) -> bytes:
        return self.failed.tobytes() + self.links.state()
