"""Flow-field followers cross off-mesh links as links: LinkReached, the link's shape and speed."""

from __future__ import annotations

import numpy as np
import pytest
from square_scene import square_scene, world_of

from ecs_nav.core.events import LinkReached, PathFailed, TargetReached
from ecs_nav.motion.link_motion import KIND_CODES, crossing_points

WALL = {"center": [0, 0], "size": [40, 1], "height": 3}
"""A wall across the whole map: south and north meet only through links."""
NORTH_ZONE = [-6.0, 12.0, 6.0, 16.0]
SOUTH_ZONE = [-6.0, -16.0, 6.0, -12.0]


def crowd(count, y, zone, x0=-4.0):
    return [{"Position": {"x": x0 + 1.6 * i, "y": y}, "Velocity": {}, "Agent": {"max_speed": 3.0},
             "Collider": {"radius": 0.4}, "SteeringWeights": {"weights": {"follow_path": 1.0, "separation": 0.5}},
             "PathRequest": {"zone": list(zone), "method": "flow_field"}} for i in range(count)]


def run(links, entities, ticks=1200, disabled=()):
    """The scene run for ``ticks``; returns the world, its LinkReached, TargetReached and PathFailed
    events, and each agent's (x, y, elevation) per tick ({entity: (ticks, 3)})."""
    world = world_of(square_scene(1, [WALL], entities, None, link=links))
    for i in disabled:
        world.set_link_enabled(i, False)
    got = {kind: [] for kind in (LinkReached, TargetReached, PathFailed)}
    for kind, out in got.items():
        world.on(kind, out.append)
    ents = sorted(world.entities())
    track = {e: [] for e in ents}
    for _ in range(ticks):
        world.step()
        for e in ents:
            if world.table.has(e):
                row = world.table.row_of(e)
                track[e].append((*world.table.pos[row], world.table.elevation[row]))
    return world, got[LinkReached], got[TargetReached], got[PathFailed], {e: np.array(t) for e, t in track.items()}


@pytest.mark.parametrize("kind", ["jump", "ladder", "teleport"])
def test_a_flow_crowd_crosses_a_wall_by_its_link_at_the_links_speed_and_shape(kind):
    speed = 2.5
    link = {"start": [0, -3], "end": [0, 3], "kind": kind, "speed": speed, "width": 4.0}
    world, reached, arrived, failed, track = run([link], crowd(6, -10, NORTH_ZONE))
    ents = sorted(track)
    assert sorted(ev.entity for ev in reached) == ents  # each crossed once, by the link
    assert all(ev.link == 0 and ev.kind == kind for ev in reached)
    assert sorted(ev.entity for ev in arrived) == ents and not failed
    dt = world.dt
    for ev in reached:
        t = track[ev.entity]
        a, b = np.array(ev.start), np.array(ev.end)
        assert a[1] < -0.9 and b[1] > 0.9 and abs(b[0] - a[0]) <= 2.0 + 1e-9  # across, keeping its offset
        duration = 0.0 if kind == "teleport" else np.linalg.norm(b - a) / speed
        landing = max(int(np.ceil(duration / dt - 1e-9)), 1)
        for k in range(1, landing):
            s = k * dt / duration
            expected = crossing_points(np.array([KIND_CODES[kind]]), a[None], b[None], np.array([s]))[0]
            np.testing.assert_allclose(t[ev.tick + k - 1], expected, atol=1e-9)
        # on the landing tick it walks on from b, and an agent landed beside it may push it apart
        assert np.hypot(*(t[ev.tick + landing - 1][:2] - b[:2])) <= 3.0 * dt + 0.4
        on_wall = np.abs(t[:, 1]) < 0.5 + 0.4  # over the wall's footprint only on the link
        assert np.all((np.arange(t.shape[0]) >= ev.tick - 1) & (np.arange(t.shape[0]) < ev.tick + landing) | ~on_wall)
    if kind == "jump":
        assert max(t[:, 2].max() for t in track.values()) > 0.5  # in the air


def test_a_disabled_link_is_not_taken_and_a_two_way_link_is_taken_from_its_far_end():
    links = [{"start": [-8, -3], "end": [-8, 3], "kind": "jump", "width": 4.0},
             {"start": [8, 3], "end": [8, -3], "kind": "door", "bidirectional": True, "width": 4.0}]
    south = crowd(4, -10, NORTH_ZONE, x0=-12.0)  # nearer the jump
    _, reached, arrived, _, _ = run(links, south, ticks=900)
    assert {ev.link for ev in reached} == {0} and len(arrived) == 4
    _, reached, arrived, failed, track = run(links, south, ticks=1500, disabled=[0])
    assert len(reached) == 4 and all(ev.link == 1 and ev.kind == "door" for ev in reached)
    assert all(ev.start[1] < 0 < ev.end[1] for ev in reached)  # from the door's end to its start
    assert len(arrived) == 4 and not failed


def test_a_one_way_link_is_not_crossed_backwards():
    link = {"start": [0, -3], "end": [0, 3], "kind": "drop", "width": 4.0}
    _, reached, arrived, failed, track = run([link], crowd(3, 10, SOUTH_ZONE), ticks=300)
    assert not reached and not arrived and len(failed) == 3  # no way south: unreachable, said once each
    assert all(np.all(t[:, 1] > 0.5) for t in track.values())


def test_a_flow_crowd_climbs_a_ladder_onto_a_roof_it_cannot_walk_up():
    roof = {"center": [0, 8], "size": [12, 8], "height": 3}
    entities = crowd(3, -8, [-3, 7, 3, 10], x0=-2.0)
    world = world_of(square_scene(1, [roof], entities, None,
                                  link=[{"start": [0, 2.5], "end": [0, 5], "kind": "ladder", "width": 2.0}]))
    reached, arrived = [], []
    world.on(LinkReached, reached.append)
    world.on(TargetReached, arrived.append)
    world.run(1200)
    assert len(reached) == 3 and all(ev.kind == "ladder" and ev.start[2] == 0 and ev.end[2] == 3 for ev in reached)
    assert len(arrived) == 3 and np.all(world.table.elevation[:3] == 3)  # on the roof


def test_followers_passing_a_links_start_on_their_way_elsewhere_walk_past_it():
    link = {"start": [0, -3], "end": [0, 3], "kind": "jump", "width": 4.0}
    east = [12.0, -6.0, 16.0, -1.0]  # south of the wall too: the link is no step of their field
    entities = [{**e, "Position": {"x": -14.0 + 1.2 * i, "y": -3.0}} for i, e in enumerate(crowd(3, -3, east))]
    _, reached, arrived, failed, track = run([link], entities, ticks=900)
    assert not reached and len(arrived) == 3 and not failed
    assert all(np.abs(t[:, 0]).min() < 1.0 and np.all(t[:, 1] < -0.5) for t in track.values())  # by the start
