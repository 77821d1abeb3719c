"""PathFollowSystem: seed 004 radius/advance/modes, sweep-past, skip-ahead (seed 002), seed 000
arrival (TargetReached once, stop, face the target), stuck detection."""

import math

import numpy as np
import pytest
from ecs_nav.systems.path_follow import STOP_HYSTERESIS, PathFollowSystem
from ecs_nav.systems.steering import SteeringSystem

from ecs_nav import (
    Agent,
    Path,
    PathRequest,
    Position,
    SteeringWeights,
    Stuck,
    TargetReached,
    Velocity,
    WaypointReached,
    World,
)
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_NONE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.motion.arrival import STUCK_RELEASE, STUCK_REPORTED
from ecs_nav.testing import Integrate


def make_world(*, steer=True, stuck_ticks=20):
    w = World(seed=3)
    systems = [PathFollowSystem(stuck_ticks=stuck_ticks)]
    if steer:
        systems += [SteeringSystem(), Integrate()]
    w.add_systems(*systems)
    return w


def record(world, *types):
    log = []
    for t in types:
        world.on(t, log.append)
    return log


def follower(world, pos=(0.0, 0.0), max_speed=5.0, max_force=40.0, **agent):
    return world.spawn(Position(*pos), Velocity(), Agent(max_speed=max_speed, max_force=max_force, **agent),
                       SteeringWeights({"follow_path": 1.0}))


def test_waypoint_advances_within_radius_only():
    w = make_world(steer=False)
    e = w.spawn(Position(0, 0), Agent())
    path = Path(waypoints=[(0, 0), (10, 0), (10, 10)], radius=1.0, status="complete")
    w.add_component(e, path)
    log = record(w, WaypointReached)
    w.step()
    row = w.table.row_of(e)
    assert path.index == 1 and log == []  # standing on waypoint 0: skipped silently
    assert tuple(w.table.steer_target[row]) == (10, 0) and w.table.follow_state[row] == FOLLOW_SEEK
    w.get(e, Position).x = 8.8  # 1.2 away: not yet (and no plane crossed)
    w.step()
    assert path.index == 1
    w.get(e, Position).x = 9.1  # within the radius
    w.step()
    assert path.index == 2 and [ev.index for ev in log] == [1]
    assert tuple(w.table.steer_target[row]) == (10, 10) and w.table.follow_state[row] == FOLLOW_ARRIVE


def track_near_corner(radius):
    w = make_world()
    e = follower(w)
    w.add_component(e, Path(waypoints=[(0, 0), (20, 0), (20, 20)], radius=radius, status="complete"))
    track = []
    for _ in range(600):
        w.step()
        track.append(w.get(e, Position).as_array())
    track = np.array(track)
    return float(np.min(np.hypot(track[:, 0] - 20, track[:, 1]))), track


def test_larger_radius_cuts_corners_more():
    small, _ = track_near_corner(0.5)
    large, track = track_near_corner(4.0)
    assert large > small + 1.0
    assert np.hypot(*(track[-1] - (20, 20))) < 1.6  # both still get there


def test_sweep_past_advances_without_being_inside_the_radius():
    w = make_world(steer=False)
    e = w.spawn(Position(0, 0), Agent())
    path = Path(waypoints=[(0, 0), (5, 0.2), (5, 10), (20, 10)], radius=0.5, status="complete")
    w.add_component(e, path)
    w.step()
    assert path.index == 1
    w.get(e, Position).x = 10.0  # jumped over: the segment passes 0.2 from the waypoint
    w.step()
    assert path.index == 2
    # crossing the plane through the waypoint, perpendicular to the leg, far from its radius
    w.get(e, Position).y = 11.5
    w.step()
    assert path.index == 3


def test_fast_agent_does_not_orbit():
    w = make_world()
    # 120 units/s at 60 Hz: 2 units per tick, four times the radius
    e = follower(w, max_speed=120.0, max_force=5000.0)
    path = Path(waypoints=[(0, 0), (17.3, 0.7), (17.9, 19.1), (0.4, 18.6)], radius=0.5,
                status="complete", mode="loop")
    w.add_component(e, path)
    log = record(w, WaypointReached, Stuck)
    w.run(600)
    # laps keep coming, every waypoint in turn (an orbiting agent stays on one waypoint); no
    # waypoint of the loop is ever within the radius of a position it stands on at a tick end
    assert [ev.index for ev in log] == [1, 2, 3, 0] * 3 + [1]


