"""The pyglet viewer: watching a World in a window, and steering it with keys and the mouse.
Screenshots and recordings without a window are ``ecs_nav.render.capture``.

Assembly floor: this module ties a World, the RenderSystem and a window together. pyglet is
loaded only when a function here needs it (through ``ecs_nav.systems.render.load_pyglet``), so
importing ``ecs_nav.render.viewer`` costs nothing for a headless run.

The loop is a fixed-timestep accumulator: each frame adds the real time since the last one
(clamped to ``max_frame_dt``, times the speed) to an accumulator, runs as many fixed
``world.step()`` ticks as it holds, and draws once. Rendering reads the World and never changes
it, so a run with a window is tick-for-tick the run without one; only input (WASD, clicks)
changes the simulation, and only between ticks.

Keys (also in the help overlay, H):

==========  ======================================================
Space       pause / resume
N or .      one tick (while paused)
+ / -       speed up / slow down (x2 steps, 1/8 .. 16)
F           fit the map in the window
R           reload the scene file
1 .. 9, 0   layers: map, graph edges, graph nodes, paths, agents, velocity,
            steering targets, flow field, heat map, HUD (the side panel)
L           agent labels
E           search layer: the nodes the selected agent's last path search expanded
Tab / Esc   select every agent / clear the selection (or close help)
W A S D     drive the Player
H or F1     help overlay
Q           quit
==========  ======================================================

Mouse: drag to pan, wheel to zoom at the cursor, click an agent to select it (Shift: add),
click the ground to send the selected agents (or the Player when none is selected) there,
right-click the ground to do the same whatever is under the cursor. In a side view (a scene
with a ``[level]``) W A S D are the Player's keys (A/D walk, W jump, S drop), a click on the
level sends the selected bots there and a right-click toggles a tile
(``ecs_nav.render.side_view_controls``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ecs_nav.core.components import PathRequest, Player
from ecs_nav.core.world import World
from ecs_nav.motion.avoidance_trace import trace_avoidance
from ecs_nav.nav.search_trace import trace_entity
from ecs_nav.platformer.world import PLATFORMER
from ecs_nav.render import draw, side_view_controls
from ecs_nav.render import panel as draw_panel

LAYER_KEYS = ("map", "graph_edges", "graph_nodes", "paths", "agents", "velocity", "steer_targets",
              "flow_field", "heat_map", "hud")
"""The layer each number key toggles: 1, 2, ... 9, then 0."""

LABELS_KEY = "L"
"""The key that toggles the "labels" layer."""

SEARCH_KEY = "E"
"""The key that toggles the "search" layer (the selected agent's last search)."""

AVOIDANCE_KEY = "O"
"""The key that toggles the "avoidance" layer (the selected agent's ORCA half-planes)."""


def layer_key_help() -> str:
    """The help overlay's layer lines, from LAYER_KEYS and LABELS_KEY."""
    names = [f"{(i + 1) % 10} {layer.replace('_', ' ').replace('steer ', 'steering ')}"
             for i, layer in enumerate(LAYER_KEYS)]
    return ("layers  " + "  ".join(names[:5]) + "\n        " + "  ".join(names[5:])
            + f"\n        {LABELS_KEY} labels  {SEARCH_KEY} search (selected agent)"
            + f"\n        {AVOIDANCE_KEY} avoidance: ORCA half-planes (selected agent)")

SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)

HELP = f"""\
ecs_nav viewer

Space     pause / resume        N or .   one tick (paused)
+ / -     faster / slower       F        fit the map
R         reload the scene      Q        quit
W A S D   drive the Player      H, F1    this help
Tab       select all agents     Esc      clear selection

click agent   select (Shift: add)
click ground  send the selected agents (or the Player) there
right-click   send them there    drag: pan    wheel: zoom

{layer_key_help()}

side view (a [level] scene): A/D walk, W jump (hold: higher), S drop
  click a bot to select it, click the level to send it there,
  right-click a tile to make it solid / empty (the bots re-plan)"""

