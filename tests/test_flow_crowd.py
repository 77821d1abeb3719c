"""Flow-field crowds through the card's systems: PathRequest(method="flow_field") from a scene
file and from Python, shared fields, rebuilds, eviction, exits and zones, group arrival."""

import numpy as np
import pytest
from test_group_arrival import assert_crowd_arrived, assert_one_crowd_round_the_goal, open_hall

from ecs_nav import Agent, Collider, PathFailed, PathRequest, Position, SteeringWeights, TargetReached, Velocity
from ecs_nav.core.table import FOLLOW_NONE, FOLLOW_STOPPED
from ecs_nav.motion.arrival import goal_key_of_field
from ecs_nav.nav.fields import FIELDS, FieldGoal
from ecs_nav.scene.files import build_world, load_scene, scene_from_dict
from ecs_nav.testing import lone_travel_ticks, run_crowd


def flow_hall(count, **request):
    scene = open_hall(count)
    scene["entity"][0]["PathRequest"] = {"goal": [20, 0], "method": "flow_field", **request}
    return scene


def test_two_thousand_agents_on_one_shared_field_all_arrive_once_and_rest():
    # group arrival alone: spread over the floor round the goal, the last of 2,000 walk round a
    # crowd 16 m across and arrive after about 150 s, not within 3 x the lone travel time (106 s);
    # tests/test_doorway_scene.py holds goal spreading to its own bars
    lone = lone_travel_ticks(build_world(scene_from_dict(flow_hall(2000))), goal=(20, 0), max_ticks=6000)
    world = build_world(scene_from_dict(flow_hall(2000)))
    world.system("PathFollowSystem").goal_spreading = False
    out = run_crowd(world, max_ticks=3 * lone)
    assert_crowd_arrived(out, lone)
    assert_one_crowd_round_the_goal(world, goal=(20, 0))
    fields = world.resources[FIELDS]
    assert len(fields.fields) == 1 and fields.builds == 1  # one field for all, built once
    assert world.system("PathfindSystem").searches == 0  # and no path search at all


def test_a_field_request_gets_no_path_and_its_row_names_the_shared_field():
    world = build_world(scene_from_dict(flow_hall(5)))
    world.step()
    t = world.table
    fid = t.field_id[: t.n]
    assert np.all(fid == fid[0]) and fid[0] >= 0
    assert np.all(t.goal_key[: t.n] == goal_key_of_field(int(fid[0])))
    from ecs_nav import Path

    assert world.query(Path) == []
    shared = world.resources[FIELDS].get(int(fid[0]))
    assert shared.goal == FieldGoal(points=((20.0, 0.0),))
    assert np.isfinite(shared.flow.distance[shared.flow.goals]).all()


def test_a_field_is_rebuilt_when_the_graph_changes_under_it():
    world = build_world(scene_from_dict(flow_hall(3)))
    world.run(2)
    fields = world.resources[FIELDS]
    shared = next(iter(fields.fields.values()))
    before = shared.flow.distance.copy()
    # a wall dropped across the hall (a dynamic box): the graph changes, the field follows
    world.spawn(Position(5, 0), Collider(shape="box", size=(2, 60), height=2.0))
    world.run(2)
    assert shared.flow.is_current(world.nav_graph)
    assert fields.builds == 2
    assert not np.array_equal(np.isfinite(before), np.isfinite(shared.flow.distance)) or \
        np.nanmax(np.where(np.isfinite(shared.flow.distance), shared.flow.distance, 0)) > \
        np.nanmax(np.where(np.isfinite(before), before, 0))


def test_a_field_toward_a_moving_target_is_rebuilt_at_most_once_per_period():
    world = build_world(scene_from_dict(open_hall(1)))
    world.step()
    target = world.spawn(Position(20, 0), Velocity(), Agent(max_speed=2.0))
    walker = world.spawn(Position(-20, 0), Velocity(), Agent(max_speed=1.0), Collider(radius=0.3),
                         SteeringWeights({"follow_path": 1.0}))
    world.add_component(walker, PathRequest(target=target, method="flow_field", replan_period=30))
    fields = world.resources.setdefault(FIELDS, None)
    world.step()
    fields = world.resources[FIELDS]
    shared = fields.field_for(FieldGoal(entity=target))
    assert shared.flow is not None and fields.builds == 1
    world.get(target, Velocity).vy = 2.0  # the target walks north, a node every half second
    builds = []
    for _ in range(120):
        world.table.vel[world.table.row_of(target)] = (0.0, 2.0)
        world.step()
        builds.append(fields.builds)
    rebuilt_at = np.flatnonzero(np.diff(builds)) + 1
    assert 2 <= len(rebuilt_at) <= 120 // 30 + 1
    assert np.all(np.diff(rebuilt_at) >= 30)


def test_unused_fields_are_evicted():
    world = build_world(scene_from_dict(flow_hall(2)))
    world.run(2)
    fields = world.resources[FIELDS]
    fields.unused_ticks = 10
    for e in world.find(PathRequest):
        world.remove_component(e, PathRequest)
    world.run(12)
    assert fields.fields == {}
    t = world.table
    assert np.all(t.field_id[: t.n] == -1)


def test_editing_a_request_moves_the_crowd_to_the_new_goal():
    world = build_world(scene_from_dict(flow_hall(20)))
    world.run(5)
    for e in world.find(PathRequest):
        world.get(e, PathRequest).goal = (-20.0, 20.0)
    out = run_crowd(world, 3000)
    assert out.arrived == 20
    t = world.table
    assert np.all(np.hypot(*(t.pos[: t.n] - (-20, 20)).T) < 6.0)


