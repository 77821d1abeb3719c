"""A user who installs the wheel in a fresh virtual environment copies the user guide's testing
section (docs/guide/testing.md, "Testing your scenes and systems") into a file, runs pytest on it
without the repository, and it passes.

Short form (default, `make test`): a fresh venv into which pip installs the wheel itself
(``--no-deps``), its dependencies and pytest borrowed from the running environment through a
``.pth`` file. Full form (``ECS_NAV_SOAK=1``): a fresh venv with pip, which installs the wheel
and pytest with their dependencies from the package index (skipped, saying so, when the index is
unreachable). Either way pytest finds the kit's fixtures through the wheel's ``pytest11`` entry
point: nothing names the plugin.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from readme_blocks import TESTING_PAGE, code_blocks, count_tests, passed_count, run_pytest, section_blocks
from wheel_install import ROOT, skip_if_index_unreachable

SOAK = os.environ.get("ECS_NAV_SOAK") == "1"


def fresh_venv(folder: Path, wheel: Path) -> Path:
    """A new virtual environment in ``folder`` with ``wheel`` installed; returns its python."""
    python = folder / "bin" / "python"
    # the checkout must not be on the path: pip would take its metadata for an installed ecs-nav
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if SOAK:
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, env=clean)
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel), "pytest"],
                              capture_output=True, text=True, env=clean)
        skip_if_index_unreachable(proc, "installing the wheel's dependencies")
        assert proc.returncode == 0, proc.stderr
        return python
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, env=clean)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, env=clean).stdout.strip())
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "borrowed_dependencies.pth").write_text("".join(f"{path}\n" for path in borrowed))
    # --ignore-installed: the borrowed site may hold an ecs-nav of its own, which pip must leave be
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-index", "--ignore-installed", str(wheel)], capture_output=True, text=True,
                          env=clean)
    assert proc.returncode == 0, proc.stderr
    return python


@pytest.mark.slow
def test_the_guides_testing_section_passes_from_the_wheel_in_a_fresh_venv(ecs_nav_wheel, tmp_path):
    python = fresh_venv(tmp_path / "venv", ecs_nav_wheel)
    outside = tmp_path / "user"
    outside.mkdir()
    env = {"PATH": f"{python.parent}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}  # no PYTHONPATH, no DISPLAY
    where = subprocess.run([str(python), "-c", "import ecs_nav.testing.plugin as p; print(p.__file__)"],
                           capture_output=True, text=True, cwd=outside, env=env)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), f"not the installed copy: {where.stdout}"

    section = section_blocks(code_blocks((ROOT / TESTING_PAGE).read_text(encoding="utf-8"), TESTING_PAGE))
    code = "\n\n".join(block.code for block in section)
    (outside / "test_my_scenes.py").write_text(code, encoding="utf-8")
    proc = run_pytest(outside, python=str(python), cwd=outside, env=env, plugin=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert passed_count(output) == count_tests(code) >= 6, output[-3000:]
