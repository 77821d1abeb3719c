"""The circle scene (100 agents swapping places through the middle, each avoiding with ORCA):
everyone arrives, nobody overlaps by more than 2% of the two radii, nobody is Stuck, the last
arrives no later than under RVO2 from the same start points, and the run is deterministic."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ecs_nav
from ecs_nav import load_scene
from ecs_nav.motion.neighbours import neighbours_within
from ecs_nav.testing import assert_deterministic

SECONDS = 60.0


def closest_approach(pos: np.ndarray, radius: np.ndarray) -> float:
    """The smallest centre distance minus the sum of the radii over every pair (nearest
    neighbours within reach; inf when none)."""
    offsets, rows = neighbours_within(pos, 2.0 * float(radius.max()) + 0.5, max_neighbours=1)
    has = np.diff(offsets) > 0
    if not has.any():
        return math.inf
    i = np.flatnonzero(has)
    j = rows[offsets[:-1][has]]
    return float((np.hypot(*(pos[i] - pos[j]).T) - radius[i] - radius[j]).min())


@pytest.fixture(scope="module")
def circle_run():
    """The scene run until every agent arrived (at most SECONDS): the World, the tick each
    entity arrived at, the Stuck events, the closest approach and the start points."""
    world = load_scene("circle")
    t = world.table
    n = t.n
    start = t.pos[:n].copy()
    arrivals: dict[int, list[int]] = {}
    stuck = []
    world.on(ecs_nav.TargetReached, lambda e: arrivals.setdefault(e.entity, []).append(world.tick))
    world.on(ecs_nav.Stuck, stuck.append)
    closest = math.inf
    for _ in range(int(SECONDS / world.dt)):
        world.step()
        closest = min(closest, closest_approach(t.pos[:n], t.radius[:n]))
        if len(arrivals) == n:
            break
    yield world, arrivals, stuck, closest, start
    world.close()


def test_every_agent_arrives_once_within_its_stopping_distance_of_its_antipode(circle_run):
    world, arrivals, _, _, start = circle_run
    t = world.table
    n = t.n
    assert n == 100 and sorted(arrivals) == sorted(t.entity[:n].tolist())
    assert all(len(ticks) == 1 for ticks in arrivals.values())
    goals = -start  # (each goal is its agent's start point through the centre)
    assert np.all(np.hypot(*(t.pos[:n] - goals).T) <= t.stopping_distance[:n] + 1e-9)


def test_no_two_agents_overlap_by_more_than_two_percent_of_their_radii(circle_run):
    _, _, _, closest, _ = circle_run
    assert closest >= -0.02 * 2 * 0.3


def test_nobody_is_stuck(circle_run):
    assert circle_run[2] == []


def test_the_last_agent_arrives_no_later_than_under_rvo2(circle_run):
    pyrvo = pytest.importorskip("pyrvo")
    world, arrivals, _, _, start = circle_run
    t = world.table
    avoidance = world.get(int(t.entity[0]), ecs_nav.Avoidance)
    speed, stopping = float(t.max_speed[0]), float(t.stopping_distance[0])
    sim = pyrvo.RVOSimulator(world.dt, avoidance.neighbour_dist, avoidance.max_neighbours, avoidance.time_horizon,
                             avoidance.time_horizon_obst, float(t.radius[0]), speed)
    for p in start:
        sim.add_agent((float(p[0]), float(p[1])))
    goals = -start
    n = start.shape[0]
    arrived = np.zeros(n, bool)
    ours = max(ticks[0] for ticks in arrivals.values())
    for _ in range(ours - 1):  # RVO2's usual loop: toward the goal, slower within a second of it
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        to_goal = goals - pos
        distance = np.hypot(*to_goal.T)
        pref = np.where((distance > speed)[:, None], to_goal / distance[:, None] * speed, to_goal)
        for i in range(n):
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        sim.do_step()
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        arrived |= np.hypot(*(goals - pos).T) <= stopping
    assert not arrived.all(), f"RVO2's agents had all arrived before tick {ours}, ecs_nav's last arrival"


def test_the_circle_runs_the_same_twice():
    assert_deterministic(lambda: load_scene("circle"), 240, every=60)
