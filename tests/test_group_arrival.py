"""Group arrival: crowds sent to one point all arrive, once each, and come to rest.

The figures asked of a crowd (issue "Crowds that arrive"): every agent reports TargetReached
exactly once, none reports Stuck more than twice, and the crowd is at rest (every speed under
0.05 m/s) within three times the travel time of a lone agent from the farthest spawn.
"""

import os

import numpy as np
import pytest
from ecs_nav.systems.goal_spreading import GOAL_SLOTS
from ecs_nav.systems.path_follow import PathFollowSystem
from ecs_nav.systems.physics import PhysicsSystem
from ecs_nav.systems.steering import SteeringSystem

from ecs_nav import Agent, Collider, Path, PathRequest, Position, SteeringWeights, Velocity, World
from ecs_nav.core.table import FOLLOW_STOPPED
from ecs_nav.motion.arrival import (
    SCAN_CANDIDATES,
    SETTLE_GAP,
    goal_key_of_entity,
    goal_key_of_point,
    settled_against_arrived,
)
from ecs_nav.scene.files import build_world, load_scene, scene_from_dict, scenes_dir
from ecs_nav.testing import lone_travel_ticks, run_crowd


def assert_crowd_arrived(out, lone_ticks):
    print(out.report(), f"lone travel {lone_ticks} ticks")
    assert out.arrived == out.agents, out.report()
    assert set(out.arrivals.values()) == {1}, out.report()  # once each
    assert max(out.stuck.values(), default=0) <= 2, out.report()
    assert out.rest_tick is not None and out.rest_tick <= 3 * lone_ticks, out.report()


def test_two_hundred_agents_through_a_maze_and_up_a_ramp_all_arrive_once_and_rest():
    lone = lone_travel_ticks(load_scene("gather"), goal=(24, 24), max_ticks=6000)
    world = load_scene("gather")
    out = run_crowd(world, max_ticks=3 * lone)
    assert_crowd_arrived(out, lone)
    assert_one_crowd_round_the_goal(world, goal=(24, 24))


def test_two_hundred_agents_on_string_pulled_paths_through_the_maze_all_arrive_once_and_rest(tmp_path):
    # gather with smooth = true (seeds 1, 2, 5 and 8 arrive as well, and on 2 and 5
    # one agent stops at the goal apart from the crowd). Before, 168-200 of 200 arrived in 3 x the
    # lone travel time and most crowds never came to rest: a periodic re-plan measured a pulled
    # route from its best node (on a grid graph always the goal), so it never replaced one
    # (ecs_nav.nav.corridor), not even with a wall between the agent and its waypoint; and a
    # pulled leg was clear from its waypoint only, where the follower takes it as reached up to the
    # Path's radius away -- now each is clear for the agent's disc widened by that radius
    text = (scenes_dir() / "gather.toml").read_text(encoding="utf-8")
    request = "PathRequest = { goal = [24, 24] }"
    assert text.count(request) == 1
    scene = tmp_path / "gather_smooth.toml"
    scene.write_text(text.replace(request, "PathRequest = { goal = [24, 24], smooth = true }"), encoding="utf-8")
    lone = lone_travel_ticks(load_scene(scene), goal=(24, 24), max_ticks=6000)
    world = load_scene(scene)
    out = run_crowd(world, max_ticks=3 * lone)
    assert_crowd_arrived(out, lone)
    assert_one_crowd_round_the_goal(world, goal=(24, 24), bodies_at_goal=True)


