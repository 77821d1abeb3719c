"""A mkdocs hook: the tables of components' fields are written from ``ecs_nav.core.field_docs``
(unit, valid values, meaning) and the classes' signatures (defaults), so the site cannot fall
behind the code. A line ``<!-- fields: Agent -->`` and the table after it (a blank line between) become that
component's table; ``<!-- fields: every component -->`` one table of every component's fields.
The pages keep the tables as last written, for reading them unbuilt (on GitHub):
``python docs/hooks/field_tables.py`` writes them again, and a test fails while they differ."""

from __future__ import annotations

import re
from pathlib import Path

MARKED = re.compile(r"^(<!-- fields: (\w+|every component) -->)\n\n?(?:\|.*\n?)*", re.M)
LINK = re.compile(r"\]\((?!https?:|#|\.\./)([\w-]+\.md)")
PAGES = ("guide/components.md", "reference/components.md")
"""The pages with field tables (under docs/)."""


def field_table(name: str, guide: bool = True) -> str:
    """One component's table, or every component's (a first column names the component). Off
    the guide (``guide`` false), the meanings' links to the guide's pages go through ../guide/."""
    import ecs_nav
    from ecs_nav.core.field_docs import FIELD_DOCS, field_rows

    if name != "every component":
        lines = ["| field | unit | default | valid | meaning |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in field_rows(getattr(ecs_nav, name))]
    else:
        lines = ["| component | field | unit | default | valid | meaning |", "|---|---|---|---|---|---|"]
        for component in FIELD_DOCS:
            lines += [f"| `{component}` | " + " | ".join(row) + " |" for row in field_rows(getattr(ecs_nav, component))]
    if not guide:
        lines = [LINK.sub(r"](../guide/\1", line) for line in lines]
    return "\n".join(lines)


def with_tables(markdown: str, guide: bool = True) -> str:
    """``markdown`` with each marked table written afresh."""
    return MARKED.sub(lambda match: f"{match.group(1)}\n\n{field_table(match.group(2), guide)}\n", markdown)


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    return with_tables(markdown, guide=page is None or page.file.src_uri.startswith("guide/"))


if __name__ == "__main__":
    docs = Path(__file__).resolve().parent.parent
    for relative in PAGES:
        page = docs / relative
        page.write_text(with_tables(page.read_text(encoding="utf-8"), relative.startswith("guide/")),
                        encoding="utf-8")
        print(page)
