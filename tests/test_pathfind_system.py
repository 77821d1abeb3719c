"""PathfindSystem: the chase over the wall, throttled and staggered replans, shared searches,
partial/unreachable answers, search budgets, stale paths after a dynamic obstacle, moving targets."""

from __future__ import annotations

import sys
from pathlib import Path as FilePath

import numpy as np
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import ecs_nav.systems.path_serve as path_serve_module
from ecs_nav.systems.graph_build import GraphBuildSystem
from ecs_nav.systems.path_follow import PathFollowSystem
from ecs_nav.systems.pathfind import PathfindSystem

import ecs_nav.nav.field_cache as field_cache_module
from ecs_nav.core.components import Agent, Collider, NavMap, Path, PathRequest, Player, Position, Velocity
from ecs_nav.core.events import PathChanged, PathFailed
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.corridor import still_as_good
from ecs_nav.nav.distance import distance_field
from ecs_nav.nav.field_cache import RecentFields
from ecs_nav.nav.smooth import line_walkable
from ecs_nav.scene.files import build_world, scene_from_dict

CHASE = FilePath(__file__).resolve().parent.parent / "scenes" / "chase.toml"
WALL_HEIGHT = 3.0


def chase_world(tmp_path, edit=None) -> World:
    """The chase scene with only the two nav systems (the others are not needed here);
    ``edit`` may change the parsed scene data first."""
    data = tomllib.loads(CHASE.read_text(encoding="utf-8"))
    data["world"]["systems"] = ["graph_build", "pathfind"]
    if edit is not None:
        edit(data)
    return build_world(scene_from_dict(data, source=str(CHASE), base_dir=CHASE.parent))


def open_world(boxes=(), period=30, half=20.0) -> World:
    """An empty square map of side 2 * half (plus ``boxes``) scanned at the seed's spacing."""
    world = World(seed=0)
    world.map = MapGeometry((-half, -half, half, half), list(boxes))
    world.navmap = NavMap(scan_range=(half, 10.0, half))
    world.add_systems(GraphBuildSystem(), PathfindSystem(period=period))
    return world


def agent(world: World, x: float, y: float, request: PathRequest | None = None) -> int:
    e = world.spawn(Position(x, y), Velocity(), Agent(), Collider(radius=0.5))
    if request is not None:
        world.add_component(e, request)
    return e


def events_of(world: World, kind) -> list:
    out = []
    world.on(kind, out.append)
    return out


def named(world: World, name: str) -> int:
    from ecs_nav.core.components import Name

    return next(e for e, (n,) in world.query(Name) if n.value == name)


# --- the chase -------------------------------------------------------------------------------------


def test_chase_npc_path_goes_over_the_wall_by_the_ramps(tmp_path):
    world = chase_world(tmp_path)
    changed = events_of(world, PathChanged)
    world.step()
    npc, player = named(world, "npc"), named(world, "player")
    path = world.get(npc, Path)
    assert path.status == "complete"
    assert [e.entity for e in changed] == [npc]
    wp = path.waypoints
    np.testing.assert_allclose(wp[0, :2], (-30.0, -30.0))  # the node the NPC stands on
    assert path.index == 1
    np.testing.assert_allclose(wp[-1, :2], world.get(player, Position).as_array())
    heights = wp[:, 2]
    assert heights.max() == pytest.approx(WALL_HEIGHT)  # up on the wall top
    on_wall = np.isclose(heights, WALL_HEIGHT)
    assert np.all(np.abs(wp[on_wall, 1]) <= 3.5)
    on_ramp = (heights > 1e-9) & (heights < WALL_HEIGHT - 1e-9)
    # climbs the south ramp (x = -20) and goes down the north one (x = +20)
    ramp_xy = wp[on_ramp, :2]
    assert np.any(np.isclose(ramp_xy[:, 0], -20.0, atol=4.0) & (ramp_xy[:, 1] < 0))
    assert np.any(np.isclose(ramp_xy[:, 0], 20.0, atol=4.0) & (ramp_xy[:, 1] > 0))
    assert np.all(np.abs(np.diff(heights)) <= 0.5 + 1e-9)
    # it rises first, then comes down: the first wall-top waypoint comes after a south ramp one
    first_wall, last_wall = np.flatnonzero(on_wall)[[0, -1]]
    assert np.all(wp[:first_wall, 1] < 0) and np.all(wp[last_wall + 1 :, 1] > 0)
    # consecutive nodes are graph links
    graph = world.nav_graph
    assert all(np.isfinite(graph.distance(a, b)) for a, b in zip(path.nodes[:-1], path.nodes[1:]))