def assert_one_crowd_round_the_goal(world, goal, bodies_at_goal=False):
    """Every agent stopped, and the stopped crowd is one connected body of touching agents
    that holds the goal: it grew from the goal outward, nobody settled on their own. With
    ``bodies_at_goal``, more than one body may have grown, each from an agent at the goal
    (within its stopping distance): two that arrived together from different sides stop apart.
    A crowd spread over the floor round its goal (goal spreading) stands on a packing's slots,
    up to a slot's spacing off: there, touching means within two spacings."""
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    t = world.table
    n = t.n
    assert np.all(t.follow_state[:n] == FOLLOW_STOPPED)
    pos = t.pos[:n]
    touch = 2 * t.radius[:n].max() + SETTLE_GAP
    slots = world.resources.get(GOAL_SLOTS)
    if slots is not None:
        touch = max(touch, 2 * max(s.spacing for s in slots.sets.values()))
    pairs = cKDTree(pos).query_pairs(touch + 0.05, output_type="ndarray")
    import scipy.sparse as sp

    adj = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    count, label = connected_components(adj, directed=False)
    at_goal = np.hypot(*(pos - np.asarray(goal)).T) <= t.stopping_distance[:n]
    assert at_goal.any()
    if bodies_at_goal:
        assert set(label[at_goal].tolist()) == set(label.tolist()), f"{count} bodies, not all at the goal"
        return
    assert count == 1 or np.all(label == label[np.flatnonzero(at_goal)[0]]), f"{count} separate crowds"


def open_hall(count: int) -> dict:
    return {
        "world": {"seed": 11},
        "map": {"bounds": [-40, -40, 40, 40]},
        "navmap": {"scan_range": [40, 10, 40], "spacing": 1.0, "clearance": 0.5},
        "entity": [{
            "name": "crowd", "count": count, "spawn_area": [-39, -39, -15, 39],
            "Agent": {"max_speed": 2.0, "max_force": 20.0}, "Collider": {"radius": 0.3}, "Velocity": {},
            "SteeringWeights": {"weights": {"follow_path": 1.0, "separation": 1.0}, "neighbour_radius": 1.0},
            "PathRequest": {"goal": [20, 0], "smooth": True},
        }],
    }


@pytest.mark.slow
def test_two_thousand_agents_in_an_open_hall_all_arrive_once_and_rest():
    # paths for 2,000 agents take ~30 s here: the short form (make test) sends 700, the soak run
    # (ECS_NAV_SOAK=1) all 2,000; tests/test_flow_crowd.py sends 2,000 on a flow field every time
    count = 2000 if os.environ.get("ECS_NAV_SOAK") == "1" else 700
    lone = lone_travel_ticks(build_world(scene_from_dict(open_hall(count))), goal=(20, 0), max_ticks=6000)
    world = build_world(scene_from_dict(open_hall(count)))
    out = run_crowd(world, max_ticks=3 * lone)
    assert_crowd_arrived(out, lone)


# --- the rule itself ---------------------------------------------------------------------------


def test_touching_an_arrived_agent_ahead_with_the_same_goal_counts_only_then():
    pos = np.array([[0.0, 0.0], [0.75, 0.0], [-0.75, 0.0], [0.0, 0.75], [0.0, 5.0]])
    radius = np.full(5, 0.35)
    elevation = np.array([0.0, 0.0, 0.0, 2.5, 0.0])
    key = np.array([7, 7, 7, 7, 8])
    toward = np.array([[1.0, 0.0]])
    # row 1 is ahead (+x) and touching (0.75 <= 0.35 + 0.35 + SETTLE_GAP): settled
    assert settled_against_arrived(pos, radius, elevation, key, [0], toward, [1]).tolist() == [True]
    # behind, not touching, another goal, or a body's height away: not settled
    assert settled_against_arrived(pos, radius, elevation, key, [0], toward, [2]).tolist() == [False]
    assert settled_against_arrived(pos, radius, elevation, key, [0], toward, [4]).tolist() == [False]
    assert settled_against_arrived(pos, radius, elevation, key, [0], [[0.0, 1.0]], [3]).tolist() == [False]
    key2 = key.copy()
    key2[1] = 9
    assert settled_against_arrived(pos, radius, elevation, key2, [0], toward, [1]).tolist() == [False]
    pos2 = pos.copy()
    pos2[1] = (0.7 + SETTLE_GAP + 0.01, 0.0)
    assert settled_against_arrived(pos2, radius, elevation, key, [0], toward, [1]).tolist() == [False]


