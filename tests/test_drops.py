"""Drops off ledges found by the heightfield scan: one-way EDGE_DROP links down, never up."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.nav.build import ScanParams, rebuild_region, scan_heightfield
from ecs_nav.nav.drops import scan_drops
from ecs_nav.nav.graph import EDGE_DROP, EDGE_WALK
from ecs_nav.nav.search import astar

TOP = 2.0


def platform(extra=()) -> MapGeometry:
    """A 40 x 40 m floor with an 8 x 8 m, 2 m high platform in the middle (no ramp up)."""
    return MapGeometry((-20.0, -20.0, 20.0, 20.0), [Box(center=(0.0, 0.0), size=(8.0, 8.0), height=TOP), *extra])


def params(max_drop: float, **kw) -> ScanParams:
    return ScanParams(scan_range=(20.0, 10.0, 20.0), spacing=1.0, max_drop=max_drop, **kw)


def test_ledge_gets_drop_edges_down_only():
    g = scan_heightfield(platform(), params(3.0))
    src, dst = g.edge_sources(), g.indices
    drop = g.kinds == EDGE_DROP
    assert drop.sum() > 0
    h = g.positions[:, 2]
    np.testing.assert_array_equal(h[src[drop]], TOP)
    np.testing.assert_array_equal(h[dst[drop]], 0.0)
    # walk edges never change level; nothing climbs back
    walk = g.kinds == EDGE_WALK
    assert np.all(np.abs(h[src[walk]] - h[dst[walk]]) <= g.max_climb)
    pairs = set(zip(src[drop].tolist(), dst[drop].tolist(), strict=True))
    assert not any((b, a) in pairs for a, b in pairs)
    # each drop costs its horizontal length plus the fall
    d = np.hypot(*(g.positions[dst[drop], :2] - g.positions[src[drop], :2]).T)
    np.testing.assert_allclose(g.costs[drop], d + TOP)
    assert np.all(scan_drops(g, params(3.0).drop_reach)[drop])


def test_every_top_node_by_the_edge_drops_in_its_outward_direction():
    """Top nodes are kept 1.25 m from the edge (x <= 2 on the whole-metre slots), floor nodes 1.25 m
    from the wall (x >= 6): the first valid slot straight east of x = 2 is x = 6, 4 m away, within
    the reach 2 * (1.25 + 1) = 4.5 m."""
    g = scan_heightfield(platform(), params(3.0))
    a = g.nearest_node((2.0, 0.0), TOP)
    b = g.nearest_node((6.0, 0.0), 0.0)
    assert tuple(g.positions[a]) == (2.0, 0.0, TOP) and tuple(g.positions[b]) == (6.0, 0.0, 0.0)
    assert g.positions[a, 2] == TOP and g.positions[b, 2] == 0.0
    lo, hi = g.indptr[a], g.indptr[a + 1]
    out = dict(zip(g.indices[lo:hi].tolist(), g.kinds[lo:hi].tolist(), strict=True))
    assert out.get(b) == EDGE_DROP
    assert a not in g.indices[g.indptr[b]:g.indptr[b + 1]]


def test_no_drops_when_higher_than_max_drop_or_off():
    for max_drop in (0.0, 0.5, 1.9):
        g = scan_heightfield(platform(), params(max_drop))
        assert not np.any(g.kinds == EDGE_DROP), max_drop
    plain = scan_heightfield(platform(), params(0.0))
    assert plain.edge_count == scan_heightfield(platform(), ScanParams(scan_range=(20.0, 10.0, 20.0),
                                                                      spacing=1.0)).edge_count


def test_paths_use_drops_one_way_with_scipys_costs():
    g = scan_heightfield(platform(), params(3.0))
    top = g.nearest_node((0.0, 0.0), TOP)
    floor = g.nearest_node((15.0, 15.0), 0.0)
    down = astar(g, top, floor)
    assert down.complete
    ref = dijkstra(g.to_scipy(), indices=top)
    assert math.isclose(down.cost, ref[floor], rel_tol=1e-12)
    nodes = down.nodes
    h = g.positions[nodes, 2]
    assert h[0] == TOP and h[-1] == 0.0 and np.all(np.diff(h) <= 0)
    assert not astar(g, floor, top).complete
    assert np.isinf(dijkstra(g.to_scipy(), indices=floor)[top])
    # every node's distance to the floor goal against scipy
    dist = dijkstra(g.to_scipy(), indices=floor, directed=True)
    tops = np.flatnonzero(g.walkable & (g.positions[:, 2] == TOP))
    assert np.all(np.isinf(dist[tops]))
    to_floor = dijkstra(g.to_scipy().T, indices=floor)
    for node in tops[:: max(1, len(tops) // 7)]:
        assert math.isclose(astar(g, int(node), floor).cost, to_floor[node], rel_tol=1e-12)


def test_a_wall_beyond_the_ledge_blocks_the_drop():
    fence = Box(center=(4.25, 0.0), size=(0.5, 8.0), height=TOP + 2.0)  # a fence along the east edge
    g = scan_heightfield(platform([fence]), params(3.0))
    drop = g.kinds == EDGE_DROP
    xa = g.positions[g.edge_sources()[drop], 0]
    xb = g.positions[g.indices[drop], 0]
    assert not np.any((xb > xa) & (np.abs(xb - xa) > np.abs(g.positions[g.indices[drop], 1]
                                                            - g.positions[g.edge_sources()[drop], 1])))


def test_a_gap_is_not_dropped_over():
    """A 2 m top (x < 0.3) above a 1 m one: a drop down onto the lower top, unless a 0.4 m trench
    to the floor lies between them (its slot passed over has no ground within a climb of either)."""

    def drops(lower_from: float) -> np.ndarray:
        tops = [Box(center=(-9.85, 0.0), size=(20.3, 40.0), height=TOP),
                Box(center=((lower_from + 20.0) / 2, 0.0), size=(20.0 - lower_from, 40.0), height=1.0)]
        g = scan_heightfield(MapGeometry((-20.0, -20.0, 20.0, 20.0), tops),
                             ScanParams(scan_range=(20.0, 10.0, 20.0), spacing=0.5, clearance=0.75, max_drop=3.0))
        drop = g.kinds == EDGE_DROP
        return g.positions[g.indices[drop], 2]

    assert np.any(drops(0.3) == 1.0)
    assert not np.any(drops(0.7) == 1.0)


@pytest.mark.parametrize("move", [(1.0, 0.0), (6.0, 3.0)])
def test_rebuild_region_rederives_drops_as_a_full_scan(move):
    p = params(3.0)
    geometry = platform([Box(center=(0.0, 8.0), size=(4.0, 2.0), height=1.0)])
    g = scan_heightfield(geometry, p)
    aabb = geometry.move(1, move)
    rebuilt = rebuild_region(g, geometry, p, aabb)
    full = scan_heightfield(geometry, p)

    def edges(graph):
        return sorted(zip(graph.edge_sources().tolist(), graph.indices.tolist(), graph.kinds.tolist(),
                          np.round(graph.costs, 9).tolist(), strict=True))

    assert edges(rebuilt) == edges(full)


PLATFORM_SCENE = """
[world]
seed = 1
systems = ["graph_build", "pathfind", "path_follow", "steering", "physics"]

