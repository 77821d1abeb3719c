"""Every ```python block of the README runs, so the examples never rot (tests/readme_blocks.py
says how blocks are found, run and skipped)."""

from __future__ import annotations

from pathlib import Path

import pytest
from readme_blocks import (
    SKIP_MARKER,
    CodeBlock,
    code_blocks,
    count_tests,
    passed_count,
    run_blocks,
    run_pytest,
    section_blocks,
    write_modules,
)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def readme_blocks() -> list[CodeBlock]:
    return code_blocks(README.read_text(encoding="utf-8"))


def test_every_python_block_in_the_readme_runs(tmp_path):
    """Each block as a module of its own, from the repository root, in one pytest run; a block
    that defines tests has them pass."""
    blocks = [b for b in readme_blocks() if b.runs]
    assert len(blocks) >= 2  # the tour's Python example and its test of a system of one's own
    proc, expected = run_blocks(blocks, tmp_path, ROOT)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"README blocks failed (files are named by README line):\n{output[-6000:]}"
    assert expected >= 1 and passed_count(output) == expected, output[-3000:]


def test_the_readme_tour_tests_a_system_of_the_users_own_placed_in_the_tick():
    code = "".join(b.code for b in readme_blocks() if b.runs)
    assert "(ecs_nav.System)" in code and "def update(self, world)" in code
    assert count_tests(code) >= 1 and ("after=" in code or "before=" in code)


def test_code_blocks_are_found_the_way_markdown_reads_them():
    text = "\n".join([
        "# Top",
        "```python",
        "print(1)",
        "# not a heading: a comment",
        "```",
        "## Sub",
        "~~~ Python title=example",
        "x = 2",
        "~~~",
        "````markdown",
        "```python",
        "not = python",
        "```",
        "````",
        "   ```py",
        "   y = 3",
        "     z = 4",
        "   ```",
        "``` python3 ```",
        "### Deeper",
        "```sh",
        "ls",
        "```",
        "```{.python}",
        "w = 5",
    ])
    blocks = code_blocks(text)
    assert [(b.line, b.language) for b in blocks] == [(2, "python"), (7, "python"), (10, "markdown"), (15, "py"),
                                                      (21, "sh"), (24, "python")]
    assert blocks[0].code == "print(1)\n# not a heading: a comment\n" and blocks[0].headings == ("Top",)
    assert blocks[1].code == "x = 2\n" and blocks[1].headings == ("Top", "Sub")
    assert "```python" in blocks[2].code and not blocks[2].runs  # a fence inside a longer fence is text
    assert blocks[3].code == "y = 3\n  z = 4\n"  # the opening fence's indentation is removed
    assert blocks[5].headings == ("Top", "Sub", "Deeper") and blocks[5].code == "w = 5\n"  # unclosed: to the end
    assert [b.line for b in section_blocks(blocks, "Sub")] == [7, 10, 15, 21, 24]
    assert [b.runs for b in blocks] == [True, True, False, True, False, True]


def test_a_skip_marker_needs_a_reason():
    skipped = code_blocks(f"```python\n{SKIP_MARKER} (needs a display)\nimport pyglet\n```\n")[0]
    assert skipped.skip_reason == "needs a display" and not skipped.runs
    bare = code_blocks(f"```python\n{SKIP_MARKER}\nimport pyglet\n```\n")[0]
    with pytest.raises(ValueError, match="says why"):
        assert bare.skip_reason


def test_a_doctest_block_runs_as_a_doctest(tmp_path):
    good = code_blocks("```python\n>>> 1 + 1\n2\n```\n")[0]
    bad = code_blocks("\n```python\n>>> 1 + 1\n3\n```\n")[0]
    write_modules([good, bad], tmp_path)
    proc = run_pytest(tmp_path, plugin=False)
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout
    assert "test_readme_line_0002" in proc.stdout  # the failure names the README line