def test_skip_ahead_when_a_later_waypoint_is_reached():
    w = make_world(steer=False)
    e = w.spawn(Position(0, 0), Agent())
    path = Path(waypoints=[(0, 0), (10, 0), (10, 1), (10, 10)], radius=0.6, status="complete")
    w.add_component(e, path)
    log = record(w, WaypointReached)
    w.step()
    assert path.index == 1
    w.get(e, Position).x, w.get(e, Position).y = 9.5, 1.0  # not at waypoint 1, inside waypoint 2
    w.step()
    assert path.index == 3 and [ev.index for ev in log] == [1, 2]


def test_patrol_ping_pongs_at_both_ends():
    w = make_world()
    e = follower(w)
    path = Path(waypoints=[(0, 0), (8, 0), (8, 8)], radius=0.7, status="complete", mode="patrol")
    w.add_component(e, path)
    log = record(w, WaypointReached)
    directions = []
    w.on(WaypointReached, lambda ev: directions.append(path.direction))
    w.run(900)
    passed = [ev.index for ev in log]
    assert passed[:7] == [1, 2, 1, 0, 1, 2, 1]
    assert -1 in directions and 1 in directions
    assert w.table.follow_state[w.table.row_of(e)] == FOLLOW_SEEK  # a patrol never arrives


def test_loop_wraps_to_the_first_waypoint():
    w = make_world()
    e = follower(w)
    path = Path(waypoints=[(0, 0), (8, 0), (8, 8)], radius=0.7, status="complete", mode="loop")
    w.add_component(e, path)
    log = record(w, WaypointReached)
    w.run(1500)
    assert [ev.index for ev in log][:7] == [1, 2, 0, 1, 2, 0, 1]


def test_target_reached_once_and_agent_stops_within_stopping_distance():
    w = make_world()
    e = follower(w)
    w.add_component(e, Path(waypoints=[(0, 0), (10, 0), (10, 10)], radius=1.0, status="complete"))
    log = record(w, TargetReached)
    w.run(600)
    row = w.table.row_of(e)
    assert len(log) == 1 and log[0].entity == e
    assert w.table.follow_state[row] == FOLLOW_STOPPED
    assert np.hypot(*(w.table.pos[row] - (10, 10))) <= w.table.stopping_distance[row]
    assert np.hypot(*w.table.vel[row]) < 1e-6


def test_target_reached_rearms_when_the_target_entity_moves_away():
    w = make_world()
    player = w.spawn(Position(12, 0))
    e = follower(w)
    w.add_component(e, PathRequest(target=player))
    path = Path(waypoints=[(0, 0), (6, 0), (10, 0)], radius=1.0, status="complete")
    w.add_component(e, path)
    log = record(w, TargetReached)
    w.run(300)
    assert len(log) == 1
    row = w.table.row_of(e)
    assert np.hypot(*(w.table.pos[row] - (12, 0))) <= 1.5
    w.run(60)  # still there: no second event
    assert len(log) == 1
    w.get(player, Position).x = 12 + 1.5 + STOP_HYSTERESIS + 4.0  # walks off
    w.run(400)
    assert len(log) == 2  # followed the target entity itself and arrived again
    assert np.hypot(*(w.table.pos[row] - w.table.pos[w.table.row_of(player)])) <= 1.5


def test_goal_of_the_request_is_the_final_target():
    w = make_world()
    e = follower(w)
    w.add_component(e, PathRequest(goal=(14, 0)))
    w.add_component(e, Path(waypoints=[(0, 0), (6, 0), (10, 0)], radius=1.0, status="complete"))
    log = record(w, TargetReached)
    w.run(400)
    assert len(log) == 1
    assert np.hypot(*(w.get(e, Position).as_array() - (14, 0))) <= 1.5


def test_heading_turns_toward_the_target_at_turn_speed():
    w = make_world(steer=False)
    e = w.spawn(Position(0, 0), Agent(turn_speed=10.0))
    w.table.heading[w.table.row_of(e)] = (0.0, 1.0)  # facing +y, the target is at +x
    w.add_component(e, Path(waypoints=[(1, 0)], radius=1.0, status="complete"))
    log = record(w, TargetReached)
    w.step()
    row = w.table.row_of(e)
    assert w.table.follow_state[row] == FOLLOW_STOPPED and len(log) == 1
    # Unity's Quaternion.Lerp from yaw 90 to yaw 0 with t = dt * turn_speed = 1/6: the half-angle
    # quaternions (cos 45, sin 45) and (1, 0) lerped, yaw = 2 atan2
    t = 10.0 / 60.0
    q = np.array([math.cos(math.pi / 4), math.sin(math.pi / 4)]) * (1 - t) + np.array([1.0, 0.0]) * t
    want = 2 * math.atan2(q[1], q[0])
    assert w.table.heading[row] == pytest.approx((math.cos(want), math.sin(want)), abs=1e-12)
    w.run(120)
    assert w.table.heading[row] == pytest.approx((1.0, 0.0), abs=1e-6)
    assert len(log) == 1


