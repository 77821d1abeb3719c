"""RenderSystem, headless capture and the viewer's handlers (needs an OpenGL context: EGL)."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.core.components import Agent, Collider, Path, PathRequest, Player, Position, Velocity
from ecs_nav.core.system import System
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp
from ecs_nav.nav.build import ScanParams, scan_heightfield
from ecs_nav.render import colours as draw_colours
from ecs_nav.render import draw
from ecs_nav.render import panel as draw_panel
from ecs_nav.render.colours import agent_groups

pytestmark = pytest.mark.render


class DriftPhysics(System):
    """A stand-in physics: random accelerations from the World's RNG, then integration."""

    name = "PhysicsSystem"

    def update(self, world: World) -> None:
        n = world.table.n
        world.table.vel[:n] += world.rng.normal(0.0, 0.2, (n, 2))
        world.table.pos[:n] += world.table.vel[:n] * world.dt


WALL = Box((0, 5), (10, 1), 3.0)


def scene_world(seed: int = 3, agents: int = 0) -> World:
    world = World(seed=seed)
    world.map = MapGeometry((-20, -12, 20, 12), boxes=[WALL, Box((-10, -5), (2, 6), 1.0)],
                            ramps=[Ramp((5, -8), (15, -8), 3.0, 0.0, 2.0)], circles=[Circle((-12, 6), 2.0, 1.5)])
    world.nav_graph = scan_heightfield(world.map, ScanParams(scan_range=(20, 10, 12), spacing=2.0))
    npc = world.spawn(Position(-5, 0), Velocity(1, 0.5), Agent(), Collider(radius=0.8))
    world.spawn(Position(8, 2), Velocity(0, -2), Agent(), Collider(radius=0.6), Player())
    world.add_component(npc, Path(waypoints=[(-5, 0), (0, -3), (8, -3), (10, 0)], index=1))
    rng = np.random.default_rng(seed)
    for x, y in rng.uniform((-18, -10), (18, 10), (agents, 2)):
        world.spawn(Position(x, y), Velocity(*rng.normal(0, 1, 2)), Agent(), Collider(radius=0.4))
    return world


def pixel_of(camera: draw.Camera, point) -> tuple[int, int]:
    """(row, col) of the image pixel that shows world ``point`` (image row 0 is the top)."""
    x, y = camera.world_to_screen(point)[0]
    return camera.height - 1 - int(y), int(x)


def close_to(image, rc, colour, tol=12) -> bool:
    return bool(np.all(np.abs(image[rc].astype(int) - np.round(np.asarray(colour[:3]) * 255)) <= tol))


# --- frames -----------------------------------------------------------------------------------------


def test_frame_has_the_size_and_the_colours_where_the_world_puts_them(gl_window):
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    size = (640, 360)
    image = render_frame(world, size, hud=False)
    assert image.shape == (360, 640, 3) and image.dtype == np.uint8
    assert image.std() > 10, "the frame is blank"
    camera = draw.Camera(width=640, height=360)
    camera.fit(draw.map_bounds(world))
    npc, player = world.table.pos[0], world.table.pos[1]
    assert close_to(image, pixel_of(camera, npc - (0.3, 0.0)), draw.PALETTE["agent"])
    assert close_to(image, pixel_of(camera, player - (0.3, 0.0)), draw.PALETTE["player"])
    hmax = draw.map_max_height(world.map)
    assert close_to(image, pixel_of(camera, (3.0, 5.0)), draw.height_colour(WALL.top, hmax))  # the 3 m wall
    assert close_to(image, pixel_of(camera, (-10.0, -7.0)), draw.height_colour(1.0, hmax))  # the 1 m box
    assert close_to(image, (2, 2), draw.PALETTE["background"])  # outside the map
    # the ramp is a gradient: darker at its low start than at its high end
    low, high = image[pixel_of(camera, (5.5, -8.0))], image[pixel_of(camera, (14.5, -8.0))]
    assert int(low.sum()) + 60 < int(high.sum())


