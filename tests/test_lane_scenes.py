"""The corridor (two streams head on) and crossing (four streams at right angles) scenes, each
walker keeping to the right (``Avoidance.side``), run headless on smaller versions of themselves:
the shipped scene's prefabs and map, only the streams' front columns. Every walker arrives in its
goal zone once, no two overlap by more than 2% of their radii, none is Stuck more than once,
none enters a wall, the run is deterministic, and with lanes the corridor empties well before it
does without them."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ecs_nav
from ecs_nav.motion.neighbours import neighbours_within
from ecs_nav.scene.files import build_world, parse_scene
from ecs_nav.testing import assert_deterministic

OVERLAP = 0.02
"""The largest overlap allowed, as a fraction of the sum of two radii."""

STOPPING_DISTANCE = 0.5
"""m, the scenes' ``Agent.stopping_distance``: a flow-field walker arrives within it of its zone."""

SMALLER = {"corridor": (60, 20.0), "crossing": (30, 30.0)}
"""Each scene's smaller version: walkers kept a stream (its front columns) and the half length
of the corridor (m; the crossing keeps its arms)."""


def smaller_scene(name: str, side: str | None = None):
    """The scene with the first walkers of each stream (the front columns) and, for the
    corridor, its ends moved in (the goal zones with them); ``side`` replaces every walker's."""
    scene = parse_scene(name)
    keep, reach = SMALLER[name]
    kept: dict[str, int] = {}
    entities = []
    for entry in scene.entities:
        if kept.get(entry["name"], 0) < keep:
            kept[entry["name"]] = kept.get(entry["name"], 0) + 1
            entities.append(entry)
    scene.entities = entities
    if name == "corridor":
        x0, y0, x1, y1 = scene.map["bounds"]
        scene.map["bounds"] = [-reach, y0, reach, y1]
        scene.navmap.scan_range = (reach, *scene.navmap.scan_range[1:])
        for entry in entities:
            zone = entry["components"]["PathRequest"]["zone"]
            entry["components"]["PathRequest"]["zone"] = [reach - 2.0, y0, reach, y1] if zone[0] > 0 else \
                [-reach, y0, -reach + 2.0, y1]
    if side is not None:
        for entry in entities:
            entry["components"]["Avoidance"]["side"] = side
    return scene


def closest_approach(pos: np.ndarray, radius: np.ndarray) -> float:
    """The smallest centre distance minus the sum of the radii over every pair (inf for fewer
    than two within reach)."""
    offsets, rows = neighbours_within(pos, 2.0 * float(radius.max()) + 0.5, max_neighbours=1)
    has = np.diff(offsets) > 0
    if not has.any():
        return math.inf
    i = np.flatnonzero(has)
    j = rows[offsets[:-1][has]]
    return float((np.hypot(*(pos[i] - pos[j]).T) - radius[i] - radius[j]).min())


