"""An animated GIF written frame by frame, in bounded memory.

imageio's GIF writer (Pillow's) keeps every frame until it closes and then quantizes and
compresses them all at once: 2.7 MB a 1280x720 frame held, and a long silent wait at the end.
:class:`GifWriter` writes each frame to the file as it is appended, holding only the previous
frame (to find what changed) and the compressed bytes of the frame waiting for its delay:

- a frame is written as the smallest rectangle holding every pixel that changed since the
  previous frame; the pixels in it that did not change are transparent (the previous frame
  shows through, disposal "do not dispose"), which compresses to almost nothing;
- each frame has its own colour table: the exact colours of its rectangle when there are at
  most 255 of them (a rendered scene's flat colours), else 255 colours chosen by Pillow's fast
  octree quantizer (no dithering);
- a frame identical to the one before adds its time to that frame's delay instead of being
  written;
- delays are whole centiseconds (the GIF unit), rounded so that frame ``i`` starts at
  ``round(100 * i / fps)`` cs: 30 fps plays as 3, 3, 4, 3, 3, 4 ... cs. Browsers show delays
  under 2 cs as 10 cs, so GIFs play at speed up to 50 fps only.

The LZW compression of each frame is Pillow's (``PIL.GifImagePlugin.getdata``).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path as FilePath

import numpy as np

MAX_COLOURS = 255
"""Colours a frame's table holds besides its transparent entry."""