def test_layers_can_be_left_out(gl_window):
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    camera = draw.Camera(width=320, height=180)
    camera.fit(draw.map_bounds(world))
    only_map = render_frame(world, (320, 180), layers={"map"}, camera=camera)
    with_agents = render_frame(world, (320, 180), layers={"map", "agents"}, camera=camera)
    rc = pixel_of(camera, world.table.pos[0])
    assert close_to(only_map, rc, draw.PALETTE["floor"])
    assert not close_to(with_agents, rc, draw.PALETTE["floor"])
    everything = render_frame(world, (320, 180), camera=camera)
    assert (everything != with_agents).any(axis=2).sum() > 200  # graph, paths, HUD, velocity ...


def test_flow_field_and_heat_map_are_drawn_when_present(gl_window):
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    graph = world.nav_graph
    goal = graph.positions[np.flatnonzero(graph.walkable)[0], :2]
    distance = np.where(graph.walkable, np.hypot(*(graph.positions[:, :2] - goal).T), np.inf)
    direction = np.where(graph.walkable[:, None], goal - graph.positions[:, :2], 0.0)
    without = render_frame(world, (320, 180), layers={"map", "heat_map", "flow_field"})
    world.resources["flow_field"] = {"distance": distance, "direction": direction}
    with_flow = render_frame(world, (320, 180), layers={"map", "heat_map", "flow_field"})
    assert (with_flow != without).any(axis=2).mean() > 0.2


def test_a_shared_flow_field_is_drawn_the_selected_agents_first(gl_window):
    from ecs_nav.systems.render import shared_field_view

    from ecs_nav.nav.fields import FIELDS
    from ecs_nav.render.capture import render_frame
    from ecs_nav.scene.files import build_world, scene_from_dict

    def group(goal, count):
        return {"name": f"to {goal}", "count": count, "spawn_area": [-5, -5, 5, 5], "Agent": {},
                "Collider": {"radius": 0.3}, "Velocity": {}, "SteeringWeights": {"weights": {"follow_path": 1.0}},
                "PathRequest": {"goal": goal, "method": "flow_field"}}

    world = build_world(scene_from_dict({
        "map": {"bounds": [-20, -10, 20, 10]},
        "navmap": {"scan_range": [20, 10, 10], "spacing": 1.0, "clearance": 0.5},
        "entity": [group([18, 0], 3), group([-18, 0], 5)],
    }))
    world.step()
    assert FIELDS in world.resources and "flow_field" not in world.resources
    fields = world.resources[FIELDS]
    east, west = (fields.field_for(fields.get(f).goal) for f in sorted(fields.fields))
    graph = world.nav_graph
    # nothing selected: the field with most users (west, 5 agents); an east agent selected: east
    assert shared_field_view(world, graph, [])["distance"] is west.flow.distance
    t = world.table
    east_row = int(np.flatnonzero(t.field_id[: t.n] == east.id)[0])
    view = shared_field_view(world, graph, [east_row])
    assert view["distance"] is east.flow.distance
    reachable = np.isfinite(east.flow.distance) & (east.flow.distance > 0)  # the goal itself: no arrow
    assert np.allclose(np.hypot(*view["direction"][reachable].T), 1.0)  # an arrow on every reachable node
    with_field = render_frame(world, (320, 180), layers={"map", "heat_map", "flow_field"})
    plain = render_frame(world, (320, 180), layers={"map"})
    assert (with_field != plain).any(axis=2).mean() > 0.3  # the heat map covers the floor


