"""Goal spreading's field over the slots (``ecs_nav.motion.goal_slots``): where an agent near the
crowd walks, and where it stops.

Over the free slots, and through them only, a field (``slot_field``) gives each slot the cost of
its best free slot: ``DEPTH_WEIGHT`` times that slot's walking distance from the goal, plus the
way to it (a Dijkstra on the packing's neighbours). An agent near the crowd walks down this field
(``seek_slots``): round the stopped crowd, never through it, to the free slot nearest the goal that
it can reach, and stops on a slot that is its own best (a *sink*). So the crowd fills the floor
round the goal ring by ring, nearest first by walking distance; an agent walks round the crowd
rather than take a slot one ring further out for up to ``DEPTH_WEIGHT`` times the ring's depth;
the way keeps a lane off the crowd's edge (``EDGE_COST``) and never passes a gap it left
(``NARROW``); a slot a walker stands on is left to it (``claim_slots``) and a slot on another
walker's way is no place to stop (``trace_ways``), so what lies on the way in stays free: a
doorway the agents come through stays clear as long as the floor nearer the goal holds them.

Why a field over slots, not slots handed out in advance: an agent given a slot on arriving walks
to it across the others' ways, and one stream of agents from a doorway gets slots all round the
crowd (the near side fills first): their walks cross, they jam, and slots wait for agents stuck
elsewhere. The field is the crowd's occupancy as it is now, recomputed every tick, so each agent
heads for whatever free place is best from where it stands; the slots keep arrival a distance
test (one ``TargetReached`` per agent) and the packing tight.

Shapes: per slot (s,) (distances and field values in m), per agent (k,) or (k, 2) (m).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.spatial import cell_range

ASSIGN_MARGIN = 2.0
"""m. An agent on its way walks down the slot field (instead of its path or flow field) once it
is this close (straight) to where the stopped crowd of its goal reaches (``goal_slots.SlotSet.extent``,
measured from the goal), or once it touches that crowd."""

DEPTH_WEIGHT = 10.0
"""What a metre of a slot's walking distance from the goal costs against a metre walked round the
crowd to it (``slot_field``): an agent walks round rather than stop one ring further out for up
to this many times the ring's depth, so a crowd fed from one side reaches out on that side about
pi * radius / DEPTH_WEIGHT further than on the other."""

EDGE_COST = 0.5
"""A step of the field's way onto a slot beside the stopped crowd costs ``1 + EDGE_COST`` times
as much per stopped neighbour: walkers round the crowd keep a lane off its edge."""

NARROW = 3
"""A free slot with this many stopped neighbours (of six) or more is a gap in the crowd: the field
leads agents into it, never through it."""

CLAIM_SPACINGS = 0.5
"""A free slot within this many spacings of an agent walking down the field is left to it: it is
no place the field leads the others to (``slot_field``)."""

WAY_STEPS = 30
"""Slots of a walker's way down the field counted as its traffic (``trace_ways``)."""

LOOK_SPACINGS = 1.5
"""An agent walking down the field steers at the best free slot within this many spacings of it."""

SINK_SLACK_SPACINGS = 0.5
"""A free slot whose best lies less than this many spacings of walking distance nearer the goal
counts as a sink for the agent standing on it (a tie round the crowd is no reason to walk on);
for an agent without progress, ``PATIENCE`` spacings more per ``STALL_TICKS`` it has waited (it
takes what it can get)."""

PATIENCE = 0.5
"""See ``SINK_SLACK_SPACINGS``. An agent without progress also stops where one more walker's way
passes per ``STALL_TICKS`` it has waited (``seek_slots``' ``passing``)."""

SLOT_ARRIVAL_FRACTION = 0.5
"""An agent arrives on a sink slot within this fraction of its radius of it (or within its
``stopping_distance``, whichever is less)."""

SLOT_SETTLE_SPACINGS = 1.0
"""An agent held back by the stopped crowd (group arrival), or making no progress down the field
for ``STALL_TICKS``, stops where it stands when a free slot lies within this many spacings."""

STALL_TICKS = 120
"""Ticks without progress (``SLOT_PROGRESS``) after which an agent walking down the field stops
where it stands when a sink is near (after ten times as many, wherever it stands)."""

SLOT_PROGRESS = 0.35
"""m. Moving this far from where it stood counts as progress."""

SLOT_REARM_SPACINGS = 0.5
"""A stopped agent pushed further than this many spacings from where it stopped walks down the
field again (and stops without a second ``TargetReached``)."""


