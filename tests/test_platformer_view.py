"""The side view: its vertex arrays (no GL), a captured frame at world coordinates, and the
viewer's platformer controls (WASD, click to send a bot, right-click to toggle a tile)."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav import draw, draw_platformer, load_scene
from ecs_nav.components import PathRequest, Player
from ecs_nav.draw_platformer import SIDE_PALETTE
from ecs_nav.nav.platformer_level import SOLID
from ecs_nav.platformer_physics import GO_LEFT, JUMP
from ecs_nav.platformer_world import PLATFORMER, Bot


def scene(ticks=1):
    world = load_scene("platformer")
    world.run(ticks)
    return world, world.resources[PLATFORMER]


def test_level_triangles_cover_solid_tiles_and_a_slab_on_one_way_tiles():
    world, side = scene()
    rows = draw_platformer.level_triangles(side.level)
    tiles = side.level.tiles
    ones = int((tiles == SOLID).sum())
    ways = int((tiles == 2).sum())
    assert rows.shape == ((ones + ways) * 6, 6)
    one_way = rows[np.all(np.isclose(rows[:, 2:], SIDE_PALETTE["one_way"]), axis=1)]
    assert one_way.shape[0] == ways * 6
    # a slab: every corner sits in the top fifth of a tile
    frac = one_way[:, 1] - np.floor(one_way[:, 1] - 1e-6)
    assert np.all(frac >= 1 - draw_platformer.ONE_WAY_THICKNESS - 1e-5)


def test_paths_mark_rises_as_jumps_and_inputs_show_held_keys():
    world, side = scene(30)
    lines = draw_platformer.path_lines(side)
    assert lines.shape[0] > 0
    jump = np.all(np.isclose(lines[:, 2:], SIDE_PALETTE["jump"]), axis=1)
    pairs = lines[jump].reshape(-1, 2, 6)
    assert pairs.shape[0] > 0 and np.all(pairs[:, 1, 1] > pairs[:, 0, 1])  # jump legs go up
    player = world.find(Player)[0]
    side.characters.inputs[:] = 0
    side.characters.inputs[side.row_of(player)] = GO_LEFT | JUMP
    arrows = draw_platformer.input_lines(side)
    assert arrows.shape[0] == 2 * 6  # two arrows, three segments each
    x, y = side.position(player)
    shafts = arrows.reshape(-1, 2, 6)[[0, 1]]  # the shafts come first
    assert shafts[0, 1, 0] < x and shafts[1, 1, 1] > y + 0.75


def test_a_captured_side_view_shows_tiles_platforms_and_characters_where_they_are():
    import ecs_nav.systems.render as render

    try:
        render.offscreen_window()
    except render.RenderUnavailable as exc:
        pytest.skip(f"no OpenGL context here: {exc}")
    from ecs_nav.viewer import render_frame

    world, side = scene()
    camera = draw.Camera(width=640, height=320)
    camera.fit(draw.map_bounds(world))
    image = render_frame(world, (640, 320), hud=False, camera=camera)

    def colour_at(point):
        x, y = camera.world_to_screen(point)[0]
        return image[camera.height - 1 - int(y), int(x)].astype(int)

    def near(point, colour, tol=14):
        return bool(np.all(np.abs(colour_at(point) - np.round(np.asarray(colour[:3]) * 255)) <= tol))

    assert near((0.5, 0.5), SIDE_PALETTE["solid"])  # the floor
    assert near((6.5, 13.9), SIDE_PALETTE["one_way"])  # the top of a one-way tile
    assert near((6.5, 13.3), draw.PALETTE["background"])  # below its slab: open
    player = world.find(Player)[0]
    px, py = side.position(player)
    assert near((px + 0.37, py + 0.37), SIDE_PALETTE["player"])
    bot = world.find(Bot)[0]
    bx, by = side.position(bot)
    assert near((bx + 0.37, by + 0.37), SIDE_PALETTE["bot"])


class Keys:
    A, D, W, S, MOD_SHIFT = 97, 100, 119, 115, 1


def test_wasd_holds_the_players_inputs_and_clicks_send_bots_and_toggle_tiles():
    from ecs_nav import side_view_controls as controls

    assert controls.held_inputs({Keys.A, Keys.W}, Keys) == GO_LEFT | JUMP
    world, side = scene()
    bot, other = world.find(Bot)[:2]
    bx, by = side.position(bot)
    selected, status = controls.click(world, side, (bx + 0.3, by + 0.3), True, False, [])
    assert selected == [bot] and status == ""
    selected, _ = controls.click(world, side, (*side.position(other),), True, True, selected)
    assert selected == [bot, other]
    controls.click(world, side, (3.5, 12.0), True, False, selected)
    assert world.get(bot, PathRequest).goal == (3.5, 12.0)
    assert world.get(other, PathRequest).goal == (3.5, 12.0)
    _, status = controls.click(world, side, (20.5, 4.5), False, False, selected)
    assert side.level.tile(20, 4) == SOLID and status == ""
    _, status = controls.click(world, side, (bx + 0.3, by + 0.3), False, False, selected)
    assert "character stands" in status
    assert list(controls.selected_rows(side, [bot])) == [side.row_of(bot)]


def test_the_viewer_drives_the_player_with_wasd_and_sends_a_clicked_bot():
    import ecs_nav.systems.render as render

    try:
        window = render.offscreen_window()
    except render.RenderUnavailable as exc:
        pytest.skip(f"no OpenGL context here: {exc}")
    from ecs_nav.viewer import Viewer

    world, side = scene()
    viewer = Viewer(world, window)
    try:
        key, mouse = render.pyglet.window.key, render.pyglet.window.mouse
        viewer.camera = draw.Camera(width=640, height=320)
        viewer.camera.fit(draw.map_bounds(world))
        player = world.find(Player)[0]
        window.dispatch_event("on_key_press", key.D, 0)
        window.dispatch_events()
        x0 = side.position(player)[0]
        viewer.run_ticks(10)
        assert side.position(player)[0] > x0 + 1  # walked right (a wall stands on its left)
        bot = world.find(Bot)[0]
        bx, by = side.position(bot)
        for point in ((bx + 0.37, by + 0.37), (3.5, 12.0)):
            sx, sy = viewer.camera.world_to_screen(point)[0]
            viewer.click(sx, sy, mouse.LEFT)
        assert viewer.selected == [bot] and world.get(bot, PathRequest).goal == pytest.approx((3.5, 12.0), abs=0.1)
        viewer.on_draw()
    finally:
        viewer.close()
