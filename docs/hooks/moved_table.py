"""A mkdocs hook: the table of moved modules on ``moved.md`` is written from ``ecs_nav.moved.MOVED``,
the same mapping the deprecated import paths are served from, so the page cannot fall behind it."""

from __future__ import annotations

MARKER = "<!-- moved-modules-table -->"
"""The line of ``moved.md`` that the table replaces."""


def moved_table() -> str:
    """The Markdown table of old module path -> new one, in ``MOVED``'s order."""
    from ecs_nav.moved import MOVED

    rows = [f"| `ecs_nav.{old}` | `ecs_nav.{new}` |" for old, new in MOVED.items()]
    return "\n".join(["| old path (deprecated) | new path |", "|---|---|", *rows])


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, moved_table())
