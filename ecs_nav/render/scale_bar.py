"""The scale bar at the bottom right of a top-down view, in window pixels (no GL).

Its length is the longest "round" distance (1, 2 or 5 times a power of ten metres) that
takes at most SCALE_BAR_MAX_PIXELS on screen at the camera's zoom, so it is 0.4 to 1 times
that long; the text gives it in m (cm below 1 m, km from 1 km).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecs_nav.render.draw import PALETTE, rectangles
from ecs_nav.render.label_layout import BACKING_PIXELS, AgentLabel, backing_box
from ecs_nav.render.labels import LABEL_HEIGHT_PIXELS, label_width

SCALE_BAR_MAX_PIXELS = 150.0
"""The bar is at most this long on screen (and at least 0.4 of it)."""

SCALE_BAR_MARGIN_PIXELS = 8.0
"""From the window's right and bottom edges to the bar's backing."""

SCALE_BAR_COLOUR = (0.92, 0.92, 0.92, 1.0)


@dataclass(frozen=True)
class ScaleBar:
    """A scale bar: ``metres`` shown as ``pixels`` on screen, its ``text`` with its bottom-left
    corner at pixel ``text_at``, the bar from x ``start`` to ``start + pixels`` at height
    ``y``, and the pixel ``box`` (x0, y0, x1, y1) all of it takes with its backing (labels keep
    out of it)."""

    metres: float
    pixels: float
    text: str
    text_at: tuple[float, float]
    start: float
    y: float
    box: tuple[float, float, float, float]


def round_length(pixels_per_metre: float, most_pixels: float = SCALE_BAR_MAX_PIXELS) -> float:
    """The longest 1, 2 or 5 x 10^k metres that is at most ``most_pixels`` long at
    ``pixels_per_metre`` (> 0)."""
    longest = most_pixels / float(pixels_per_metre)
    power = 10.0 ** math.floor(math.log10(longest))
    return max(m * power for m in (1.0, 2.0, 5.0) if m * power <= longest * (1 + 1e-12))


def length_text(metres: float) -> str:
    """"50 cm", "2 m", "10 km": a round length in the unit that keeps it a whole number."""
    if metres >= 1000.0:
        return f"{metres / 1000.0:g} km"
    if metres < 1.0:
        return f"{metres * 100.0:.3g} cm"
    return f"{metres:g} m"


GAP_PIXELS = 6.0
"""Between the text and the bar, and after the bar."""


def scale_bar(camera: Any) -> ScaleBar:
    """The scale bar for ``camera`` (its ``scale``: pixels per metre), at the window's bottom right."""
    metres = round_length(camera.scale)
    pixels = metres * camera.scale
    text = length_text(metres)
    width = label_width(text) + GAP_PIXELS + pixels + GAP_PIXELS  # text, gap, bar, gap
    x = camera.width - SCALE_BAR_MARGIN_PIXELS - BACKING_PIXELS[2] - width
    y = SCALE_BAR_MARGIN_PIXELS + BACKING_PIXELS[1]
    box = backing_box(x, y, width, LABEL_HEIGHT_PIXELS)
    return ScaleBar(metres, pixels, text, (x, y), x + label_width(text) + GAP_PIXELS, (box[1] + box[3]) / 2.0, box)


def scale_bar_label(bar: ScaleBar) -> AgentLabel:
    """The bar's text, as a label to draw with the others."""
    return AgentLabel(bar.text, bar.text_at[0], bar.text_at[1], SCALE_BAR_COLOUR)


def scale_bar_triangles(bar: ScaleBar) -> np.ndarray:
    """Triangle rows (pixels): the backing, the bar (2 pixels thick) and its end ticks (8 tall)."""
    x0, y0, x1, y1 = bar.box
    start, end, y = bar.start, bar.start + bar.pixels, bar.y
    return np.concatenate([
        rectangles([x0, y0], [x1, y1], PALETTE["label_backing"]),
        rectangles([[start, y - 1.0], [start, y - 4.0], [end - 1.5, y - 4.0]],
                   [[end, y + 1.0], [start + 1.5, y + 4.0], [end, y + 4.0]], SCALE_BAR_COLOUR),
    ])
