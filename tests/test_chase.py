"""Seed 000 end to end: the NPC climbs the ramp, crosses the wall, comes down and stops
1.5 from the moving player; the whole run is deterministic."""

import numpy as np
import pytest

import ecs_nav
from ecs_nav import PathRequest, Player, TargetReached
from ecs_nav.testing import assert_emitted, assert_not_emitted, record_events

CATCH_BOUND_TICKS = 2400  # 40 s simulated; the NPC needs about 26 s (1,540 ticks)


def _chase(max_ticks):
    world = ecs_nav.load_scene("chase")
    npc = next(e for e in world.entities() if world.try_get(e, PathRequest))
    player = world.find(Player)[0]
    caught = []
    world.on(TargetReached, lambda ev: caught.append(ev))
    track, player_track = [], []
    while world.tick < max_ticks and not caught:
        world.step()
        t = world.table
        track.append((*t.pos[t.row_of(npc)], t.elevation[t.row_of(npc)]))
        player_track.append(t.pos[t.row_of(player)].copy())
    return world, npc, player, caught, np.array(track), np.array(player_track)


@pytest.fixture(scope="module")
def chase_run():
    world, *rest = _chase(CATCH_BOUND_TICKS)
    yield (world, *rest)
    world.close()


def test_npc_reaches_the_moving_player_within_the_bound(chase_run):
    world, npc, player, caught, track, player_track = chase_run
    assert caught, f"no TargetReached within {CATCH_BOUND_TICKS} ticks"
    assert [ev.entity for ev in caught] == [npc]
    assert np.ptp(player_track[:, 0]) > 5, "the player should have been moving"
    t = world.table
    gap = np.linalg.norm(t.pos[t.row_of(npc)] - t.pos[t.row_of(player)])
    assert gap <= 1.5 + 0.05  # seed 000's stopping distance


def test_npc_track_goes_over_the_wall_by_the_ramps(chase_run):
    world, npc, player, caught, track, _ = chase_run
    on_wall = np.abs(track[:, 1]) < 3.5
    assert on_wall.any(), "the NPC never crossed the wall"
    # wherever it was over the wall's footprint it stood on its top (elevation 3)
    assert np.allclose(track[on_wall, 2], 3.0, atol=0.05)
    # it went up the south ramp (x = -20 ± 4, y in [-19.5, -3.5]) and down the north one (x = 20 ± 4)
    south = (np.abs(track[:, 0] + 20) < 4) & (track[:, 1] > -19.5) & (track[:, 1] < -3.5)
    north = (np.abs(track[:, 0] - 20) < 4) & (track[:, 1] > 3.5) & (track[:, 1] < 19.5)
    assert south.any() and north.any()
    climbing = track[south]
    assert np.all(np.diff(climbing[:, 2]) > -1e-9), "elevation should rise along the ramp going up"
    # never a step up or down larger than the climb limit between ticks
    assert np.max(np.abs(np.diff(track[:, 2]))) <= 0.5


def test_chase_is_deterministic():
    a, *_ = _chase(300)
    b, *_ = _chase(300)
    try:
        assert a.tick == b.tick == 300
        assert a.state_digest() == b.state_digest()
    finally:
        a.close()
        b.close()


def test_a_minute_of_chasing_the_strolling_player_is_never_stuck():
    # "Stuck means stuck": the NPC turns corners, climbs ramps, re-plans every 30 ticks toward a
    # moving player, stops and re-arms as the player walks off -- none of that is standing still
    world = ecs_nav.load_scene("chase")
    log = record_events(world, ecs_nav.Stuck, TargetReached)
    world.run(3600)
    assert_not_emitted(log, ecs_nav.Stuck)
    assert_emitted(log, TargetReached, at_least=2)  # caught, walked off, caught again
    world.close()
