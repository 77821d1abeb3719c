"""A griffe extension for the API reference: the repository's top-level ``systems/`` folder is
installed as the package ``ecs_nav.systems`` (pyproject's ``package-dir``), and a source checkout
finds it through ``ecs_nav.__path__``, which griffe's static loader does not follow. This hangs the
folder's package under ``ecs_nav`` when ``ecs_nav`` is loaded, so ``::: ecs_nav.systems.physics``
documents the modules under the names users import."""

from __future__ import annotations

from pathlib import Path

import griffe


class SystemsAsSubpackage(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs) -> None:
        if pkg.name != "ecs_nav" or "systems" in pkg.members:
            return
        root = Path(pkg.filepath).parent.parent
        if not (root / "systems" / "__init__.py").is_file():
            return
        systems = griffe.load("systems", search_paths=[str(root)], docstring_parser=loader.docstring_parser,
                              docstring_options=loader.docstring_options)
        pkg.set_member("systems", systems)
