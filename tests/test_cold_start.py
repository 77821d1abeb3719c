"""A first run on an empty numba cache, without the kernels compiled ahead of time: it says it is
compiling, succeeds, and the next run loads the kernels from the cache (quiet), also when the
package folder is read-only.

Short form (default, `make test`): a scene of one entity on a floor, no systems, that compiles
one kernel (the map's surface heights), about 2 s of CPU per empty cache; an agent that moves
would compile the steering or physics kernel, 15-25 s each. Full form (``ECS_NAV_SOAK=1``): the
chase scene, every kernel of a nav-graph scene (about a minute of CPU). These check behaviour,
not time: bench/cold_start.py measures it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_nav.compile.watch import PROGRESS_HEADER

ROOT = Path(__file__).resolve().parent.parent
SOAK = os.environ.get("ECS_NAV_SOAK") == "1"

ONE_STANDER = """\
# one entity standing on an empty floor: loading the map compiles one kernel
[world]
systems = []

[map]
bounds = [-10, -10, 10, 10]

[[entity]]
name = "stander"
Position = { x = 1, y = 2 }
"""


@pytest.fixture
def scene(tmp_path) -> str:
    if SOAK:
        return "chase"
    path = tmp_path / "one_stander.toml"
    path.write_text(ONE_STANDER, encoding="utf-8")
    return str(path)


def run_json(scene: str, env: dict[str, str], cwd: Path) -> tuple[dict, str]:
    """``ecs-nav run SCENE --headless --ticks 1 --json`` in a new process: (summary, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.cli", "run", scene, "--headless", "--ticks", "1", "--json"],
                          capture_output=True, text=True, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr  # stdout is the JSON alone: no progress in it


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without a cache folder or path of its own, and without the kernels compiled
    ahead of time (``ECS_NAV_AOT=0``): these tests are of numba's cache (tests/test_aot.py runs
    a first run with the library)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    return {**env, "ECS_NAV_AOT": "0", **extra}


def test_a_first_run_in_an_empty_cache_says_it_compiles_and_the_second_is_quiet(scene, tmp_path):
    env = clean_env(NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(ROOT))
    first, err = run_json(scene, env, tmp_path)
    said = "compiled 1 kernel; numba cached it, later runs load it" if not SOAK else "later runs load them"
    assert f"{PROGRESS_HEADER}: [1] " in err and said in err
    assert first["ticks"] == 1
    second, err = run_json(scene, env, tmp_path)
    assert PROGRESS_HEADER not in err and "compiled" not in err
    assert second["digest"] == first["digest"]


def read_only_copy(folder: Path) -> Path:
    """The packages as an installer lays them out (no cache inside), made read-only. Root ignores
    permission bits, so there each package folder also gets a file named ``__pycache__``: no
    cache folder can be made in it either way."""
    site = folder / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "ecs_nav", site / "ecs_nav", ignore=ignore)
    shutil.copytree(ROOT / "systems", site / "ecs_nav" / "systems", ignore=ignore)
    shutil.copytree(ROOT / "scenes", site / "ecs_nav" / "scenes", ignore=ignore)
    if os.geteuid() == 0:
        for package in site.rglob("__init__.py"):
            (package.parent / "__pycache__").write_text("")
    for path in sorted(site.rglob("*"), reverse=True):
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return site


def test_the_cache_works_when_the_package_folder_is_read_only(scene, tmp_path):
    site = read_only_copy(tmp_path)
    user_cache = tmp_path / "user-cache"
    env = clean_env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(user_cache), PYTHONDONTWRITEBYTECODE="1")
    try:
        first, err = run_json(scene, env, tmp_path)
        assert f"{PROGRESS_HEADER}: [1] " in err
        assert any((user_cache / "numba").rglob("*.nbi")), "numba kept no index in the user's cache folder"
        second, err = run_json(scene, env, tmp_path)
        assert PROGRESS_HEADER not in err
        assert second["digest"] == first["digest"]
    finally:
        for path in site.rglob("*"):
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
