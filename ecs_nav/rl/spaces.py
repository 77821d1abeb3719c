"""The Gymnasium spaces of a learner (``NavSettings`` documents each element) and the frames its
environments render."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ecs_nav.rl.batch import NavBatch, NavSettings


def observation_space(batch: NavBatch) -> spaces.Box:
    """A learner's observation Box (float32), its bounds from the settings and the built World:
    the map's diagonal, the learner's and the fastest agent's max_speed."""
    s: NavSettings = batch.settings
    low, high = np.empty(s.observation_size), np.empty(s.observation_size)
    low[0:2], high[0:2] = -batch.diagonal, batch.diagonal
    low[2:4], high[2:4] = -2.0 * s.max_speed, 2.0 * s.max_speed
    low[4:4 + s.n_rays], high[4:4 + s.n_rays] = 0.0, s.ray_range
    block_low = [-s.neighbour_range, -s.neighbour_range, -2.0 * batch.fastest, -2.0 * batch.fastest, 0.0]
    block_high = [s.neighbour_range, s.neighbour_range, 2.0 * batch.fastest, 2.0 * batch.fastest, 1.0]
    low[4 + s.n_rays:] = np.tile(block_low, s.neighbours)
    high[4 + s.n_rays:] = np.tile(block_high, s.neighbours)
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def action_space(settings: NavSettings) -> spaces.Space:
    """Box([-1, 1]^2) for continuous actions, Discrete(headings + 1) for discrete ones."""
    if settings.action == "continuous":
        return spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    return spaces.Discrete(settings.headings + 1)


RENDER_SIZE = (640, 480)
"""Width and height (pixels) of an ``rgb_array`` frame."""


def render_rgb(batch: NavBatch, size: tuple[int, int] = RENDER_SIZE) -> np.ndarray:
    """The viewer's frame of the batch's World, rendered offscreen: (height, width, 3) uint8."""
    from ecs_nav.render.capture import render_frame

    return render_frame(batch.world, size=size)


class HumanWindow:
    """A window showing the batch's World through the viewer (``ecs_nav.render.viewer.Viewer``),
    paused: the environment steps the World, ``show`` draws it once."""

    def __init__(self, batch: NavBatch, size: tuple[int, int] = (1280, 720)):
        from ecs_nav.render.viewer import Viewer
        from ecs_nav.systems.render import RenderUnavailable, display_available, load_pyglet

        if not display_available():
            raise RenderUnavailable("render_mode='human' needs a display; use render_mode='rgb_array' instead")
        self.pyglet = load_pyglet(headless=False)
        self.window = self.pyglet.window.Window(int(size[0]), int(size[1]), caption="ecs_nav.rl", resizable=True)
        self.viewer_class = Viewer
        self.viewer = None
        self.world = None

    def show(self, batch: NavBatch) -> None:
        if self.world is not batch.world:  # (a reset builds a new World)
            if self.viewer is not None:
                self.viewer.close()
            self.viewer = self.viewer_class(batch.world, self.window)
            self.viewer.paused = True
            self.world = batch.world
        self.window.switch_to()
        self.window.dispatch_events()
        self.viewer.on_draw()
        self.window.flip()

    def close(self) -> None:
        if self.viewer is not None:
            self.viewer.close()
        self.window.close()


class BatchRendering:
    """``render`` and ``close`` of an environment over a ``NavBatch`` (``self.batch``), with its
    ``render_mode`` (None, "rgb_array" or "human") and ``self.window`` (None until shown)."""

    batch: NavBatch
    render_mode: str | None
    window: HumanWindow | None

    def render(self):
        """"rgb_array": the viewer's frame, (height, width, 3) uint8; "human": draws the World in
        a window (None); no render mode: None."""
        if self.render_mode == "rgb_array":
            return render_rgb(self.batch, RENDER_SIZE)
        if self.render_mode == "human":
            if self.window is None:
                self.window = HumanWindow(self.batch)
            self.window.show(self.batch)
        return None

    def close(self) -> None:
        if self.window is not None:
            self.window.close()
            self.window = None
        self.batch.close()
