"""Re-planning and the follower, end to end on small drawn maps: a periodic re-plan keeps the
route (no orbit, no PathChanged), a partial path's end is a PathFailed and not an arrival,
stuck means standing still (not queueing) and re-plans to the path's last point."""

import numpy as np

from ecs_nav import (
    Agent,
    Collider,
    Path,
    PathChanged,
    PathFailed,
    PathRequest,
    Position,
    SteeringWeights,
    Stuck,
    TargetReached,
    Velocity,
    WaypointReached,
)
from ecs_nav.testing import (
    ascii_world,
    assert_arrives,
    assert_emitted,
    assert_not_emitted,
    record_events,
    spot,
)

CORRIDORS = """
    ##################
    #A...............#
    #................#
    ##############...#
    #B...............#
    #................#
    ##################
"""


def walker(world, at, **agent):
    return world.spawn(Position(*at), Velocity(), Agent(max_speed=3.0, max_force=20.0, **agent),
                       Collider(radius=0.3), SteeringWeights({"follow_path": 1.0}))


def test_periodic_replans_keep_the_route_the_leg_and_emit_one_path_changed():
    world = ascii_world(CORRIDORS, pathfind_period=5)  # a re-plan every 5 ticks
    npc = walker(world, spot(world, "A"))
    world.add_component(npc, PathRequest(goal=spot(world, "B")))
    log = record_events(world, PathChanged, WaypointReached, TargetReached, Stuck)
    ticks = assert_arrives(world, npc, within=2400)
    assert len(log.of(PathChanged)) == 1  # the first plan; every later one kept the route
    assert world.system("PathfindSystem").served > 40  # many re-plans happened
    passed = [ev.index for ev in log.of(WaypointReached)]
    assert len(passed) == len(set(passed)), "a waypoint passed twice: the agent orbited it"
    assert_not_emitted(log, Stuck)
    assert len(log.of(TargetReached)) == 1 and ticks < 2400


def test_the_end_of_a_partial_path_is_a_path_failed_with_the_distance_left_not_an_arrival():
    world = ascii_world("""
        ###########
        #A.....#.B#
        ###########
    """)
    npc = walker(world, spot(world, "A"))
    world.add_component(npc, PathRequest(goal=spot(world, "B")))
    log = record_events(world, PathFailed, TargetReached)
    world.run(600)
    assert_not_emitted(log, TargetReached)
    failures = log.of(PathFailed)
    assert [ev.status for ev in failures] == ["partial", "partial"]  # planned partial; walked to its end
    at_end = failures[1]
    t = world.table
    left = float(np.hypot(*(np.array(spot(world, "B")) - t.pos[t.row_of(npc)])))
    assert at_end.remaining == np.float64(at_end.remaining) and abs(at_end.remaining - left) < 0.2
    assert at_end.remaining > 2.0  # the wall is between: the goal is still metres away
    assert np.hypot(*t.vel[t.row_of(npc)]) < 0.05  # stopped at the end


def test_a_stuck_path_without_a_request_is_replanned_to_its_last_point():
    world = ascii_world("""
        ###########
        #A.......B#
        #.#######.#
        #.........#
        ###########
    """)
    npc = walker(world, spot(world, "A"))
    goal = spot(world, "B")
    # a straight Path given by hand, no request: a crate blocks it halfway
    world.add_component(npc, Path(waypoints=[spot(world, "A"), goal], radius=0.5, status="complete"))
    world.spawn(Position(goal[0] - 4.0, goal[1]), Collider(shape="box", size=(1.0, 1.0), height=2.0))
    log = record_events(world, Stuck, TargetReached, PathChanged)
    assert_arrives(world, npc, within=1800)
    assert_emitted(log, Stuck)  # stood at the crate: stuck, the path went stale
    assert_emitted(log, PathChanged)  # re-planned round by the lower corridor
    path = world.get(npc, Path)
    assert np.allclose(path.waypoints[-1, :2], goal)


def test_waiting_in_a_queue_behind_a_stuck_agent_is_not_stuck():
    world = ascii_world("""
        #############
        #C...P.AB...#
        #############
    """, "path_follow", "steering", "physics", stuck_ticks=20)
    world.spawn(Position(*spot(world, "P")), Collider(radius=0.45))  # a post: it pushes, nothing moves it
    front = walker(world, spot(world, "A"))
    behind = walker(world, spot(world, "B"))
    for e in (front, behind):
        world.add_component(e, Path(waypoints=[spot(world, "C")], radius=0.3, status="complete"))
    log = record_events(world, Stuck)
    world.run(600)
    # the front agent stands at the post: Stuck once, however often its path is re-planned the
    # same way (not again until it moves off); the one behind it queues
    assert [ev.entity for ev in log] == [front]


def test_path_followers_that_leave_on_arrival_all_leave_and_the_rest_keep_their_paths():
    world = ascii_world(CORRIDORS)
    starts = [spot(world, "A"), (3.5, 5.5), (6.5, 6.5), (9.5, 5.5), (12.5, 6.5)]
    ents = [walker(world, p) for p in starts]
    for e in ents:
        world.add_component(e, PathRequest(goal=spot(world, "B"), despawn_on_arrival=True))
    log = record_events(world, TargetReached)
    for _ in range(3000):
        world.step()
        if world.table.n == 0:
            break
    assert world.table.n == 0  # each one despawned as it arrived, the others walking on
    assert sorted(ev.entity for ev in log) == sorted(ents)
