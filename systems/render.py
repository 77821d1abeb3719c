"""RenderSystem: draws the world top-down with OpenGL (pyglet); never changes simulation state.

pyglet is imported lazily, on the first :func:`load_pyglet` call (constructing a RenderSystem
or drawing), never by importing this module: a headless simulation that does not ask for
pictures never loads pyglet. Without a display, pyglet runs in its headless EGL mode; its
``headless`` option must be set before ``pyglet.window`` / ``pyglet.gl`` are first imported, so
every pyglet import in the project goes through :func:`load_pyglet`.

What gets drawn comes from :mod:`ecs_nav.draw` as numpy arrays; this module only uploads them:
one vertex buffer and one draw call per layer, and every agent body in a single draw call: a
point sprite per table row (an instanced quad when agents are wider on screen than the largest
point size), the disc, rim, heading tick and selection ring shaded in the fragment shader. The
map, graph and flow-field layers are drawn into a cached background image that each frame
copies until the camera or their data changes.

Captures render into a framebuffer object of the requested size on the process's one hidden
offscreen window (:func:`offscreen_window`), so any number of screenshots and recordings of any
size share one GL context.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from ecs_nav.systems.render_text import TextPainter

from ecs_nav import draw, draw_labels, draw_panel, draw_paths, draw_platformer
from ecs_nav.components import Path, PathRequest, Player
from ecs_nav.draw_colours import agent_groups
from ecs_nav.nav.fields import FIELDS
from ecs_nav.platformer_world import PLATFORMER
from ecs_nav.world import System, World

pyglet: Any = None  # the pyglet module, once load_pyglet() has run
gl: Any = None  # pyglet.gl
_offscreen: Any = None  # the process's one hidden window (a GL context for captures)


class RenderUnavailable(RuntimeError):
    """No OpenGL context can be made here (no display, and pyglet's headless EGL mode failed)."""


def display_available() -> bool:
    """Whether a windowing system is reachable (always true off Linux)."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def load_pyglet(headless: bool | None = None) -> Any:
    """Import pyglet (once per process) and return it.

    ``headless`` None picks headless EGL mode when there is no display. The choice is made by
    the first call: pyglet reads the option when its window module is imported, so a later call
    asking for the other mode gets the mode already in force."""
    global pyglet, gl
    if pyglet is not None:
        return pyglet
    import importlib

    module = importlib.import_module("pyglet")
    if "pyglet.window" not in sys.modules:
        module.options["headless"] = (not display_available()) if headless is None else bool(headless)
    try:
        importlib.import_module("pyglet.window")
        gl_module = importlib.import_module("pyglet.gl")
    except Exception as exc:  # pragma: no cover - depends on the machine
        raise RenderUnavailable(_no_context_message(module, exc)) from exc
    pyglet, gl = module, gl_module
    return pyglet


def _no_context_message(module: Any, exc: BaseException) -> str:
    mode = "headless EGL" if module.options["headless"] else "a window on $DISPLAY"
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (f"cannot create an OpenGL context ({mode}): {type(exc).__name__}: {reason}. "
            "Without a display, rendering needs EGL (Mesa's libEGL, e.g. apt install libegl1 libgl1-mesa-dri).")


def _no_fonts_message(exc: BaseException) -> str:
    reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else type(exc).__name__
    return (f"cannot load a font for the HUD text: {reason}. Text needs FreeType and fontconfig "
            "(e.g. apt install libfontconfig1), or leave out the \"hud\" layer.")


def offscreen_window() -> Any:
    """The process's one hidden window: the GL context that captures render in (made once)."""
    global _offscreen
    if _offscreen is None or getattr(_offscreen, "context", None) is None:
        p = load_pyglet()
        try:
            _offscreen = p.window.Window(16, 16, visible=False, caption="ecs_nav offscreen")
        except Exception as exc:
            raise RenderUnavailable(_no_context_message(p, exc)) from exc
    _offscreen.switch_to()
    return _offscreen


# --- GL helpers ---------------------------------------------------------------------------------

_COLOURED_VS = """#version 330 core
layout(location = 0) in vec2 position;
layout(location = 1) in vec4 colour;
uniform mat4 u_matrix;
out vec4 v_colour;
void main() {
    v_colour = colour;
    gl_Position = u_matrix * vec4(position, 0.0, 1.0);
}
"""

_COLOURED_FS = """#version 330 core
in vec4 v_colour;
out vec4 frag;
void main() { frag = v_colour; }
"""

# Agent bodies. Normally one point sprite per agent (GL_POINTS: one vertex each, the cheapest
# primitive for a software rasteriser); when an agent would be wider on screen than the largest
# point size, one instanced quad per agent instead (the same shaders built with QUADS 1). Either
# way one draw call. The sprite reaches a pixel past the radius for the antialiased edge (four
# when selected, for the ring); the fragment shader measures in radii (``local``). Few
# varyings: llvmpipe's cost per point grows with them.
_AGENT_VS = """
layout(location = 0) in vec2 corner;
layout(location = 1) in vec3 center_radius;
layout(location = 2) in vec2 heading;
layout(location = 3) in vec4 colour_selected;
uniform mat4 u_matrix;
uniform float u_pixel;  // world units per pixel
uniform float u_min_pixels;  // the smallest radius drawn, in pixels
flat out vec4 v_colour_selected;
flat out vec3 v_heading_radius;  // unit heading, radius in pixels
#if QUADS
out vec2 v_corner;
#endif
void main() {
    float radius = max(center_radius.z / u_pixel, u_min_pixels);
    float pad = radius + (colour_selected.a > 0.5 ? 4.0 : 1.0);
    float h_len = length(heading);
    v_heading_radius = vec3(h_len > 1e-6 ? heading / h_len : vec2(0.0), radius);
    v_colour_selected = colour_selected;
#if QUADS
    v_corner = corner;
    gl_Position = u_matrix * vec4(center_radius.xy + corner * pad * u_pixel, 0.0, 1.0);
#else
    gl_PointSize = 2.0 * pad;
    gl_Position = u_matrix * vec4(center_radius.xy, 0.0, 1.0);
#endif
}
"""

_AGENT_FS = """
flat in vec4 v_colour_selected;
flat in vec3 v_heading_radius;
#if QUADS
in vec2 v_corner;
#endif
uniform vec3 u_selection;
out vec4 frag;
void main() {
    bool selected = v_colour_selected.a > 0.5;
    float aa = 1.0 / v_heading_radius.z;  // one pixel, in radii
    float extent = 1.0 + (selected ? 4.0 : 1.0) * aa;
#if QUADS
    vec2 local = v_corner * extent;
#else
    vec2 local = (gl_PointCoord * 2.0 - 1.0) * vec2(1.0, -1.0) * extent;
#endif
    float d = length(local);
    if (d > 1.0 + aa && !selected) discard;
    float body = 1.0 - smoothstep(1.0 - aa, 1.0 + aa, d);
    vec3 colour = v_colour_selected.rgb;
    colour = mix(colour, colour * 0.4, smoothstep(0.80 - aa, 0.80 + aa, d));  // rim
    vec2 h = v_heading_radius.xy;
    float along = dot(local, h);
    float across = abs(local.x * h.y - local.y * h.x);
    float tick = step(0.35, along) * step(along, 1.0) * (1.0 - smoothstep(0.14 - aa, 0.14 + aa, across));
    colour = mix(colour, vec3(1.0), 0.9 * tick);
    float ring = 0.0;
    if (selected) {
        ring = smoothstep(1.0 + aa, 1.0 + 1.5 * aa, d) * (1.0 - smoothstep(1.0 + 3.0 * aa, 1.0 + 3.5 * aa, d));
    }
    float alpha = max(body, ring);
    if (alpha <= 0.0) discard;
    frag = vec4(mix(colour, u_selection, ring * (1.0 - body)), alpha);
}
"""


def _agent_program(quads: bool) -> Any:
    header = f"#version 330 core\n#define QUADS {int(quads)}\n"
    return _program(header + _AGENT_VS, header + _AGENT_FS)


def _program(vertex: str, fragment: str) -> Any:
    from pyglet.graphics.shader import Shader, ShaderProgram

    return ShaderProgram(Shader(vertex, "vertex"), Shader(fragment, "fragment"))


class _Buffer:
    """A growable GL array buffer filled from numpy arrays."""

    def __init__(self) -> None:
        self.id = gl.GLuint()
        gl.glGenBuffers(1, ctypes.byref(self.id))
        gl.glBindBuffer(gl.GL_ARRAY_BUFFER, self.id)  # a vertex array's attribute pointers read this binding
        self.capacity = 0

    def upload(self, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array, dtype=np.float32)
        gl.glBindBuffer(gl.GL_ARRAY_BUFFER, self.id)
        pointer = data.ctypes.data_as(ctypes.POINTER(gl.GLvoid))
        if data.nbytes > self.capacity:
            self.capacity = max(data.nbytes, self.capacity * 2)
            gl.glBufferData(gl.GL_ARRAY_BUFFER, self.capacity, None, gl.GL_DYNAMIC_DRAW)
        if data.nbytes:
            gl.glBufferSubData(gl.GL_ARRAY_BUFFER, 0, data.nbytes, pointer)

    def delete(self) -> None:
        gl.glDeleteBuffers(1, ctypes.byref(self.id))


def shared_field_view(world: World, graph, selected_rows) -> dict | None:
    """The heat map / arrows input for the shared flow field to show (see ``prepare``)."""
    rows = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
    rows = rows[(rows >= 0) & (rows < world.table.n)]
    ids = world.table.field_id[rows]
    shared = world.resources[FIELDS].shown(ids[ids >= 0])
    if shared is None or shared.flow is None or not shared.flow.is_current(graph):
        return None
    return {"distance": shared.flow.distance, "direction": shared.node_directions(graph),
            "version": (shared.id, shared.built_tick)}


class _Mesh:
    """A vertex array of (k, 6) ``x, y, r, g, b, a`` rows drawn as lines or triangles."""

    def __init__(self, mode: int) -> None:
        self.mode = mode
        self.count = 0
        self.key: Any = None  # what the data was built from (for static layers)
        self.vao = gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(self.vao))
        gl.glBindVertexArray(self.vao)
        self.buffer = _Buffer()
        stride = 6 * 4
        gl.glEnableVertexAttribArray(0)
        gl.glVertexAttribPointer(0, 2, gl.GL_FLOAT, gl.GL_FALSE, stride, None)
        gl.glEnableVertexAttribArray(1)
        gl.glVertexAttribPointer(1, 4, gl.GL_FLOAT, gl.GL_FALSE, stride, ctypes.c_void_p(8))
        gl.glBindVertexArray(0)

    def upload(self, rows: np.ndarray) -> None:
        self.buffer.upload(rows)
        self.count = int(rows.shape[0])

    def draw(self) -> None:
        if self.count:
            gl.glBindVertexArray(self.vao)
            gl.glDrawArrays(self.mode, 0, self.count)


