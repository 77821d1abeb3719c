"""The PathfindSystem's request queue: a per-tick budget of expanded nodes, served oldest first."""

from __future__ import annotations

from collections import defaultdict

import ecs_nav.systems.path_serve as path_serve_module
import numpy as np
import pytest
from ecs_nav.systems.graph_build import GraphBuildSystem
from ecs_nav.systems.pathfind import PathfindSystem

from ecs_nav.core.components import Agent, Collider, NavMap, Path, PathRequest, Position, Velocity
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.jump import find_path
from ecs_nav.scene.files import build_world, scene_from_dict
from ecs_nav.scene.schema import SceneError

HALF = 50.0
BOXES = [Box(center=(x, y), size=(6.0, 6.0), height=3.0) for x in (-30, -10, 10, 30) for y in (-25, 0, 25)]


def world_with(budget, period=10**6) -> World:
    world = World(seed=0)
    world.map = MapGeometry((-HALF, -HALF, HALF, HALF), list(BOXES))
    world.navmap = NavMap(scan_range=(HALF, 10.0, HALF))
    world.add_systems(GraphBuildSystem(), PathfindSystem(period=period, path_budget_per_tick=budget))
    return world


def free_points(count, seed):
    """``count`` points on the open floor (outside the boxes, with a margin)."""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-HALF + 2, HALF - 2, size=(4 * count, 2))
    inside = np.zeros(len(pts), bool)
    for x in (-30, -10, 10, 30):
        for y in (-25, 0, 25):
            inside |= (np.abs(pts[:, 0] - x) < 6) & (np.abs(pts[:, 1] - y) < 6)
    return pts[~inside][:count]


def spawn_requesters(world, starts, goals, **request):
    return [world.spawn(Position(*s), Velocity(), Agent(), Collider(radius=0.5),
                        PathRequest(goal=tuple(g), **request)) for s, g in zip(starts, goals)]


def expansions_per_tick(monkeypatch, world):
    """Counts each tick's expanded nodes from the searches' own results (PathResult.expanded)."""
    counted = defaultdict(int)

    def counting_astar(*args, **kwargs):
        res = find_path(*args, **kwargs)
        counted[world.tick] += res.expanded
        return res

    monkeypatch.setattr(path_serve_module, "find_path", counting_astar)
    return counted


def test_ten_thousand_simultaneous_requests_are_all_served_within_the_budget_oldest_first(monkeypatch):
    n, budget = 10_000, 100_000
    starts, goals = free_points(n, 1), free_points(n, 2)
    world = world_with(budget)
    ents = spawn_requesters(world, starts, goals)
    counted = expansions_per_tick(monkeypatch, world)
    pf = next(s for s in world.systems if isinstance(s, PathfindSystem))
    served_on = {}
    ticks = 0
    while len(served_on) < n and ticks < 400:
        world.step()
        for e in pf.last_served.tolist():
            assert e not in served_on, "an entity served twice"
            served_on[e] = world.tick - 1
        ticks += 1
    assert len(served_on) == n  # all served ...
    assert ticks > 5  # ... over several ticks
    assert max(counted.values()) <= budget and sum(counted.values()) > 5 * budget
    # none starves: all asked on the same tick, so served in entity order (the queue's stable order)
    order = [served_on[e] for e in ents]
    assert order == sorted(order)
    assert all(world.get(e, Path).pending is False and world.get(e, Path).status == "complete" for e in ents)

    # the paths served are the ones served without a budget (each its own search: no shared fields)
    free = world_with(None)
    monkeypatch.setattr(path_serve_module, "find_path", find_path)
    ref = spawn_requesters(free, starts, goals, max_expanded=10**9)
    free.step()
    for e, r in zip(ents, ref):
        assert np.array_equal(world.get(e, Path).nodes, free.get(r, Path).nodes)
        assert np.array_equal(world.get(e, Path).waypoints, free.get(r, Path).waypoints)


def test_a_waiting_agent_is_pending_and_keeps_its_old_route_until_served():
    world = world_with(400)
    (first,) = spawn_requesters(world, [(-45.0, -45.0)], [(-40.0, -45.0)])
    world.step()
    old = world.get(first, Path)
    assert old.status == "complete" and not old.pending
    old_waypoints = old.waypoints.copy()
    others = spawn_requesters(world, free_points(40, 3), free_points(40, 4))
    world.step()
    world.get(first, PathRequest).goal = (45.0, 45.0)  # joins the queue behind the 40
    world.step()
    path = world.get(first, Path)
    assert path.pending and np.array_equal(path.waypoints, old_waypoints)
    waiting = [e for e in others if world.get(e, Path).pending]
    assert waiting and all(world.get(e, Path).waypoints.shape[0] == 0 for e in waiting)  # nothing to walk yet
    for _ in range(200):
        if not world.get(first, Path).pending:
            break
        world.step()
        assert not (world.get(first, Path).pending is False and any(world.get(e, Path).pending for e in others))
    path = world.get(first, Path)
    assert not path.pending and np.allclose(path.waypoints[-1, :2], (45.0, 45.0))


def test_a_search_larger_than_the_whole_budget_is_served_partial_within_it(monkeypatch):
    world = world_with(50)
    counted = expansions_per_tick(monkeypatch, world)
    (e,) = spawn_requesters(world, [(-45.0, -45.0)], [(45.0, 45.0)], allow_partial=True)
    world.run(3)
    path = world.get(e, Path)
    assert path.status == "partial" and not path.pending and max(counted.values()) <= 50


def test_without_a_budget_nothing_waits():
    world = world_with(None)
    ents = spawn_requesters(world, free_points(300, 5), free_points(300, 6))
    world.step()
    pf = next(s for s in world.systems if isinstance(s, PathfindSystem))
    assert pf.last_served.size == 300 and len(pf.queue) == 0
    assert not any(world.get(e, Path).pending for e in ents)


def scene(world_table):
    return {"world": {"systems": ["graph_build", "pathfind"], **world_table},
            "map": {"bounds": [-10, -10, 10, 10]}, "navmap": {"scan_range": [10, 10, 10]}}


def test_scene_key_sets_the_budget_and_bad_values_name_the_key():
    world = build_world(scene_from_dict(scene({"path_budget_per_tick": 500})))
    pf = next(s for s in world.systems if isinstance(s, PathfindSystem))
    assert pf.path_budget_per_tick == 500
    default = build_world(scene_from_dict(scene({})))
    assert next(s for s in default.systems if isinstance(s, PathfindSystem)).path_budget_per_tick is None
    for bad in (0, 1.5, "10"):
        with pytest.raises(SceneError, match="world.path_budget_per_tick"):
            scene_from_dict(scene({"path_budget_per_tick": bad}))
    with pytest.raises(ValueError, match="path_budget_per_tick"):
        PathfindSystem(path_budget_per_tick=0)


def test_a_saved_scene_keeps_its_budget():
    from ecs_nav.scene.files import scene_to_dict

    world = build_world(scene_from_dict(scene({"path_budget_per_tick": 750})))
    assert scene_to_dict(world)["world"]["path_budget_per_tick"] == 750
    assert "path_budget_per_tick" not in scene_to_dict(build_world(scene_from_dict(scene({}))))["world"]
