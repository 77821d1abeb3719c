"""Off-mesh links in scenes: the graph's link edges, crossing them as links, LinkReached, closing one."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path
from square_scene import square_scene, world_of

from ecs_nav.core.components import Path, PathRequest
from ecs_nav.core.events import LinkReached, PathChanged
from ecs_nav.nav.graph import EDGE_LINK
from ecs_nav.nav.links import NavLinks, OffMeshLink
from ecs_nav.nav.search import astar
from ecs_nav.scene.files import build_world, scene_from_dict, scene_to_dict
from ecs_nav.scene.schema import SceneError

WALL = {"center": [0, 0], "size": [40, 1], "height": 3}
"""A wall across the whole map: north and south meet only through links (or a gap)."""


def agent(name, start, goal, speed=3.0):
    return {"name": name, "Position": {"x": start[0], "y": start[1]}, "Velocity": {},
            "Agent": {"max_speed": speed}, "Collider": {"radius": 0.4},
            "SteeringWeights": {"weights": {"follow_path": 1.0}}, "PathRequest": {"goal": list(goal)}}


def scene(links, boxes=(WALL,), entities=(), systems=None):
    return square_scene(1, boxes, entities, systems, link=links)


def events(world, kind):
    out = []
    world.on(kind, out.append)
    return out


def link_steps(graph, nodes):
    """The (a, b) steps of a node path that go along an EDGE_LINK edge."""
    out = []
    for a, b in zip(nodes[:-1], nodes[1:]):
        lo, hi = graph.indptr[a], graph.indptr[a + 1]
        at = lo + np.searchsorted(graph.indices[lo:hi], b)
        if graph.kinds[at] == EDGE_LINK:
            out.append((int(a), int(b)))
    return out


def test_a_one_way_link_is_used_only_in_its_direction_and_costs_match_scipy():
    one_way = OffMeshLink(start=(0, -3), end=(0, 3), cost=9.0)
    world = world_of(scene([{"start": [0, -3], "end": [0, 3], "cost": 9.0}], systems=["graph_build"]))
    world.step()
    graph, links = world.nav_graph, world.nav_links
    assert links.links == (one_way,)
    south, north = graph.nearest_node((5, -8)), graph.nearest_node((-5, 8))
    there = astar(graph, south, north)
    back = astar(graph, north, south)
    assert there.complete and link_steps(graph, there.nodes) == [tuple(links.nodes[0])]
    assert back.status == "partial" and not link_steps(graph, back.nodes)
    reference = shortest_path(graph.to_scipy(), indices=[south, north])
    assert there.cost == pytest.approx(reference[0, north]) and np.isinf(reference[1, south])


def test_a_bidirectional_link_is_used_both_ways():
    world = world_of(scene([{"start": [0, -3], "end": [0, 3], "bidirectional": True, "kind": "door"}],
                           systems=["graph_build"]))
    world.step()
    graph, (a, b) = world.nav_graph, world.nav_links.nodes[0]
    south, north = graph.nearest_node((5, -8)), graph.nearest_node((-5, 8))
    assert link_steps(graph, astar(graph, south, north).nodes) == [(a, b)]
    assert link_steps(graph, astar(graph, north, south).nodes) == [(b, a)]
    # cost by default: the 3D distance between the two nodes
    assert graph.distance(a, b) == pytest.approx(np.linalg.norm(graph.positions[b] - graph.positions[a]))


def run_crossing(data, name="a", ticks=600):
    """Runs the scene; returns the LinkReached events and the agent's (x, y, elevation) per tick."""
    world = world_of(data)
    reached = events(world, LinkReached)
    entity = next(e for e in world.entities() if world.try_get(e, PathRequest) is not None)
    track = []
    for _ in range(ticks):
        world.step()
        row = world.table.row_of(entity)
        track.append((world.tick, *world.table.pos[row], world.table.elevation[row]))
    return world, entity, reached, np.array(track)


def test_a_jump_is_crossed_along_its_arc_at_the_links_speed_and_link_reached_fires_once():
    speed = 4.0
    data = scene([{"start": [0, -3], "end": [0, 3], "kind": "jump", "speed": speed}],
                 entities=[agent("a", (0, -10), (0, 10))])
    world, entity, reached, track = run_crossing(data)
    assert len(reached) == 1
    ev = reached[0]
    assert (ev.entity, ev.link, ev.kind) == (entity, 0, "jump")
    a, b = np.array(ev.start), np.array(ev.end)
    duration = np.linalg.norm(b - a) / speed
    ground = np.hypot(*(b - a)[:2])
    apex = max(0.25 * ground, 0.5)
    dt = world.dt
    # the tick of the event moves it dt along; every later tick another dt, until it lands
    # (on the tick it lands the steering and the physics move it on from b: at most max_speed * dt)
    landing = int(np.ceil(duration / dt))
    for k in range(1, landing + 1):
        s = min(k * dt / duration, 1.0)
        expected = a + (b - a) * s
        expected[2] += 4 * apex * s * (1 - s)
        tick, x, y, z = track[ev.tick + k - 1]
        assert tick == ev.tick + k
        tolerance = 1e-9 if k < landing else 3.0 * dt
        assert np.allclose((x, y, z), expected, atol=tolerance), (k, (x, y, z), expected)
    assert track[:, 3].max() == pytest.approx(apex, abs=0.05)
    # it went on to its goal, north of the wall, and never walked through it
    assert track[-1, 2] > 8 and world.get(entity, Path).status == "complete"
    on_wall = np.abs(track[:, 2]) < 0.5 + 0.4
    assert np.all(track[on_wall, 3] > 0)  # over the wall's footprint only in the air