def test_chase_without_ramps_gives_a_partial_path_and_path_failed(tmp_path):
    world = chase_world(tmp_path, lambda d: d["map"].pop("ramp"))
    failed = events_of(world, PathFailed)
    world.step()
    npc = named(world, "npc")
    path = world.get(npc, Path)
    assert path.status == "partial"
    assert [(e.entity, e.status) for e in failed] == [(npc, "partial")]
    assert np.all(path.waypoints[:, 1] < 0)  # stays on the south side
    assert np.all(path.waypoints[:, 2] == 0.0)


# --- throttling and staggering ----------------------------------------------------------------------


def crowd(world: World, n: int, rng: np.random.Generator, **request_kwargs) -> np.ndarray:
    """n agents with distinct point goals (no two share a goal node)."""
    graph_nodes = np.array([(x, y) for x in range(-16, 17, 2) for y in range(-16, 17, 2)], dtype=float)
    picks = rng.choice(len(graph_nodes), size=2 * n, replace=False)
    starts, goals = graph_nodes[picks[:n]], graph_nodes[picks[n:]]
    return np.array([agent(world, *s, PathRequest(goal=tuple(g), **request_kwargs)) for s, g in zip(starts, goals)])


def test_staggered_replans_spread_90_agents_evenly_over_the_period():
    world = open_world(period=30)
    ents = crowd(world, 90, np.random.default_rng(1))
    pf = world.system("PathfindSystem")
    world.step()  # tick 0: every request is new
    assert pf.last_served.size == 90
    served = {int(e): [] for e in ents}
    per_tick = []
    for _ in range(60):
        tick = world.tick
        world.step()
        per_tick.append(pf.last_searches)
        for e in pf.last_served:
            served[int(e)].append(tick)
    assert per_tick == [3] * 60  # 90 agents / 30 ticks, distinct goals: one search each
    for e, ticks in served.items():
        assert len(ticks) == 2 and ticks[1] - ticks[0] == 30  # exactly once per period
        assert all((t + e) % 30 == 0 for t in ticks)
    assert pf.searches == 90 + 180