class _AgentMesh:
    """Every agent body in one draw call from (n, 9) rows (see the agent shaders)."""

    def __init__(self) -> None:
        self.count = 0
        self.max_radius = 0.0
        self.instances = _Buffer()
        self.instances.upload(np.zeros((1, 9), np.float32))
        self.point_vao, self.quad_vao = gl.GLuint(), gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(self.point_vao))
        gl.glBindVertexArray(self.point_vao)
        self._row_attributes(divisor=0)
        gl.glGenVertexArrays(1, ctypes.byref(self.quad_vao))
        gl.glBindVertexArray(self.quad_vao)
        self.quad = _Buffer()
        self.quad.upload(np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], dtype=np.float32))
        gl.glEnableVertexAttribArray(0)
        gl.glVertexAttribPointer(0, 2, gl.GL_FLOAT, gl.GL_FALSE, 8, None)
        self._row_attributes(divisor=1)
        gl.glBindVertexArray(0)
        size_range = (gl.GLfloat * 2)()
        gl.glGetFloatv(gl.GL_POINT_SIZE_RANGE, size_range)
        self.max_point_size = float(size_range[1])

    def _row_attributes(self, divisor: int) -> None:
        gl.glBindBuffer(gl.GL_ARRAY_BUFFER, self.instances.id)
        stride = 9 * 4
        for location, size, offset in ((1, 3, 0), (2, 2, 12), (3, 4, 20)):
            gl.glEnableVertexAttribArray(location)
            gl.glVertexAttribPointer(location, size, gl.GL_FLOAT, gl.GL_FALSE, stride, ctypes.c_void_p(offset))
            gl.glVertexAttribDivisor(location, divisor)

    def upload(self, rows: np.ndarray) -> None:
        self.instances.upload(rows)
        self.count = int(rows.shape[0])
        self.max_radius = float(rows[:, 2].max()) if self.count else 0.0

    def use_points(self, pixels_per_unit: float) -> bool:
        """Whether the widest agent fits in a point sprite at this zoom."""
        return 2.0 * (self.max_radius * pixels_per_unit + 4.0) <= self.max_point_size

    def draw(self, points: bool) -> None:
        if not self.count:
            return
        if points:
            gl.glEnable(gl.GL_PROGRAM_POINT_SIZE)
            gl.glBindVertexArray(self.point_vao)
            gl.glDrawArrays(gl.GL_POINTS, 0, self.count)
            gl.glDisable(gl.GL_PROGRAM_POINT_SIZE)
        else:
            gl.glBindVertexArray(self.quad_vao)
            gl.glDrawArraysInstanced(gl.GL_TRIANGLE_STRIP, 0, 4, self.count)


