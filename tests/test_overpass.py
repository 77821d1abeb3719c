"""The overpass scene: agents routed under and over a bridge, and to both storeys of a building."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.core.components import Name, PathRequest
from ecs_nav.core.events import Stuck, TargetReached
from ecs_nav.scene.files import load_scene

DECK = (-15.0, -9.0, -10.0, 10.0)  # the bridge deck's footprint: xmin, xmax, ymin, ymax
DECK_TOP, ROAD_HALF = 3.5, 3.5


@pytest.fixture(scope="module")
def run():
    world = load_scene("overpass")
    arrived, stuck = {}, []
    world.on(TargetReached, lambda ev: arrived.setdefault(ev.entity, world.tick))
    world.on(Stuck, stuck.append)
    ents = sorted(e for e in world.entities() if world.try_get(e, PathRequest) is not None)
    track = {e: [] for e in ents}
    for _ in range(2400):
        world.step()
        for e in ents:
            row = world.table.row_of(e)
            track[e].append((*world.table.pos[row], world.table.elevation[row]))
    names = {world.get(e, Name).value: e for e in ents}
    return world, names, arrived, stuck, {e: np.array(t) for e, t in track.items()}


def _over_road_under_deck(t):
    return (t[:, 0] > DECK[0]) & (t[:, 0] < DECK[1]) & (np.abs(t[:, 1]) < ROAD_HALF)


def test_every_agent_arrives_where_its_goal_is_on_its_floor(run):
    world, names, arrived, stuck, track = run
    assert len(names) == 7 and sorted(arrived) == sorted(names.values())
    assert stuck == []
    for e in names.values():
        request = world.get(e, PathRequest)
        end = track[e][-1]
        assert np.hypot(*(end[:2] - np.array(request.goal))) < 1.0
        if request.goal_elevation is not None:
            assert end[2] == pytest.approx(request.goal_elevation, abs=1e-9)


def test_road_users_pass_under_the_deck_and_bridge_users_cross_over_the_road(run):
    _, names, _, _, track = run
    for name in ("road_1", "road_2", "road_3"):
        t = track[names[name]]
        assert _over_road_under_deck(t).sum() > 10, name  # they walked under the deck ...
        assert np.all(t[:, 2] == 0.0), name  # ... on the road: never lifted onto it
    for name in ("bridge_1", "bridge_2"):
        t = track[names[name]]
        crossing = np.abs(t[:, 1]) < ROAD_HALF
        assert crossing.sum() > 10, name
        np.testing.assert_array_equal(t[crossing, 2], DECK_TOP)  # over the road: on the deck
        assert np.all((t[crossing, 0] > DECK[0]) & (t[crossing, 0] < DECK[1])), name


def test_the_same_point_is_reached_on_the_ground_floor_and_on_the_floor_above(run):
    _, names, _, _, track = run
    down, up = track[names["downstairs"]], track[names["upstairs"]]
    assert np.hypot(*(down[-1, :2] - up[-1, :2])) < 1.5
    assert down[-1, 2] == 0.0 and up[-1, 2] == DECK_TOP
    assert down[:, 2].max() < 0.5  # the room's door, never the stairs
    assert up[:, 2].max() == DECK_TOP


def test_the_overpass_scene_is_deterministic(run):
    world, *_ = run
    again = load_scene("overpass")
    for _ in range(2400):
        again.step()
    assert again.state_digest() == world.state_digest()