[map]
bounds = [-20, -20, 20, 20]
[[map.box]]
center = [0, 0]
size = [8, 8]
height = 2.0

[navmap]
scan_range = [20, 10, 20]
spacing = 1.0
max_drop = {max_drop}

[[entity]]
name = "jumper"
Position = {{ x = 0, y = 0 }}
Agent = {{ max_speed = 3.0, max_force = 20.0 }}
Collider = {{ radius = 0.4 }}
Velocity = {{}}
SteeringWeights = {{ weights = {{ follow_path = 1.0 }} }}
PathRequest = {{ goal = [12, 0] }}
"""


@pytest.mark.parametrize("max_drop", [0.0, 2.5])
def test_scene_navmap_max_drop_routes_off_the_platform(tmp_path, max_drop):
    from ecs_nav import load_scene
    from ecs_nav.core.components import Path, Position

    scene = tmp_path / "platform.toml"
    scene.write_text(PLATFORM_SCENE.format(max_drop=max_drop))
    world = load_scene(scene)
    world.step()
    g = world.nav_graph
    assert world.navmap.max_drop == max_drop
    assert np.any(g.kinds == EDGE_DROP) == (max_drop > 0)
    (entity,) = world.find(Path)
    path = world.get(entity, Path)
    if max_drop == 0:  # no way down: the best it has is a partial route to the top's edge
        assert path.status == "partial"
        assert np.all(g.positions[path.nodes, 2] == TOP)
    else:  # the route leaves the top by a drop edge
        nodes = path.nodes
        h = g.positions[nodes, 2]
        assert h[0] == TOP and h[-1] == 0.0
        a, b = nodes[:-1], nodes[1:]
        kinds = [int(g.kinds[g.indptr[u] + np.flatnonzero(g.indices[g.indptr[u]:g.indptr[u + 1]] == v)[0]])
                 for u, v in zip(a.tolist(), b.tolist(), strict=True)]
        assert kinds.count(EDGE_DROP) == 1
    for _ in range(300):
        world.step()
    x = world.get(entity, Position).x
    assert (x > 8.0) if max_drop > 0 else (abs(x) < 4.0)  # walked off the top and on to the goal, or stayed


def test_a_solid_at_head_height_over_the_way_down_blocks_the_drop():
    """A slab floating from 3.0 to 5.0 m over x 3.3..5.5 m, east of the platform's edge (x = 4):
    above the feet of an agent on the 2 m platform and above its head's reach of the ground test,
    but across its head (at 2 + 2 - 0.2 = 3.8 m): no drop east from (2, 0) under it to (6, 0);
    without the slab there is one. Both nodes stand either way."""
    slab = Box(center=(4.4, 0.0), size=(2.2, 2.0), height=2.0, base=3.0)
    for extra, dropped in (((), True), ((slab,), False)):
        g = scan_heightfield(platform(extra), params(3.0))
        a, b = g.nearest_node((2.0, 0.0), TOP), g.nearest_node((6.0, 0.0), 0.0)
        assert tuple(g.positions[a]) == (2.0, 0.0, TOP) and tuple(g.positions[b]) == (6.0, 0.0, 0.0)
        lo, hi = g.indptr[a], g.indptr[a + 1]
        assert (b in g.indices[lo:hi].tolist()) == dropped
