"""The code blocks of the README and of the documentation's pages, found the way Markdown reads
them, and written out as pytest files.

Every ```python block runs in `make test` (tests/test_readme.py for README.md, tests/test_docs.py
for docs/**/*.md). A block that must not run starts with the line
``# readme-test: skip (<reason>)``; the reason is required. Each block runs as a module of its
own: its ``test_`` functions run as tests (the testing kit's fixtures included), any other code
runs top to bottom when pytest imports it. A block of ``>>>`` lines runs as a doctest.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PYTHON_LANGUAGES = ("python", "py", "python3")
"""Info strings (first word, any case) of the blocks that run."""

SKIP_MARKER = "# readme-test: skip"
"""First line of a block that must not run, followed by its reason in parentheses."""

TESTING_SECTION = "Testing your scenes and systems"
"""The section a user copies into a test file (tests/test_installed_kit.py does), on TESTING_PAGE."""

TESTING_PAGE = "docs/guide/testing.md"
"""The page of the user guide that holds TESTING_SECTION, relative to the repository root."""

_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_CLOSE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*$")
_HEADING = re.compile(r"^ {0,3}(?P<level>#{1,6})(?:[ \t]+(?P<title>.*?))?(?:[ \t]+#+)?[ \t]*$")
_SKIP = re.compile(r"^# readme-test: skip \((?P<reason>[^)]*\S[^)]*)\)\s*$")


@dataclass
class CodeBlock:
    line: int  # 1-based line of the opening fence
    language: str  # first word of the info string, lower case ("" when none)
    code: str
    headings: tuple[str, ...]  # titles of the headings it sits under, outermost first
    source: str = "README.md"  # the Markdown file it is in, relative to the repository root

    @property
    def runs(self) -> bool:
        return self.language in PYTHON_LANGUAGES and self.skip_reason is None

    @property
    def skip_reason(self) -> str | None:
        """The reason of its skip marker; None when it has none. ValueError for a marker
        without a reason."""
        first = next((line.strip() for line in self.code.splitlines() if line.strip()), "")
        if not first.startswith(SKIP_MARKER):
            return None
        match = _SKIP.match(first)
        if match is None:
            raise ValueError(f"{self.source} line {self.line}: a skipped block says why: "
                             f"'{SKIP_MARKER} (<reason>)', got {first!r}")
        return match["reason"].strip()

    def module_name(self) -> str:
        """``test_readme_line_0042`` for the README; ``test_docs_guide_testing_line_0042`` for
        docs/guide/testing.md: unique per block, and it names where the block is."""
        stem = re.sub(r"\W+", "_", self.source.removesuffix(".md")).strip("_").lower()
        return f"test_{stem}_line_{self.line:04d}"


def code_blocks(text: str, source: str = "README.md") -> list[CodeBlock]:
    """The fenced code blocks of Markdown ``text`` (CommonMark fences: ``` or ~~~, three or
    more, indented up to three spaces, closed by a fence of the same character at least as long;
    an unclosed block runs to the end), with the headings above each. Headings inside blocks do
    not count. ``source`` names the file in messages and module names."""
    lines = text.splitlines()
    out: list[CodeBlock] = []
    stack: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            heading = _HEADING.match(lines[i])
            if heading is not None:
                level = len(heading["level"])
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, (heading["title"] or "").strip()))
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        words = opening["info"].strip().strip("{}").lstrip(".").split()
        body, j = [], i + 1
        while j < len(lines):
            closing = _CLOSE.match(lines[j])
            if closing is not None and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence):
                break
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
            j += 1
        out.append(CodeBlock(line=i + 1, language=words[0].lower() if words else "", code="\n".join(body) + "\n",
                             headings=tuple(title for _, title in stack), source=source))
        i = j + 1
    return out


def module_source(block: CodeBlock) -> str:
    """The pytest file that runs ``block``: the code itself, or a doctest of its ``>>>`` lines."""
    if not block.code.lstrip().startswith(">>>"):
        return block.code
    return (
        "import doctest\n\n\n"
        f"def {block.module_name()}_doctest():\n"
        f"    test = doctest.DocTestParser().get_doctest({block.code!r}, {{}}, '{block.source} line {block.line}',"
        f" {block.source!r}, {block.line})\n"
        "    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)\n"
        "    runner.run(test)\n"
        "    assert runner.failures == 0, f'{runner.failures} failed example(s): see the output above'\n"
    )


def write_modules(blocks: list[CodeBlock], folder: Path) -> list[Path]:
    """One pytest file per block in ``folder``, named by the block's file and line."""
    paths = []
    for block in blocks:
        path = folder / f"{block.module_name()}.py"
        path.write_text(module_source(block), encoding="utf-8")
        paths.append(path)
    return paths


def section_blocks(blocks: list[CodeBlock], title: str = TESTING_SECTION) -> list[CodeBlock]:
    """The blocks under the heading ``title`` (at any depth)."""
    return [b for b in blocks if title in b.headings]


def count_tests(code: str) -> int:
    """How many top-level ``def test_...`` functions ``code`` defines."""
    return len(re.findall(r"^(?:async )?def test_\w*\(", code, re.M))


def run_pytest(folder: Path, python: str = sys.executable, cwd: Path | None = None, env: dict | None = None,
               plugin: bool = True) -> subprocess.CompletedProcess:
    """pytest on the files of ``folder`` under its own empty configuration (not the project's),
    with the testing kit's plugin named on the command line when ``plugin`` (else it must come
    from the entry point of an installed ecs-nav)."""
    (folder / "pytest.ini").write_text("[pytest]\n")
    args = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(folder / "pytest.ini"),
            "--rootdir", str(folder), str(folder)]
    if plugin:
        args[3:3] = ["-p", "ecs_nav.testing.plugin"]
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def run_blocks(blocks: list[CodeBlock], folder: Path, root: Path) -> tuple[subprocess.CompletedProcess, int]:
    """Write ``blocks`` into ``folder`` and run them in one pytest run from ``root`` (the
    repository, put on the path), without a display; returns the finished process and how many
    tests the blocks define."""
    write_modules(blocks, folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return run_pytest(folder, cwd=root, env=env), sum(count_tests(module_source(b)) for b in blocks)


def passed_count(output: str) -> int:
    """The "N passed" of pytest's summary line (0 when there is none)."""
    found = re.search(r"(\d+) passed", output)
    return int(found.group(1)) if found else 0
