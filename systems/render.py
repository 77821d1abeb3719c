"""RenderSystem: draws the world top-down with OpenGL (pyglet); never changes simulation state.

Three rooms share the work: ``ecs_nav.systems.render_gl`` loads pyglet (lazily: importing
this module loads no pyglet) and holds the GL objects; ``ecs_nav.systems.renderer`` turns a
World into the meshes of the visible layers and draws a frame; this module is the system a
World runs, which captures frames offscreen (screenshots, recordings) or draws into the
viewer's window. The names callers use (``load_pyglet``, ``RenderUnavailable``,
``offscreen_window``, ``Target``, ...) are importable from here, and ``render.pyglet`` /
``render.gl`` are the loaded modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from ecs_nav.systems import render_gl
from ecs_nav.systems.render_gl import (  # noqa: F401 - the names callers import from here
    RenderUnavailable,
    Target,
    display_available,
    load_pyglet,
    offscreen_window,
)
from ecs_nav.systems.renderer import STATIC_LAYERS, Renderer, shared_field_view  # noqa: F401 - likewise

from ecs_nav.core.system import System
from ecs_nav.core.world import World
from ecs_nav.render import draw
from ecs_nav.render import panel as draw_panel


def __getattr__(name: str) -> Any:
    """``render.pyglet`` and ``render.gl``: the modules render_gl loaded (None before)."""
    if name in ("pyglet", "gl"):
        return getattr(render_gl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RenderSystem(System):
    """Draws the world from the table; reads only (never part of ``state_digest``).

    In the tick it does nothing unless given ``on_frame``: then every ``every`` ticks it renders
    a ``size`` frame offscreen and passes the (h, w, 3) uint8 image to ``on_frame`` (recording
    while a scene runs). The viewer calls ``draw`` once per window frame instead.

    Args:
        size: (width, height) of captured frames in pixels.
        layers: the layers to draw (default: each World's ``ecs_nav.render.draw.default_layers``: its
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
        context = render_gl.gl.current_context
        renderer = self._renderers.get(context)
        if renderer is None:
            renderer = self._renderers[context] = Renderer()
        return renderer

    def draw(self, world: World, camera: draw.Camera, layers: Iterable[str] | None = None,
             selected_rows: Any = (), overlay: list[str] | None = None, help_text: str | None = None,
             forces: Mapping[str, Any] | None = None) -> None:
        """Draw into whatever framebuffer is bound now (the viewer's window); ``forces``: the
        selected agent's behaviour forces for the side panel (``Renderer.draw``)."""
        if layers is None:
            layers = draw.default_layers(world) if self.layers is None else self.layers
        self.renderer().draw(world, camera, layers, selected_rows, overlay, help_text, forces)

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
        window.projection = render_gl.pyglet.math.Mat4.orthogonal_projection(0, width, 0, height, -255, 255)
        target.bind()
        try:
            self.draw(world, camera, layers, overlay=overlay)
            image = target.read()
        finally:
            gl = render_gl.gl
            gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
            window.projection = saved_projection
        return image