def test_chase_scene_frame(gl_window):
    import ecs_nav
    from ecs_nav.render.capture import render_frame

    world = ecs_nav.load_scene("chase")
    world.run(5)
    image = render_frame(world, (1280, 720), hud=False)
    assert image.shape == (720, 1280, 3) and image.std() > 10
    camera = draw.Camera(width=1280, height=720)
    camera.fit(draw.map_bounds(world))
    table = world.table
    players = table.rows_of(np.array(world.find(Player)))
    groups = agent_groups(world, draw.PALETTE, players)
    assert groups.names == ["player", "npc"]  # one colour per named agent, the player in its blue
    for row in range(table.n):
        if not table.is_agent[row] or table.radius[row] * camera.scale < 3:
            continue
        colour = draw.PALETTE["player"] if row in players else draw_colours.GROUP_COLOURS[1]
        heading = table.heading[row]
        assert close_to(image, pixel_of(camera, table.pos[row] - heading * 0.3 * table.radius[row]), colour, tol=20)


def test_state_digest_is_the_same_with_and_without_the_render_system(gl_window):
    from ecs_nav.systems.render import RenderSystem

    frames = []
    plain, drawn = scene_world(agents=50), scene_world(agents=50)
    plain.add_systems(DriftPhysics())
    drawn.add_systems(DriftPhysics(), RenderSystem(size=(160, 90), every=10, on_frame=frames.append))
    plain.run(60)
    drawn.run(60)
    assert len(frames) == 6 and frames[0].shape == (90, 160, 3)
    assert plain.state_digest() == drawn.state_digest()
    assert plain.table.pos[0].tolist() != [-5.0, 0.0]  # the agents did move


def test_screenshot_and_record(gl_window, tmp_path, capsys):
    import imageio.v2 as iio2
    import imageio.v3 as iio

    from ecs_nav.render.capture import record, screenshot

    world = scene_world()
    world.add_systems(DriftPhysics())
    png = screenshot(world, tmp_path / "shot.png", size=(320, 200))
    assert iio.imread(png).shape == (200, 320, 3)
    gif = record(world, 20, tmp_path / "run.gif", size=(160, 100), fps=30, progress=True)
    assert world.tick == 20
    assert iio.improps(gif).shape == (11, 100, 160, 3)  # every 2 ticks at 30 fps and dt 1/60, plus tick 0
    assert "recording run.gif" in capsys.readouterr().err
    mp4 = record(world, 12, tmp_path / "run.mp4", size=(160, 100), fps=20, every=4)
    reader = iio2.get_reader(mp4)
    assert reader.count_frames() == 4 and reader.get_meta_data()["fps"] == 20
    with pytest.raises(ValueError, match="must end in .gif"):
        record(world, 1, tmp_path / "run.txt")
    with pytest.raises(ValueError, match="at least 1x1 pixels, got -5x10"):
        record(world, 1, tmp_path / "run.gif", size=(-5, 10))
    with pytest.raises(ValueError, match="must be positive pixels, got 0x0"):
        screenshot(world, tmp_path / "zero.png", size=(0, 0))
    with pytest.raises(ValueError, match="must end in one of .png"):
        screenshot(world, tmp_path / "shot.xyz")
    assert world.tick == 32


# --- the viewer ------------------------------------------------------------------------------------


@pytest.fixture
def viewer(gl_window):
    from ecs_nav.render.viewer import Viewer

    world = scene_world()
    world.add_systems(DriftPhysics())
    v = Viewer(world, gl_window)
    v.camera = draw.Camera(width=640, height=360)
    v.camera.fit(draw.map_bounds(world))
    yield v
    v.close()


def keys():
    from ecs_nav.systems.render import load_pyglet

    return load_pyglet().window.key, load_pyglet().window.mouse


def send(window, event, *args):
    """Post a synthetic event and let the window deliver it, as pyglet's event loop does."""
    window.dispatch_event(event, *args)
    window.dispatch_events()


def press(v, symbol, modifiers=0):
    send(v.window, "on_key_press", symbol, modifiers)