def test_a_request_s_own_period_wins_and_the_world_period_applies_to_the_default(monkeypatch):
    calls = []
    real = path_serve_module.find_path
    monkeypatch.setattr(path_serve_module, "find_path", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    world = open_world(period=15)
    fast = agent(world, -10, -10, PathRequest(goal=(10.0, 10.0), replan_period=10))
    slow = agent(world, 10, -10, PathRequest(goal=(-10.0, 10.0)))  # default: the world's 15
    pf = world.system("PathfindSystem")
    log = {fast: [], slow: []}
    for _ in range(61):
        tick = world.tick
        world.step()
        for e in pf.last_served:
            log[int(e)].append(tick)
    assert log[fast] == [0] + [t for t in range(1, 61) if (t + fast) % 10 == 0]
    assert log[slow] == [0] + [t for t in range(1, 61) if (t + slow) % 15 == 0]
    assert len(calls) == len(log[fast]) + len(log[slow])  # one A* per serve (distinct goals)


def test_same_route_replans_keep_the_index_and_emit_no_path_changed():
    world = open_world()
    changed = events_of(world, PathChanged)
    e = agent(world, -10, -10, PathRequest(goal=(10.0, 10.0)))
    world.step()
    path = world.get(e, Path)
    assert path.index == 1 and path.status == "complete"
    path.index = 3  # the follower has moved on
    world.run(61)
    assert len(changed) == 1
    assert world.get(e, Path) is path and path.index == 3


# --- shared searches ----------------------------------------------------------------------------------


def test_requests_with_one_goal_share_one_reverse_search(monkeypatch):
    counts = {"field": 0, "astar": 0}
    real_field, real_astar = field_cache_module.distance_field, path_serve_module.find_path

    def field(*a, **k):
        counts["field"] += 1
        return real_field(*a, **k)

    def single(*a, **k):
        counts["astar"] += 1
        return real_astar(*a, **k)

    monkeypatch.setattr(field_cache_module, "distance_field", field)
    monkeypatch.setattr(path_serve_module, "find_path", single)
    world = open_world(boxes=[Box((0.0, 0.0), (4.0, 12.0), 2.0)])
    rng = np.random.default_rng(3)
    starts = rng.uniform(-16, -6, size=(25, 2))
    ents = [agent(world, *s, PathRequest(goal=(12.3, 0.4))) for s in starts]
    world.step()
    assert counts == {"field": 1, "astar": 0}
    pf = world.system("PathfindSystem")
    assert pf.field_searches == 1 and pf.searches == 0 and pf.last_searches == 1
    graph = world.nav_graph
    for e in ents:
        path = world.get(e, Path)
        assert path.status == "complete"
        np.testing.assert_allclose(path.waypoints[-1, :2], (12.3, 0.4))  # the exact goal point
        # the shared search's route is as cheap as the agent's own A*
        cost = sum(graph.distance(a, b) for a, b in zip(path.nodes[:-1], path.nodes[1:]))
        assert cost == pytest.approx(real_astar(graph, path.nodes[0], path.nodes[-1]).cost)


def test_a_crowd_replanning_to_one_goal_searches_once_and_walks_as_if_it_searched_every_tick(monkeypatch):
    def run():
        world = open_world(boxes=[Box((0.0, 0.0), (4.0, 12.0), 2.0)], period=10)
        starts = np.random.default_rng(3).uniform(-16, -6, size=(25, 2))
        for s in starts:
            agent(world, *s, PathRequest(goal=(12.3, 0.4)))
        world.run(60)  # every request served 6 times, staggered: 2-3 a tick
        return world.system("PathfindSystem").field_searches, world.state_digest()

    searches, digest = run()
    assert searches == 1
    monkeypatch.setattr(RecentFields, "field", lambda self, graph, goal: distance_field(graph, goal))
    assert run()[1] == digest  # the same paths as a fresh field every tick


def test_a_single_request_and_a_budgeted_one_use_their_own_search():
    world = open_world()
    agent(world, -10, -10, PathRequest(goal=(10.0, 10.0)))
    agent(world, -10, 10, PathRequest(goal=(10.0, 10.0), max_expanded=10_000))
    agent(world, 10, -10, PathRequest(goal=(-10.0, 10.0), algorithm="dijkstra"))
    world.step()
    pf = world.system("PathfindSystem")
    assert (pf.searches, pf.field_searches) == (3, 0)


# --- failure: partial, unreachable, budget ------------------------------------------------------------


def enclosure() -> list[Box]:
    """A closed ring of walls around the square [6, 14] x [6, 14]."""
    return [Box((10.0, 5.0), (10.0, 1.0), 3.0), Box((10.0, 15.0), (10.0, 1.0), 3.0),
            Box((5.0, 10.0), (1.0, 10.0), 3.0), Box((15.0, 10.0), (1.0, 10.0), 3.0)]


def test_a_walled_in_goal_gives_partial_or_unreachable_with_path_failed_and_no_exception():
    world = open_world(boxes=enclosure())
    failed = events_of(world, PathFailed)
    changed = events_of(world, PathChanged)
    partial = agent(world, -12, -12, PathRequest(goal=(10.0, 10.0)))
    strict = agent(world, -12, 12, PathRequest(goal=(10.0, 10.0), allow_partial=False))
    world.step()
    p = world.get(partial, Path)
    assert p.status == "partial" and p.nodes.size > 1
    # ends at a reachable node close to the enclosure, not inside it
    end = p.waypoints[-1, :2]
    assert not (5.0 <= end[0] <= 15.0 and 5.0 <= end[1] <= 15.0)
    assert np.linalg.norm(end - (10.0, 10.0)) <= 8.0 + 1e-9  # (10, 2): 1.25 clear of the wall at y = 5
    s = world.get(strict, Path)
    assert s.status == "unreachable" and s.nodes.size == 0 and s.waypoints.shape == (0, 3)
    assert sorted((e.entity, e.status) for e in failed) == [(partial, "partial"), (strict, "unreachable")]
    assert [e.entity for e in changed] == [partial]


def test_shared_group_members_cut_off_from_the_goal_fall_back_to_a_partial_path():
    world = open_world(boxes=enclosure())
    inside = [agent(world, 9.0, 9.0, PathRequest(goal=(-12.0, -12.0))),
              agent(world, 11.0, 11.0, PathRequest(goal=(-12.0, -12.0)))]
    outside = [agent(world, -12.0, 12.0, PathRequest(goal=(-12.0, -12.0))),
               agent(world, 12.0, -12.0, PathRequest(goal=(-12.0, -12.0)))]
    world.step()
    assert [world.get(e, Path).status for e in inside] == ["partial", "partial"]
    assert [world.get(e, Path).status for e in outside] == ["complete", "complete"]
    pf = world.system("PathfindSystem")
    assert (pf.field_searches, pf.searches) == (1, 2)


def test_a_search_budget_gives_a_partial_path():
    world = open_world()
    failed = events_of(world, PathFailed)
    e = agent(world, -14, -14, PathRequest(goal=(14.0, 14.0), max_expanded=5))
    world.step()
    path = world.get(e, Path)
    assert path.status == "partial"
    assert 1 <= path.nodes.size <= 5
    assert [(f.entity, f.status) for f in failed] == [(e, "partial")]
    # without the budget the same request completes
    world.get(e, PathRequest).max_expanded = None
    world.add_component(e, PathRequest(goal=(14.0, 14.0)))  # a new request: served at once
    world.step()
    assert world.get(e, Path).status == "complete"


def test_start_or_goal_with_no_node_near_and_a_missing_target_are_unreachable():
    world = open_world(half=40.0)
    world.navmap = NavMap(scan_range=(10.0, 10.0, 10.0))  # the graph covers only the middle
    failed = events_of(world, PathFailed)
    far_start = agent(world, 35.0, 35.0, PathRequest(goal=(0.0, 0.0)))
    far_goal = agent(world, 0.0, 0.0, PathRequest(goal=(-35.0, 30.0)))
    target = agent(world, 2.0, 2.0)
    chaser = agent(world, -4.0, -4.0, PathRequest(target=target))
    world.step()
    assert world.get(chaser, Path).status == "complete"
    world.despawn(target)
    world.get(chaser, Path).status = "stale"
    world.step()
    for e in (far_start, far_goal, chaser):
        assert world.get(e, Path).status == "unreachable"
    # tick 0: the two far requests; tick 1: the chaser (an unreachable path waits for its period)
    assert sorted(f.entity for f in failed) == sorted([far_start, far_goal, chaser])


# --- dynamic obstacles and moving targets -------------------------------------------------------------


def test_a_box_moved_onto_the_path_makes_it_stale_and_the_replan_avoids_it():
    world = open_world()
    changed = events_of(world, PathChanged)
    e = agent(world, -14.0, 0.0, PathRequest(goal=(14.0, 0.0)))
    crate = world.spawn(Position(0.0, -15.0), Collider(shape="box", size=(4.0, 10.0), height=2.0))
    world.step()
    path = world.get(e, Path)
    assert path.status == "complete"
    np.testing.assert_allclose(path.waypoints[:, 1], 0.0)  # a straight line along y = 0
    version = world.nav_graph.version
    pf = world.system("PathfindSystem")
    searches = pf.searches
    # the next tick is not a replan tick for e: only staleness can trigger the search
    assert (world.tick + e) % 30 != 0
    world.get(crate, Position).y = 0.0
    world.step()
    assert world.nav_graph.version > version
    assert pf.searches == searches + 1 and list(pf.last_served) == [e]
    path = world.get(e, Path)
    assert path.status == "complete" and path.graph_version == world.nav_graph.version
    assert len(changed) == 2
    # the new route keeps clear of the box (footprint [-2, 2] x [-5, 5]) and crosses nothing
    wp = path.waypoints
    assert not np.any((np.abs(wp[:, 0]) < 2.0 + 1.25) & (np.abs(wp[:, 1]) < 5.0 + 1.25))
    lifted = wp + (0.0, 0.0, 0.2)
    assert not world.map.segment_blocked(lifted[:-1], lifted[1:]).any()
    assert np.abs(wp[:, 1]).max() > 5.0  # it goes round


def test_a_path_away_from_a_moved_box_is_not_replanned():
    world = open_world()
    e = agent(world, -14.0, -12.0, PathRequest(goal=(14.0, -12.0)))
    crate = world.spawn(Position(0.0, 10.0), Collider(shape="box", size=(2.0, 2.0), height=2.0))
    world.step()
    pf = world.system("PathfindSystem")
    world.get(crate, Position).x = 4.0
    world.step()
    assert world.get(e, Path).status == "complete" and pf.last_served.size == 0


def test_a_target_entity_is_followed_as_it_moves():
    world = open_world(period=30)
    player = world.spawn(Position(10.0, 10.0), Velocity(), Agent(), Collider(radius=0.5), Player())
    npc = agent(world, -10.0, -10.0, PathRequest(target=player))
    world.step()
    np.testing.assert_allclose(world.get(npc, Path).waypoints[-1, :2], (10.0, 10.0))
    world.get(player, Position).x = -9.3
    world.get(player, Position).y = 12.7
    pf = world.system("PathfindSystem")
    replanned_at = None
    for _ in range(30):
        tick = world.tick
        world.step()
        if npc in pf.last_served:
            replanned_at = tick
            break
    assert replanned_at is not None and (replanned_at + npc) % 30 == 0
    path = world.get(npc, Path)
    np.testing.assert_allclose(path.waypoints[-1, :2], (-9.3, 12.7))
    assert path.status == "complete"


def test_smoothing_keeps_the_ends_and_drops_waypoints():
    world = open_world(boxes=[Box((0.0, 0.0), (4.0, 12.0), 2.0)])
    plain = agent(world, -12.0, -10.0, PathRequest(goal=(12.0, 9.0)))
    smooth = agent(world, -12.0, -10.0, PathRequest(goal=(12.0, 9.0), smooth=True))
    world.step()
    a, b = world.get(plain, Path), world.get(smooth, Path)
    assert b.status == "complete"
    assert b.waypoints.shape[0] < a.waypoints.shape[0]
    np.testing.assert_allclose(b.waypoints[-1], a.waypoints[-1])
    np.testing.assert_array_equal(a.nodes, b.nodes)  # nodes keep the full route
    # pulled from the agent's position, its first waypoint: it walks to the second, a node of the
    # route further on than the one it stands by
    np.testing.assert_allclose(b.waypoints[0], (-12.0, -10.0, 0.0))
    assert b.index == 1
    at = [int(np.flatnonzero(np.all(a.waypoints == w, axis=1))[0]) for w in b.waypoints[1:]]
    assert at == sorted(at) and at[0] >= 1
    # every leg is clear for the agent's disc widened by the Path's radius (0.5 + 1.0), or (near a
    # wall, where none is) a link to the route's next node
    legs = b.waypoints
    for n, (p, q) in enumerate(zip(legs[:-1], legs[1:])):
        assert line_walkable(world.map, p, q, radius=1.5) or (n > 0 and at[n] == at[n - 1] + 1), (n, p, q)
    assert sum(line_walkable(world.map, p, q, radius=1.5) for p, q in zip(legs[:-1], legs[1:])) >= 2


def test_the_follower_walks_to_a_pulled_paths_first_node_round_a_hairpin():
    # the route turns back at its first pulled node: a follower that took the agent for standing
    # on that node (seed 000's path[0]) and past it would steer straight at the next, into the box
    world = open_world(boxes=[Box((-9.5, 0.4), (5.3, 2.4), 2.0)])
    world.add_systems(PathFollowSystem())
    e = agent(world, 12.0, 5.0, PathRequest(goal=(-10.5, -1.9), smooth=True))
    world.step()
    path = world.get(e, Path)
    assert path.index == 1 and path.waypoints.shape[0] >= 3
    here = world.table.pos[world.table.row_of(e)]
    assert line_walkable(world.map, (*here, 0.0), path.waypoints[1], radius=0.5)
    assert not line_walkable(world.map, (*here, 0.0), path.waypoints[2], radius=0.5)
    world.step()
    assert world.get(e, Path).index == 1


def test_a_pulled_route_the_agent_cannot_walk_straight_on_from_where_it_is_is_planned_again():
    world = open_world(boxes=[Box((0.0, 0.0), (2.0, 20.0), 2.0)], period=5)
    e = agent(world, -6.0, -14.0, PathRequest(goal=(6.0, 14.0), smooth=True))
    world.step()
    before = world.get(e, Path)
    first = before.waypoints.copy()
    changed = events_of(world, PathChanged)
    world.run(5)  # a periodic replan from where it stands: the same route, kept
    assert world.get(e, Path).waypoints.tolist() == first.tolist() and not changed
    # pushed behind the wall's end from the waypoint it walks to: by the graph the route is still
    # as short as the new plan (ecs_nav.nav.corridor), only the line of sight tells
    row = world.table.row_of(e)
    world.table.pos[row] = (-2.0, -10.0)
    assert not line_walkable(world.map, (-2.0, -10.0, 0.0), before.waypoints[before.index], radius=0.5)
    graph = world.nav_graph
    start = graph.nearest_nodes(np.array([[-2.0, -10.0]]))[0]
    assert still_as_good(graph.indptr, graph.indices, graph.costs, graph.positions, before.nodes, before.waypoints,
                         before.index, start, before.nodes[-1], distance_field(graph, before.nodes[-1])[0][start],
                         -2.0, -10.0, 0.5 * graph.grid.spacing)  # fmt: skip
    world.run(5)
    path = world.get(e, Path)
    # pulled again from where it stands; its node route goes on from its node, as when an agent
    # moves along it: no PathChanged
    assert path.index == 1 and not changed
    np.testing.assert_allclose(path.waypoints[0, :2], (-2.0, -10.0))
    assert line_walkable(world.map, path.waypoints[0], path.waypoints[1], radius=0.5)


def test_paths_are_deterministic(tmp_path):
    digests = []
    for _ in range(2):
        world = open_world(boxes=enclosure())
        crowd(world, 30, np.random.default_rng(7))
        world.run(40)
        digests.append(world.state_digest())
        world.close()
    assert digests[0] == digests[1]


def test_no_graph_no_service_and_no_error():
    world = World()
    world.add_systems(GraphBuildSystem(), PathfindSystem())
    e = world.spawn(Position(0.0, 0.0))
    world.add_component(e, PathRequest(goal=(3.0, 3.0)))
    world.run(3)
    assert world.nav_graph is None and world.try_get(e, Path) is None
