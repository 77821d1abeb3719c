"""Crossing off-mesh links: the PathFollowSystem's agents on a link (``ecs_nav.nav.links``).

When a path follower passes a waypoint and the next one is the other end of an enabled off-mesh
link (the two waypoints are the positions of the link's start and end nodes, in the link's
direction), the agent does not walk there: it crosses the link, as Detour's crowd moves an agent
over an off-mesh connection (``DT_CROWDAGENT_STATE_OFFMESH``) and Unity's agent traverses a
NavMeshLink:

- ``LinkReached`` (entity, link index, kind, tick, start, end) is emitted once, as it starts;
- the crossing runs from where the agent stands to the link's end (shifted sideways by the
  agent's offset from the link's line, up to half the link's ``width``), along the link's shape
  (``ecs_nav.motion.link_motion``: an arc for a jump, a straight climb for a ladder, an instant
  move for a teleport), at the link's ``speed`` (else the agent's ``max_speed``);
- meanwhile this module places the agent each tick (position, elevation, heading) and the
  steering and the physics leave it alone (its row's ``has_velocity`` flag is off and its
  velocity zero: scripted motion, like a teleport, is not integrated; other agents are pushed
  by it and do not push it);
- a path planned meanwhile (a periodic replan, a stale path) starts where the agent will land
  (``world.resources[LINK_LANDINGS]``, read by the PathfindSystem);
- on landing the follower carries on from the link's end waypoint (``WaypointReached`` for it),
  or re-reads its Path when the PathfindSystem rewrote it during the crossing.

A crossing once begun is finished, even if its link is disabled meanwhile (a jump is not undone
mid-air); disabling a link stops agents that have not reached it yet (their paths go stale).

Flow-field followers cross links with the same machinery (``cross``, ``advance``), started by
``systems/flow_links.py`` where their field's next step is a link.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.core.events import LinkReached
from ecs_nav.core.resource_names import LINK_LANDINGS
from ecs_nav.motion.link_motion import KIND_CODES, crossing_duration, crossing_points


class LinkCrossings:
    """The follower's agents on a link (see the module docstring), as columns in entity order:
    ``ents`` ascending, and per crossing its link, kind code, start ``a`` and end ``b`` ((k, 3)
    m), duration and elapsed time (s), whether its row had a velocity before, and whether its
    Path is to be re-read on landing. Crossings started since the columns were last read wait in
    ``started`` (a tuple each, in ``COLUMNS`` order) and join them, in entity order, at the next
    read (``merged``): a crowd starting many crossings a tick pays for one merge, not a copy of
    every column per start."""

    def __init__(self) -> None:
        self.ents = np.zeros(0, np.int64)
        self.link = np.zeros(0, np.int64)
        self.kind = np.zeros(0, np.int64)
        self.a = np.zeros((0, 3))
        self.b = np.zeros((0, 3))
        self.duration = np.zeros(0)
        self.elapsed = np.zeros(0)
        self.had_velocity = np.zeros(0, bool)
        self.reload = np.zeros(0, bool)
        self.started: list[tuple] = []

    COLUMNS = ("ents", "link", "kind", "a", "b", "duration", "elapsed", "had_velocity", "reload")

    def __len__(self) -> int:
        return self.merged().ents.size

    def merged(self) -> LinkCrossings:
        """The columns with the crossings started since joined, in entity order (this object)."""
        if self.started:
            started, self.started = self.started, []
            for name, values in zip(self.COLUMNS, zip(*started)):
                column = getattr(self, name)
                setattr(self, name, np.concatenate([column, np.array(values, column.dtype)]))
            self._keep(np.argsort(self.ents, kind="stable"))
        return self

    def _at(self, entity: int) -> int:
        """Where ``entity``'s crossing is in the columns, or -1."""
        ents = self.merged().ents
        i = int(np.searchsorted(ents, entity))
        return i if i < ents.size and ents[i] == entity else -1

    def holds(self, entity: int) -> bool:
        """Whether ``entity`` is crossing a link now."""
        return self._at(entity) >= 0

    def mark_reload(self, entity: int) -> None:
        """Its Path was rewritten during the crossing: re-read it on landing."""
        i = self._at(entity)
        if i >= 0:
            self.reload[i] = True

    def _keep(self, kept: np.ndarray) -> None:
        """Keep the crossings where ``kept`` (a mask or indices) says."""
        for name in self.COLUMNS:
            setattr(self, name, getattr(self, name)[kept])

    @staticmethod
    def link_of_step(world, a: np.ndarray, b: np.ndarray) -> int:
        """The enabled link whose start and end nodes lie at the waypoints ``a`` → ``b`` ((3,)
        m, positions of graph nodes), or -1."""
        links, graph = world.nav_links, world.nav_graph
        if links is None or graph is None or len(links) == 0:
            return -1
        nodes = links.nodes
        s_at, e_at = graph.positions[np.maximum(nodes[:, 0], 0)], graph.positions[np.maximum(nodes[:, 1], 0)]
        ok = links.enabled & (nodes[:, 0] >= 0) & (nodes[:, 1] >= 0)
        forward = ok & np.all(s_at == a, axis=1) & np.all(e_at == b, axis=1)
        backward = ok & links.bidirectional & np.all(e_at == a, axis=1) & np.all(s_at == b, axis=1)
        hit = np.flatnonzero(forward | backward)
        return int(hit[0]) if hit.size else -1

    def begin(self, world, follower, i: int, passed: int) -> bool:
        """The follower's agent at cache position ``i`` just passed waypoint ``passed`` and walks
        to ``path.index``: when that step is a link, start crossing it (True)."""
        path = follower.paths[i]
        wp = path.waypoints
        j = int(path.index)
        if not follower.planned[i] or not (0 <= passed < wp.shape[0]) or j == passed:
            return False
        link = self.link_of_step(world, wp[passed], wp[j])
        if link < 0:
            return False
        self.cross(world, int(follower.ents[i]), int(follower.rows[i]), link, wp[passed], wp[j])
        follower.active[i] = False
        return True

    def cross(self, world, entity: int, row: int, link: int, start: np.ndarray, end: np.ndarray) -> None:
        """Start ``entity`` (table row ``row``) across enabled ``link`` in the direction from its
        node at ``start`` to its node at ``end`` ((3,) m: the two nodes' positions): from where
        it stands to ``end`` shifted by its sideways offset (within the link's width), ``LinkReached``
        now; ``advance`` moves it from here on. Its owner stops steering it."""
        table = world.table
        spec = world.nav_links.links[link]
        a = np.array([table.pos[row, 0], table.pos[row, 1], table.elevation[row]])
        b = np.array(end, np.float64)
        line = b[:2] - np.asarray(start, np.float64)[:2]
        length = float(np.hypot(*line))
        if spec.width > 0 and length > 0:  # keep the sideways offset from the link's line, within its width
            normal = np.array([-line[1], line[0]]) / length
            offset = float(np.clip(np.dot(a[:2] - start[:2], normal), -spec.width / 2, spec.width / 2))
            b[:2] += offset * normal
        speed = spec.speed if spec.speed is not None else max(float(table.max_speed[row]), 1e-6)
        duration = crossing_duration(spec.kind, a, b, speed)
        self.started.append((entity, link, KIND_CODES[spec.kind], a, b, duration, 0.0,
                             bool(table.has_velocity[row]), False))  # (in COLUMNS order)
        world.resources.setdefault(LINK_LANDINGS, {})[entity] = tuple(b.tolist())
        table.has_steer_target[row] = False
        world.emit(LinkReached(entity, link, spec.kind, world.tick, tuple(a.tolist()), tuple(b.tolist())))

    def entities(self) -> np.ndarray:
        """(k,) int64: the entities crossing a link now, ascending (read only)."""
        return self.merged().ents

    def advance(self, world, follower, pos: np.ndarray) -> None:
        """Move every crossing agent one tick along its link (``pos``: the follower's (m, 2)
        positions of this tick, updated for them); land the ones that arrive. ``follower``: its
        ``ents`` (ascending; an entity no longer among them has its crossing dropped) and their
        table ``rows``, and ``land(world, i, reload)``, told of each landing."""
        if not len(self):
            return
        table, dt = world.table, float(world.dt)
        at = np.searchsorted(follower.ents, self.ents)
        here = at < follower.ents.size
        here[here] = follower.ents[at[here]] == self.ents[here]
        if not here.all():
            gone = self.ents[~here]
            for entity in gone.tolist():
                world.resources[LINK_LANDINGS].pop(entity, None)  # despawned, or its Path taken
            rows = table.rows_of(gone)
            table.has_velocity[rows[rows >= 0]] = self.had_velocity[~here][rows >= 0]
            self._keep(here)
        if not self.ents.size:
            return
        # all crossings in one pass over columns: many agents may be on links at once (a flow crowd)
        at = at[here]
        self.elapsed += dt
        rows = follower.rows[at]
        timed = self.duration > 0
        s = np.ones(self.ents.size)
        s[timed] = np.minimum(self.elapsed[timed] / self.duration[timed], 1.0)
        p = crossing_points(self.kind, self.a, self.b, s)
        table.prev_pos[rows] = table.pos[rows]
        table.pos[rows] = p[:, :2]
        table.elevation[rows] = p[:, 2]
        ground = self.b[:, :2] - self.a[:, :2]
        length = np.hypot(ground[:, 0], ground[:, 1])
        turn = length > 1e-9
        table.heading[rows[turn]] = ground[turn] / length[turn, None]
        table.vel[rows] = 0.0
        table.has_velocity[rows] = False
        pos[at] = p[:, :2]
        landed = np.flatnonzero(s >= 1.0)
        if not landed.size:
            return
        ents, had_velocity, reload = self.ents[landed], self.had_velocity[landed], self.reload[landed]
        self._keep(s < 1.0)
        table.has_velocity[rows[landed]] = had_velocity
        for i, entity, again in zip(landed.tolist(), ents.tolist(), reload.tolist()):
            world.resources[LINK_LANDINGS].pop(entity, None)  # landed: in entity order
            follower.land(world, int(at[i]), again)

    def state(self) -> bytes:
        """The crossings under way (for ``World.state_digest``); empty when none: each crossing's
        entity, link, kind, had_velocity and reload (int64), then its a, b, duration and elapsed."""
        if not len(self):
            return b""
        ints = np.column_stack([self.ents, self.link, self.kind, self.had_velocity, self.reload]).astype(np.int64)
        floats = np.column_stack([self.a, self.b, self.duration, self.elapsed])
        return np.concatenate([ints.view(np.uint8).reshape(len(self), -1),
                               floats.view(np.uint8).reshape(len(self), -1)], axis=1).tobytes()