@pytest.mark.parametrize("seed", range(3))
def test_a_few_candidates_scanned_settle_as_many_binned(seed):
    """Up to SCAN_CANDIDATES candidates are tested by a scan of the arrived rows, more with a
    grid: one at a time (scanned) gives what all at once (binned) gives."""
    rng = np.random.default_rng(seed)
    n = 3000
    pos = rng.uniform(0, 30, (n, 2))
    radius = rng.uniform(0.2, 0.4, n)
    elevation = np.where(rng.random(n) < 0.9, 0.0, 2.5)
    key = rng.integers(0, 3, n)
    candidates = rng.choice(n, 400, replace=False)
    arrived = np.setdiff1d(rng.choice(n, 2000, replace=False), candidates[:200])  # some candidates arrived too
    toward = rng.normal(size=(400, 2))
    assert candidates.size > SCAN_CANDIDATES
    binned = settled_against_arrived(pos, radius, elevation, key, candidates, toward, arrived)
    scanned = np.concatenate([settled_against_arrived(pos, radius, elevation, key, candidates[i:i + 4],
                                                      toward[i:i + 4], arrived) for i in range(0, 400, 4)])
    assert 20 < binned.sum() < 380
    np.testing.assert_array_equal(scanned, binned)


def test_goal_keys_tell_points_and_entities_apart():
    assert goal_key_of_point(3.0, 4.0) == goal_key_of_point(3.0, 4.0 + 1e-9)
    assert goal_key_of_point(3.0, 4.0) != goal_key_of_point(4.0, 3.0)
    assert goal_key_of_entity(5) != goal_key_of_point(5.0, 0.0)
    assert min(goal_key_of_point(-1e6, 1e6), goal_key_of_entity(0)) >= 0


def line_world(group_arrival=True):
    """Three agents in a corridor walking +x to the same point, the first already there."""
    w = World(seed=1)
    w.add_systems(PathFollowSystem(group_arrival=group_arrival), SteeringSystem(), PhysicsSystem())
    ents = []
    for x in (10.0, 9.0, 8.2):
        e = w.spawn(Position(x, 0), Velocity(), Agent(max_speed=2.0, max_force=20.0, stopping_distance=0.2),
                    Collider(radius=0.35), SteeringWeights({"follow_path": 1.0}))
        w.add_component(e, PathRequest(goal=(10.0, 0.0)))
        w.add_component(e, Path(waypoints=[(x, 0), (10.0, 0.0)], status="complete"))
        ents.append(e)
    return w, ents


def test_a_queue_behind_an_arrived_agent_settles_and_each_reports_once():
    w, ents = line_world()
    log = []
    w.on(__import__("ecs_nav").TargetReached, lambda ev: log.append(ev.entity))
    w.run(300)
    assert sorted(log) == sorted(ents)  # the two behind settled in the queue, once each
    t = w.table
    assert np.all(t.follow_state[: t.n] == FOLLOW_STOPPED)
    assert np.all(np.hypot(*t.vel[: t.n].T) < 0.05)


def test_without_group_arrival_the_queue_never_arrives():
    w, ents = line_world(group_arrival=False)
    log = []
    w.on(__import__("ecs_nav").TargetReached, lambda ev: log.append(ev.entity))
    w.run(300)
    assert log == [ents[0]]


@pytest.mark.parametrize("moving_target", [False, True])
def test_a_target_entity_is_a_goal_key_of_its_own(moving_target):
    w = World(seed=1)
    w.add_systems(PathFollowSystem())
    target = w.spawn(Position(5, 5))
    e = w.spawn(Position(0, 0), Agent())
    w.add_component(e, PathRequest(target=target) if moving_target else PathRequest(goal=(5, 5)))
    w.add_component(e, Path(waypoints=[(0, 0), (5, 5)], status="complete"))
    w.step()
    row = w.table.row_of(e)
    want = goal_key_of_entity(target) if moving_target else goal_key_of_point(5, 5)
    assert w.table.goal_key[row] == want