@kernel(inline="always")
def heap_before(heap_key, heap_slot, a, b):
    """Entry ``a`` of the heap comes before ``b``: a smaller key, ties by slot."""
    return heap_key[a] < heap_key[b] or (heap_key[a] == heap_key[b] and heap_slot[a] < heap_slot[b])


@kernel(inline="always")
def heap_push(heap_key, heap_slot, size, key, slot):
    """Push (key, slot) on the binary heap of ``size`` entries; returns the new size."""
    i = size
    heap_key[i], heap_slot[i] = key, slot
    while i > 0:
        parent = (i - 1) >> 1
        if not heap_before(heap_key, heap_slot, i, parent):
            break
        heap_key[parent], heap_key[i] = heap_key[i], heap_key[parent]
        heap_slot[parent], heap_slot[i] = heap_slot[i], heap_slot[parent]
        i = parent
    return size + 1


@kernel(inline="always")
def heap_pop(heap_key, heap_slot, size):
    """Drop the heap's first entry (read it before); returns the new size."""
    size -= 1
    heap_key[0], heap_slot[0] = heap_key[size], heap_slot[size]
    i = 0
    while True:
        best = 2 * i + 1
        if best >= size:
            break
        if best + 1 < size and heap_before(heap_key, heap_slot, best + 1, best):
            best += 1
        if not heap_before(heap_key, heap_slot, best, i):
            break
        heap_key[i], heap_key[best] = heap_key[best], heap_key[i]
        heap_slot[i], heap_slot[best] = heap_slot[best], heap_slot[i]
        i = best
    return size


@kernel
def slot_field(distance, neighbours, occupied, claimed, traffic, spacing, depth_weight, edge_cost, field, source,
               heap_key, heap_slot):
    """``field`` (s,) receives each free slot's cost of its best free slot: the least, over the
    free slots q it reaches over free slots that are ``source`` (output, (s,) bool): no walker
    stands on it (not ``claimed``: the others leave it to the one there) and no walker's way
    passes it (``traffic`` 0, ``trace_ways``: a doorway of the crowd's own stays clear), of
    ``depth_weight * distance[q]`` plus the way there
    (Dijkstra over the ``neighbours``: ``spacing`` a step, times ``1 + edge_cost`` per occupied
    neighbour of the slot stepped onto, and never through a free slot with ``NARROW`` occupied
    neighbours or more, only into one); inf on occupied slots. A free slot whose value is not
    below its own ``depth_weight * distance`` is a sink: nothing better can be reached from it.
    ``heap_key`` / ``heap_slot``: (7 * s + 1,) work arrays. Returns how many slots are free."""
    size = 0
    n_free = 0
    for q in range(distance.shape[0]):
        source[q] = False
        if occupied[q]:
            field[q] = np.inf
            continue
        n_free += 1
        source[q] = not claimed[q] and traffic[q] == 0
        if not source[q]:
            field[q] = np.inf
            continue
        field[q] = depth_weight * distance[q]
        size = heap_push(heap_key, heap_slot, size, field[q], q)
    while size > 0:
        key, q = heap_key[0], heap_slot[0]
        size = heap_pop(heap_key, heap_slot, size)
        if key > field[q]:
            continue  # (a stale entry)
        if key < depth_weight * distance[q]:  # a walker passes q on its way: not through a narrow gap
            crowded = 0
            for e in range(6):
                t = neighbours[q, e]
                if t >= 0 and occupied[t]:
                    crowded += 1
            if crowded >= NARROW:
                continue
        for m in range(6):
            r = neighbours[q, m]
            if r < 0 or occupied[r]:
                continue
            crowded = 0  # (a step beside the stopped crowd costs more: walkers keep a lane off it)
            for e in range(6):
                t = neighbours[r, e]
                if t >= 0 and occupied[t]:
                    crowded += 1
            value = key + spacing * (1.0 + edge_cost * crowded)
            if value < field[r]:
                field[r] = value
                size = heap_push(heap_key, heap_slot, size, value, r)
    return n_free


@kernel
def claim_slots(agents, points, reach, ox, oy, inv_cell, cols, rows, cell_start, cell_items, claimed):
    """``claimed`` (s,) bool receives the slots within ``reach`` m of one of ``agents`` ((k, 2)
    positions); ``points`` binned in the grid given. Returns how many."""
    claimed[:] = False
    n = 0
    for k in range(agents.shape[0]):
        ax, ay = agents[k, 0], agents[k, 1]
        cx0, cx1 = cell_range(ax - reach, ax + reach, ox, inv_cell, cols)
        cy0, cy1 = cell_range(ay - reach, ay + reach, oy, inv_cell, rows)
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * cols + cx
                for i in range(cell_start[c], cell_start[c + 1]):
                    q = cell_items[i]
                    dx, dy = points[q, 0] - ax, points[q, 1] - ay
                    if not claimed[q] and dx * dx + dy * dy <= reach * reach:
                        claimed[q] = True
                        n += 1
    return n