DRAG_THRESHOLD = 4.0
"""Pixels the mouse may move between press and release and still count as a click."""

def __getattr__(name: str):
    """The names that moved out of this module (``ecs_nav.moved.MOVED_NAMES``), answered with a
    DeprecationWarning for one release."""
    from ecs_nav.moved import moved_attribute

    return moved_attribute(__name__, name)


def _render_module():
    import ecs_nav.systems.render as render

    return render


class Viewer:
    """The window's event handlers, camera, selection and fixed-step loop for one World.

    Works with any pyglet window, a hidden headless one included, so tests drive it by
    dispatching synthetic events (``window.dispatch_event("on_key_press", key.SPACE, 0)``).

    Args:
        world: the World to show and step.
        window: a pyglet window; the viewer pushes its handlers onto it.
        scene: the scene file or name that ``R`` reloads (None: reload is off).
        seed: the seed to reload the scene with.
        layers: the layers shown at first (default ``draw.default_layers(world)``: the scene's
            ``[view] layers``, else :data:`draw.DEFAULT_LAYERS`).
        max_frame_dt: real seconds one frame may account for at most (a stall does not turn
            into a burst of ticks).
        loader: what ``R`` builds the fresh World with, ``loader(scene, seed=seed)`` (default
            ``ecs_nav.load_scene``; ``ecs-nav view --policy`` passes one that adds the learner).
    """

    def __init__(self, world: World, window: Any, scene: str | os.PathLike | None = None,
                 seed: int | None = None, layers: Iterable[str] | None = None, max_frame_dt: float = 0.25,
                 loader: Callable[..., World] | None = None):
        render = _render_module()
        self.pyglet = render.load_pyglet()
        self.key = self.pyglet.window.key
        self.mouse = self.pyglet.window.mouse
        self.world = world
        self.window = window
        self.scene, self.seed = scene, seed
        self.loader = loader
        self.layers = set(draw.default_layers(world) if layers is None else layers)
        self.max_frame_dt = float(max_frame_dt)
        existing = world.system("RenderSystem")
        self.render = existing if existing is not None else render.RenderSystem()
        width, height = window.get_framebuffer_size()
        self.camera = draw.Camera(width=width, height=height)
        self.fit()
        self.paused = False
        self.speed = 1.0
        self.accumulator = 0.0
        self.selected: list[int] = []
        self.show_help = False
        self.held: set[int] = set()
        self.status = ""  # a one-line message in the HUD (a failed reload, ...)
        self.fps = 0.0
        self.ms_per_tick: dict[str, float] = {}
        self.draw_ms = 0.0
        self._press: tuple[float, float] | None = None
        self._dragging = False
        self._driving = False
        window.push_handlers(self)

    def close(self) -> None:
        """Take the viewer's handlers off the window (the window stays open)."""
        self.window.remove_handlers(self)

    # --- the loop -------------------------------------------------------------------------------

    def update(self, real_dt: float) -> int:
        """Account ``real_dt`` seconds of wall time; run the fixed ticks it buys. Returns the
        number of ticks run (0 while paused)."""
        if real_dt > 0:
            self.fps = 1.0 / real_dt if self.fps == 0 else 0.9 * self.fps + 0.1 / real_dt
        if self.paused:
            return 0
        self.accumulator += min(max(float(real_dt), 0.0), self.max_frame_dt) * self.speed
        ticks = int(self.accumulator / self.world.dt + 1e-9)
        self.accumulator -= ticks * self.world.dt
        self.run_ticks(ticks)
        return ticks

    def run_ticks(self, ticks: int) -> None:
        """Run ``ticks`` fixed ticks, applying the held WASD keys before each."""
        if ticks <= 0:
            return
        world = self.world
        self.sync_search_trace()
        before = {s.name: world.timings_ms[s.name] for s in world.systems}
        for _ in range(ticks):
            self._drive_player()
            world.step()
        self.ms_per_tick = {name: (world.timings_ms[name] - ms) / ticks for name, ms in before.items()}

    def sync_search_trace(self) -> None:
        """With the "search" layer on, the PathfindSystem records the first selected entity's
        searches (``ecs_nav.nav.search_trace``); with the "avoidance" layer on, the avoidance
        stage records its ORCA choice (``ecs_nav.motion.avoidance_trace``); otherwise nothing is
        recorded (input, like a click: what the searches find and ORCA chooses is the same either
        way)."""
        traced = self.selected[0] if "search" in self.layers and self.selected else None
        trace_entity(self.world, traced)
        traced = self.selected[0] if "avoidance" in self.layers and self.selected else None
        trace_avoidance(self.world, traced)

    def step_once(self) -> None:
        """One tick (the N key while paused)."""
        self.run_ticks(1)

    def overlay(self) -> list[str]:
        lines = draw_panel.hud_lines(self.world, fps=self.fps, ms_per_tick=self.ms_per_tick or None,
                               paused=self.paused, speed=self.speed, selected=len(self.selected))
        lines.append(f"{'draw':<12}{self.draw_ms:8.3f} ms")
        if self.status:
            lines.append(self.status)
        return lines

    def on_draw(self) -> None:
        width, height = self.window.get_framebuffer_size()
        if (width, height) != (self.camera.width, self.camera.height):
            self.camera.resize(width, height)
        self.window.switch_to()
        start = time.perf_counter()
        self.render.draw(self.world, self.camera, self.layers, self.selected_rows(),
                         overlay=self.overlay(), help_text=HELP if self.show_help else None,
                         forces=self.selected_forces())
        self.draw_ms = (time.perf_counter() - start) * 1000.0

    def on_resize(self, width: int, height: int) -> None:
        fw, fh = self.window.get_framebuffer_size()
        self.camera.resize(fw, fh)  # not handled: pyglet's own handler sets the viewport too

    # --- keyboard -------------------------------------------------------------------------------

    def on_key_press(self, symbol: int, modifiers: int) -> bool | None:
        key = self.key
        digits = (key._1, key._2, key._3, key._4, key._5, key._6, key._7, key._8, key._9, key._0)
        if symbol in digits:
            self.toggle_layer(LAYER_KEYS[digits.index(symbol)])
        elif symbol == key.SPACE:
            self.paused = not self.paused
            self.accumulator = 0.0
        elif symbol in (key.N, key.PERIOD):
            if self.paused:
                self.step_once()
        elif symbol in (key.EQUAL, key.PLUS, key.NUM_ADD):
            self.change_speed(+1)
        elif symbol in (key.MINUS, key.NUM_SUBTRACT, key.UNDERSCORE):
            self.change_speed(-1)
        elif symbol == key.F:
            self.fit()
        elif symbol == getattr(key, LABELS_KEY):
            self.toggle_layer("labels")
        elif symbol == getattr(key, SEARCH_KEY):
            self.toggle_layer("search")
        elif symbol == getattr(key, AVOIDANCE_KEY):
            self.toggle_layer("avoidance")
        elif symbol == key.R:
            self.reload()
        elif symbol in (key.H, key.F1, key.QUESTION, key.SLASH):
            self.show_help = not self.show_help
        elif symbol == key.TAB:
            self.selected = [int(e) for e in self.world.table.live("entity")[self.world.table.live("is_agent")]]
        elif symbol == key.ESCAPE:
            if self.show_help:
                self.show_help = False
            else:
                self.selected = []
        elif symbol in (key.W, key.A, key.S, key.D):
            self.held.add(symbol)
        elif symbol == key.Q:
            self.window.close()
        else:
            return None
        return True  # handled (Esc must not close the window)

    def on_key_release(self, symbol: int, modifiers: int) -> bool | None:
        if symbol in (self.key.W, self.key.A, self.key.S, self.key.D):
            self.held.discard(symbol)
            return True
        return None

    def fit(self) -> None:
        """Fit the map into the window right of the side panel (the whole window without it)."""
        left = draw_panel.side_panel_width(self.camera.width) if "hud" in self.layers else 0
        self.camera.fit(draw.map_bounds(self.world), left=left)

    def toggle_layer(self, layer: str) -> None:
        self.layers.symmetric_difference_update({layer})

    def change_speed(self, steps: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed))
        self.speed = SPEEDS[int(np.clip(i + steps, 0, len(SPEEDS) - 1))]

    def player(self) -> int | None:
        side = self.world.resources.get(PLATFORMER)
        players = [e for e in self.world.find(Player)
                   if self.world.table.has(e) or (side is not None and side.row_of(e) >= 0)]
        return players[0] if players else None

    def _drive_player(self) -> None:
        """WASD sets the Player's velocity (its max_speed along the held direction); letting go
        of all four stops it once, and leaves it alone afterwards."""
        key = self.key
        side = self.world.resources.get(PLATFORMER)
        if side is not None:  # a side view: the keys are the Player's inputs, held every tick
            player = self.player()
            if player is not None:
                side.set_inputs(player, side_view_controls.held_inputs(self.held, key))
            return
        direction = np.array([(key.D in self.held) - (key.A in self.held),
                              (key.W in self.held) - (key.S in self.held)], dtype=np.float64)
        if not self.held and not self._driving:
            return
        player = self.player()
        if player is None:
            return
        table = self.world.table
        row = table.row_of(player)
        norm = math.hypot(*direction)
        table.vel[row] = direction / norm * table.max_speed[row] if norm else 0.0
        self._driving = bool(self.held)

    # --- mouse ------------------------------------------------------------------------------------

    def _pixels(self) -> float:
        """Framebuffer pixels per window coordinate (2 on a HiDPI screen, else 1)."""
        width = self.window.width
        return self.window.get_framebuffer_size()[0] / width if width else 1.0

    def on_mouse_press(self, x: float, y: float, button: int, modifiers: int) -> None:
        self._press = (x, y)
        self._dragging = False

    def on_mouse_drag(self, x: float, y: float, dx: float, dy: float, buttons: int, modifiers: int) -> None:
        if self._press is not None and math.hypot(x - self._press[0], y - self._press[1]) > DRAG_THRESHOLD:
            self._dragging = True
        if self._dragging or self._press is None:
            self.camera.pan(dx * self._pixels(), dy * self._pixels())

    def on_mouse_release(self, x: float, y: float, button: int, modifiers: int) -> None:
        if not self._dragging:
            self.click(x, y, button, modifiers)
        self._press, self._dragging = None, False

    def on_mouse_scroll(self, x: float, y: float, scroll_x: float, scroll_y: float) -> None:
        self.camera.zoom_at(x * self._pixels(), y * self._pixels(), 1.15 ** scroll_y)

    def click(self, x: float, y: float, button: int, modifiers: int = 0) -> None:
        """A click at window pixel (x, y): select an agent, or send agents to the ground point."""
        point = self.camera.screen_to_world((x * self._pixels(), y * self._pixels()))[0]
        side = self.world.resources.get(PLATFORMER)
        if side is not None and button in (self.mouse.LEFT, self.mouse.RIGHT):
            self.selected, self.status = side_view_controls.click(
                self.world, side, point, button == self.mouse.LEFT, bool(modifiers & self.key.MOD_SHIFT),
                self.selected)
            return
        table = self.world.table
        if button == self.mouse.LEFT:
            row = draw.pick_row(table, point)
            if row >= 0:
                entity = int(table.entity[row])
                if modifiers & self.key.MOD_SHIFT:
                    if entity in self.selected:
                        self.selected.remove(entity)
                    else:
                        self.selected.append(entity)
                else:
                    self.selected = [entity]
                return
        if button in (self.mouse.LEFT, self.mouse.RIGHT):
            movers = [e for e in self.selected if self.world.exists(e)]
            if not movers:
                player = self.player()
                movers = [] if player is None else [player]
            self.set_goal(movers, (float(point[0]), float(point[1])))

    def set_goal(self, entities: Iterable[int], goal: tuple[float, float]) -> None:
        """Give each entity a PathRequest to ``goal``, keeping the options of a request it
        already has. Without a PathfindSystem the point also becomes its steering target."""
        table = self.world.table
        serve_directly = self.world.system("PathfindSystem") is None
        for entity in entities:
            current = self.world.try_get(entity, PathRequest)
            request = (PathRequest(goal=goal) if current is None
                       else dataclasses.replace(current, goal=goal, target=None))
            self.world.add_component(entity, request)
            if serve_directly and table.has(entity):
                row = table.row_of(entity)
                table.steer_target[row] = goal
                table.has_steer_target[row] = True

    def selected_forces(self) -> dict[str, tuple[float, float]] | None:
        """The first selected agent's behaviour forces for the side panel (the SteeringSystem's
        ``behaviour_forces``: read-only), or None when it does not steer or none is selected."""
        steering = self.world.system("SteeringSystem")
        if steering is None or not self.selected or self.world.resources.get(PLATFORMER) is not None:
            return None
        entity = self.selected[0]
        table = self.world.table
        if not self.world.exists(entity) or not table.has(entity) or not table.has_steering[table.row_of(entity)]:
            return None
        return steering.behaviour_forces(self.world, entity)

    def selected_rows(self) -> np.ndarray:
        self.selected = [e for e in self.selected if self.world.exists(e)]
        side = self.world.resources.get(PLATFORMER)
        if side is not None:
            return side_view_controls.selected_rows(side, self.selected)
        return self.world.table.rows_of(np.asarray(self.selected, dtype=np.int64))

    # --- scene ------------------------------------------------------------------------------------

    def reload(self) -> bool:
        """Load the scene file again into a fresh World (the camera and layers stay). A scene
        that no longer loads leaves the current World running and says why in the HUD."""
        if self.scene is None:
            self.status = "reload: this world did not come from a scene file"
            return False
        import ecs_nav

        try:
            world = (self.loader or ecs_nav.load_scene)(self.scene, seed=self.seed)
        except Exception as exc:  # a broken scene must not kill the viewer
            self.status = f"reload failed: {exc}".splitlines()[0]
            return False
        old, self.world = self.world, world
        if old is not world:
            old.close()
        existing = world.system("RenderSystem")
        if existing is not None:
            self.render = existing
        self.selected, self.accumulator, self.ms_per_tick = [], 0.0, {}
        self.status = f"reloaded {self.scene}"
        return True