def test_pause_step_and_speed(viewer):
    key, _ = keys()
    assert viewer.update(0.1) == 6
    press(viewer, key.SPACE)
    assert viewer.paused and viewer.update(0.1) == 0
    press(viewer, key.N)
    assert viewer.world.tick == 7
    press(viewer, key.SPACE)
    press(viewer, key.EQUAL)
    assert viewer.speed == 2.0 and viewer.update(0.1) == 12
    press(viewer, key.MINUS)
    press(viewer, key.MINUS)
    assert viewer.speed == 0.5
    assert viewer.update(10.0) == 7  # a stall is clamped to max_frame_dt (0.25 s) of sim time


def test_layer_keys_and_help(viewer):
    key, _ = keys()
    assert "map" in viewer.layers
    press(viewer, key._1)
    assert "map" not in viewer.layers
    press(viewer, key._1)
    assert "map" in viewer.layers
    press(viewer, key._9)
    assert "heat_map" in viewer.layers
    press(viewer, key._0)
    assert "hud" not in viewer.layers
    press(viewer, key.H)
    assert viewer.show_help
    press(viewer, key.ESCAPE)
    assert not viewer.show_help and not viewer.window.has_exit
    send(viewer.window, "on_draw")  # draws without error, help and all


def test_camera_zoom_pan_and_fit(viewer):
    key, mouse = keys()
    scale, center = viewer.camera.scale, viewer.camera.center
    send(viewer.window, "on_mouse_scroll", 320, 180, 0, 2)
    assert viewer.camera.scale == pytest.approx(scale * 1.15 ** 2)
    w = viewer.window
    send(w, "on_mouse_press", 100, 100, mouse.LEFT, 0)
    send(w, "on_mouse_drag", 150, 100, 50, 0, mouse.LEFT, 0)
    send(w, "on_mouse_release", 150, 100, mouse.LEFT, 0)
    assert viewer.camera.center[0] < center[0]  # dragged right: looking further left
    assert viewer.world.find(PathRequest) == []  # a drag is not a click
    press(viewer, key.F)  # fits the map right of the side panel
    width, height = viewer.camera.width, viewer.camera.height
    fitted = draw.Camera(width=width, height=height)
    fitted.fit(draw.map_bounds(viewer.world), left=draw_panel.side_panel_width(width))
    assert viewer.camera.scale == pytest.approx(fitted.scale) and viewer.camera.center == pytest.approx(fitted.center)
    xmin, _, xmax, _ = draw.map_bounds(viewer.world)
    assert viewer.camera.world_to_screen((xmin, 0))[0, 0] > draw_panel.side_panel_width(width)  # not under the panel
    assert viewer.camera.world_to_screen((xmax, 0))[0, 0] < width


def test_wasd_drives_the_player(viewer):
    key, _ = keys()
    world = viewer.world
    row = world.table.row_of(world.find(Player)[0])
    press(viewer, key.W)
    press(viewer, key.D)
    viewer.run_ticks(1)
    speed = world.table.max_speed[row]
    vel = world.table.vel[row]
    assert vel[0] > 0 and vel[1] > 0 and np.hypot(*vel) == pytest.approx(speed, rel=0.05)
    send(viewer.window, "on_key_release", key.W, 0)
    send(viewer.window, "on_key_release", key.D, 0)
    viewer.run_ticks(1)
    assert np.hypot(*world.table.vel[row]) < 0.2 * speed  # stopped (plus one tick of drift)


def test_clicks_select_agents_and_set_goals(viewer):
    key, mouse = keys()
    world, cam = viewer.world, viewer.camera
    npc, player = world.entities()[0], world.find(Player)[0]

    def click(point, button=mouse.LEFT, modifiers=0):
        x, y = cam.world_to_screen(point)[0]
        send(viewer.window, "on_mouse_press", x, y, button, modifiers)
        send(viewer.window, "on_mouse_release", x, y, button, modifiers)

    click((0.0, -10.0))  # ground, nothing selected: the player goes there
    assert world.get(player, PathRequest).goal == pytest.approx((0.0, -10.0), abs=0.1)
    click(world.table.pos[world.table.row_of(npc)])
    assert viewer.selected == [npc]
    click((-15.0, -8.0))
    assert world.get(npc, PathRequest).goal == pytest.approx((-15.0, -8.0), abs=0.1)
    click(world.table.pos[world.table.row_of(player)], modifiers=key.MOD_SHIFT)
    assert viewer.selected == [npc, player]
    click((12.0, 8.0), button=mouse.RIGHT)
    for entity in (npc, player):
        assert world.get(entity, PathRequest).goal == pytest.approx((12.0, 8.0), abs=0.1)
    press(viewer, key.ESCAPE)
    assert viewer.selected == []
    press(viewer, key.TAB)
    assert sorted(viewer.selected) == sorted([npc, player])