class Target:
    """A framebuffer object of one size, read back as an RGB numpy image."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.fbo, self.colour = gl.GLuint(), gl.GLuint()
        gl.glGenFramebuffers(1, ctypes.byref(self.fbo))
        gl.glGenRenderbuffers(1, ctypes.byref(self.colour))
        gl.glBindRenderbuffer(gl.GL_RENDERBUFFER, self.colour)
        gl.glRenderbufferStorage(gl.GL_RENDERBUFFER, gl.GL_RGBA8, width, height)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glFramebufferRenderbuffer(gl.GL_FRAMEBUFFER, gl.GL_COLOR_ATTACHMENT0, gl.GL_RENDERBUFFER, self.colour)
        status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        if status != gl.GL_FRAMEBUFFER_COMPLETE:
            raise RenderUnavailable(f"offscreen framebuffer {width}x{height} is incomplete (status 0x{status:x})")

    def delete(self) -> None:
        gl.glDeleteFramebuffers(1, ctypes.byref(self.fbo))
        gl.glDeleteRenderbuffers(1, ctypes.byref(self.colour))

    def bind(self) -> None:
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glViewport(0, 0, self.width, self.height)

    def read(self) -> np.ndarray:
        """(height, width, 3) uint8, row 0 at the top."""
        image = np.empty((self.height, self.width, 4), dtype=np.uint8)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
        gl.glReadPixels(0, 0, self.width, self.height, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE,
                        image.ctypes.data_as(ctypes.POINTER(gl.GLvoid)))
        return np.ascontiguousarray(image[::-1, :, :3])


# --- the renderer ---------------------------------------------------------------------------------


STATIC_LAYERS = ("map", "heat_map", "graph_edges", "graph_nodes", "flow_field")
"""Layers that change only when the map, the graph or the flow field does: cached as an image."""


def _same(a: Any, b: Any) -> bool:
    """Cache keys: objects (the map, the graph, arrays) by identity, version numbers by value."""
    return a is b or (isinstance(a, (int, float, str)) and isinstance(b, (int, float, str)) and a == b)


class Renderer:
    """Draws a World into the framebuffer bound in the current GL context.

    Static layers (the map, the nav graph) are rebuilt only when the map object or the graph's
    version changes; the flow field when its arrays change; agents, paths, velocities and
    steering targets every frame. GL objects belong to the context current at construction.
    """

    def __init__(self) -> None:
        load_pyglet()
        self.context = gl.current_context
        self.coloured = _program(_COLOURED_VS, _COLOURED_FS)
        self.agent_programs = {True: _agent_program(quads=False), False: _agent_program(quads=True)}
        self.meshes = {
            "map": _Mesh(gl.GL_TRIANGLES),
            "heat_map": _Mesh(gl.GL_TRIANGLES),
            "graph_edges": _Mesh(gl.GL_LINES),
            "graph_nodes": _Mesh(gl.GL_LINES),
            "flow_field": _Mesh(gl.GL_LINES),
            "path_bands": _Mesh(gl.GL_TRIANGLES),  # drawn with "paths", under the lines
            "paths": _Mesh(gl.GL_LINES),
            "steer_targets": _Mesh(gl.GL_LINES),
            "velocity": _Mesh(gl.GL_LINES),
            "side_characters": _Mesh(gl.GL_TRIANGLES),  # a side view's boxes and held keys
            "side_inputs": _Mesh(gl.GL_LINES),
        }
        self.overlay = _Mesh(gl.GL_TRIANGLES)
        self.agents = _AgentMesh()
        self.text = TextPainter(pyglet, lambda exc: RenderUnavailable(_no_fonts_message(exc)))
        self.groups: Any = None  # the last frame's draw_colours.AgentGroups
        self._background: Target | None = None
        self._background_key: list | None = None

    # --- building the layers -----------------------------------------------------------------

    def _static(self, name: str, key: tuple, build: Callable[[], np.ndarray]) -> None:
        mesh = self.meshes[name]
        if mesh.key is None or not all(_same(a, b) for a, b in zip(mesh.key, key, strict=True)):
            mesh.upload(build())
            mesh.key = key

    def prepare(self, world: World, layers: Iterable[str], selected_rows: Any = (),
                pixels_per_unit: float | None = None) -> None:
        """Upload what the visible ``layers`` need from ``world`` (CPU side of a frame). The heat
        map and arrows show ``world.resources["flow_field"]`` when set, else the shared flow
        field of the first selected agent that follows one, else the field with most users.
        ``pixels_per_unit`` (the camera's scale) hides velocity lines of agents drawn small."""
        layers = set(layers)
        graph, flow = world.nav_graph, world.resources.get("flow_field")
        table = world.table
        if flow is None and world.resources.get(FIELDS) is not None and graph is not None:
            flow = shared_field_view(world, graph, selected_rows)
        side = world.resources.get(PLATFORMER)
        if side is not None:  # a side view: its level, bots' paths, boxes and keys
            self._prepare_side_view(side, layers, selected_rows)
            return
        if "map" in layers:
            self._static("map", (world.map, getattr(world.map, "version", 0)),
                         lambda: draw.map_triangles(world.map))
        graph_key = (graph, getattr(graph, "version", 0))
        if "graph_edges" in layers:
            self._static("graph_edges", graph_key, lambda: draw.graph_edge_lines(graph))
        if "graph_nodes" in layers:
            self._static("graph_nodes", graph_key, lambda: draw.graph_node_ticks(graph))
        flow_key = graph_key + ((flow.get("distance"), flow.get("direction"), flow.get("version"))
                                if isinstance(flow, dict) else (None, None, None))
        if "heat_map" in layers:
            self._static("heat_map", flow_key, lambda: draw.heat_map_triangles(graph, flow))
        if "flow_field" in layers:
            self._static("flow_field", flow_key, lambda: draw.flow_field_arrows(graph, flow))
        players = table.rows_of(np.asarray(world.find(Player), dtype=np.int64))
        groups = self.groups = agent_groups(world, draw.PALETTE, players)
        if "paths" in layers:
            paths = [(e, c[0]) for e, c in world.query(Path)]
            colours = draw_paths.path_colours(paths, table, groups.row_colour)
            requests = [(e, c[0]) for e, c in world.query(PathRequest)]
            self.meshes["path_bands"].upload(draw_paths.path_bands(paths, colours))
            self.meshes["paths"].upload(np.concatenate([
                draw_paths.path_lines(paths, table, colours),
                draw_paths.goal_markers(paths, requests, table, groups.row_colour)]))
        if "steer_targets" in layers:
            self.meshes["steer_targets"].upload(draw_paths.steer_target_lines(table, groups.row_colour))
        if "velocity" in layers:
            self.meshes["velocity"].upload(draw.velocity_lines(table, pixels_per_unit=pixels_per_unit))
        if "agents" in layers:
            self.agents.upload(draw.agent_instances(table, players, selected_rows, groups.row_colour))

    def _prepare_side_view(self, side, layers: set, selected_rows: Any) -> None:
        """The side view's layers: "map" is the level, "paths" the bots' paths with their jumps,
        "agents" the characters' boxes and the keys they hold (``selected_rows`` are rows of
        the side view's characters)."""
        for name in ("graph_edges", "graph_nodes", "heat_map", "flow_field"):
            self._static(name, ("side view",), draw_platformer.empty_rows)
        self.groups = None
        for name in ("steer_targets", "velocity", "path_bands"):
            self.meshes[name].upload(draw_platformer.empty_rows())
        if "map" in layers:
            self._static("map", (side.level, side.version), lambda: draw_platformer.level_triangles(side.level))
        if "paths" in layers:
            self.meshes["paths"].upload(draw_platformer.path_lines(side))
        self.agents.upload(np.zeros((0, 9), np.float32))
        if "agents" in layers:
            self.meshes["side_characters"].upload(draw_platformer.character_triangles(side, selected_rows))
            self.meshes["side_inputs"].upload(draw_platformer.input_lines(side))
        else:
            self.meshes["side_characters"].upload(draw_platformer.empty_rows())
            self.meshes["side_inputs"].upload(draw_platformer.empty_rows())

    # --- drawing -------------------------------------------------------------------------------

    def draw(self, world: World, camera: draw.Camera, layers: Iterable[str] = draw.LAYERS,
             selected_rows: Any = (), overlay: list[str] | None = None, help_text: str | None = None) -> None:
        """Draw ``layers`` of ``world`` through ``camera`` into the bound framebuffer (which must
        be ``camera.width`` x ``camera.height``); with the "hud" layer, ``overlay`` lines (the
        HUD) head the side panel at the left edge, followed by the events, the legend and the
        first selected agent's state; ``help_text`` goes in a box at the centre.

        The static layers (map, heat map, graph, flow field) are drawn into a cached background
        image, redrawn only when the camera or what they show changes; each frame copies it
        and draws the moving layers on top."""
        layers = set(layers)
        self.prepare(world, layers, selected_rows, camera.scale)
        gl.glEnable(gl.GL_BLEND)
        gl.glBlendFunc(gl.GL_SRC_ALPHA, gl.GL_ONE_MINUS_SRC_ALPHA)
        matrix = tuple(float(v) for v in camera.matrix())
        static = [name for name in STATIC_LAYERS if name in layers]
        if static:
            self._blit_background(camera, static, matrix)
        else:
            gl.glClearColor(*draw.PALETTE["background"])
            gl.glClear(gl.GL_COLOR_BUFFER_BIT)
        program = self.coloured
        program.use()
        program["u_matrix"] = matrix
        for name in draw.LAYERS:
            if name in STATIC_LAYERS or name not in layers:
                continue
            if name == "agents":
                program.stop()
                points = self.agents.use_points(camera.scale)
                agent_program = self.agent_programs[points]
                agent_program.use()
                agent_program["u_matrix"] = matrix
                agent_program["u_pixel"] = 1.0 / camera.scale
                agent_program["u_min_pixels"] = draw.MIN_AGENT_PIXELS
                agent_program["u_selection"] = tuple(draw.PALETTE["selection"][:3])
                self.agents.draw(points)
                agent_program.stop()
                program.use()
                self.meshes["side_characters"].draw()
                self.meshes["side_inputs"].draw()
            elif name in self.meshes:
                if name == "paths":
                    self.meshes["path_bands"].draw()
                self.meshes[name].draw()
        gl.glBindVertexArray(0)
        program.stop()
        left = draw_panel.side_panel_width(camera.width) if "hud" in layers else 0
        if "labels" in layers and self.groups is not None:
            labels = draw_labels.agent_labels(world, camera, self.groups, left)
            if labels:  # a dark backing keeps light text readable on a light wall
                self._overlay(np.concatenate([draw.rectangles(
                    [label.x - 2, label.y - 3], [label.x + draw_labels.label_width(label.text) + 2,
                                                 label.y + draw_labels.LABEL_HEIGHT_PIXELS - 1],
                    draw.PALETTE["label_backing"]) for label in labels]), camera)
            self.text.draw_labels(labels, draw_labels.LABEL_FONT_SIZE)
        if "hud" in layers and overlay is not None:
            entities = world.table.live("entity")
            rows = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
            selected = entities[rows[(rows >= 0) & (rows < len(entities))]] if world.resources.get(PLATFORMER) is None \
                else []
            lines = draw_panel.panel_lines(world, overlay, layers, self.groups, selected)
            self._side_panel(lines, camera, left)
        if help_text:
            self._text_panel("help", help_text, camera)

    def _blit_background(self, camera: draw.Camera, static: list[str], matrix: tuple) -> None:
        """Copy the cached image of the static layers into the bound framebuffer, redrawing it
        first when the camera, the layer set or any static layer's data changed."""
        key = [camera.center[0], camera.center[1], camera.scale, camera.width, camera.height, *static]
        for name in static:
            key.extend(self.meshes[name].key)
        target = self._background
        fresh = (target is not None and (target.width, target.height) == (camera.width, camera.height)
                 and self._background_key is not None and len(key) == len(self._background_key)
                 and all(_same(a, b) for a, b in zip(key, self._background_key)))
        drawn_into = gl.GLint()
        gl.glGetIntegerv(gl.GL_DRAW_FRAMEBUFFER_BINDING, ctypes.byref(drawn_into))
        if not fresh:
            if target is None or (target.width, target.height) != (camera.width, camera.height):
                if target is not None:
                    target.delete()
                target = self._background = Target(camera.width, camera.height)
            target.bind()
            gl.glClearColor(*draw.PALETTE["background"])
            gl.glClear(gl.GL_COLOR_BUFFER_BIT)
            self.coloured.use()
            self.coloured["u_matrix"] = matrix
            for name in static:
                self.meshes[name].draw()
            gl.glBindVertexArray(0)
            self.coloured.stop()
            self._background_key = key
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, target.fbo)
        gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, drawn_into.value)
        gl.glViewport(0, 0, camera.width, camera.height)
        gl.glBlitFramebuffer(0, 0, camera.width, camera.height, 0, 0, camera.width, camera.height,
                             gl.GL_COLOR_BUFFER_BIT, gl.GL_NEAREST)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, drawn_into.value)

    def _overlay(self, rows: np.ndarray, camera: draw.Camera) -> None:
        """Draw triangle rows given in window pixels."""
        self.overlay.upload(rows)
        self.coloured.use()
        self.coloured["u_matrix"] = tuple(float(v) for v in draw.Camera.pixels(camera.width, camera.height).matrix())
        self.overlay.draw()
        gl.glBindVertexArray(0)
        self.coloured.stop()

    def _side_panel(self, lines: list, camera: draw.Camera, width: int) -> None:
        """The side panel: a full-height strip ``width`` pixels wide at the left edge, the
        ``draw_panel.PanelLine``s from its top, a colour swatch before each line that has one."""
        pad, swatch = 8, 12
        text = "\n".join(" " * 2 + line.text if line.swatch is not None else line.text for line in lines)
        label = self.text.block("panel", text, draw_panel.PANEL_FONT_SIZE)
        top = camera.height - pad
        label.x, label.y = pad, top
        line_height = self.text.line_height(label)
        rows = [draw.rectangles([0, 0], [width, camera.height], draw.PALETTE["hud_panel"])]
        for i, line in enumerate(lines):
            if line.swatch is not None:
                y = top - (i + 0.5) * line_height
                rows.append(draw.rectangles([pad, y - swatch / 2 + 1], [pad + swatch, y + swatch / 2 - 1],
                                            line.swatch[:3] + (1.0,)))
        self._overlay(np.concatenate(rows), camera)
        label.draw()

    def _text_panel(self, key: str, text: str, camera: draw.Camera) -> None:
        """A block of monospaced text on a translucent box at the centre, in window pixels."""
        label = self.text.block(key, text, 11)
        w, h = label.content_width, label.content_height
        pad = 8
        x, y = (camera.width - w) // 2, (camera.height - h) // 2
        label.x, label.y = x, y + h
        self._overlay(draw.rectangles([x - pad, y - pad], [x + w + pad, y + h + pad], draw.PALETTE["hud_panel"]),
                      camera)
        label.draw()


