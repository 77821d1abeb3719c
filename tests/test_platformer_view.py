"""The side view: its vertex arrays (no GL), a captured frame at world coordinates, and the
viewer's platformer controls (WASD, click to send a bot, right-click to toggle a tile)."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav import load_scene
from ecs_nav.core.components import Name, PathRequest, Player
from ecs_nav.platformer.level import SOLID
from ecs_nav.platformer.physics import GO_LEFT, JUMP
from ecs_nav.platformer.world import PLATFORMER, Bot
from ecs_nav.render import draw
from ecs_nav.render import labels as draw_labels
from ecs_nav.render import panel as draw_panel
from ecs_nav.render import platformer as draw_platformer
from ecs_nav.render import side_labels as draw_side_labels
from ecs_nav.render.platformer import SIDE_PALETTE


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
    from ecs_nav.render.capture import render_frame

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
    groups = draw_side_labels.character_groups(world, side)
    for bot in world.find(Bot):  # each bot in its own group's colour
        bx, by = side.position(bot)
        assert near((bx + 0.37, by + 0.37), groups.row_colour[side.row_of(bot)])


class Keys:
    A, D, W, S, MOD_SHIFT = 97, 100, 119, 115, 1


def test_wasd_holds_the_players_inputs_and_clicks_send_bots_and_toggle_tiles():
    from ecs_nav.render import side_view_controls as controls
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
    from ecs_nav.render.viewer import Viewer

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


def names_of(world):
    return {n.value: e for e, (n,) in world.query(Name)}


def test_each_named_character_has_a_colour_and_a_label_that_says_what_it_does():
    world, side = scene(60)
    names = names_of(world)
    groups = draw_side_labels.character_groups(world, side)
    assert groups.names == ["player", "bot-left", "bot-ledge", "bot-high"]
    assert tuple(groups.colours[0]) == SIDE_PALETTE["player"]
    bot_colours = [tuple(c) for c in groups.colours[1:]]
    assert bot_colours == list(draw_side_labels.SIDE_BOT_COLOURS[:3]) and len(set(bot_colours)) == 3
    assert SIDE_PALETTE["jump"] not in bot_colours
    doing = {name: draw_side_labels.doing(world, side, side.row_of(e)) for name, e in names.items()}
    assert doing == {"player": "W A S D", "bot-left": "chasing player", "bot-ledge": "chasing player",
                     "bot-high": "chasing player"}
    side.failed[side.row_of(names["bot-left"])] = True
    assert draw_side_labels.doing(world, side, side.row_of(names["bot-left"])) == "no path to player"
    side.failed[side.row_of(names["bot-left"])] = False
    world.add_component(names["bot-high"], PathRequest(goal=(3.5, 12.0)))
    assert draw_side_labels.doing(world, side, side.row_of(names["bot-high"])) == "going to (4, 12)"


def test_side_labels_sit_beside_their_characters_and_bots_that_met_share_one():
    world, side = scene(60)
    names = names_of(world)
    groups = draw_side_labels.character_groups(world, side)
    camera = draw.Camera(width=1600, height=640)
    camera.fit(draw.map_bounds(world))
    labels = draw_side_labels.side_labels(world, side, camera, groups)
    by_text = {label.text.split(":")[0]: label for label in labels}
    assert set(by_text) == {"player", "bot-left", "bot-ledge", "bot-high"}
    x, y = side.position(names["bot-left"])
    sx, sy = camera.world_to_screen((x + 0.375, y + 0.375))[0]
    label = by_text["bot-left"]
    assert 0 < label.x - sx < 20 and abs(label.y - sy) < 30
    assert label.colour == tuple(groups.colours[1])
    c = side.characters
    for name in ("bot-ledge", "bot-high"):  # both catch up with bot-left and stand there, done
        row = side.row_of(names[name])
        c.x[row], c.y[row] = x + 0.1, y
    for name in ("bot-left", "bot-ledge", "bot-high"):
        row = side.row_of(names[name])
        c.state[row], side.arrived[row] = 0, True
    texts = [label.text for label in draw_side_labels.side_labels(world, side, camera, groups)]
    assert "bot-left + bot-ledge + bot-high: reached player" in texts and len(texts) == 2


def test_no_side_label_hides_a_character():
    world, side = scene(100)  # bot-left's label would sit on bot-high here, were characters not avoided
    groups = draw_side_labels.character_groups(world, side)
    panel = draw_panel.side_panel_width(900)
    camera = draw.Camera(width=900, height=500)
    camera.fit(draw.map_bounds(world), left=panel)
    labels = draw_side_labels.side_labels(world, side, camera, groups, left=panel)
    assert len(labels) == 4
    c = side.characters
    for r in range(side.count):
        (x0, y0), (x1, y1) = camera.world_to_screen([(c.x[r], c.y[r]), (c.x[r] + c.width[r], c.y[r] + c.height[r])])
        for label in labels:
            right, top = label.x + draw_labels.label_width(label.text), label.y + draw_labels.LABEL_HEIGHT_PIXELS
            assert right <= x0 or label.x >= x1 or top <= y0 or label.y >= y1, (label.text, r)


def test_goal_rings_circle_each_bots_goal_tile_in_its_colour():
    world, side = scene(60)
    groups = draw_side_labels.character_groups(world, side)
    rows = draw_platformer.goal_rings(side, groups.row_colour)
    bots = np.flatnonzero(side.characters.is_bot[: side.count] & np.all(side.goal[: side.count] >= 0, axis=1))
    assert bots.size == 3
    rings = rows.reshape(2 * bots.size, -1, 6)  # outer rings, then inner ones
    for k, row in enumerate(bots):
        centre = side.goal[row] + 0.5
        radius = np.hypot(*(rings[k, :, :2] - centre).T)
        np.testing.assert_allclose(radius, draw_platformer.GOAL_RING_TILES, atol=1e-4)
        np.testing.assert_allclose(rings[k, :, 2:], np.broadcast_to(groups.row_colour[row], (rings.shape[1], 4)),
                                   atol=1e-6)


def test_the_side_panel_lists_events_the_characters_and_the_selected_bots_state():
    world, side = scene(60)
    names = names_of(world)
    groups = draw_side_labels.character_groups(world, side)
    bot = names["bot-high"]
    lines = draw_panel.panel_lines(world, ["tick 60"], {"map", "paths", "agents"}, groups, [bot])
    text = [line.text for line in lines]
    swatches = {line.text: line.swatch for line in lines if line.swatch is not None}
    assert any(t.split() == ["PathChanged", "3"] for t in text)
    assert swatches["bot-high"] == tuple(groups.colours[3]) and swatches["player"] == SIDE_PALETTE["player"]
    assert swatches["path: a jump"] == SIDE_PALETTE["jump"]
    assert f"selected: bot-high #{bot}" in text and "  chasing player" in text
    row = side.row_of(bot)
    c = side.characters
    assert f"  node {c.current[row] + 1}/{c.path_len[row]}," in " ".join(text)
    assert f"  goal tile ({side.goal[row, 0]}, {side.goal[row, 1]})" in text


def test_a_captured_side_view_shows_labels_goal_rings_and_the_panel_beside_the_level():
    import ecs_nav.systems.render as render

    try:
        render.offscreen_window()
    except render.RenderUnavailable as exc:
        pytest.skip(f"no OpenGL context here: {exc}")
    from ecs_nav.render.capture import render_frame

    world, side = scene(60)
    names = names_of(world)
    groups = draw_side_labels.character_groups(world, side)
    width, height = 1200, 600
    panel = draw_panel.side_panel_width(width)
    camera = draw.Camera(width=width, height=height)
    camera.fit(draw.map_bounds(world), left=panel)
    full = render_frame(world, (width, height), layers={"map", "paths", "agents", "labels", "hud"}, camera=camera)
    bare = render_frame(world, (width, height), layers={"map", "paths", "agents", "hud"}, camera=camera)
    assert full[:, :panel].std() > 5 and camera.world_to_screen(draw.map_bounds(world)[:2])[0][0] >= panel - 1

    def window_at(image, point, half=3):
        x, y = camera.world_to_screen(point)[0]
        r, c = height - 1 - int(y), int(x)
        return image[r - half:r + half + 1, c - half:c + half + 1].reshape(-1, 3).astype(int)

    x, y = side.position(names["bot-left"])
    sx, sy = camera.world_to_screen((x + 0.375, y + 0.375))[0]
    box = (slice(height - int(sy) - 16, height - int(sy)), slice(int(sx) + 8, int(sx) + 60))
    assert (full[box] != bare[box]).any(axis=2).sum() > 30  # "bot-left: chasing player" beside it
    goal = side.goal[side.row_of(names["bot-left"])]
    sharing = [r for r in range(side.count) if side.characters.is_bot[r] and (side.goal[r] == goal).all()]
    colour = np.round(groups.row_colour[max(sharing), :3] * 255)  # bots chasing one player: the last ring on top
    ring = goal + 0.5 + (draw_platformer.GOAL_RING_TILES, 0.0)  # the outer ring's east point
    assert (np.abs(window_at(bare, ring, 2) - colour).max(axis=1) <= 40).any()