def test_a_ladder_is_a_straight_climb_onto_the_roof_and_a_teleport_is_instant():
    roof = {"center": [0, 8], "size": [12, 8], "height": 2.0}
    data = scene([{"start": [0, 1.5], "end": [0, 5.5], "kind": "ladder", "speed": 1.0}], boxes=[WALL, roof],
                 entities=[agent("a", (6, -12), (2, 8))])
    data["map"]["box"][0] = {"center": [0, -2], "size": [40, 1], "height": 3}  # the wall south of the ladder...
    data["map"]["link"].append({"start": [10, -5], "end": [10, 1], "kind": "teleport"})  # ...crossed by teleport
    world, entity, reached, track = run_crossing(data, ticks=900)
    assert [(e.link, e.kind) for e in reached] == [(1, "teleport"), (0, "ladder")]
    teleport, ladder = reached
    row = track[teleport.tick]  # after the tick of the event: at the teleporter's end (and on by <= max_speed * dt)
    before = track[teleport.tick - 1]
    assert np.hypot(*(row[1:3] - teleport.end[:2])) <= 3.0 * world.dt + 1e-9 and row[3] == teleport.end[2]
    assert np.hypot(*(before[1:3] - teleport.start[:2])) <= 3.0 * world.dt + 1e-9
    a, b = np.array(ladder.start), np.array(ladder.end)
    assert b[2] == pytest.approx(2.0)
    during = track[ladder.tick: ladder.tick + int((np.linalg.norm(b - a) / 1.0) / world.dt)]
    # a straight climb: each point lies on the segment a -> b
    s = (during[:, 1:] - a) @ (b - a) / np.dot(b - a, b - a)
    assert np.allclose(during[:, 1:], a + s[:, None] * (b - a), atol=1e-9) and np.all(np.diff(s) > 0)
    assert track[-1, 3] == pytest.approx(2.0) and world.get(entity, Path).status == "complete"


def test_link_reached_fires_once_per_crossing_of_a_two_way_door():
    data = scene([{"start": [0, -3], "end": [0, 3], "kind": "door", "bidirectional": True, "width": 2.0}],
                 entities=[agent("a", (0, -10), (0, 10), speed=5.0)])
    world = world_of(data)
    reached = events(world, LinkReached)
    entity = next(e for e in world.entities() if world.try_get(e, PathRequest) is not None)
    sides = []
    for goal in ((0, 10), (3, -10), (-3, 10)):
        world.get(entity, PathRequest).goal = goal
        for _ in range(400):
            world.step()
            sides.append(np.sign(world.table.pos[world.table.row_of(entity), 1]))
    crossings = int(np.count_nonzero(np.diff([s for s in sides if s != 0])))
    assert crossings == 3 and len(reached) == 3
    assert [(e.kind, e.link) for e in reached] == [("door", 0)] * 3
    assert [np.sign(e.end[1]) for e in reached] == [1, -1, 1]  # north, back south, north again
    assert all(np.sign(e.start[1]) == -np.sign(e.end[1]) for e in reached)
    # the door is 2 m wide: each crossing keeps the agent's sideways offset, up to 1 m
    assert all(e.end[0] == pytest.approx(np.clip(e.start[0], -1.0, 1.0)) for e in reached)


def test_a_disabled_link_makes_the_path_stale_and_it_is_replanned_round_it():
    gap_walls = [{"center": [-4, 0], "size": [32, 1], "height": 3}, {"center": [18.5, 0], "size": [3, 1], "height": 3}]
    data = scene([{"start": [0, -3], "end": [0, 3], "kind": "door"}], boxes=gap_walls,
                 entities=[agent("a", (0, -10), (0, 10))])
    world = world_of(data)
    reached, changed = events(world, LinkReached), events(world, PathChanged)
    entity = next(e for e in world.entities() if world.try_get(e, PathRequest) is not None)
    world.run(5)
    graph, (a, b) = world.nav_graph, world.nav_links.nodes[0]
    assert link_steps(graph, world.get(entity, Path).nodes) == [(a, b)]
    world.set_link_enabled(0, False)
    world.step()
    graph = world.nav_graph
    path = world.get(entity, Path)
    assert path.status == "complete" and path.graph_version == graph.version
    assert not link_steps(graph, path.nodes) and graph.distance(a, b) == np.inf
    assert len(changed) == 2 and changed[-1].tick == world.tick - 1
    world.run(900)
    assert reached == []  # it walked round by the gap
    assert world.table.pos[world.table.row_of(entity), 1] > 8
    world.set_link_enabled(0, True)
    world.step()
    assert world.nav_graph.distance(a, b) < np.inf
    with pytest.raises(IndexError, match="no link 3"):
        world.set_link_enabled(3, False)