class RenderSystem(System):
    """Draws the world from the table; reads only (never part of ``state_digest``).

    In the tick it does nothing unless given ``on_frame``: then every ``every`` ticks it renders
    a ``size`` frame offscreen and passes the (h, w, 3) uint8 image to ``on_frame`` (recording
    while a scene runs). The viewer calls :meth:`draw` once per window frame instead.

    Args:
        size: (width, height) of captured frames in pixels.
        layers: the layers to draw (default: each World's ``ecs_nav.draw.default_layers``: its
            scene's ``[view] layers``, else ``DEFAULT_LAYERS``).
        every: capture every this many ticks (0: never, from the tick).
        on_frame: receives each captured frame.
        camera: a fixed camera for captures; None fits the map each frame.
    """

    name = "RenderSystem"
    reads_only = True

    def __init__(self, size: tuple[int, int] = (1280, 720), layers: Iterable[str] | None = None,
                 every: int = 0, on_frame: Callable[[np.ndarray], None] | None = None,
                 camera: draw.Camera | None = None) -> None:
        super().__init__()
        width, height = (int(v) for v in size)
        if width < 1 or height < 1:
            raise ValueError(f"RenderSystem.size: must be positive pixels, got {size!r}")
        unknown = sorted(set(layers or ()) - set(draw.LAYERS))
        if unknown:
            raise ValueError(f"RenderSystem.layers: unknown layer {unknown[0]!r} (known: {', '.join(draw.LAYERS)})")
        self.size = (width, height)
        self.layers = None if layers is None else set(layers)
        self.every = int(every)
        self.on_frame = on_frame
        self.camera = camera
        self._renderers: dict[Any, Renderer] = {}
        self._targets: dict[tuple[int, int], Target] = {}
        load_pyglet()

    def update(self, world: World) -> None:
        if self.on_frame is not None and self.every > 0 and world.tick % self.every == 0:
            self.on_frame(self.capture(world))

    def renderer(self) -> Renderer:
        """The Renderer of the current GL context (made on first use in each context)."""
        context = gl.current_context
        renderer = self._renderers.get(context)
        if renderer is None:
            renderer = self._renderers[context] = Renderer()
        return renderer

    def draw(self, world: World, camera: draw.Camera, layers: Iterable[str] | None = None,
             selected_rows: Any = (), overlay: list[str] | None = None, help_text: str | None = None) -> None:
        """Draw into whatever framebuffer is bound now (the viewer's window)."""
        if layers is None:
            layers = draw.default_layers(world) if self.layers is None else self.layers
        self.renderer().draw(world, camera, layers,
                             selected_rows, overlay, help_text)

    def capture(self, world: World, size: tuple[int, int] | None = None, camera: draw.Camera | None = None,
                layers: Iterable[str] | None = None, overlay: list[str] | None = None) -> np.ndarray:
        """Render ``world`` offscreen and return the (height, width, 3) uint8 RGB image.
        ``overlay`` None draws the capture HUD (tick, time, agents) when the "hud" layer is on."""
        width, height = (int(v) for v in (size or self.size))
        if width < 1 or height < 1:
            raise ValueError(f"capture: the frame size must be positive pixels, got {width}x{height}")
        window = offscreen_window()
        target = self._targets.get((width, height))
        if target is None:
            target = self._targets[(width, height)] = Target(width, height)
        if camera is None:
            camera = self.camera
        if layers is None:
            layers = draw.default_layers(world) if self.layers is None else self.layers
        if camera is None or (camera.width, camera.height) != (width, height):
            fitted = draw.Camera(width=width, height=height)
            fitted.fit(draw.map_bounds(world), left=draw_panel.side_panel_width(width) if "hud" in layers else 0)
            camera = fitted if camera is None else draw.Camera(camera.center, camera.scale, width, height)
        if overlay is None:
            overlay = draw_panel.hud_lines(world)
        saved_projection = window.projection
        window.projection = pyglet.math.Mat4.orthogonal_projection(0, width, 0, height, -255, 255)
        target.bind()
        try:
            self.draw(world, camera, layers, overlay=overlay)
            image = target.read()
        finally:
            gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
            window.projection = saved_projection
        return image
