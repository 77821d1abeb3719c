"""The documentation site's pages (docs/, mkdocs.yml) hold to the code: every ```python block of
the user guide runs, every page of the nav exists, every built-in scene is in the gallery, and
the tables that restate the code (components, scene keys, viewer layers, moved modules) list
what the code has. (`make docs` builds the site with --strict: links and API references are
checked there, not here.)"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import math
import re
from pathlib import Path

import pytest
from readme_blocks import (
    TESTING_PAGE,
    TESTING_SECTION,
    code_blocks,
    count_tests,
    passed_count,
    run_blocks,
    section_blocks,
)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BUILT_IN_SCENES = sorted(path.stem for path in (ROOT / "scenes").glob("*.toml"))


def pages() -> list[Path]:
    """Every Markdown page of the site (docs/hooks/ holds the build's code, not pages)."""
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def page_text(relative: str) -> str:
    return (DOCS / relative).read_text(encoding="utf-8")


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav lists, in order (each entry ``- Title: page.md``)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:"):]
    return re.findall(r"^\s+- [^:\n]+:\s+(\S+\.md)\s*$", nav, re.M)


def table_rows(markdown: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``markdown``, cells stripped (header and rule left out)."""
    rows, previous = [], ""
    for line in markdown.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-|: ]+\|$", line) and previous.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        previous = line if line.startswith("|") else ""
    return rows


def sections(markdown: str, level: int = 2) -> dict[str, str]:
    """The text under each heading of ``level`` (``## Title``), by title."""
    parts = re.split(rf"^{'#' * level} (.+)$", markdown, flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2])}


def test_every_python_block_of_the_docs_runs(tmp_path):
    """Each block as a module of its own, from the repository root, in one pytest run (as the
    README's); a block that must not run says why."""
    blocks = [b for page in pages()
              for b in code_blocks(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))]
    running = [b for b in blocks if b.runs]  # (a skip marker without its reason raises here)
    assert len(running) >= 15, [b.module_name() for b in running]
    proc, expected = run_blocks(running, tmp_path, ROOT)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"docs blocks failed (files are named by page and line):\n{output[-6000:]}"
    assert passed_count(output) == expected >= 6, output[-3000:]


def test_the_testing_section_has_a_runnable_test_per_system_and_a_scene():
    blocks = section_blocks(code_blocks((ROOT / TESTING_PAGE).read_text(encoding="utf-8"), TESTING_PAGE))
    assert blocks and all(b.runs for b in blocks), f"the {TESTING_SECTION!r} examples all run"
    code = "".join(b.code for b in blocks)
    for system in ("graph_build", "pathfind", "path_follow", "steering", "physics"):
        assert f'"{system}"' in code, f"no example composes the {system} system"
    assert "load_scene(" in code
    assert count_tests(code) == len(blocks)  # one test per example


