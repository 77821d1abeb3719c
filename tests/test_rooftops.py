"""The rooftops scene: agents over a ladder, a jump, a drop and a door, or through the water."""

from __future__ import annotations

import numpy as np

from ecs_nav.core.components import NavFilter, PathRequest
from ecs_nav.core.events import LinkReached, TargetReached
from ecs_nav.scene.files import load_scene

WATER = ((-7.0, -8.0), (22.0, 12.0))  # the scene's water area: centre and size, m
LADDER, JUMP, DROP, DOOR = range(4)
WALL_X = 14.0


def run(ticks, close_door_until=0):
    world = load_scene("rooftops")
    reached, arrived = [], []
    world.on(LinkReached, reached.append)
    world.on(TargetReached, arrived.append)
    ents = sorted(e for e in world.entities() if world.try_get(e, PathRequest) is not None)
    if close_door_until:
        world.set_link_enabled(DOOR, False)
    track = {e: [] for e in ents}
    for _ in range(ticks):
        if close_door_until and world.tick == close_door_until:
            world.set_link_enabled(DOOR, True)
        world.step()
        for e in ents:
            row = world.table.row_of(e)
            track[e].append((*world.table.pos[row], world.table.elevation[row]))
    return world, ents, reached, arrived, {e: np.array(t) for e, t in track.items()}


def water_depth(t):
    """How far inside the water each (x, y) of the track is (m; negative: outside)."""
    (cx, cy), (w, d) = WATER
    return np.minimum(w / 2 - np.abs(t[:, 0] - cx), d / 2 - np.abs(t[:, 1] - cy))


def test_rooftops_agents_arrive_over_the_links_or_through_the_water_as_their_filters_allow():
    world, ents, reached, arrived, track = run(2400)
    assert sorted(e.entity for e in arrived) == ents  # everyone arrives, once
    dry = [e for e in ents if world.try_get(e, NavFilter) is not None]
    wet = [e for e in ents if e not in dry]
    assert len(dry) == 2 and len(wet) == 2
    for e in ents:
        goal = np.array(world.get(e, PathRequest).goal)
        assert np.hypot(*(track[e][-1, :2] - goal)) < 1.0
        links = [(r.link, r.kind) for r in reached if r.entity == e]
        if e in dry:  # up, over, down, through, in that order, each once
            assert links == [(LADDER, "ladder"), (JUMP, "jump"), (DROP, "drop"), (DOOR, "door")]
            # never further into the water than half a node spacing (0.25 m: see ecs_nav.nav.areas)
            assert water_depth(track[e]).max() < 0.25
            assert track[e][:, 2].max() > 2.9  # up on the roofs
        else:
            assert links == [(DOOR, "door")]
            assert water_depth(track[e]).max() > 1.0  # wades in, well past the edge
            assert track[e][:, 2].max() == 0.0
    for r in reached:  # each link the way it allows
        if r.link == JUMP:
            assert r.end[0] > r.start[0] and r.start[2] == r.end[2] == 3.0
        if r.link == DROP:
            assert r.start[2] == 3.0 and r.end[2] == 0.0
        if r.link in (DOOR, LADDER):
            assert r.end[0] > r.start[0]  # all east-bound: the door west to east, the ladder up
    # nobody passes the wall but through the door
    for e in ents:
        east = track[e][:, 0] > WALL_X
        first = int(np.argmax(east))
        door = next(r for r in reached if r.entity == e and r.link == DOOR)
        assert first >= door.tick - 1 and np.all(east[first:])


def test_with_the_door_closed_nobody_gets_through_the_wall_until_it_opens():
    world, ents, reached, arrived, track = run(2400, close_door_until=1500)
    door = [r for r in reached if r.link == DOOR]
    assert len(door) == 4 and min(r.tick for r in door) >= 1500
    for e in ents:
        assert track[e][:1499, 0].max() < WALL_X  # held west of the wall while it is shut
    assert sorted(e.entity for e in arrived) == ents