@kernel
def seek_slots(agents, points, distance, field, traffic, depth_weight, slack, passing, look, ox, oy, inv_cell, cols,
               rows, cell_start, cell_items, target, nearest, nearest_gap, sink, value):
    """For each of ``agents`` ((k, 2) positions) walking down the slot ``field``: ``target``
    (k, 2) the point it steers at, the free slot within ``look`` m of it of least field value plus
    half its distance from the agent (so it looks a slot or two ahead), or its own position
    where none is free; ``nearest`` (k,) the free slot nearest to it (-1: none within ``look``),
    ``nearest_gap`` (k,) its distance to that slot (m), ``sink`` (k,) bool whether that slot is
    a sink (``slot_field``) or as good as one for the agent (its best lies less than ``slack``
    (k,) m of walking distance nearer the goal) and at most ``passing`` (k,) other walkers' ways
    pass it (``traffic`` at most ``1 + passing``: its own and theirs), ``value`` (k,) the field
    value there (inf: none). ``points`` binned
    in the grid given. Returns how many agents have a free slot within ``look``."""
    found = 0
    for k in range(agents.shape[0]):
        ax, ay = agents[k, 0], agents[k, 1]
        cx0, cx1 = cell_range(ax - look, ax + look, ox, inv_cell, cols)
        cy0, cy1 = cell_range(ay - look, ay + look, oy, inv_cell, rows)
        best, best_cost = -1, np.inf
        near, near_d2 = -1, np.inf
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * cols + cx
                for i in range(cell_start[c], cell_start[c + 1]):
                    q = cell_items[i]
                    if not field[q] < np.inf:
                        continue
                    dx, dy = points[q, 0] - ax, points[q, 1] - ay
                    d2 = dx * dx + dy * dy
                    if d2 > look * look:
                        continue
                    cost = field[q] + 0.5 * np.sqrt(d2)
                    if cost < best_cost or (cost == best_cost and q < best):
                        best, best_cost = q, cost
                    if d2 < near_d2 or (d2 == near_d2 and q < near):
                        near, near_d2 = q, d2
        nearest[k] = near
        if best < 0:
            target[k, 0], target[k, 1] = ax, ay
            nearest_gap[k] = np.inf
            sink[k] = False
            value[k] = np.inf
            continue
        found += 1
        target[k, 0], target[k, 1] = points[best, 0], points[best, 1]
        nearest_gap[k] = np.sqrt(near_d2)
        sink[k] = field[near] >= depth_weight * (distance[near] - slack[k]) and traffic[near] <= 1 + passing[k]
        value[k] = field[near]
    return found


@kernel
def trace_ways(nearest, field, source, distance, depth_weight, neighbours, steps, traffic):
    """Add to ``traffic`` (s,) the ways of the walkers standing nearest the slots ``nearest``
    (k,) (-1: none): from each, down the ``field`` (to the neighbour of least value) for at most
    ``steps`` slots, every slot passed (the sink it ends on, a ``source`` whose value is its own
    ``depth_weight * distance``, is not passed)."""
    for k in range(nearest.size):
        q = nearest[k]
        for _ in range(steps):
            if q < 0 or (source[q] and field[q] >= depth_weight * distance[q]):
                break
            traffic[q] += 1
            best, best_value = -1, field[q]
            for m in range(6):
                r = neighbours[q, m]
                if r >= 0 and field[r] < best_value:
                    best, best_value = r, field[r]
            q = best


@kernel
def track_progress(rows, pos, progress, anchor, wait, waited):
    """Per row of ``rows`` (k,) walking down the field, standing at ``pos`` (table column):
    ``anchor`` and ``wait`` (table columns) hold where it stood when it last moved ``progress``
    m and the ticks since; ``waited`` (k,) receives the latter."""
    for k in range(rows.size):
        i = rows[k]
        dx, dy = pos[i, 0] - anchor[i, 0], pos[i, 1] - anchor[i, 1]
        if dx * dx + dy * dy > progress * progress:
            anchor[i, 0], anchor[i, 1] = pos[i, 0], pos[i, 1]
            wait[i] = 0
        else:
            wait[i] += 1
        waited[k] = wait[i]
