"""The house rules of the design (docs/design.md, "Floors and arrows"), read from the source: the
floors' imports point down, pyglet stays in rendering, and no private name crosses a module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RUNTIME = {"ecs_nav.core.world", "ecs_nav.core.world_checks", "ecs_nav.core.system", "ecs_nav.core"}
"""Floor 2 (the esper context, the table, the tick); the rest of ``core`` is floor 1."""

KERNEL_PACKAGES = ("nav", "motion", "platformer", "geometry")
"""Floor 1 besides ``core``'s data modules: arrays in, arrays out."""

ABOVE = ("ecs_nav.systems", "ecs_nav.scene", "ecs_nav.results", "ecs_nav.render", "ecs_nav.cli", "ecs_nav.testing",
         "ecs_nav.rl", "pyglet")
"""What floors 1 and 2 never import: the systems, the assembly and pyglet."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "systems":  # (installed as ecs_nav.systems)
        parts.insert(0, "ecs_nav")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, ast.Module]:
    files = sorted([*(ROOT / "ecs_nav").rglob("*.py"), *(ROOT / "systems").rglob("*.py")])
    return {module_name(path): ast.parse(path.read_text(), str(path)) for path in files}


SOURCES = sources()


def imports(tree: ast.Module) -> list[tuple[str, list[str], int]]:
    """(module, the names taken from it, line) of every import, in functions too (absolute imports
    only: the package uses no relative ones)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"line {node.lineno}: a relative import"
            found.append((node.module, [alias.name for alias in node.names], node.lineno))
    return found


def floor(module: str) -> int:
    if module in RUNTIME:
        return 2
    package = module.split(".")[1] if "." in module else ""
    return 1 if package == "core" or package in KERNEL_PACKAGES else 0


def test_the_sources_are_found():
    assert {"ecs_nav.core.world", "ecs_nav.motion.steering", "ecs_nav.systems.steering", "ecs_nav.cli"} <= set(SOURCES)


@pytest.mark.parametrize("module", [m for m in SOURCES if floor(m)])
def test_the_kernel_and_runtime_floors_never_import_the_systems_the_assembly_or_pyglet(module):
    bad = [f"line {line}: {name}" for name, _, line in imports(SOURCES[module]) if name.startswith(ABOVE)]
    assert not bad, f"{module} imports from above its floor: {bad}"


@pytest.mark.parametrize("module", [m for m in SOURCES if floor(m) == 1])
def test_the_kernel_floor_never_imports_the_runtime_or_esper(module):
    bad = [f"line {line}: {name}" for name, _, line in imports(SOURCES[module])
           if name in RUNTIME - {"ecs_nav.core"} or name.startswith("esper")]
    assert not bad, f"{module} (arrays in, arrays out) imports the runtime: {bad}"


def test_pyglet_is_imported_only_for_rendering():
    users = {m for m, tree in SOURCES.items() for name, _, _ in imports(tree) if name.startswith("pyglet")}
    assert users and all(m.startswith(("ecs_nav.render.", "ecs_nav.systems.render")) for m in users), users


def private_crossings(module: str, tree: ast.Module) -> list[str]:
    """``from ecs_nav.x import _y``, and ``x._y`` where ``x`` names a module of the package, in
    ``tree``. (``import y as _y``, a private alias of a public name, is the importer's own.)"""
    bad, aliases = [], {}
    for name, taken, line in imports(tree):
        if name.startswith("ecs_nav"):
            bad += [f"{module}:{line}: from {name} import {n}" for n in taken
                    if n.startswith("_") and not n.startswith("__")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("ecs_nav")})
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ecs_nav"):
            aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                            if f"{node.module}.{a.name}" in SOURCES})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            bad.append(f"{module}:{node.lineno}: {node.value.id}.{node.attr}")
    return bad


def test_no_private_name_crosses_a_module():
    """A name another module needs is public (renamed, documented), or the code moves."""
    bad = [crossing for module, tree in SOURCES.items() for crossing in private_crossings(module, tree)]
    assert not bad, bad


def test_the_checks_see_a_private_name_and_a_floor_crossing():
    tree = ast.parse("from ecs_nav.motion.steering import _points, seek as _seek\n"
                     "import ecs_nav.systems.steering as s\nfrom ecs_nav.motion import steering\n"
                     "def f():\n    import pyglet\n    return steering._points, s.SteeringSystem, _seek\n")
    assert [(name, taken) for name, taken, _ in imports(tree)] == [
        ("ecs_nav.motion.steering", ["_points", "seek"]), ("ecs_nav.systems.steering", []),
        ("ecs_nav.motion", ["steering"]), ("pyglet", [])]
    assert private_crossings("m", tree) == ["m:1: from ecs_nav.motion.steering import _points", "m:6: steering._points"]
    assert floor("ecs_nav.motion.steering") == 1 and floor("ecs_nav.core.world") == 2 and floor("ecs_nav.cli") == 0