def exits_scene(count, despawn=True):
    """A 30 x 10 m room with a door at each end; agents placed nearer the east door."""
    return {
        "world": {"seed": 2},
        "map": {"bounds": [-20, -10, 20, 10], "box": [
            {"center": [0, 5.25], "size": [30, 0.5], "height": 2.0},
            {"center": [0, -5.25], "size": [30, 0.5], "height": 2.0},
            {"center": [-15, 3], "size": [0.5, 4], "height": 2.0},
            {"center": [-15, -3], "size": [0.5, 4], "height": 2.0},
            {"center": [15, 3], "size": [0.5, 4], "height": 2.0},
            {"center": [15, -3], "size": [0.5, 4], "height": 2.0},
        ]},
        "navmap": {"scan_range": [20, 10, 10], "spacing": 1.0, "clearance": 0.4},
        "entity": [{
            "name": "people", "count": count, "spawn_area": [2, -4, 13, 4],
            "Agent": {"max_speed": 1.4, "max_force": 10.0}, "Collider": {"radius": 0.25}, "Velocity": {},
            "SteeringWeights": {"weights": {"follow_path": 1.0, "separation": 1.0}, "neighbour_radius": 0.8},
            "PathRequest": {"goals": [[-18, 0], [18, 0]], "method": "flow_field", "despawn_on_arrival": despawn},
        }],
    }


def test_exits_take_each_agent_to_its_nearest_and_remove_it_with_a_count():
    world = build_world(scene_from_dict(exits_scene(60)))
    reached = []
    world.on(TargetReached, lambda ev: reached.append(ev.entity))
    world.step()
    shared = next(iter(world.resources[FIELDS].fields.values()))
    world.run(3000)
    assert world.table.n == 0 and len(set(reached)) == 60 and len(reached) == 60
    assert shared.arrivals.tolist() == [0, 60]  # all nearer the east door
    assert world.resources[FIELDS].fields == {}  # nobody left to use it: evicted
    assert world.summary()["events"]["TargetReached"] == 60


def test_a_zone_goal_counts_arrival_anywhere_inside():
    scene = exits_scene(10, despawn=False)
    scene["entity"][0]["PathRequest"] = {"zone": [-20, -3, -16, 3], "method": "flow_field"}
    world = build_world(scene_from_dict(scene))
    out = run_crowd(world, 4000)
    assert out.arrived == 10
    t = world.table
    assert np.all(t.follow_state[: t.n] == FOLLOW_STOPPED)
    assert np.all(t.pos[: t.n, 0] < -12)


def test_a_crowd_cut_off_from_its_goal_reports_one_failure_each_and_waits():
    scene = exits_scene(5, despawn=False)
    scene["map"]["box"].append({"center": [-15, 0], "size": [0.5, 2], "height": 2.0})  # west door shut
    scene["entity"][0]["PathRequest"] = {"goal": [-18, 0], "method": "flow_field"}
    scene["entity"][0]["spawn_area"] = [-12, -4, -2, 4]
    scene["map"]["box"].append({"center": [15, 0], "size": [0.5, 2], "height": 2.0})  # east door shut
    world = build_world(scene_from_dict(scene))
    failed = []
    world.on(PathFailed, failed.append)
    world.run(300)
    assert sorted(ev.entity for ev in failed) == sorted(world.find(PathRequest))
    assert all(ev.status == "unreachable" for ev in failed)
    t = world.table
    assert np.all(t.follow_state[: t.n] == FOLLOW_NONE)


def test_goals_and_zones_need_a_flow_field():
    with pytest.raises(ValueError, match="flow_field"):
        PathRequest(goals=((1.0, 2.0),))
    with pytest.raises(ValueError, match="exactly one of"):
        PathRequest(goal=(1.0, 2.0), zone=(0.0, 0.0, 1.0, 1.0), method="flow_field")
    with pytest.raises(ValueError, match="min <= max"):
        PathRequest(zone=(1.0, 0.0, 0.0, 1.0), method="flow_field")


def test_the_evacuation_scene_empties_the_building_and_counts_every_exit():
    # the shipped scene with 100 people a room instead of 1,000 (the bench runs the full one)
    from ecs_nav.scene.files import parse_scene

    scene = parse_scene("evacuation")
    for entry in scene.entities:
        entry["count"] = 100
    world = build_world(scene)
    reached = []
    world.on(TargetReached, lambda ev: reached.append(ev.entity))
    world.step()
    shared = next(iter(world.resources[FIELDS].fields.values()))
    for _ in range(60 * 90):
        world.step()
        if world.table.n == 0:
            break
    assert world.table.n == 0, f"{world.table.n} of 1000 still inside after {world.time:.0f} s"
    assert len(reached) == len(set(reached)) == 1000
    assert shared.arrivals.sum() == 1000 and np.all(shared.arrivals > 0)  # all four exits used
    by_exit = {tuple(p): int(a) for p, a in zip(shared.goal_points.tolist(), shared.arrivals)}
    print(f"evacuated 1000 in {world.time:.1f} s; by exit: {by_exit}")


def test_the_shipped_scene_file_loads_with_a_flow_field_crowd():
    world = load_scene("evacuation")
    assert world.table.n == 10_000
    world.step()
    t = world.table
    assert np.all(t.field_id[: t.n] == t.field_id[0]) and t.despawn_on_arrival[: t.n].all()


def test_a_flow_field_crowd_is_deterministic():
    from ecs_nav.testing import assert_deterministic

    assert_deterministic(lambda: build_world(scene_from_dict(exits_scene(40))), ticks=400, every=100)
