"""The platformer through the ECS: scenes/platformer.toml run headless, level errors as scene
errors, determinism, tile changes and despawns."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav import PathRequest, load_scene
from ecs_nav.core.components import Player
from ecs_nav.core.events import PathChanged, TargetReached
from ecs_nav.platformer.level import SOLID
from ecs_nav.platformer.physics import GO_RIGHT, JUMP
from ecs_nav.platformer.world import PLATFORMER, Bot, PlatformerBody
from ecs_nav.scene.files import SceneError, parse_scene, save_scene

PLAYER_SPOTS = [(3, 9), (12, 11), (22, 11), (7, 14), (19, 7), (37, 3), (29, 14), (1, 3)]
"""Tiles the test puts the player on, one after another (each stands on ground in the scene's
level: a ledge, solid and one-way platforms high and low, the floor at either end)."""


def teleport(side, entity, tile):
    row = side.row_of(entity)
    c = side.characters
    c.x[row], c.y[row] = float(tile[0]), float(tile[1])
    c.vx[row] = c.vy[row] = 0.0
    c.on_ground[row] = False


def chase(legs, ticks_per_leg=900):
    """Run the scene with the player put on each spot in turn; returns (arrivals, trials, ticks
    each bot took per arrival, characters found inside a solid tile)."""
    world = load_scene("platformer")
    side = world.resources[PLATFORMER]
    world.step()  # the GraphBuild stage gives the characters their rows
    player = world.find(Player)[0]
    bots = world.find(Bot)
    arrivals, trials, took, inside = 0, 0, [], 0
    for spot in legs:
        teleport(side, player, spot)
        start, reached = world.tick, set()
        for _ in range(ticks_per_leg):
            world.step()
            for event in world.events:
                if isinstance(event, TargetReached) and event.entity not in reached:
                    reached.add(event.entity)
                    took.append(world.tick - start)
            if world.tick % 5 == 0:
                inside += sum(side.characters.inside_solid(i) for i in range(side.count))
            if len(reached) == len(bots):
                break
        trials += len(bots)
        arrivals += len(reached)
    inside += sum(side.characters.inside_solid(i) for i in range(side.count))
    world.close()
    return arrivals, trials, took, inside


def test_bots_of_the_platformer_scene_reach_the_player_wherever_it_goes():
    arrivals, trials, took, inside = chase(PLAYER_SPOTS)
    print(f"platformer scene: {arrivals}/{trials} arrivals, ticks per arrival median {np.median(took):.0f}, "
          f"max {max(took)}")
    assert inside == 0
    assert arrivals == trials


def test_the_scene_runs_headless_and_the_bots_reach_the_standing_player():
    world = load_scene("platformer")
    reached = set()
    world.on(TargetReached, lambda e: reached.add(e.entity))
    world.run(600)
    assert reached == set(world.find(Bot))
    side = world.resources[PLATFORMER]
    player = world.find(Player)[0]
    for bot in world.find(Bot):
        assert side.tile_of(bot) == side.tile_of(player)
    assert world.summary()["characters"] == 4 and world.summary()["agents"] == 0


def test_same_scene_and_seed_give_the_same_digest_and_it_covers_the_characters():
    digests = []
    for _ in range(2):
        world = load_scene("platformer")
        world.run(120)
        digests.append(world.state_digest())
        side = world.resources[PLATFORMER]
        side.characters.x[1] += 0.25
        assert world.state_digest() != digests[-1]
        world.close()
    assert digests[0] == digests[1]


def test_a_player_moves_by_its_inputs_and_bots_ignore_them():
    world = load_scene("platformer")
    world.step()
    side = world.resources[PLATFORMER]
    player = world.find(Player)[0]
    x0, y0 = side.position(player)
    side.set_inputs(player, GO_RIGHT | JUMP)
    top = y0
    for _ in range(30):
        world.step()
        top = max(top, side.position(player)[1])
    assert top > y0 + 2  # it jumped
    with pytest.raises(ValueError, match="input bits"):
        side.set_inputs(player, 99)


def test_a_new_wall_makes_the_bots_replan_and_a_removed_one_lets_them_through():
    world = load_scene("platformer")
    side = world.resources[PLATFORMER]
    world.step()
    changed = []
    world.on(PathChanged, lambda e: changed.append(e.entity))
    bot = world.find(Bot)[0]  # bot-left, on the floor at the left
    before = side.characters.path(side.row_of(bot))
    side.toggle_tile(3, 3)  # a wall two tiles high on the floor ahead of it
    side.toggle_tile(3, 4)
    assert side.level.tile(3, 3) == SOLID and side.version == 2
    world.step()
    assert bot in changed
    assert not np.array_equal(before, side.characters.path(side.row_of(bot)))
    side.toggle_tile(3, 4)
    side.toggle_tile(3, 3)
    assert side.level.tile(3, 3) != SOLID
    world.step()
    assert np.array_equal(before[-1], side.characters.path(side.row_of(bot))[-1])
    with pytest.raises(ValueError, match="character stands"):
        row = side.row_of(bot)
        side.toggle_tile(int(side.characters.x[row] + 0.1), int(side.characters.y[row] + 0.1))


def test_a_despawned_bot_loses_its_row_and_the_others_keep_theirs():
    world = load_scene("platformer")
    world.run(5)
    side = world.resources[PLATFORMER]
    bots = world.find(Bot)
    kept = {b: side.position(b) for b in bots[1:]}
    world.despawn(bots[0])
    world.step()
    assert side.count == 3 and side.row_of(bots[0]) < 0
    for b, (x, _) in kept.items():
        assert abs(side.position(b)[0] - x) < 1.0


def test_a_click_goal_is_served_and_lowered_onto_the_ground():
    world = load_scene("platformer")
    world.step()
    side = world.resources[PLATFORMER]
    bot = world.find(Bot)[0]
    world.add_component(bot, PathRequest(goal=(3.5, 15.0)))  # above the ledge at (2..5, 8)
    reached = []
    world.on(TargetReached, lambda e: reached.append(e.entity) if e.entity == bot else None)
    world.run(400)
    assert reached == [bot] and side.tile_of(bot) == (3, 9)


def level_scene(tmp_path, tiles, body="spawn = 0"):
    text = (f"[level]\ntiles = '''\n{tiles}\n'''\n\n"
            f"[[entity]]\nname = \"bot\"\nPlatformerBody = {{ {body} }}\nBot = {{}}\n")
    path = tmp_path / "level.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("tiles, body, message", [
    ("....\n.@x.\n####", "spawn = 0", "level.tiles: line 2, column 3: unknown tile character 'x'"),
    ("....\n.@.\n####", "spawn = 0", "level.tiles: line 2, column 4: ragged line"),
    ("....\n.@#.\n####", "spawn = 0, width = 1.5",
     'entity[0] "bot" PlatformerBody.spawn: level.tiles: line 2, column 2: a 2×1-tile character'),
    ("....\n.@..\n####", "spawn = 1", "the level has 1 spawn point(s) (@), got index 1"),
    ("....\n....\n####", "x = 1.0, y = 0.5", 'entity[0] "bot" PlatformerBody: line 3, column 2: the 0.75x0.75'),
    ("....\n....\n####", "x = 70.0, y = 20.0", 'entity[0] "bot" PlatformerBody: the 0.75x0.75-tile box at (70.0, '
     "20.0) reaches outside the level (4 x 3 tiles, x and y from 0)"),
    ("....\n....\n####", "", "give its start: spawn (an @ of the level), or x and y"),
    ("....\n....\n####", "spawn = 0, gravity = 3.0",
     'entity[0] "bot" PlatformerBody.gravity: must be a finite number < 0 (tiles/s², down), got 3.0'),
])
def test_level_and_body_errors_name_where_they_are(tmp_path, tiles, body, message):
    path = level_scene(tmp_path, tiles, body)
    with pytest.raises(SceneError) as info:
        parse_scene(path)
    assert any(message in line for line in info.value.problems), info.value.problems


def test_a_level_and_a_map_together_or_a_bot_without_a_body_are_errors(tmp_path):
    path = tmp_path / "both.toml"
    path.write_text("[map]\nbounds = [0, 0, 5, 5]\n[level]\ntiles = '''\n..\n##\n'''\n[[entity]]\nBot = {}\n")
    with pytest.raises(SceneError) as info:
        parse_scene(path)
    text = "\n".join(info.value.problems)
    assert "not both" in text and "a Bot needs a PlatformerBody" in text


def test_a_saved_platformer_scene_loads_with_the_toggled_tiles_and_the_characters_where_they_were(tmp_path):
    world = load_scene("platformer")
    world.run(60)
    side = world.resources[PLATFORMER]
    side.toggle_tile(0, 4)
    bot = world.find(Bot)[0]
    where = side.position(bot)
    path = tmp_path / "saved.toml"
    save_scene(world, path)
    again = load_scene(path)
    again.step()
    side2 = again.resources[PLATFORMER]
    assert side2.level.tile(0, 4) == SOLID
    assert isinstance(again.get(again.find(Bot)[0], PlatformerBody), PlatformerBody)
    assert abs(side2.position(again.find(Bot)[0])[0] - where[0]) < 0.5


def test_a_bot_stuck_for_20_frames_reports_stuck_once_and_replans_on_the_next_tick():
    from ecs_nav.core.events import Stuck
    from ecs_nav.platformer.bot import MAX_STUCK_FRAMES

    world = load_scene("platformer")
    world.run(2)
    side = world.resources[PLATFORMER]
    bot = world.find(Bot)[0]
    row = side.row_of(bot)
    stuck, changed = [], []
    world.on(Stuck, lambda e: stuck.append((e.entity, e.tick)))
    world.on(PathChanged, lambda e: changed.append(e.entity))
    x = side.characters.x[row]
    for _ in range(MAX_STUCK_FRAMES + 3):  # held in place: the position does not change
        side.characters.x[row] = x
        side.characters.prev_x[row] = x
        world.step()
    assert [e for e, _ in stuck] == [bot]
    assert not side.characters.replan[row]  # served: re-planned from where it stands
    assert side.characters.state[row] == 1