def test_reload_without_a_scene_says_so(viewer):
    key, _ = keys()
    press(viewer, key.R)
    assert "did not come from a scene file" in viewer.status


def test_reload_loads_the_scene_again(gl_window):
    import ecs_nav
    from ecs_nav.render.viewer import Viewer
    from ecs_nav.scene.files import builtin_scenes

    name = builtin_scenes()[0]
    world = ecs_nav.load_scene(name, seed=1)
    v = Viewer(world, gl_window, scene=name, seed=1)
    try:
        v.update(0.2)
        first = v.world
        assert v.reload() and v.world is not first and v.world.tick == 0
    finally:
        v.close()
        v.world.close()


def test_a_windowed_run_is_tick_for_tick_the_headless_run(viewer):
    headless = scene_world()
    headless.add_systems(DriftPhysics())
    rng = np.random.default_rng(7)
    ticks = 0
    while ticks < 200:
        ticks += viewer.update(float(rng.uniform(0.0, 0.05)))
        send(viewer.window, "on_draw")
    headless.run(ticks)
    assert viewer.world.state_digest() == headless.state_digest()


def test_run_viewer_without_a_display_fails_in_one_line(gl_window, monkeypatch):
    from ecs_nav.systems.render import RenderUnavailable

    from ecs_nav.render.viewer import run_viewer

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    with pytest.raises(RenderUnavailable, match="needs a display") as info:
        run_viewer("chase")
    assert "\n" not in str(info.value)


def test_no_gl_context_fails_in_one_line(gl_window, monkeypatch):
    import ecs_nav.systems.render as render
    import ecs_nav.systems.render_gl as render_gl

    def no_egl(*args, **kwargs):
        raise RuntimeError("eglInitialize failed\nsecond line of driver noise")

    monkeypatch.setattr(render_gl, "_offscreen", None)
    monkeypatch.setattr(render.pyglet.window, "Window", no_egl)
    with pytest.raises(render.RenderUnavailable, match="cannot create an OpenGL context") as info:
        render.offscreen_window()
    assert "EGL" in str(info.value) and "\n" not in str(info.value)


def test_missing_font_libraries_fail_in_one_line(gl_window, monkeypatch):
    """Without FreeType/fontconfig pyglet's first Label raises ImportError: that is a
    RenderUnavailable naming the package, which the CLI turns into exit 3."""
    import importlib

    import ecs_nav.systems.render as render

    def no_freetype(*args, **kwargs):
        raise ImportError('Library "freetype" not found.')

    text = importlib.import_module("pyglet.text")  # the module itself: pyglet.text may still be a lazy proxy
    monkeypatch.setattr(text, "Label", no_freetype)
    system = render.RenderSystem(size=(160, 100))  # a fresh Renderer: no Label made yet
    world = scene_world()
    assert system.capture(world, layers={"map"}).shape == (100, 160, 3)  # no text: no fonts needed
    with pytest.raises(render.RenderUnavailable, match="freetype") as info:
        system.capture(world, layers={"map", "hud"})
    assert "libfontconfig1" in str(info.value) and "\n" not in str(info.value) and ".." not in str(info.value)