def test_bad_links_are_reported_naming_the_link_and_field():
    cases = [({"start": [0, -3], "end": [0, 3], "kind": "fly"}, "map.link[0].kind"),
             ({"start": [0, -3, 1, 2], "end": [0, 3]}, "map.link[0].start"),
             ({"start": [0, -3], "end": [0, 3], "cost": 0}, "map.link[0].cost"),
             ({"start": [0, -3], "end": [0, 3], "width": -1}, "map.link[0].width"),
             ({"start": [0, -3], "end": [0, 3], "speed": 0}, "map.link[0].speed"),
             ({"start": [0, -3], "end": [0, -3]}, "map.link[0].end"),
             ({"start": [0, -3], "end": [0, 3], "oneway": True}, "map.link[0].oneway")]
    for link, where in cases:
        with pytest.raises(SceneError) as info:
            scene_from_dict(scene([link]))
        assert any(p.startswith(f"<dict>: {where}") or where in p for p in info.value.problems), info.value.problems
    with pytest.raises(SceneError, match="map.link"):
        scene_from_dict(scene({"start": [0, 1]}))  # a table, not an array of tables


def test_a_link_between_nodes_already_walked_between_is_refused():
    world = world_of(scene([{"start": [5, -5], "end": [6, -5]}], systems=["graph_build"]))
    with pytest.raises(ValueError, match="OffMeshLink 0"):
        world.step()


def test_links_survive_a_save_and_load():
    data = scene([{"start": [0, -3], "end": [0, 3], "kind": "ladder", "width": 1.5, "speed": 2.0, "cost": 4.0}],
                 entities=[agent("a", (0, -10), (0, 10))])
    world = world_of(data)
    again = build_world(scene_from_dict(scene_to_dict(world)))
    assert again.nav_links.links == world.nav_links.links
    world.run(300)
    again.run(300)
    assert world.state_digest() == again.state_digest()


def test_nav_links_from_python_match_the_scene():
    links = NavLinks([OffMeshLink(start=(0, -3), end=(0, 3), kind="teleport")])
    world = world_of(scene([], systems=["graph_build"]))
    world.nav_links = links
    world.step()
    a, b = links.nodes[0]
    assert world.nav_graph.distance(a, b) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="OffMeshLink.kind"):
        OffMeshLink(start=(0, 0), end=(1, 1), kind="portal")


def test_the_viewer_draws_each_link_as_an_arc_with_an_arrowhead_at_its_end():
    from ecs_nav.render.links import ARC_BULGE, ARC_SEGMENTS, DISABLED, link_arcs

    world = world_of(scene([{"start": [0, -3], "end": [0, 3]},
                            {"start": [5, -3], "end": [5, 3], "bidirectional": True, "kind": "door"}],
                           systems=["graph_build"]))
    world.step()
    graph, links = world.nav_graph, world.nav_links
    rows = link_arcs(links, graph)
    barbs = 2 + 4  # two a head: one head on the one-way link, two on the two-way one
    assert rows.shape == (2 * 2 * ARC_SEGMENTS + 2 * barbs, 6)  # (two rows a segment)
    arc = rows[: 2 * ARC_SEGMENTS, :2]
    a, b = graph.positions[links.nodes[0], :2]
    assert np.allclose(arc[0], a) and np.allclose(arc[-1], b)
    middle = arc[ARC_SEGMENTS]  # the end of segment ARC_SEGMENTS / 2: the arc's middle
    chord = b - a
    off = middle - a
    side = (chord[0] * off[1] - chord[1] * off[0]) / np.hypot(*chord)  # > 0: to the left of the direction
    assert side == pytest.approx(ARC_BULGE * np.hypot(*chord))
    head = rows[4 * ARC_SEGMENTS: 4 * ARC_SEGMENTS + 4, :2]  # the one-way link's barbs start at its end
    assert np.allclose(head[0], b) and np.allclose(head[2], b)
    world.set_link_enabled(1, False)
    world.step()
    greyed = link_arcs(links, world.nav_graph)
    assert np.allclose(greyed[2 * ARC_SEGMENTS, 2:], DISABLED) and not np.allclose(greyed[0, 2:], DISABLED)


def test_an_agent_standing_on_a_links_start_crosses_it_instead_of_walking_to_its_end():
    data = scene([{"start": [0, -3], "end": [0, 3], "kind": "jump"}], entities=[agent("a", (0.2, -3.1), (0, 10))])
    world, entity, reached, track = run_crossing(data, ticks=300)
    assert [(e.link, e.kind) for e in reached] == [(0, "jump")]
    assert track[-1, 2] > 8