def run_viewer(scene: str | os.PathLike, seed: int | None = None, size: tuple[int, int] = (1280, 720),
               loader: Callable[..., World] | None = None) -> None:
    """Open a window on ``scene`` (a scene file or a built-in scene name) and run until it is
    closed; ``loader(scene, seed=seed)`` builds its World (default ``ecs_nav.load_scene``).
    Raises ``ecs_nav.systems.render.RenderUnavailable`` with a one-line reason when there is no
    display to open a window on."""
    render = _render_module()
    if not render.display_available():
        raise render.RenderUnavailable(
            "the viewer needs a display and none was found ($DISPLAY is unset); "
            "render headless instead: ecs-nav run SCENE --headless --screenshot out.png (or --record out.mp4)")
    p = render.load_pyglet(headless=False)
    if p.options["headless"]:
        raise render.RenderUnavailable("pyglet is already in headless mode in this process; the viewer needs a window")
    import ecs_nav

    world = (loader or ecs_nav.load_scene)(scene, seed=seed)
    try:
        window = p.window.Window(int(size[0]), int(size[1]), caption=f"ecs_nav - {scene}", resizable=True)
    except Exception as exc:
        raise render.RenderUnavailable(f"cannot open a window: {type(exc).__name__}: {exc}") from exc
    viewer = Viewer(world, window, scene=scene, seed=seed, loader=loader)
    p.clock.schedule(viewer.update)
    try:
        p.app.run(1 / 60)
    finally:
        p.clock.unschedule(viewer.update)
        viewer.world.close()
