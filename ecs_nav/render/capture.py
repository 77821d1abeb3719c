"""Headless capture: a World rendered offscreen as an image array, a screenshot or a recording
(GIF or video), and the checks ``ecs-nav run`` makes of their paths and packages before a run.

No window is needed: frames are rendered by the process's RenderSystem in pyglet's offscreen
context (``ecs_nav.systems.render``, loaded on first use, so importing this module costs nothing
for a headless run without captures). Rendering reads the World and never changes it:
``record`` advances it exactly as ``world.run(ticks)`` would.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from ecs_nav.core.world import World
from ecs_nav.render import draw
from ecs_nav.render.gif import GifWriter

_capture: Any = None


def _capture_system():
    """The process's RenderSystem for captures (its GL objects live in the offscreen window)."""
    global _capture
    if _capture is None:
        from ecs_nav.systems.render import RenderSystem

        _capture = RenderSystem()
    return _capture


def render_frame(world: World, size: tuple[int, int] = (1280, 720), layers: Iterable[str] | None = None,
                 hud: bool = True, camera: draw.Camera | None = None) -> np.ndarray:
    """Render ``world`` offscreen: a (height, width, 3) uint8 RGB image, row 0 at the top.
    ``layers`` default to ``ecs_nav.render.draw.default_layers(world)`` (the scene's ``[view]
    layers``); the camera defaults to fitting the map (right of the side panel); ``hud`` adds
    the side panel (HUD, events, legend)."""
    layers = set(draw.default_layers(world) if layers is None else layers)
    if not hud:
        layers.discard("hud")
    return _capture_system().capture(world, size=(int(size[0]), int(size[1])), camera=camera, layers=layers)


IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
"""File types a screenshot can be written as."""

VIDEO_EXTENSIONS = (".mp4", ".webm", ".mkv", ".mov", ".avi")
"""File types a recording can be written as besides .gif (through imageio-ffmpeg)."""


class MediaUnavailable(RuntimeError):
    """imageio (or, for videos, imageio-ffmpeg) is not installed: captures cannot be written."""


def check_screenshot_path(out_path: str | os.PathLike) -> FilePath:
    """The screenshot's path, or ValueError when its extension is not an image type we write."""
    out = FilePath(out_path)
    if out.suffix.lower() not in IMAGE_EXTENSIONS:
        raise ValueError(f"screenshot: {str(out)!r}: the file must end in one of {', '.join(IMAGE_EXTENSIONS)}")
    return out


def check_record_path(out_path: str | os.PathLike, size: tuple[int, int] = (1280, 720)) -> FilePath:
    """The recording's path, or ValueError when its extension is not .gif or a video type, or
    when a video is asked for at an odd frame size (H.264 needs even sizes)."""
    out = FilePath(out_path)
    ext = out.suffix.lower()
    if ext != ".gif" and ext not in VIDEO_EXTENSIONS:
        raise ValueError(f"record: {str(out)!r}: the file must end in .gif or one of {', '.join(VIDEO_EXTENSIONS)}")
    width, height = int(size[0]), int(size[1])
    if width < 1 or height < 1:
        raise ValueError(f"record: the frame size must be at least 1x1 pixels, got {width}x{height}")
    if ext != ".gif" and (width % 2 or height % 2):
        raise ValueError(f"record: video frames need even sizes, got {width}x{height}")
    return out


def check_media(out_path: str | os.PathLike) -> None:
    """Raise MediaUnavailable unless the packages that write ``out_path``'s type are installed
    (imageio; for videos imageio-ffmpeg too, which ships its own ffmpeg)."""
    _imageio()
    if FilePath(out_path).suffix.lower() in VIDEO_EXTENSIONS:
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError as exc:
            raise MediaUnavailable("recording a video needs imageio-ffmpeg: pip install 'ecs-nav[media]'") from exc


def check_writable(out: FilePath, what: str) -> None:
    """Make ``out``'s folder and open ``out`` for writing once, so that a path that cannot be
    written is an OSError naming it before any frame is rendered, not after a whole run. A file
    this check creates is removed again; one that was there (or a link) is left as it is."""
    target = out.resolve() if out.is_symlink() else out  # (a link: where the file will be written)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # there already: left as it is
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND))
            return
    except OSError as exc:
        raise OSError(f"{what}: cannot write {str(out)!r}: {exc}") from None
    target.unlink()