def test_only_the_once_path_rows_stopped_at_their_target_turn_to_face_it():
    """``follow_rows.face_stopped``: the rows that follow a once-path and are STOPPED turn as
    ``physics.turn_heading`` turns them (bit for bit); every other row keeps its heading."""
    from ecs_nav.motion.follow_rows import face_stopped
    from ecs_nav.motion.physics import turn_heading

    rng = np.random.default_rng(3)
    n, m = 12, 8
    angle = rng.uniform(0, 2 * np.pi, n)
    heading = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    turn_speed = rng.uniform(0.5, 20, n)
    follow_state = rng.choice([FOLLOW_NONE, FOLLOW_SEEK, FOLLOW_ARRIVE, FOLLOW_STOPPED], n).astype(np.int8)
    rows = rng.permutation(n)[:m].astype(np.int64)
    once = rng.random(m) < 0.7
    follow_state[rows[::2]] = FOLLOW_STOPPED
    once[:3] = True, True, False  # a STOPPED row without a once-path does not turn
    to_final = rng.uniform(-3, 3, (m, 2))
    to_final[0] = 0.0  # on the target: no direction, the heading stays
    turned = once & (follow_state[rows] == FOLLOW_STOPPED)
    assert turned.any() and not turned.all()
    want = heading.copy()
    sub = want[rows[turned]]
    turn_heading(sub, np.ascontiguousarray(to_final[turned]), turn_speed[rows[turned]], 1 / 60, 0.0)
    want[rows[turned]] = sub
    face_stopped(rows, once, follow_state, FOLLOW_STOPPED, to_final, heading, turn_speed, 1 / 60)
    np.testing.assert_array_equal(heading, want)
    assert not np.array_equal(heading[rows[turned]], np.stack([np.cos(angle), np.sin(angle)], axis=1)[rows[turned]])


@pytest.mark.parametrize("mode", ["loop", "patrol"])
def test_a_loop_or_patrol_of_one_waypoint_arrives_there_and_holds_without_stuck(mode):
    w = make_world()
    on_it, away = follower(w, pos=(0, 0)), follower(w, pos=(20, 0))
    paths = {e: Path(waypoints=[p], radius=0.7, status="complete", mode=mode)
             for e, p in ((on_it, (0, 0)), (away, (26, 0)))}
    for e, path in paths.items():
        w.add_component(e, path)
    log = record(w, Stuck)

    def holds(e, goal):  # within its stopping distance (1.5 m), as at a once-path's goal
        row = w.table.row_of(e)
        return (w.table.follow_state[row] == FOLLOW_STOPPED and np.hypot(*(w.table.pos[row] - goal)) <= 1.5
                and np.hypot(*w.table.vel[row]) < 0.05)

    w.run(600)
    assert log == [] and holds(on_it, (0, 0)) and holds(away, (26, 0))
    assert all(path.status == "complete" and path.index == 0 for path in paths.values())
    w.get(away, Position).x = 23.0  # pushed 3 m off, past 1.5 + STOP_HYSTERESIS: it arrives again
    w.step()
    assert w.table.follow_state[w.table.row_of(away)] == FOLLOW_ARRIVE
    w.run(600)
    assert log == [] and holds(away, (26, 0))
    # a longer route given while holding (the same waypoint at the index): it sets off, not Stuck
    w.run(217)
    paths[on_it].waypoints = np.array([(0.0, 0.0, 0.0), (10.0, 0.0, 0.0)])
    w.run(60)
    assert log == [] and w.table.pos[w.table.row_of(on_it), 0] > 1.0


def test_a_holding_agent_given_a_once_path_walks_it_and_arrives():
    w = make_world()
    e = follower(w, pos=(0, 0))
    w.add_component(e, Path(waypoints=[(0, 0)], radius=0.7, status="complete", mode="loop"))
    w.run(60)
    assert w.table.follow_state[w.table.row_of(e)] == FOLLOW_STOPPED
    log = record(w, TargetReached)
    w.add_component(e, Path(waypoints=[(0, 0), (4, 0)], radius=0.7, status="complete"))
    w.run(300)
    assert [ev.entity for ev in log] == [e] and w.table.pos[w.table.row_of(e), 0] > 2.0


