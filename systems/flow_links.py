"""Flow-field followers crossing off-mesh links (``ecs_nav.nav.links``), as path followers do.

A flow field's distances run over every edge of its graph, off-mesh links included: where the
cheapest way to the goal goes over a link (a jump over a wall, a ladder, a teleporter), the
field's next hop from the link's start node is its end node. Sampling the field cannot follow
that step (the field points at the link's far end, through whatever the link crosses), so:

- **Start.** A following agent (not STOPPED, not lost) starts across an enabled link when it
  stands within ``LINK_REACH`` of the link's start node's line of width ``width`` (the stadium
  of the points within ``LINK_REACH`` of the segment of that width across the link's line at its
  start node: within ``LINK_REACH`` of the node itself for a link of width 0),
  level with the node (elevation within ``max_climb``), and its field's next-hop chain from its
  own node reaches the start node and steps from there to the link's end node: the field's best
  next step is the link. A bidirectional link is looked at from both ends.
- **Crossing.** ``LinkCrossings.cross`` and ``advance`` (``systems/link_crossing.py``), as for a
  path follower: ``LinkReached`` with the link's kind as it starts; the link's shape and speed;
  placed each tick, not steered, not integrated; the flow follower leaves it alone (no
  sampling, arrival or stuck count) until it lands.
- **Landing.** At the link's end (shifted sideways by its offset within the width) it follows its
  field again from there, the same tick.

A disabled link (``World.set_link_enabled``) has no edge in the graph the fields are rebuilt on,
so no field steps over it; a crossing once begun is finished.
"""

from __future__ import annotations

import math

import numpy as np
from ecs_nav.systems.link_crossing import LinkCrossings

from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_NONE, FOLLOW_STOPPED
from ecs_nav.motion.arrival import STUCK_REPORTED

LINK_REACH = 1.0
"""m: how near a link's start (beyond half its width sideways) a flow follower starts across it;
a path follower's default ``Path.radius``, within which it passes the link's start waypoint."""


class FlowLinks:
    """The flow followers' link crossings (see the module doc); owned by the ``FlowFollower``."""

    def __init__(self) -> None:
        self.crossings = LinkCrossings()
        self.ents = np.zeros(0, np.int64)  # this tick's flow followers (ascending) and their rows:
        self.rows = np.zeros(0, np.int64)  # what LinkCrossings.advance reads

    def update(self, world, fields, rows: np.ndarray) -> np.ndarray:
        """Start and advance crossings among the flow followers' table ``rows`` ((k,), ascending);
        returns the rows the flow follower steers this tick (those not on a link)."""
        links, graph = world.nav_links, world.nav_graph
        if not len(self.crossings) and (links is None or graph is None or not links.enabled.any()):
            return rows
        table = world.table
        if links is not None and graph is not None and links.enabled.any():
            self._begin(world, fields, links, graph, rows)
        if not len(self.crossings):
            return rows
        ents = table.entity[rows]
        order = np.argsort(ents, kind="stable")
        self.ents, self.rows = ents[order], rows[order]
        self.crossings.advance(world, self, table.pos[self.rows].copy())
        if not len(self.crossings):
            return rows
        return rows[~np.isin(table.entity[rows], self.crossings.entities())]

    def _begin(self, world, fields, links, graph, rows: np.ndarray) -> None:
        """Start across its link every agent of ``rows`` that stands at a link whose step its
        field takes (see the module doc)."""
        table = world.table
        a, b = links.nodes[:, 0], links.nodes[:, 1]
        ok = links.enabled & (a >= 0) & (b >= 0) & (a != b)
        index = np.flatnonzero(ok)
        two_way = index[links.bidirectional[index]]
        step_link = np.concatenate([index, two_way])
        start = np.concatenate([a[index], b[two_way]])
        end = np.concatenate([b[index], a[two_way]])
        if start.size == 0:
            return
        free = (table.follow_state[rows] != FOLLOW_STOPPED) & (table.follow_state[rows] != FOLLOW_NONE)
        if self.crossings:
            free &= ~np.isin(table.entity[rows], self.crossings.entities())
        rows = rows[free]
        if rows.size == 0:
            return
        p, q = graph.positions[start], graph.positions[end]
        line = q[:, :2] - p[:, :2]
        length = np.hypot(line[:, 0], line[:, 1])
        unit = np.where(length[:, None] > 0, line / np.maximum(length, 1e-12)[:, None], [1.0, 0.0])
        half_width = links.widths[step_link] / 2
        offset = table.pos[rows][:, None, :] - p[None, :, :2]  # (rows, steps, 2)
        along = offset[..., 0] * unit[:, 0] + offset[..., 1] * unit[:, 1]
        side = np.abs(offset[..., 1] * unit[:, 0] - offset[..., 0] * unit[:, 1])
        reach = np.hypot(along, np.maximum(side - half_width, 0.0))
        near = ((reach <= LINK_REACH)
                & (np.abs(table.elevation[rows][:, None] - p[None, :, 2]) < table.max_climb[rows][:, None]))
        near_r, near_k = np.nonzero(near)  # row-major: each row's links in order, rows ascending
        if near_r.size == 0:
            return
        at = rows[near_r]  # the nodes the agents stand on, found at once
        nodes = graph.nearest_nodes(table.pos[at], table.elevation[at])
        for r, k, node in zip(near_r.tolist(), near_k.tolist(), nodes.tolist()):
            row = int(rows[r])
            entity = int(table.entity[row])
            if self.crossings.holds(entity):
                continue
            shared = fields.get(int(table.field_id[row]))
            if shared is None or shared.flow is None or shared.flow.next_hop.shape[0] != graph.node_count:
                continue
            if not self._takes(graph, shared.flow, node, int(start[k]), int(end[k]), float(half_width[k])):
                continue
            self.crossings.cross(world, entity, row, int(step_link[k]), graph.positions[start[k]],
                                 graph.positions[end[k]])

    @staticmethod
    def _takes(graph, flow, node: int, start: int, end: int, half_width: float) -> bool:
        """Whether the field's next-hop chain from ``node`` (the agent's) reaches ``start``
        within the few hops across the link's width and steps from there to ``end``."""
        if flow.next_hop[start] != end:
            return False
        hops = 2 + math.ceil((half_width + LINK_REACH) / max(float(graph.grid.spacing), 1e-9))
        for _ in range(hops):
            if node == start or node < 0:
                break
            node = int(flow.next_hop[node])
        return node == start

    def land(self, world, i: int, reload: bool) -> None:
        """The agent ``self.ents[i]`` landed at a link's end: it follows its field again (the
        stuck count starts afresh there). ``reload``: unused (a flow follower has no Path)."""
        table, row = world.table, int(self.rows[i])
        table.follow_state[row] = FOLLOW_ARRIVE
        if table.stuck_ticks[row] != STUCK_REPORTED:
            table.stuck_ticks[row] = -1
            table.stuck_anchor[row] = table.pos[row]

    def state(self) -> bytes:
        """The crossings under way (for ``World.state_digest``); empty when none."""
        return self.crossings.state()