def screenshot(world: World, out_path: str | os.PathLike, size: tuple[int, int] = (1280, 720),
               layers: Iterable[str] | None = None, hud: bool = True,
               camera: draw.Camera | None = None) -> FilePath:
    """Render ``world`` offscreen and write it as an image, PNG or another type of
    :data:`IMAGE_EXTENSIONS` by the extension; returns the path written."""
    out = check_screenshot_path(out_path)
    check_writable(out, "screenshot")
    image = render_frame(world, size, layers, hud, camera)
    _imageio().v3.imwrite(out, image)
    return out


class _Progress:
    """A one-line progress bar on stderr (redrawn in place on a terminal, else every 10%)."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.label, self.enabled = max(total, 1), label, enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.last_decile = -1

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        fraction = done / self.total
        decile = int(fraction * 10)
        if not self.tty and decile == self.last_decile and done != self.total:
            return
        self.last_decile = decile
        bar = "#" * int(fraction * 30)
        elapsed = time.perf_counter() - self.start
        eta = elapsed / fraction - elapsed if fraction > 0 else 0.0
        line = f"{self.label} [{bar:<30}] {done}/{self.total} frames  {elapsed:5.1f}s  eta {eta:5.1f}s"
        sys.stderr.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _imageio():
    try:
        import imageio
        import imageio.v2
        import imageio.v3
    except ImportError as exc:  # depends on the install
        raise MediaUnavailable("screenshots and recordings need imageio: pip install 'ecs-nav[media]'") from exc
    return imageio


def record(world: World, ticks: int, out_path: str | os.PathLike, size: tuple[int, int] = (1280, 720),
           fps: float = 30.0, every: int | None = None, layers: Iterable[str] | None = None,
           hud: bool = True, camera: draw.Camera | None = None, progress: bool | None = None) -> FilePath:
    """Step ``world`` ``ticks`` times, rendering a frame offscreen every ``every`` ticks (and
    one before the first tick), and write them as a GIF or video (by the extension of
    ``out_path``: .gif, .mp4, .webm, .mkv, .mov, .avi) at ``fps`` frames per second.

    Both are encoded as they go, in bounded memory: a video by ffmpeg (imageio-ffmpeg), a GIF
    by :class:`ecs_nav.render.gif.GifWriter` (each frame the rectangle that changed, its own
    colour table). The progress bar counts a frame once it is written, and the last one once
    the file is closed (the encoder's tail included).

    ``every`` defaults to the ticks in one frame at real-time speed (1 / (fps * world.dt)).
    ``progress`` None shows a progress bar on stderr for recordings of 100 frames or more.
    The world advances exactly as ``world.run(ticks)`` would. Returns the path written."""
    ticks = int(ticks)
    if ticks < 0:
        raise ValueError(f"record: ticks must be >= 0, got {ticks}")
    if not fps > 0:
        raise ValueError(f"record: fps must be > 0, got {fps!r}")
    out = check_record_path(out_path, size)
    ext = out.suffix.lower()
    width, height = int(size[0]), int(size[1])
    every = max(1, round(1.0 / (fps * world.dt))) if every is None else int(every)
    if every < 1:
        raise ValueError(f"record: every must be >= 1, got {every}")
    frames = ticks // every + 1
    bar = _Progress(frames, f"recording {out.name}", frames >= 100 if progress is None else progress)
    check_media(out)
    imageio = _imageio()
    check_writable(out, "record")
    if ext == ".gif":
        writer = GifWriter(out, fps=fps)
        append = writer.append
    else:
        writer = imageio.v2.get_writer(out, fps=fps, codec="libx264" if ext in (".mp4", ".mkv", ".mov") else None,
                                       quality=7, macro_block_size=1)
        append = writer.append_data
    try:
        done = 0
        for tick in range(ticks + 1):
            if tick:
                world.step()
            if tick % every == 0:
                append(render_frame(world, (width, height), layers, hud, camera))
                done += 1
                if done < frames:  # (the last frame counts once the file is closed: the encoder's tail)
                    bar(done)
    finally:
        writer.close()
    bar(done)
    return out