def test_a_holding_agent_with_a_request_is_no_arrived_agent_for_group_arrival():
    from ecs_nav.systems.physics import PhysicsSystem

    from ecs_nav import Collider

    w = World(seed=3)
    w.add_systems(PathFollowSystem(), SteeringSystem(), PhysicsSystem())
    holder, walker = (w.spawn(Position(*p), Velocity(), Agent(max_speed=2.0, max_force=20.0), Collider(radius=0.35),
                              SteeringWeights({"follow_path": 1.0})) for p in ((0, 0), (-6, 0.5)))
    w.add_component(holder, Path(waypoints=[(0, 0)], radius=0.7, status="complete", mode="loop"))
    w.add_component(holder, PathRequest(goal=(5.0, 0.5)))  # (no PathfindSystem: the paths stay as given)
    w.add_component(walker, Path(waypoints=[(-6, 0.5), (5, 0.5)], radius=0.7, status="complete"))
    w.add_component(walker, PathRequest(goal=(5.0, 0.5)))
    log = record(w, TargetReached)
    w.run(900)
    assert w.table.goal_key[w.table.row_of(holder)] == -1
    # the walker slides past the holder to its goal: it is not settled against it 5 m short
    assert [ev.entity for ev in log] == [walker]
    assert np.hypot(*(w.table.pos[w.table.row_of(walker)] - (5.0, 0.5))) <= 1.5


def test_a_loop_of_one_waypoint_held_away_from_it_is_stuck():
    w = make_world(steer=False, stuck_ticks=5)
    e = w.spawn(Position(0, 0), Agent())  # cannot move: no velocity
    w.add_component(e, Path(waypoints=[(10, 0)], radius=1.0, status="complete", mode="loop"))
    log = record(w, Stuck)
    w.run(6)
    assert [ev.entity for ev in log] == [e]


def test_stuck_after_k_ticks_marks_the_path_stale():
    w = make_world(steer=False, stuck_ticks=5)
    e = w.spawn(Position(0, 0), Agent())  # cannot move: no velocity
    path = Path(waypoints=[(0, 0), (10, 0)], radius=1.0, status="complete")
    w.add_component(e, path)
    log = record(w, Stuck)
    w.run(5)
    assert log == [] and path.status == "complete"
    w.step()
    assert [ev.entity for ev in log] == [e] and log[0].tick == 5 and path.status == "stale"
    assert w.table.stuck_ticks[w.table.row_of(e)] == STUCK_REPORTED  # reported: silent until it moves


def test_stuck_is_reported_once_per_blockage_and_again_only_after_moving_off():
    w = make_world(steer=False, stuck_ticks=5)
    e = w.spawn(Position(0, 0), Agent())  # cannot move by itself: no velocity
    path = Path(waypoints=[(0, 0), (10, 0)], radius=1.0, status="complete")
    w.add_component(e, path)
    log = record(w, Stuck)
    w.run(200)
    assert [ev.tick for ev in log] == [5]
    path.waypoints = np.array([(0.0, 0.0, 0.0), (10.0, 0.0, 0.0)])  # a re-plan of the same route
    w.run(50)
    assert len(log) == 1
    w.get(e, Position).x = STUCK_RELEASE / 2  # jostled less than STUCK_RELEASE: the same blockage
    w.run(50)
    assert len(log) == 1
    w.get(e, Position).x = 3 * STUCK_RELEASE  # moved off, then held again: a new blockage
    w.run(5)
    assert len(log) == 1
    w.run(2)
    assert len(log) == 2


def test_moving_resets_the_stuck_counter():
    # seed 002: stuck means the position did not change for K ticks (K = 20); an agent that
    # starts from rest (1 m/s^2 here) moves off its spot well within that
    w = make_world(stuck_ticks=20)
    e = follower(w, max_speed=1.0)
    path = Path(waypoints=[(0, 0), (30, 0)], radius=1.0, status="complete")
    w.add_component(e, path)
    log = record(w, Stuck)
    w.run(200)
    assert log == [] and path.status == "complete"


