"""The PathfindSystem's flow-field half: PathRequests with ``method = "flow_field"`` (seed 003).

Such a request gets no Path. It names a goal (a point, several points, a zone or a target
entity); every request naming the same goal shares one field of the World's ``FlowFields``
(``ecs_nav.nav.fields``), and the agent's table row records which (``field_id``) together with
its goal key (group arrival: ``ecs_nav.motion.arrival.goal_key_of_field``) and whether it leaves the
world on arrival (``despawn_on_arrival``). The PathFollowSystem steers it along the field.

Per tick:
- the fields in use are built when new and rebuilt at once when the nav graph changed under
  them; a field toward a target entity is rebuilt when the target stands on another node, at
  most once per replan period (the first requester's ``replan_period``, else the system's);
- fields no request has named for ``FlowFields.unused_ticks`` are dropped.

Which request names which field is worked out when requests are given or taken
(``World.structure_version``) or edited (``World.take_changed_requests``), not per tick;
despawned requesters are dropped without a pass over the others.

Area costs: on a map with areas (``world.nav_areas``) a field is built on the nav graph weighted
as the requester's ``NavFilter`` sets the costs (the map's own costs without one; excluded areas
not walked), so requests toward one goal share a field only when their filters are equal. The
filter is read when the requests are assigned: when a PathRequest, Path or NavFilter is given
or taken, or a request edited (a NavFilter edited in place takes effect then).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.core.components import NavFilter
from ecs_nav.motion.arrival import goal_key_of_field
from ecs_nav.nav.fields import FIELDS, FieldGoal, FlowFields, SharedField, goal_nodes


class FieldRequests:
    """Serves the flow-field requests (see the module doc); owned by the PathfindSystem."""

    def __init__(self):
        self.ents = np.zeros(0, np.int64)
        self.field_ids = np.zeros(0, np.int64)
        self.periods: dict[int, int] = {}

    def assign(self, world, ents: np.ndarray, reqs: list, period: int) -> None:
        """Record which field each flow-field request (``ents``, ascending, with ``reqs``) names,
        in the World's FlowFields and in the requesters' table rows."""
        table = world.table
        fields = world.resources.get(FIELDS)
        if fields is None:
            fields = world.resources[FIELDS] = FlowFields()
        by_goal: dict[FieldGoal, SharedField] = {}
        ids = np.empty(ents.size, np.int64)
        despawn = np.empty(ents.size, bool)
        areas = world.nav_areas
        for i, req in enumerate(reqs):
            area_filter = None
            if areas is not None:
                nav_filter = world.try_get(int(ents[i]), NavFilter)
                area_filter = None if nav_filter is None else nav_filter.key()
            goal = FieldGoal.of(req, area_filter)
            shared = by_goal.get(goal)
            if shared is None:
                shared = by_goal[goal] = fields.field_for(goal)
                self.periods[shared.id] = period if req.replan_period is None else req.replan_period
            ids[i] = shared.id
            despawn[i] = req.despawn_on_arrival
        # rows that no longer follow a field
        gone = np.setdiff1d(self.ents, ents)
        if gone.size:
            rows = table.rows_of(gone)
            rows = rows[rows >= 0]
            table.field_id[rows] = -1
            table.goal_key[rows] = -1
        rows = table.rows_of(ents)
        has = rows >= 0
        table.field_id[rows[has]] = ids[has]
        table.goal_key[rows[has]] = [goal_key_of_field(f) for f in ids[has].tolist()]
        table.despawn_on_arrival[rows[has]] = despawn[has]
        self.ents, self.field_ids = ents, ids
        fields.count_users(ids, world.tick)

    def drop(self, world, gone: np.ndarray) -> None:
        """Forget the requesters ``gone`` (despawned), keeping everyone else's field."""
        keep = ~np.isin(self.ents, gone)
        if keep.all():
            return
        self.ents, self.field_ids = self.ents[keep], self.field_ids[keep]
        fields = world.resources.get(FIELDS)
        if fields is not None:
            fields.count_users(self.field_ids, world.tick)

    def update(self, world, graph) -> None:
        """Build, refresh and evict the World's fields (see the module doc)."""
        fields = world.resources.get(FIELDS)
        if fields is None or not fields.fields:  # no field to build, refresh or evict
            return
        for shared in fields.fields.values():
            if shared.users == 0:
                continue
            weighted = shared.goal.graph(graph, world.nav_areas)
            stale = shared.flow is None or not shared.flow.is_current(weighted)
            moving = shared.goal.entity >= 0
            if not stale and not (moving and world.tick - shared.checked_tick >= self.periods.get(shared.id, 30)):
                continue
            shared.checked_tick = world.tick
            nodes, points = goal_nodes(shared.goal, weighted, world.table, world.map)
            if nodes.size == 0:
                continue  # the goal is off the graph (or its entity gone): agents find no field
            if not stale and np.array_equal(np.unique(nodes), shared.goal_nodes):
                continue  # the target is still on its node: the field stands
            if shared.build(weighted, nodes, points, world.tick):
                fields.builds += 1
        for fid in fields.evict(world.tick):
            self.periods.pop(fid, None)

    def state(self) -> bytes:
        return self.ents.tobytes() + self.field_ids.tobytes()
