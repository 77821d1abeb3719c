"""The seed-002 bot driven through the platformer physics: jump frames from the physics, arrival
on random levels, and hand-made levels for one-way platforms, drops, sizes and re-planning.

The arrival test runs a short form by default; ``ECS_NAV_SOAK=1`` runs the long form on fresh
seeds (a failing seed printed there belongs in ``REPLAYED_SEEDS``)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from platformer_levels import random_level, standing_cells

from ecs_nav.platformer.bot import (
    MOVE_TO,
    NONE,
    SEED_JUMP_FRAMES,
    full_jump_frames,
    jump_apex,
    jump_frames_table,
    max_jump_height,
)
from ecs_nav.platformer.bots import PlatformerBots, lower_onto_ground
from ecs_nav.platformer.level import SOLID, parse_level
from ecs_nav.platformer.physics import GO_DOWN, JUMP, SERIES

SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
DT = 1.0 / 60.0
REPLAYED_SEEDS = [1000, 1013, 1019, 1051, 1137, 1155, 1162, 1175, 1289, 1306, 1329, 1358, 1374, 1379, 1408,
                  1451, 1452, 1476, 1514, 1517, 1526, 1535, 1537, 1586, 1588]
"""Levels on which the soak run (seeds 1000-1599) saw a bot miss its destination: 26 of 4,800
trials. Most end in the destination's column but lower: the seed's reachedY counts a node
reached once the bot is at or below it when the path comes down to it, so a bot that fell past
a one-way platform stops there."""


def test_the_series_constants_give_the_seeds_jump_table():
    table = jump_frames_table(SERIES, DT)
    for height in (1, 2, 3, 4, 5):
        assert table[height] == SEED_JUMP_FRAMES[height]
    # 6 and "else" (the seed's 21 and 30): a 410 px/s jump cannot clear them; both tables then hold
    # Jump past the point where holding longer adds nothing
    full = full_jump_frames(SERIES, DT)
    assert full == 12
    assert jump_apex(SERIES, 30, DT) == jump_apex(SERIES, full, DT)
    assert table[6] >= full and table[-1] >= full and SEED_JUMP_FRAMES[6] >= full
    assert max_jump_height(SERIES, DT) == 5  # the series: 410 px/s jumps 5 tiles


def test_each_tabled_jump_clears_its_height_in_the_physics():
    level = parse_level("\n".join(["." * 3] * 12) + "\n###\n")
    table = jump_frames_table(SERIES, DT)
    for height in range(1, 6):
        bots = PlatformerBots(level)
        i = bots.add(1.0, 1.0, bot=False)
        frames, top = table[height], 1.0
        for _ in range(120):
            bots.inputs[i] = JUMP if (bots.on_ground[i] or frames > 0) else 0
            if not bots.on_ground[i] and frames > 0:
                frames -= 1
            bots.step()
            top = max(top, bots.y[i])
        assert top - 1.0 >= height


def run_trials(seeds, bots_per_level=8, width=0.75, height=0.75):
    """Bots of a ``width`` x ``height``-tile box sent to reachable destinations on the random
    levels of ``seeds``: (arrived, trials, failures, times found inside a solid tile)."""
    arrived, trials, failures, inside = 0, 0, [], 0
    for seed in seeds:
        level = random_level(seed, 24, 14)
        rng = np.random.default_rng(seed + 12345)
        bots = PlatformerBots(level)
        masks = bots.masks(1, 1)
        cells = standing_cells(masks.fits, masks.on_ground, level.tiles)
        goals = []
        for _ in range(bots_per_level):
            for _ in range(20):
                start, goal = cells[rng.integers(len(cells))], cells[rng.integers(len(cells))]
                if (start == goal).all():
                    continue
                i = bots.add(float(start[0]), float(start[1]), width=width, height=height)
                if bots.move_to(i, (int(goal[0]), int(goal[1]))):  # the planner says reachable
                    goals.append((i, (int(goal[0]), int(goal[1]))))
                    break
                bots.is_bot[i] = False
        for tick in range(60 * 40):
            bots.step()
            if tick % 5 == 0:
                inside += sum(bots.inside_solid(i) for i in range(bots.count))
            if not bots.state.any():
                break
        for i, goal in goals:
            trials += 1
            if bots.state[i] == NONE and bots.tile_of(i) == goal and bots.on_ground[i]:
                arrived += 1
            else:
                failures.append((seed, i, goal, bots.tile_of(i)))
        inside += sum(bots.inside_solid(i) for i in range(bots.count))
    return arrived, trials, failures, inside


def test_bots_reach_planned_destinations_in_at_least_99_percent_of_trials():
    arrived, trials, failures, inside = run_trials(range(0, 60))
    assert trials >= 400
    assert inside == 0
    assert arrived / trials >= 0.99, failures


@pytest.mark.slow
@pytest.mark.skipif(not SOAK, reason="long form: ECS_NAV_SOAK=1")
def test_soak_bots_reach_planned_destinations_in_at_least_99_percent_of_trials():
    seed0 = int(os.environ.get("ECS_NAV_SOAK_SEED", "1000"))
    arrived, trials, failures, inside = run_trials(range(seed0, seed0 + 600))
    print(f"platformer arrival: {arrived}/{trials} = {arrived / trials:.4f}; failures: {failures}")
    assert inside == 0
    assert arrived / trials >= 0.99


def test_replayed_soak_levels_keep_their_known_misses_and_no_more():
    arrived, trials, failures, inside = run_trials(REPLAYED_SEEDS)
    assert inside == 0
    assert len(failures) <= 26, failures  # one miss per level when they were found


def follow(bots, i, goal, ticks=600):
    assert bots.move_to(i, goal)
    seen_inputs = 0
    for _ in range(ticks):
        bots.step()
        seen_inputs |= int(bots.inputs[i])
        assert not bots.inside_solid(i)
        if bots.state[i] == NONE:
            break
    return seen_inputs


def test_a_bot_drops_through_a_one_way_platform_with_go_down_and_jumps_up_through_it():
    level = parse_level("......\n......\n.====.\n......\n......\n######\n")
    bots = PlatformerBots(level)
    i = bots.add(2.0, 4.0)
    assert bots.on_one_way[i]
    keys = follow(bots, i, (2, 1))
    assert keys & GO_DOWN and bots.tile_of(i) == (2, 1) and bots.state[i] == NONE
    keys = follow(bots, i, (3, 4))
    assert keys & JUMP and bots.tile_of(i) == (3, 4) and bots.on_one_way[i]


def test_a_solid_platform_is_not_dropped_through():
    level = parse_level("......\n......\n.####.\n......\n......\n######\n")
    bots = PlatformerBots(level)
    i = bots.add(2.0, 4.0)
    bots.inputs[i] = GO_DOWN
    bots.is_bot[i] = False
    for _ in range(30):
        bots.step()
    assert bots.y[i] == 4.0 and bots.on_ground[i] and not bots.on_one_way[i]


def test_a_two_by_two_character_follows_its_path_over_a_step():
    level = parse_level("........\n........\n........\n........\n....####\n########\n")
    bots = PlatformerBots(level)
    i = bots.add(0.0, 1.0, width=1.75, height=1.75)
    assert (bots.width_tiles[i], bots.height_tiles[i]) == (2, 2)
    follow(bots, i, (6, 2))
    assert bots.tile_of(i) == (6, 2) and bots.state[i] == NONE


def test_a_stuck_bot_replans_to_its_paths_last_node_after_20_frames():
    level = parse_level("........\n........\n........\n########\n")
    bots = PlatformerBots(level)
    i = bots.add(0.0, 1.0)
    assert bots.move_to(i, (7, 1))
    for _ in range(10):
        bots.step()
    level.set_tile(4, 1, SOLID)  # a wall appears; the bot walks into it and stops
    level.set_tile(4, 2, SOLID)
    level.set_tile(4, 3, SOLID)
    bots.level_changed()
    for _ in range(120):
        bots.step()
    assert bots.state[i] == NONE and bots.x[i] < 4  # re-planned, found no way, stopped
    level.set_tile(4, 3, 0)
    level.set_tile(4, 2, 0)
    bots.level_changed()
    follow(bots, i, (7, 1))
    assert bots.tile_of(i) == (7, 1)


def test_destination_is_lowered_onto_ground_and_start_tile_moves_off_a_ledge_edge():
    level = parse_level("......\n......\n......\n###...\n######\n")
    assert lower_onto_ground(level, (4, 4)) == (4, 1)
    assert lower_onto_ground(level, (1, 4)) == (1, 2)
    bots = PlatformerBots(level)
    # standing with its left corner over the gap's edge: the path tile (3, 2) has no ground under it
    i = bots.add(2.6, 2.0)
    assert bots.on_ground[i] and bots.tile_of(i) == (3, 2)
    assert bots.start_tile(i) == (2, 2)
    assert bots.state[i] != MOVE_TO


def test_removing_a_character_moves_the_last_row_into_its_place_with_all_its_columns():
    level = parse_level("........\n........\n########\n")
    bots = PlatformerBots(level)
    for x in (0.0, 2.0, 4.0):
        bots.add(x, 1.0)
    assert bots.move_to(2, (7, 1))
    path = bots.path(2)
    assert bots.remove(0) == 2
    assert bots.count == 2 and bots.x.shape == (2,) and bots.nodes.shape[0] == 2
    assert bots.x[0] == 4.0 and bots.state[0] == MOVE_TO and np.array_equal(bots.path(0), path)
    assert bots.x[1] == 2.0
