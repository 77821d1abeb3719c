"""Goal spreading's slots and field (``ecs_nav.motion.goal_slots``, ``slot_field``) against brute
force and scipy, and its rules in small worlds: a crowd sent to one point fills a disc round it, an agent alone at
its goal gets no slots (its world runs as without spreading), stopped agents hold their place."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ecs_nav.systems.goal_spreading import GOAL_SLOTS
from ecs_nav.systems.path_follow import PathFollowSystem
from ecs_nav.systems.physics import PhysicsSystem
from ecs_nav.systems.steering import SteeringSystem
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree

import ecs_nav
from ecs_nav import Agent, Avoidance, Collider, PathRequest, Position, SteeringWeights, Velocity, World
from ecs_nav.core.table import FOLLOW_STOPPED
from ecs_nav.motion.goal_slots import SEEKING, SLOT_GAP, hex_lattice, lattice_neighbours, occupy_slots
from ecs_nav.motion.slot_field import claim_slots, seek_slots, slot_field, trace_ways
from ecs_nav.motion.spatial import build_grid

SPACING = 0.7


def lattice(reach: float = 4.0):
    points = hex_lattice((1.0, -2.0), SPACING, reach)
    return points, lattice_neighbours(points, (1.0, -2.0), SPACING)


def test_the_packing_is_hexagonal_spacing_apart_and_fills_its_disc():
    points, _ = lattice(6.0)
    d, _ = cKDTree(points).query(points, k=7)
    inner = np.hypot(*(points - (1.0, -2.0)).T) < 6.0 - SPACING
    np.testing.assert_allclose(d[inner, 1:], SPACING, atol=1e-9)  # six neighbours at one spacing
    assert np.any(np.all(points == (1.0, -2.0), axis=1))  # the centre is one of them
    per_slot = SPACING * SPACING * math.sqrt(3) / 2
    assert abs(points.shape[0] - math.pi * 36 / per_slot) < 2 * math.pi * 6 / SPACING  # area / cell, +- a rim


def test_neighbours_are_the_slots_one_spacing_away_on_one_level():
    points, _ = lattice()
    rng = np.random.default_rng(0)
    points = points[rng.permutation(points.shape[0])[: points.shape[0] - 20]]  # some missing, any order
    elevation = np.where(points[:, 0] > 2.0, 1.5, 0.0)  # a platform's edge at x = 2
    got = lattice_neighbours(points, (1.0, -2.0), SPACING, elevation, 0.5)
    pairs = cKDTree(points).query_pairs(SPACING * 1.01)
    want = {(i, j) for i, j in pairs if elevation[i] == elevation[j]}
    want |= {(j, i) for i, j in want}
    have = {(i, int(j)) for i in range(points.shape[0]) for j in got[i] if j >= 0}
    assert have == want


def test_a_slot_is_occupied_by_a_stopped_agent_closer_than_the_fraction_of_two_radii():
    points, _ = lattice()
    rng = np.random.default_rng(1)
    occ = rng.uniform(-3, 5, (40, 2))
    radius = rng.uniform(0.2, 0.4, 40)
    grid = build_grid(occ, cell_size=0.5)
    out = np.empty(points.shape[0], np.bool_)
    occupy_slots(points, 0.3, 0.75, occ, radius, *grid.kernel_args(), float(radius.max()), out)
    gap = np.hypot(*(points[:, None, :] - occ[None, :, :]).transpose(2, 0, 1))
    np.testing.assert_array_equal(out, np.any(gap < 0.75 * (0.3 + radius[None, :]), axis=1))


def reference_field(distance, neighbours, occupied, claimed, traffic, weight, edge_cost):
    """The field by scipy: a virtual node linked to every source slot at its own value, and a
    step onto a free slot r costing the spacing times 1 + edge_cost per occupied neighbour of r
    (no slot here has enough occupied neighbours to be a narrow gap)."""
    s = distance.size
    rows, cols, cost = [], [], []
    crowded = np.array([sum(1 for r in neighbours[q] if r >= 0 and occupied[r]) for q in range(s)])
    for q in range(s):
        if occupied[q]:
            continue
        if not claimed[q] and traffic[q] == 0:
            rows.append(s)
            cols.append(q)
            cost.append(weight * distance[q])
        for r in neighbours[q]:
            if r >= 0 and not occupied[r]:
                rows.append(q)
                cols.append(r)
                cost.append(SPACING * (1 + edge_cost * crowded[r]))
    graph = coo_matrix((cost, (rows, cols)), shape=(s + 1, s + 1)).tocsr()
    return dijkstra(graph, indices=s)[:s]


def test_the_field_is_the_cheapest_free_slot_by_depth_and_way_as_dijkstra_finds_it():
    points, neighbours = lattice()
    distance = np.hypot(*(points - (1.0, -2.0)).T) + 0.1  # (a slot at the goal costs > 0)
    rng = np.random.default_rng(2)
    occupied = np.zeros(points.shape[0], np.bool_)
    occupied[rng.choice(points.shape[0], 6, replace=False)] = True  # a few, apart: no narrow gaps
    claimed = np.zeros_like(occupied)
    claimed[rng.choice(points.shape[0], 5, replace=False)] = True
    traffic = np.zeros(points.shape[0], np.int64)
    traffic[rng.choice(points.shape[0], 5, replace=False)] = 2
    crowded = np.array([np.count_nonzero(occupied[n[n >= 0]]) for n in neighbours])
    assert crowded.max() < 3
    field, source = np.empty(points.shape[0]), np.empty(points.shape[0], np.bool_)
    heap_key, heap_slot = np.empty(7 * points.shape[0] + 1), np.empty(7 * points.shape[0] + 1, np.int64)
    slot_field(distance, neighbours, occupied, claimed, traffic, SPACING, 10.0, 0.5, field, source, heap_key,
               heap_slot)
    want = reference_field(distance, neighbours, occupied, claimed, traffic, 10.0, 0.5)
    np.testing.assert_allclose(field, want)
    np.testing.assert_array_equal(source, ~occupied & ~claimed & (traffic == 0))


def test_the_field_leads_into_a_narrow_gap_of_the_crowd_but_never_through_it():
    # a row of slots 0-1-2-3-4; 2 has three occupied neighbours (a gap); the best slot is 4
    neighbours = np.full((8, 6), -1, np.int64)
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 4), (2, 5), (2, 6), (2, 7)):
        neighbours[a, list(neighbours[a]).index(-1)] = b
        neighbours[b, list(neighbours[b]).index(-1)] = a
    occupied = np.zeros(8, np.bool_)
    occupied[5:] = True
    distance = np.array([9.0, 8.0, 7.0, 6.0, 0.5, 1.0, 1.0, 1.0])
    field, source = np.empty(8), np.empty(8, np.bool_)
    heap_key, heap_slot = np.empty(57), np.empty(57, np.int64)
    nothing = np.zeros(8, np.bool_)
    slot_field(distance, neighbours, occupied, nothing, np.zeros(8, np.int64), 1.0, 10.0, 0.0, field, source,
               heap_key, heap_slot)
    assert field[3] == 5.0 + 1.0  # from 4
    assert field[2] == 7.0  # from inside the gap one walks out to 3 and 4
    assert field[1] == 80.0 and field[0] == 81.0  # but 1 is no way through it: its own value, a sink


def test_a_walker_steers_at_the_best_free_slot_near_it_and_stops_on_a_sink():
    points, neighbours = lattice()
    distance = np.hypot(*(points - (1.0, -2.0)).T)
    occupied = distance < 1.0  # the first ring is taken
    field, source = np.empty(points.shape[0]), np.empty(points.shape[0], np.bool_)
    heap_key, heap_slot = np.empty(7 * points.shape[0] + 1), np.empty(7 * points.shape[0] + 1, np.int64)
    nothing = np.zeros(points.shape[0], np.bool_)
    traffic = np.zeros(points.shape[0], np.int64)
    slot_field(distance, neighbours, occupied, nothing, traffic, SPACING, 10.0, 0.0, field, source, heap_key,
               heap_slot)
    ring = np.flatnonzero(~occupied & (distance < 1.3))  # the nearest free slots: every one a sink
    far = int(np.argmax(distance))
    agents = np.array([points[ring[0]] + (0.05, 0.0), points[far]])
    grid = build_grid(points, SPACING)
    target, nearest = np.empty((2, 2)), np.empty(2, np.int64)
    gap, sink, value = np.empty(2), np.empty(2, np.bool_), np.empty(2)
    seek_slots(agents, points, distance, field, traffic, 10.0, np.zeros(2), np.zeros(2, np.int64), 1.5 * SPACING,
               *grid.kernel_args(), target, nearest, gap, sink, value)
    assert nearest[0] == ring[0] and sink[0] and gap[0] == pytest.approx(0.05)
    assert nearest[1] == far and not sink[1]
    # the far one steers one step or two down the field, toward the goal
    assert np.hypot(*(target[1] - (1.0, -2.0))) < distance[far]
    assert np.hypot(*(target[1] - points[far])) <= 1.5 * SPACING
    # its way down the field passes slots that are no sinks and ends before the sink it reaches
    traffic_next = np.zeros(points.shape[0], np.int64)
    trace_ways(nearest[1:], field, source, distance, 10.0, neighbours, 100, traffic_next)
    passed = np.flatnonzero(traffic_next)
    assert far in passed and distance[passed].min() > 1.2 and np.all(field[passed] < 10.0 * distance[passed])
    # a slot claimed by a walker standing on it is no source for the field
    claimed = np.empty(points.shape[0], np.bool_)
    claim_slots(agents[:1], points, 0.5 * SPACING, *grid.kernel_args(), claimed)
    assert np.flatnonzero(claimed).tolist() == [ring[0]]


def crowd_world(count: int, spreading: bool = True, goals=None, avoidance: bool = False) -> World:
    """``count`` agents west of the origin sent to (0, 0) (or to ``goals``), no map."""
    world = World(seed=5)
    world.add_systems(PathFollowSystem(goal_spreading=spreading), SteeringSystem(), PhysicsSystem())
    rng = np.random.default_rng(4)
    starts = np.column_stack([rng.uniform(-14, -6, count), rng.uniform(-5, 5, count)])
    for k, start in enumerate(starts):
        goal = (0.0, 0.0) if goals is None else goals[k]
        parts = [Position(*start), Velocity(), Agent(max_speed=1.4, max_force=20.0, mass=1 / 60, stopping_distance=0.5),
                 Collider(radius=0.3), SteeringWeights({"follow_path": 1.0})]
        if avoidance:
            parts.append(Avoidance())
        e = world.spawn(*parts)
        world.add_component(e, PathRequest(goal=goal))
        world.add_component(e, ecs_nav.Path(waypoints=[tuple(start), goal], status="complete"))
    return world


def test_a_crowd_sent_to_one_point_fills_a_disc_round_it_once_each():
    world = crowd_world(40, avoidance=True)
    log = []
    world.on(ecs_nav.TargetReached, lambda e: log.append(e.entity))
    for _ in range(3600):
        world.step()
        if len(log) == 40:
            break
    t = world.table
    assert sorted(log) == sorted(t.entity[: t.n].tolist())  # every agent, once
    assert np.all(t.follow_state[: t.n] == FOLLOW_STOPPED)
    spacing = 2 * 0.3 + SLOT_GAP
    disc = spacing * math.sqrt(40 * math.sqrt(3) / (2 * math.pi))
    assert np.hypot(*t.pos[: t.n].T).max() <= 1.5 * disc
    assert GOAL_SLOTS in world.resources and np.all(t.goal_slot_index[: t.n] >= 0)  # each stopped on a slot


def test_agents_alone_at_their_goals_get_no_slots_and_move_as_without_spreading():
    goals = [(float(k), 3.0) for k in range(6)]
    digests = []
    for spreading in (True, False):
        world = crowd_world(6, spreading, goals)
        world.run(900)
        assert GOAL_SLOTS not in world.resources
        digests.append(world.state_digest())
    assert digests[0] == digests[1]


def test_an_agent_stopped_on_its_slot_holds_its_place_as_a_walker_passes_it():
    world = crowd_world(12, avoidance=True)
    for _ in range(3000):
        world.step()
        if np.all(world.table.follow_state[: world.table.n] == FOLLOW_STOPPED):
            break
    t = world.table
    n = t.n
    assert np.all(t.follow_state[:n] == FOLLOW_STOPPED) and not np.any(t.goal_slot_index[:n] == SEEKING)
    before = t.pos[:n].copy()
    edge = float(before[:, 1].max())  # a walker passes the crowd's edge, its way 0.4 m off a body's centre
    walker = world.spawn(Position(-6.0, edge + 0.4), Velocity(), Agent(max_speed=1.4, max_force=20.0, mass=1 / 60),
                         Collider(radius=0.3), SteeringWeights({"follow_path": 1.0}), Avoidance())
    world.add_component(walker, ecs_nav.Path(waypoints=[(-6.0, edge + 0.4), (6.0, edge + 0.4)], status="complete"))
    world.run(900)
    assert world.table.pos[world.table.row_of(walker), 0] > 3.0  # it got past the crowd
    moved = np.hypot(*(t.pos[:n] - before).T)
    assert moved.max() < 0.05  # nobody at rest gave way to it: it went round them


@pytest.mark.parametrize(("name", "value"), [("slot_gap", -0.1), ("slot_gap", math.nan), ("assign_margin", -1.0),
                                             ("assign_margin", math.inf)])
def test_a_bad_spreading_setting_is_refused_by_name(name, value):
    with pytest.raises(ValueError, match=rf"PathFollowSystem\.{name}: must be >= 0"):
        PathFollowSystem(**{name: value})


def test_the_packing_refuses_a_bad_spacing_or_centre():
    with pytest.raises(ValueError, match="spacing must be > 0"):
        hex_lattice((0, 0), 0.0, 3.0)
    with pytest.raises(ValueError, match="centre must be a finite"):
        hex_lattice((0, math.nan), 0.7, 3.0)
