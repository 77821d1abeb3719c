"""The GL floor of the renderer: loading pyglet, the offscreen context, and the GL objects the
Renderer draws with (shader programs, vertex buffers, meshes, the agent sprites, framebuffers).

pyglet is imported lazily, on the first ``load_pyglet`` call, never by importing this
module: a headless simulation that does not ask for pictures never loads pyglet. Without a
display, pyglet runs in its headless EGL mode; its ``headless`` option must be set before
``pyglet.window`` / ``pyglet.gl`` are first imported, so every pyglet import in the project goes
through ``load_pyglet``. After it, this module's ``pyglet`` and ``gl`` are the modules.

Agent bodies are one draw call: a point sprite per table row (an instanced quad when agents are
wider on screen than the largest point size), the disc, rim, heading tick and selection ring
shaded in the fragment shader (``AgentMesh``).

Captures render into a framebuffer object of the requested size (``Target``) on the
process's one hidden offscreen window (``offscreen_window``), so any number of screenshots
and recordings of any size share one GL context.
"""

from __future__ import annotations

import ctypes
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

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
    def window_and_gl():
        importlib.import_module("pyglet.window")
        return importlib.import_module("pyglet.gl")

    pyglet, gl = module, making_a_context(module, window_and_gl)
    return pyglet


def making_a_context(module: Any, make: Any) -> Any:
    """``make()``, whose failure is a RenderUnavailable. pyglet warns before it fails to find an
    EGL device: the warning then goes into the error's one line instead of above it, and is
    warned as usual when ``make`` succeeds."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            made = make()
        except Exception as exc:
            told = [str(w.message) for w in said if issubclass(w.category, UserWarning)]  # (not deprecations)
            raise RenderUnavailable(no_context_message(module, exc, told)) from exc
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return made


def no_context_message(module: Any, exc: BaseException, warned: Sequence[str] = ()) -> str:
    mode = "headless EGL" if module.options["headless"] else "a window on $DISPLAY"
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    also = "".join(f" (pyglet warned: {text.strip().splitlines()[0]})" for text in warned[:1] if text.strip())
    return (f"cannot create an OpenGL context ({mode}): {type(exc).__name__}: {reason}{also}. "
            "Without a display, rendering needs EGL (Mesa's libEGL, e.g. apt install libegl1 libgl1-mesa-dri).")


def no_fonts_message(exc: BaseException) -> str:
    reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else type(exc).__name__
    return (f"cannot load a font for the HUD text: {reason}. Text needs FreeType and fontconfig "
            "(e.g. apt install libfontconfig1), or leave out the \"hud\" layer.")


def offscreen_window() -> Any:
    """The process's one hidden window: the GL context that captures render in (made once)."""
    global _offscreen
    if _offscreen is None or getattr(_offscreen, "context", None) is None:
        p = load_pyglet()
        _offscreen = making_a_context(p, lambda: p.window.Window(16, 16, visible=False, caption="ecs_nav offscreen"))
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


def agent_program(quads: bool) -> Any:
    header = f"#version 330 core\n#define QUADS {int(quads)}\n"
    return program(header + _AGENT_VS, header + _AGENT_FS)


def coloured_program() -> Any:
    """The shader program of the (k, 6) ``x, y, r, g, b, a`` meshes (``u_matrix``: world to clip)."""
    return program(_COLOURED_VS, _COLOURED_FS)


def program(vertex: str, fragment: str) -> Any:
    from pyglet.graphics.shader import Shader, ShaderProgram

    return ShaderProgram(Shader(vertex, "vertex"), Shader(fragment, "fragment"))


class Buffer:
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



class Mesh:
    """A vertex array of (k, 6) ``x, y, r, g, b, a`` rows drawn as lines or triangles."""

    def __init__(self, mode: int) -> None:
        self.mode = mode
        self.count = 0
        self.key: Any = None  # what the data was built from (for static layers)
        self.vao = gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(self.vao))
        gl.glBindVertexArray(self.vao)
        self.buffer = Buffer()
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


class AgentMesh:
    """Every agent body in one draw call from (n, 9) rows (see the agent shaders)."""

    def __init__(self) -> None:
        self.count = 0
        self.max_radius = 0.0
        self.instances = Buffer()
        self.instances.upload(np.zeros((1, 9), np.float32))
        self.point_vao, self.quad_vao = gl.GLuint(), gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(self.point_vao))
        gl.glBindVertexArray(self.point_vao)
        self._row_attributes(divisor=0)
        gl.glGenVertexArrays(1, ctypes.byref(self.quad_vao))
        gl.glBindVertexArray(self.quad_vao)
        self.quad = Buffer()
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