def inside_walls(world, pos: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(k,) whether each disc keeps out of the bounds' edges and the map's boxes, to 2% of its radius."""
    margin = radius * (1.0 - OVERLAP)
    x0, y0, x1, y1 = world.map.bounds
    ok = (pos[:, 0] >= x0 + margin) & (pos[:, 0] <= x1 - margin) & (pos[:, 1] >= y0 + margin) & \
        (pos[:, 1] <= y1 - margin)
    for box in world.map.boxes:
        bx0, by0, bx1, by1 = box.aabb()
        dx = np.maximum(np.maximum(bx0 - pos[:, 0], pos[:, 0] - bx1), 0.0)
        dy = np.maximum(np.maximum(by0 - pos[:, 1], pos[:, 1] - by1), 0.0)
        ok &= np.hypot(dx, dy) >= margin
    return ok


def run(scene, seconds: float) -> dict:
    """Run a scene until every walker left or ``seconds``: where each walker stood when it
    arrived (its position before the tick that reports it), its arrivals, its Stuck events, the
    closest approach, whether anyone entered a wall, and the tick the last one arrived at."""
    world = build_world(scene)
    t = world.table
    zones = {int(t.entity[r]): world.get(int(t.entity[r]), ecs_nav.PathRequest).zone for r in range(t.n)}
    arrivals: dict[int, list[tuple[float, float]]] = {}
    stuck: dict[int, int] = {}
    last_seen: dict[int, tuple[float, float]] = {}
    world.on(ecs_nav.TargetReached, lambda e: arrivals.setdefault(e.entity, []).append(last_seen[e.entity]))
    world.on(ecs_nav.Stuck, lambda e: stuck.__setitem__(e.entity, stuck.get(e.entity, 0) + 1))
    closest, in_wall, last_tick = math.inf, False, None
    for _ in range(int(seconds / world.dt)):
        n = t.n
        last_seen = dict(zip(t.entity[:n].tolist(), map(tuple, t.pos[:n].tolist())))
        world.step()
        n = t.n
        if n > 1:
            closest = min(closest, closest_approach(t.pos[:n], t.radius[:n]))
        in_wall |= not inside_walls(world, t.pos[:n], t.radius[:n]).all()
        if len(arrivals) == len(zones):
            last_tick = world.tick
            break
    digest = world.state_digest()
    world.close()
    return {"zones": zones, "arrivals": arrivals, "stuck": stuck, "closest": closest, "in_wall": in_wall,
            "last_tick": last_tick, "digest": digest}


RUNS: dict[str, dict] = {}
"""Each smaller scene's run, made once for the tests that read it."""


def lanes_result(name: str) -> dict:
    if name not in RUNS:
        RUNS[name] = run(smaller_scene(name), 90.0)
    return RUNS[name]


@pytest.fixture(scope="module", params=["corridor", "crossing"])
def lanes_run(request):
    return request.param, lanes_result(request.param)


def test_every_walker_arrives_once_within_its_stopping_distance_of_its_goal_zone(lanes_run):
    _, result = lanes_run
    assert sorted(result["arrivals"]) == sorted(result["zones"])
    for entity, where in result["arrivals"].items():
        assert len(where) == 1
        x0, y0, x1, y1 = result["zones"][entity]
        (x, y), = where
        outside = math.hypot(max(x0 - x, x - x1, 0.0), max(y0 - y, y - y1, 0.0))
        assert outside <= STOPPING_DISTANCE, (entity, where, result["zones"][entity])


def test_no_two_walkers_overlap_by_more_than_two_percent_of_their_radii(lanes_run):
    assert lanes_run[1]["closest"] >= -OVERLAP * 2 * 0.3


def test_no_walker_is_stuck_more_than_once(lanes_run):
    assert all(count <= 1 for count in lanes_run[1]["stuck"].values())


def test_no_walker_enters_a_wall(lanes_run):
    assert not lanes_run[1]["in_wall"]


def test_the_last_walker_arrives_within_twice_a_free_walk(lanes_run):
    name, result = lanes_run
    world = build_world(smaller_scene(name))
    t = world.table
    heading = {1: np.array([1.0, 0.0]), 2: np.array([0.0, 1.0])}
    walks = []
    for r in range(t.n):
        x0, y0, x1, y1 = world.get(int(t.entity[r]), ecs_nav.PathRequest).zone
        centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
        axis = heading[1] if abs(centre[0]) > abs(centre[1]) else heading[2]
        direction = axis * np.sign(centre @ axis)
        edge = min(abs(x0), abs(x1)) if axis[0] else min(abs(y0), abs(y1))
        walks.append(edge - t.pos[r] @ direction)  # to the zone's near edge along its arm
    free = max(walks) / float(t.max_speed[0])
    world.close()
    assert result["last_tick"] is not None and result["last_tick"] * (1 / 60) <= 2.0 * free


@pytest.mark.parametrize("name", ["corridor", "crossing"])
def test_the_scene_runs_the_same_twice(name):
    assert_deterministic(lambda: build_world(smaller_scene(name)), 300, every=100)


def test_in_the_corridor_lanes_empty_it_well_before_walkers_without_a_side():
    lanes = lanes_result("corridor")
    seconds = lanes["last_tick"] / 60.0
    without = run(smaller_scene("corridor", side="none"), 1.5 * seconds)
    assert without["last_tick"] is None  # not all through in half as long again
    assert len(without["arrivals"]) < len(lanes["arrivals"])