def test_every_page_in_the_nav_exists_and_every_page_is_in_the_nav():
    listed = nav_pages()
    assert len(listed) == len(set(listed)) >= 20
    missing = [page for page in listed if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml's nav lists pages that do not exist: {missing}"
    left_out = sorted({str(p.relative_to(DOCS)) for p in pages()} - set(listed))
    assert not left_out, f"pages under docs/ that the nav leaves out: {left_out}"


def test_every_built_in_scene_is_in_the_gallery_and_the_readme_with_its_picture():
    assert len(BUILT_IN_SCENES) >= 7
    gallery = sections(page_text("gallery.md"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for scene in BUILT_IN_SCENES:
        assert scene in gallery, f"the gallery has no section for scenes/{scene}.toml"
        assert f"](screenshots/{scene}.png)" in gallery[scene], f"the gallery's {scene} has no picture"
        assert len(re.sub(r"!\[.*?\]\(.*?\)", "", gallery[scene]).split()) >= 15, f"say what {scene} shows"
        assert (DOCS / "screenshots" / f"{scene}.png").is_file()
        assert f"](docs/screenshots/{scene}.png) **{scene}**" in readme, f"the README's scenes lack {scene}"
    assert set(gallery) == set(BUILT_IN_SCENES), "the gallery shows a scene that scenes/ lacks"


def test_the_readmes_links_and_pictures_point_at_files_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(((?:docs|scenes|bench)/[^)#\s]+)", readme)
    assert len(targets) >= 20
    missing = sorted({t for t in targets if not (ROOT / t).is_file()})
    assert not missing, f"the README links to files that do not exist: {missing}"
    assert len(readme.splitlines()) <= 260, "the README is a few screens; the user guide holds the rest"


def test_the_performance_page_is_bench_results_included_whole():
    lines = [line for line in page_text("performance.md").splitlines() if line.strip()]
    assert lines == ["# Performance", '--8<-- "bench/RESULTS.md"']
    assert (ROOT / "bench" / "RESULTS.md").is_file()


def test_the_docs_and_readme_speak_of_the_product_alone():
    pattern = re.compile(r"\b(session|issue|round) [0-9]", re.I)
    for path in [ROOT / "README.md", *pages()]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not pattern.search(line), f"{path.relative_to(ROOT)}:{number}: {line.strip()}"


def test_the_moved_tables_are_written_from_moved_and_every_new_path_imports():
    from ecs_nav.moved import MOVED, MOVED_NAMES

    spec = importlib.util.spec_from_file_location("moved_table", DOCS / "hooks" / "moved_table.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    text = page_text("moved.md")
    assert hook.MARKER in text and hook.NAMES_MARKER in text
    modules, names = hook.on_page_markdown(text, page=None, config=None, files=None).split("## Moved names")
    rows = [tuple(cell.strip("`") for cell in row) for row in table_rows(modules)]
    assert rows == [(f"ecs_nav.{old}", f"ecs_nav.{new}") for old, new in MOVED.items()]
    for _, new in rows:
        assert importlib.util.find_spec(new) is not None, new
    rows = [tuple(cell.strip("`") for cell in row) for row in table_rows(names)]
    assert rows == [(f"ecs_nav.{old}.{name}", f"ecs_nav.{new}.{name}")
                    for old, moved in MOVED_NAMES.items() for name, new in moved.items()]


# --- components: the guide's tables against the classes -------------------------------------


def test_the_field_tables_are_written_from_the_code():
    """The tables of components' fields are ecs_nav.core.field_docs' rows with the classes'
    defaults: the site writes them when built, and the pages keep them as written last."""
    spec = importlib.util.spec_from_file_location("field_tables", DOCS / "hooks" / "field_tables.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    for relative in hook.PAGES:
        text = page_text(relative)
        assert hook.MARKED.search(text), relative
        assert hook.with_tables(text, relative.startswith("guide/")) == text, \
            f"docs/{relative}: its field tables differ from the code's: run python docs/hooks/field_tables.py"
    listed = {(row[0].strip("`"), field) for row in table_rows(page_text("reference/components.md"))
              if len(row) == 6 for field in re.findall(r"`(\w+)`", row[1])}
    assert listed == {(name, field) for name in COMPONENT_SECTIONS
                      for field in inspect.signature(component_class(name)).parameters}

COMPONENT_SECTIONS = ("Position", "Velocity", "Agent", "Collider", "SteeringWeights", "Avoidance", "PathRequest",
                      "NavFilter", "Path", "NavMap")
NEEDS = {"PathRequest": {"goal": (0.0, 0.0)}}
"""Arguments a component cannot be made without (a request names one goal)."""


def documented_fields(name: str) -> dict[str, tuple[str, str]]:
    """Field -> (default cell, valid cell) of the component's table on the guide's page."""
    rows = table_rows(sections(page_text("guide/components.md"))[name])
    out = {}
    for row in rows:
        for field in re.findall(r"`(\w+)`", row[0]):
            out[field] = (row[2], row[3])
    return out


def documented_default(cell: str):
    """The value a default cell writes: ``5.0``, ``None``, ``inf``, ``true``, ``"circle"``,
    ``(1.0, 1.0)``; ``empty`` is returned as is (an empty array)."""
    text = cell.strip("`")
    if text == "empty":
        return text
    text = re.sub(r"\binf\b", "1e999", re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", text)))
    return ast.literal_eval(text)


def component_class(name: str) -> type:
    import ecs_nav

    return getattr(ecs_nav, name)


@pytest.mark.parametrize("name", COMPONENT_SECTIONS)
def test_the_components_page_lists_every_field_with_its_default(name):
    cls = component_class(name)
    parameters = {p.name: p for p in inspect.signature(cls).parameters.values()}
    documented = documented_fields(name)
    assert set(documented) == set(parameters), f"{name}: the page lists {sorted(documented)}, the class has " \
                                               f"{sorted(parameters)}"
    made = cls(**NEEDS.get(name, {}))
    for field, (default_cell, _) in documented.items():
        default = documented_default(default_cell)
        if default == "empty":
            assert len(getattr(made, field)) == 0, f"{name}.{field}"
        elif isinstance(parameters[field].default, float) and math.isinf(parameters[field].default):
            assert default == parameters[field].default, f"{name}.{field}"
        else:
            assert default == parameters[field].default, f"{name}.{field}: the page says {default_cell}"


def range_cases(valid: str) -> tuple[list, list]:
    """(values the valid cell accepts, values it refuses) for the bounds it states as text:
    ``> 0``, ``>= 0``, ``integer >= 1``, ``from A to B``; none for the others."""
    if re.match(r"^> 0\b", valid):
        return [], [0, -1]
    if re.match(r"^>= 0\b", valid):
        return [0], [-1]
    if re.match(r"^integer >= 1\b", valid):
        return [1], [0]
    found = re.match(r"^(?:integer )?from ([0-9e.^ -]+) to ([0-9e.^ -]+?)(?: kg)?$", valid)
    if found:
        low, high = (eval(part.replace("^", "**"), {"__builtins__": {}}) for part in found.groups())  # noqa: S307
        return [low, high], [low - 1 if isinstance(low, int) else low / 2, high * 2]
    return [], []


@pytest.mark.parametrize("name", COMPONENT_SECTIONS)
def test_the_components_page_states_the_ranges_the_constructors_enforce(name):
    cls = component_class(name)
    checked = 0
    for field, (_, valid) in documented_fields(name).items():
        accepted, refused = range_cases(valid)
        for value in accepted:
            cls(**{**NEEDS.get(name, {}), field: value})
        for value in refused:
            with pytest.raises(ValueError, match=field):
                cls(**{**NEEDS.get(name, {}), field: value})
        checked += bool(accepted or refused)
    assert checked or name in ("Position", "Velocity"), f"{name}: no range on the page was checked"


def test_a_range_is_read_from_its_cell():
    assert range_cases("> 0, at most 1000") == ([], [0, -1])
    assert range_cases(">= 0") == ([0], [-1])
    assert range_cases("integer >= 1") == ([1], [0])
    assert range_cases("from 0.001 to 1e6 kg") == ([0.001, 1e6], [0.0005, 2e6])
    assert range_cases("integer from 0 to 2^31 - 1") == ([0, 2**31 - 1], [-1, 2**32 - 2])
    assert range_cases("(x, y), finite") == ([], [])


# --- scene files and the viewer ------------------------------------------------------------------

def test_the_scene_page_names_every_key_a_scene_file_takes():
    from ecs_nav.systems import SYSTEM_NAMES

    from ecs_nav.core.components import NavMap
    from ecs_nav.geometry.shapes import Box, Circle, Ramp
    from ecs_nav.scene.level import LEVEL_KEYS
    from ecs_nav.scene.map import MAP_KEYS
    from ecs_nav.scene.schema import COMPONENTS, ENTITY_KEYS, VIEW_KEYS, WORLD_KEYS

    page = sections(page_text("guide/scenes.md"), level=3)
    expected = {
        "`[world]`": WORLD_KEYS, "`[view]`": VIEW_KEYS, "`[map]`": MAP_KEYS, "`[level]`": LEVEL_KEYS,
        "`[[entity]]`": (*ENTITY_KEYS, *COMPONENTS), "`[navmap]`": [f.name for f in dataclasses.fields(NavMap)],
    }
    for table, keys in expected.items():
        for key in keys:
            assert f"`{key}`" in page[table] or f"`[[map.{key}]]`" in page[table], f"{table} lacks `{key}`"
    for shape in (Box, Ramp, Circle):
        for field in dataclasses.fields(shape):
            assert f"`{field.name}`" in page["`[map]`"], f"[[map.{shape.__name__.lower()}]] lacks {field.name}"
    for system in SYSTEM_NAMES:
        assert f"`{system}`" in page["`[world]`"]


def test_the_viewer_page_gives_every_layer_its_key_and_default():
    from ecs_nav.render.draw import DEFAULT_LAYERS, LAYERS
    from ecs_nav.render.viewer import AVOIDANCE_KEY, LABELS_KEY, LAYER_KEYS, SEARCH_KEY

    rows = {row[0].strip("`"): row for row in table_rows(sections(page_text("guide/viewer.md"))["Layers"])}
    assert set(rows) == set(LAYERS)
    keys = {layer: str((i + 1) % 10) for i, layer in enumerate(LAYER_KEYS)} | {"labels": LABELS_KEY,
                                                                                "search": SEARCH_KEY,
                                                                                "avoidance": AVOIDANCE_KEY}
    for layer, row in rows.items():
        assert row[1] == keys[layer], f"{layer}: the page says key {row[1]}, the viewer {keys[layer]}"
        assert (row[2] == "yes") == (layer in DEFAULT_LAYERS), f"{layer}: on by default?"