class GifWriter:
    """Write an animated GIF one frame at a time.

    Args:
        path: the file to write (replaced if it exists).
        fps: frames per second (> 0).
        loop: times the animation repeats; 0 loops for ever.

    Use as a context manager, or call :meth:`close` (which writes the last frame and the
    trailer; a GIF not closed is truncated). Every frame must have the first frame's size.
    """

    def __init__(self, path: str | os.PathLike, fps: float = 30.0, loop: int = 0):
        if not fps > 0:
            raise ValueError(f"gif: fps must be > 0, got {fps!r}")
        if not 0 <= int(loop) <= 0xFFFF:
            raise ValueError(f"gif: loop must be in [0, 65535], got {loop!r}")
        self.path = FilePath(path)
        self.fps = float(fps)
        self.loop = int(loop)
        self.frames = 0
        """Frames appended so far (identical ones included)."""
        self.size: tuple[int, int] | None = None
        """(width, height) in pixels, set by the first frame."""
        self._file = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._previous: np.ndarray | None = None
        self._pending: bytes | None = None  # the last distinct frame's image block, waiting for its delay
        self._pending_start = 0  # the frame index it was appended at

    def __enter__(self) -> GifWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def append(self, frame: np.ndarray) -> None:
        """Add one frame: a (height, width, 3) uint8 RGB image, row 0 at the top."""
        if self.closed:
            raise ValueError(f"gif: {str(self.path)!r} is closed")
        frame = np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3 or 0 in frame.shape:
            raise ValueError(f"gif: a frame must be a (height, width, 3) uint8 array, got {frame.dtype} {frame.shape}")
        height, width = frame.shape[:2]
        if self.size is None:
            if width > 0xFFFF or height > 0xFFFF:
                raise ValueError(f"gif: frames are at most 65535 pixels a side, got {width}x{height}")
            self.size = (width, height)
            self._write_header()
        elif (width, height) != self.size:
            first = f"{self.size[0]}x{self.size[1]}"
            raise ValueError(f"gif: frame {self.frames} is {width}x{height}, the first was {first}")
        if self._previous is None:
            changed = np.ones((height, width), dtype=bool)
        else:
            changed = changed_pixels(frame, self._previous)
        rows = np.flatnonzero(changed.any(axis=1))
        if rows.size:  # (an identical frame lengthens the pending one's delay)
            cols = np.flatnonzero(changed.any(axis=0))
            top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
            block = image_block(frame[top:bottom, left:right], changed[top:bottom, left:right], (left, top))
            self._flush(self.frames)
            self._pending, self._pending_start = block, self.frames
            self._previous = frame.copy()
        self.frames += 1

    def close(self) -> None:
        """Write the last frame and the trailer, and close the file (again: nothing)."""
        if self.closed:
            return
        try:
            if self.size is not None:
                self._flush(self.frames)
                self._file.write(b";")
        finally:
            self._file.close()
            self._previous = None

    def _centiseconds(self, frame_index: int) -> int:
        return round(100.0 * frame_index / self.fps)

    def _flush(self, end: int) -> None:
        """Write the pending frame, shown from its frame index until frame index ``end``."""
        if self._pending is None:
            return
        delay = min(self._centiseconds(end) - self._centiseconds(self._pending_start), 0xFFFF)
        transparent = self._pending[0]
        # graphic control extension: disposal 1 (leave the frame in place), transparent index
        self._file.write(b"!\xf9\x04" + bytes([(1 << 2) | 1]) + struct.pack("<H", delay)
                         + bytes([transparent]) + b"\0")
        self._file.write(self._pending[1:])
        self._file.flush()  # (on disk as it goes: a reader sees every frame written so far)
        self._pending = None

    def _write_header(self) -> None:
        width, height = self.size
        # logical screen: no global colour table (each frame has its own), 8 bits of colour resolution
        self._file.write(b"GIF89a" + struct.pack("<HH", width, height) + bytes([0x70, 0, 0]))
        self._file.write(b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", self.loop) + b"\0")


def frame_indices(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A colour table for the (h, w, 3) uint8 image ``rgb`` and each pixel's index into it.

    Returns (palette (k, 3) uint8 with 1 <= k <= MAX_COLOURS, indices (h, w) uint8 < k): the
    image's exact colours when it has at most MAX_COLOURS, else Pillow's fast octree
    quantization (no dithering)."""
    from PIL import Image

    image = Image.fromarray(np.ascontiguousarray(rgb))
    counted = image.getcolors(MAX_COLOURS)  # (None past MAX_COLOURS: it stops counting there)
    if counted is not None:
        palette = np.array(sorted(colour for _, colour in counted), dtype=np.uint8).reshape(-1, 3)
        indices = np.searchsorted(pack_rgb(palette), pack_rgb(rgb))
        return palette, indices.astype(np.uint8)
    quantized = image.quantize(colors=MAX_COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    indices = np.array(quantized)  # (a writable copy)
    palette = np.frombuffer(bytes(quantized.getpalette("RGB")), dtype=np.uint8).reshape(-1, 3)
    return palette[: int(indices.max()) + 1], indices


def pack_rgb(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 colours as (...) uint32 0xRRGGBB (ordered as the tuples (r, g, b) are)."""
    return (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]


def changed_pixels(frame: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """(h, w) bool: where the (h, w, 3) uint8 ``frame`` differs from ``previous``."""
    diff = frame ^ previous  # (faster than np.any(frame != previous, axis=2) by ten times)
    return (diff[..., 0] | diff[..., 1] | diff[..., 2]) != 0


def image_block(rgb: np.ndarray, changed: np.ndarray, offset: tuple[int, int]) -> bytes:
    """One GIF image block (descriptor, local colour table, LZW data) for the (h, w, 3) uint8
    ``rgb`` placed at pixel ``offset`` (x, y), the pixels where ``changed`` is False transparent.
    The first byte returned is the transparent colour index (for the graphic control extension
    that goes before the block); the rest is the block."""
    from PIL import GifImagePlugin, Image

    palette, indices = frame_indices(rgb)
    transparent = len(palette)
    indices[~changed] = transparent
    table = np.zeros((transparent + 1, 3), dtype=np.uint8)
    table[:transparent] = palette
    block = Image.frombytes("P", (changed.shape[1], changed.shape[0]), np.ascontiguousarray(indices).tobytes())
    block.putpalette(table.tobytes(), "RGB")
    data = GifImagePlugin.getdata(block, offset=(int(offset[0]), int(offset[1])), include_color_table=True)
    return bytes([transparent]) + b"".join(bytes(chunk) for chunk in data)