def test_agents_wider_than_a_point_sprite_are_drawn_as_quads(gl_window):
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    npc = world.table.pos[0].copy()
    for scale in (20.0, 400.0):  # 32 px wide: point sprites; 640 px wide: instanced quads
        camera = draw.Camera(center=tuple(npc), scale=scale, width=800, height=800)
        image = render_frame(world, (800, 800), layers={"map", "agents"}, camera=camera)
        inside = npc + (-0.5, 0.3)  # inside the body, away from the heading tick and the rim
        outside = npc + (0.0, -0.9)  # just past the 0.8 radius
        assert close_to(image, pixel_of(camera, inside), draw.PALETTE["agent"]), scale
        assert close_to(image, pixel_of(camera, outside), draw.PALETTE["floor"]), scale
        tick = npc + (0.6, 0.0)  # heading +x: the white tick
        assert image[pixel_of(camera, tick)].min() > 200, scale


def test_chase_scene_digest_is_the_same_with_and_without_the_render_system(gl_window):
    from ecs_nav.systems.render import RenderSystem

    import ecs_nav

    plain, drawn = ecs_nav.load_scene("chase"), ecs_nav.load_scene("chase")
    frames = []
    drawn.add_systems(RenderSystem(size=(320, 180), every=60, on_frame=frames.append))
    plain.run(180)
    drawn.run(180)
    assert len(frames) == 3
    assert plain.state_digest() == drawn.state_digest()


# --- the explaining layers --------------------------------------------------------------------------


def test_agents_zoomed_far_out_are_still_min_agent_pixels_wide(gl_window):
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    camera = draw.Camera(center=(0.0, 0.0), scale=1.0, width=320, height=180)  # a 0.8 m agent: 0.8 px
    image = render_frame(world, (320, 180), layers={"map", "agents"}, camera=camera)
    row, col = pixel_of(camera, world.table.pos[0])
    window = image[row - 6:row + 7, col - 6:col + 7].astype(int)
    floor = np.round(np.array(draw.PALETTE["floor"][:3]) * 255)
    covered = int((np.abs(window - floor).max(axis=2) > 30).sum())
    # a disc of MIN_AGENT_PIXELS radius and its 1 px edge (about 64 pixels at 4); the true 0.8 px
    # size covers a few
    assert covered >= np.pi * (draw.MIN_AGENT_PIXELS + 0.5) ** 2, covered


def test_a_path_radius_band_tints_the_floor_within_the_radius_in_the_agents_colour(gl_window):
    from ecs_nav.core.components import Name
    from ecs_nav.render.capture import render_frame

    world = World(seed=1)
    world.map = MapGeometry((-20, -12, 20, 12))
    guard = world.spawn(Position(-15, -8), Agent(), Collider(radius=0.5), Name("guard"))
    world.add_component(guard, Path(waypoints=[(-10, 0), (10, 0)], radius=2.0, mode="patrol"))
    camera = draw.Camera(width=400, height=240)
    camera.fit(draw.map_bounds(world))
    image = render_frame(world, (400, 240), layers={"map", "paths", "agents"}, camera=camera)
    floor = np.round(np.array(draw.PALETTE["floor"][:3]) * 255)
    inside, outside = image[pixel_of(camera, (0.0, 1.4))].astype(int), image[pixel_of(camera, (0.0, 2.6))].astype(int)
    assert np.abs(outside - floor).max() <= 3
    tint = np.array(draw_colours.GROUP_COLOURS[0][:3]) * 255 - floor  # the band leans towards the guard's colour
    assert np.dot(inside - floor, tint) > 0 and np.abs(inside - floor).max() > 5
    assert close_to(image, pixel_of(camera, (-15.2, -8.0)), draw_colours.GROUP_COLOURS[0])  # the guard's disc