def test_new_path_resets_following():
    w = make_world(steer=False, stuck_ticks=5)
    e = w.spawn(Position(0, 0), Agent())
    path = Path(waypoints=[(0, 0), (10, 0)], radius=1.0, status="complete")
    w.add_component(e, path)
    w.run(4)
    path.waypoints = np.array([[0.0, 0.0, 0.0], [0.0, 7.0, 0.0]])  # replaced in place
    w.step()
    row = w.table.row_of(e)
    assert tuple(w.table.steer_target[row]) == (0, 7) and w.table.stuck_ticks[row] == 0


@pytest.mark.parametrize("path", [
    Path(waypoints=[(5, 5)], status="unreachable"),
    Path(status="complete"),
])
def test_unreachable_or_empty_path_means_no_following(path):
    w = make_world()
    e = follower(w)
    w.add_component(e, path)
    w.run(3)
    row = w.table.row_of(e)
    assert w.table.follow_state[row] == FOLLOW_NONE and not w.table.has_steer_target[row]
    assert np.all(w.table.vel[row] == 0)


def test_removing_the_path_stops_following():
    w = make_world()
    e = follower(w)
    w.add_component(e, Path(waypoints=[(0, 0), (10, 0)], status="complete"))
    w.run(3)
    w.remove_component(e, Path)
    w.step()
    row = w.table.row_of(e)
    assert w.table.follow_state[row] == FOLLOW_NONE and not w.table.has_steer_target[row]


def test_many_followers_despawn_and_determinism():
    def run():
        w = make_world()
        ents = []
        for i in range(30):
            e = follower(w, pos=(i * 0.7, (i % 5) * 1.3))
            w.add_component(e, Path(waypoints=[(0, 0), (10, i % 7), (3, 12)], status="complete",
                                    mode=("once", "patrol", "loop")[i % 3]))
            ents.append(e)
        w.run(50)
        for e in ents[::4]:
            w.despawn(e)
        w.run(50)
        return w.state_digest(), w.event_counts
    a, b = run(), run()
    assert a == b and a[1]["WaypointReached"] > 0


def test_every_call_of_the_followers_kernels_has_the_same_argument_types():
    """The path follower calls its kernels without numba's dispatch (``aot.DirectCall``), which
    would check each argument's type: so every world must hand each kernel the same types -- in
    every built-in scene (target entities, patrols, group arrival, despawns on arrival, flow
    fields, side-view bots) and after the table has grown."""
    from unittest import mock

    import numba
    from ecs_nav.systems import path_arrival, path_follow

    from ecs_nav import load_scene
    from ecs_nav.motion import arrival
    from ecs_nav.scene.files import builtin_scenes

    seen = {}

    def spying(module, name):
        real = getattr(module, name)

        def spy(*args):
            seen.setdefault(name, set()).add(tuple(numba.typeof(a) for a in args))
            return real(*args)

        return mock.patch.object(module, name, side_effect=spy)

    with (spying(path_follow, "waypoint_hits"), spying(path_arrival, "final_approach"),
          spying(path_arrival, "face_stopped"), spying(arrival, "_count_still")):
        for scene in builtin_scenes():
            w = load_scene(scene)
            w.run(90)
            w.close()
        w = make_world()
        capacity = w.table.capacity
        while w.table.capacity == capacity:  # past it: the table grows, its views are made again
            x = float(w.table.n % 20)
            w.spawn(Position(x, 0.0), Velocity(), Agent(), SteeringWeights({"follow_path": 1.0}),
                    Path(waypoints=np.array([[x, 5.0], [x, 10.0]])))
            w.run(1)
        w.run(2)
        w.close()
    assert set(seen) == {"waypoint_hits", "final_approach", "face_stopped", "_count_still"}
    assert {name: len(types) for name, types in seen.items()} == dict.fromkeys(seen, 1)


def test_standing_still_names_rows_and_flags_that_do_not_match():
    """``standing_still`` hands its rows to a kernel without numba's dispatch: rows that are not
    one run of row ids, or flags not one per row, are a ValueError, not a misread."""
    from ecs_nav.motion.arrival import standing_still

    w = make_world()
    for x in range(3):
        w.spawn(Position(float(x), 0.0), Velocity(), Agent())
    rows = np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError, match=r"rows of shape \(3, 1\) and active of shape \(3, 1\)"):
        standing_still(w.table, rows.reshape(3, 1), np.ones((3, 1), bool), 5)
    with pytest.raises(ValueError, match=r"active of shape \(2,\)"):
        standing_still(w.table, rows, np.ones(2, bool), 5)
    assert standing_still(w.table, slice(0, 3, 2), [True, True], 5).tolist() == [False, False]
