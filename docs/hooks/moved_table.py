"""A mkdocs hook: the tables of moved modules and moved names on ``moved.md`` are written from
``ecs_nav.moved.MOVED`` and ``MOVED_NAMES``, the same mappings the deprecated import paths and
names are served from, so the page cannot fall behind them."""

from __future__ import annotations

MARKER = "<!-- moved-modules-table -->"
"""The line of ``moved.md`` that the table of modules replaces."""

NAMES_MARKER = "<!-- moved-names-table -->"
"""The line of ``moved.md`` that the table of names replaces."""


def moved_table() -> str:
    """The Markdown table of old module path -> new one, in ``MOVED``'s order."""
    from ecs_nav.moved import MOVED

    rows = [f"| `ecs_nav.{old}` | `ecs_nav.{new}` |" for old, new in MOVED.items()]
    return "\n".join(["| old path (deprecated) | new path |", "|---|---|", *rows])


def moved_names_table() -> str:
    """The Markdown table of old name -> new one, in ``MOVED_NAMES``' order."""
    from ecs_nav.moved import MOVED_NAMES

    rows = [f"| `ecs_nav.{old}.{name}` | `ecs_nav.{new}.{name}` |"
            for old, names in MOVED_NAMES.items() for name, new in names.items()]
    return "\n".join(["| old name (deprecated) | new name |", "|---|---|", *rows])


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, moved_table())
    if NAMES_MARKER in markdown:
        markdown = markdown.replace(NAMES_MARKER, moved_names_table())
    return markdown