def test_the_side_panel_sits_beside_the_map_and_labels_are_drawn_by_their_agents(gl_window):
    from ecs_nav.core.components import Name
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    world.add_component(world.entities()[0], Name("npc"))
    width, height = 640, 360
    with_hud = render_frame(world, (width, height), layers={"map", "agents", "labels", "hud"})
    panel = draw_panel.side_panel_width(width)
    camera = draw.Camera(width=width, height=height)
    camera.fit(draw.map_bounds(world), left=panel)
    xmin, ymin, _, _ = draw.map_bounds(world)
    corner_x, _ = camera.world_to_screen((xmin, ymin))[0]
    assert corner_x > panel  # the map's west edge is right of the panel
    assert close_to(with_hud, pixel_of(camera, (xmin + 0.3, 0.0)), draw.PALETTE["floor"])
    assert with_hud[height // 2, 2:panel - 2].max() < 255 and with_hud[:, :panel].std() > 5  # text on the panel
    no_labels = render_frame(world, (width, height), layers={"map", "agents", "hud"})
    x, y = camera.world_to_screen(world.table.pos[0])[0]
    box = with_hud[height - int(y) - 20:height - int(y), int(x) + 5:int(x) + 40]
    same = no_labels[height - int(y) - 20:height - int(y), int(x) + 5:int(x) + 40]
    assert (box != same).any(axis=2).sum() > 20  # the label "npc" beside the agent


def test_the_search_layer_shades_the_nodes_the_traced_agents_search_expanded(gl_window):
    from ecs_nav.systems.pathfind import PathfindSystem

    from ecs_nav.core.resource_names import SEARCH_TRACE
    from ecs_nav.nav.search_trace import trace_entity
    from ecs_nav.render.capture import render_frame

    world = scene_world()
    npc = world.entities()[0]
    world.add_component(npc, PathRequest(goal=(14.0, 8.0)))
    world.add_systems(PathfindSystem())
    trace_entity(world, npc)
    world.step()
    trace = world.resources[SEARCH_TRACE]
    assert trace.nodes.size > 0
    camera = draw.Camera(width=640, height=400)
    camera.fit(draw.map_bounds(world))
    shaded = render_frame(world, (640, 400), layers={"map", "search"}, hud=False, camera=camera)
    plain = render_frame(world, (640, 400), layers={"map"}, hud=False, camera=camera)
    graph = world.nav_graph
    walkable = np.flatnonzero(np.diff(graph.indptr) > 0)
    unexpanded = np.setdiff1d(walkable, trace.nodes)
    floor = np.array(draw.PALETTE["floor"][:3])
    search = np.array(draw.PALETTE["search"][:3])
    alpha = draw.PALETTE["search"][3]
    blend = np.round((floor * (1 - alpha) + search * alpha) * 255)
    for node in trace.nodes[:: max(1, trace.nodes.size // 20)]:
        rc = pixel_of(camera, graph.positions[node, :2])
        if close_to(plain, rc, draw.PALETTE["floor"]):  # a node on the ground floor (not a box top)
            assert np.abs(shaded[rc].astype(int) - blend).max() <= 12, node
    for node in unexpanded[:: max(1, unexpanded.size // 20)]:
        rc = pixel_of(camera, graph.positions[node, :2])
        assert (shaded[rc] == plain[rc]).all(), node
    assert "search" not in draw.DEFAULT_LAYERS


def test_e_toggles_the_search_layer_and_the_viewer_traces_the_selected_agent_only_while_it_is_on(viewer):
    from ecs_nav.systems.pathfind import PathfindSystem

    from ecs_nav.core.resource_names import SEARCH_TRACE

    key, _ = keys()
    world = viewer.world
    npc = world.entities()[0]
    world.add_component(npc, PathRequest(goal=(14.0, 8.0)))
    world.add_systems(PathfindSystem())
    assert "search" not in viewer.layers
    viewer.selected = [npc]
    viewer.run_ticks(1)
    assert SEARCH_TRACE not in world.resources  # layer off: nothing recorded
    press(viewer, key.E)
    assert "search" in viewer.layers
    world.get(npc, Path).status = "stale"  # served on the next tick
    viewer.run_ticks(1)
    trace = world.resources[SEARCH_TRACE]
    assert trace.entity == npc and trace.nodes.size > 0
    send(viewer.window, "on_draw")  # the layer and its legend line draw without error
    viewer.selected = []
    viewer.run_ticks(1)
    assert SEARCH_TRACE not in world.resources
    press(viewer, key.E)
    assert "search" not in viewer.layers


def test_o_toggles_the_avoidance_layer_and_the_viewer_traces_the_selected_agents_orca_choice(viewer):
    from ecs_nav.systems.steering import SteeringSystem

    from ecs_nav import Avoidance, SteeringWeights
    from ecs_nav.core.resource_names import AVOIDANCE_TRACE

    key, _ = keys()
    world = viewer.world
    walkers = [world.spawn(Position(x, -9.0), Velocity(), Agent(max_speed=1.4), Collider(radius=0.3),
                           SteeringWeights({"seek": 1.0}, target=(-x, -9.0)), Avoidance()) for x in (-2.0, 2.0)]
    world.add_systems(SteeringSystem())
    viewer.selected = [walkers[0]]
    viewer.run_ticks(1)
    assert AVOIDANCE_TRACE not in world.resources  # layer off: nothing recorded
    press(viewer, key.O)
    assert "avoidance" in viewer.layers
    viewer.run_ticks(1)
    trace = world.resources[AVOIDANCE_TRACE]
    assert trace.entity == walkers[0] and trace.tick == world.tick - 1 and len(trace.lines) >= 1
    send(viewer.window, "on_draw")  # the layer and its legend lines draw without error
    viewer.selected = []
    viewer.run_ticks(1)
    assert AVOIDANCE_TRACE not in world.resources
    press(viewer, key.O)
    assert "avoidance" not in viewer.layers
    assert "avoidance" not in draw.DEFAULT_LAYERS


def test_the_panel_shows_the_selected_agents_behaviour_forces_from_the_steering_system(viewer):
    from ecs_nav.systems.steering import SteeringSystem

    from ecs_nav import SteeringWeights

    world = viewer.world
    npc = world.spawn(Position(0.0, 6.0), Velocity(1.0, 0.0), Agent(), Collider(radius=0.5),
                      SteeringWeights({"seek": 1.0, "wander": 0.5}, target=(10.0, 5.0)))
    assert viewer.selected_forces() is None  # nothing selected
    viewer.selected = [npc]
    assert viewer.selected_forces() is None  # no SteeringSystem in this world
    steering = SteeringSystem()
    world.add_systems(steering)
    viewer.run_ticks(1)
    before = world.state_digest()
    forces = viewer.selected_forces()
    assert forces == steering.behaviour_forces(world, npc) and set(forces) == {"seek", "wander"}
    assert world.state_digest() == before  # read-only
    seek = float(np.hypot(*forces["seek"]))
    lines = draw_panel.agent_state_lines(world, npc, forces)
    assert any(line.split()[:1] == ["seek"] and line.endswith(f"{seek:6.1f} N".strip()) for line in lines), lines
    send(viewer.window, "on_draw")  # the panel draws with them
    viewer.selected = [world.entities()[1]]  # the player has no SteeringWeights: no forces
    assert viewer.selected_forces() is None


def test_a_context_that_fails_after_pyglet_warns_says_the_warning_in_its_one_line():
    import types
    import warnings

    from ecs_nav.systems.render_gl import RenderUnavailable, making_a_context

    pyglet_like = types.SimpleNamespace(options={"headless": True})

    def fails():
        warnings.warn("No device available for EGL device platform.", UserWarning, stacklevel=1)
        raise RuntimeError("no EGL display")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is printed above the error
        with pytest.raises(RenderUnavailable, match=r"RuntimeError: no EGL display \(pyglet warned: No device "):
            making_a_context(pyglet_like, fails)

    def works():
        warnings.warn("a warning on the way", UserWarning, stacklevel=1)
        return "context"

    with pytest.warns(UserWarning, match="a warning on the way"):  # warned as usual when it works
        assert making_a_context(pyglet_like, works) == "context"
