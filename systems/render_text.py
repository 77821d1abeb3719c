"""Text for the renderer: pyglet Labels for the side panel, the help box and the agents'
labels, made once and reused from frame to frame (a Label costs a layout when it changes, so
only changed text is laid out again).

pyglet comes from ``systems.render.load_pyglet`` (the caller passes the module in): this module
imports no pyglet itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FONT_NAMES = ["DejaVu Sans Mono", "Menlo", "Consolas", "monospace"]


class TextPainter:
    """Labels in window pixels (origin bottom left).

    Args:
        pyglet: the pyglet module.
        no_fonts: turns the ImportError pyglet raises without FreeType/fontconfig into the
            exception to raise instead.
    """

    def __init__(self, pyglet: Any, no_fonts: Callable[[BaseException], BaseException]) -> None:
        self.pyglet = pyglet
        self.no_fonts = no_fonts
        self.blocks: dict[str, Any] = {}
        self.pool: list[Any] = []

    def _label(self, font_size: int, multiline: bool) -> Any:
        try:
            return self.pyglet.text.Label("", font_name=FONT_NAMES, font_size=font_size, multiline=multiline,
                                          width=2000 if multiline else None, color=(235, 235, 235, 255))
        except ImportError as exc:  # pyglet loads FreeType and fontconfig with the first font
            raise self.no_fonts(exc) from exc

    def block(self, key: str, text: str, font_size: int) -> Any:
        """The multiline Label kept under ``key``, holding ``text`` (laid out, not drawn):
        read its ``content_width`` and ``content_height``, set ``x`` and ``y`` (its top), then
        ``draw()`` it."""
        label = self.blocks.get(key)
        if label is None or label.font_size != font_size:
            label = self.blocks[key] = self._label(font_size, multiline=True)
            label.anchor_y = "top"
        if label.text != text:
            label.text = text
        return label

    def line_height(self, label: Any) -> float:
        """Pixels between two lines of a block."""
        lines = max(label.text.count("\n") + 1, 1)
        return label.content_height / lines

    def draw_labels(self, labels: list[Any], font_size: int) -> None:
        """Draw ``ecs_nav.render.labels.AgentLabel``s (text at x, y in its colour)."""
        while len(self.pool) < len(labels):
            self.pool.append(self._label(font_size, multiline=False))
        for label, item in zip(self.pool, labels, strict=False):
            if label.text != item.text:
                label.text = item.text
            colour = tuple(int(round(c * 255)) for c in item.colour[:3]) + (255,)
            if tuple(label.color) != colour:
                label.color = colour
            label.position = (round(item.x), round(item.y), 0)
            label.draw()
