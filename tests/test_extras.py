"""What installs what: a command that needs an extra the install lacks says which, before it runs
anything (``pip install 'ecs-nav[EXTRA]'``), and names a package that extra really brings; and
the Makefile installs each set of packages once, only for the targets that use it (``make demo``
the package, the media extra without a display, and the demo scene's kernels; ``make test`` the
test extras and every kernel)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_nav.cli import EXIT_MISSING_PACKAGE, main

try:
    import tomllib
except ModuleNotFoundError:  # (Python 3.10)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.fixture
def no_scene_loading(monkeypatch):
    """Fails the test if the command gets as far as loading a scene."""
    import ecs_nav.scene.files

    def load_scene(*args, **kwargs):
        raise AssertionError("the scene was loaded before the missing package was noticed")

    monkeypatch.setattr(ecs_nav.scene.files, "load_scene", load_scene)


def missing(monkeypatch, *modules: str) -> None:
    """Make ``import module`` fail (and ``find_spec`` find nothing) for each of ``modules``."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def error_of(capsys) -> str:
    """The one error line a command printed (a first run's compile progress left out)."""
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ecs-nav: error:")]
    assert len(lines) == 1, lines
    return lines[0]


def named_extra(line: str) -> tuple[list[str], str]:
    """(the packages, the extra) an error line names: '... needs a, b: pip install 'ecs-nav[extra]''."""
    found = re.search(r"needs ([\w\-, ]+): pip install 'ecs-nav\[([\w\-]+)\]'$", line)
    assert found, line
    return found.group(1).split(", "), found.group(2)


def distribution(requirement: str) -> str:
    """A requirement's distribution name, normalised (``imageio-ffmpeg; python_version ...`` -> ``imageio_ffmpeg``)."""
    return re.split(r"[ ;<>=!\[]", requirement.strip(), maxsplit=1)[0].lower().replace("-", "_")


def assert_extra_brings(line: str) -> None:
    """The extra the line names exists and lists every package it names."""
    packages, extra = named_extra(line)
    assert extra in EXTRAS, f"{line}: pyproject.toml has no extra {extra!r}"
    brought = {distribution(r) for r in EXTRAS[extra]}
    assert {p.lower() for p in packages} <= brought, f"{line}: the {extra} extra brings {sorted(brought)}"


def test_out_to_parquet_without_pyarrow_names_the_results_extra_before_the_run(
        capsys, monkeypatch, no_scene_loading, tmp_path):  # fmt: skip
    missing(monkeypatch, "pyarrow")
    assert main(["run", "chase", "--headless", "--out", str(tmp_path / "run.parquet")]) == EXIT_MISSING_PACKAGE
    line = error_of(capsys)
    assert line == "ecs-nav: error: recording needs pyarrow: pip install 'ecs-nav[results]'"
    assert_extra_brings(line)
    assert not list(tmp_path.iterdir())


def test_record_to_mp4_without_imageio_ffmpeg_names_the_media_extra_before_the_run(
        capsys, monkeypatch, no_scene_loading, tmp_path):  # fmt: skip
    missing(monkeypatch, "imageio_ffmpeg")
    assert main(["run", "chase", "--headless", "--record", str(tmp_path / "run.mp4")]) == EXIT_MISSING_PACKAGE
    line = error_of(capsys)
    assert line == "ecs-nav: error: recording a video needs imageio-ffmpeg: pip install 'ecs-nav[media]'"
    packages, extra = named_extra(line)
    assert extra == "media" and "imageio_ffmpeg" in {distribution(r) for r in EXTRAS["media"]}
    assert not list(tmp_path.iterdir())


def test_plot_without_matplotlib_names_the_results_extra(capsys, monkeypatch, tmp_path):
    missing(monkeypatch, "matplotlib")
    recording = tmp_path / "run.sqlite"
    recording.write_bytes(b"")  # (never opened: the check comes first)
    assert main(["plot", str(recording)]) == EXIT_MISSING_PACKAGE
    line = error_of(capsys)
    assert line == "ecs-nav: error: plotting needs matplotlib: pip install 'ecs-nav[results]'"
    assert_extra_brings(line)
    assert [p.name for p in tmp_path.iterdir()] == ["run.sqlite"]


def test_sweep_without_pandas_names_the_results_extra(capsys, monkeypatch, no_scene_loading, tmp_path):
    missing(monkeypatch, "pandas")
    out = tmp_path / "sweep.parquet"
    assert main(["sweep", "chase", "--param", "world.seed=0:2", "--out", str(out), "--quiet"]) == EXIT_MISSING_PACKAGE
    line = error_of(capsys)
    assert line == "ecs-nav: error: sweeps needs pandas: pip install 'ecs-nav[results]'"
    assert_extra_brings(line)
    assert not out.exists()


@pytest.mark.parametrize("engine, package", [("dask", "distributed"), ("ray", "ray")])
def test_a_sweep_engine_without_its_package_names_its_own_extra_before_any_run(
        capsys, monkeypatch, no_scene_loading, tmp_path, engine, package):  # fmt: skip
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    missing(monkeypatch, package)
    out = tmp_path / "sweep.parquet"
    args = ["sweep", "chase", "--param", "world.seed=0:2", "--out", str(out), "--engine", engine, "--quiet"]
    assert main(args) == EXIT_MISSING_PACKAGE
    line = error_of(capsys)
    assert line == f"ecs-nav: error: the {engine} engine needs {package}: pip install 'ecs-nav[{engine}]'"
    assert_extra_brings(line)
    assert not out.exists()  # (no table written for a sweep that never ran)


# ---- the Makefile's stamps (`make -n`: what each target would run, nothing run) ----

def make_plan(target: str, venv: Path, display: str = "") -> list[str]:
    """The commands ``make -n target`` prints for a venv at ``venv`` (``display``: $DISPLAY)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MAKEFLAGS", "MFLAGS")}
    env["DISPLAY"] = display
    proc = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    """What the commands pip-install the package with: ``.``, ``".[media]"``, ..."""
    return [line.rsplit(" -e ", 1)[1].split(" ||")[0] for line in lines if "pip install" in line and " -e " in line]


def kernel_builds(lines: list[str]) -> list[str]:
    """The arguments of each build of the kernels compiled ahead of time."""
    return [line.split("aot_build ", 1)[1].split(";", 1)[0] for line in lines if "ecs_nav.compile.aot_build" in line]


def stamps(venv: Path, *names: str) -> None:
    """Touch the stamps ``names`` in ``venv``, as the targets that make them leave them."""
    venv.mkdir(exist_ok=True)
    for name in names:
        (venv / name).touch()


def test_make_demo_installs_the_package_media_and_the_demo_scenes_kernels_only(tmp_path):
    venv = tmp_path / "venv"
    lines = make_plan("demo", venv)
    assert installs(lines) == [".", '".[media]"']
    assert kernel_builds(lines) == ["ecs_nav --scenes chase"]
    assert not any("results" in line or "[dev" in line for line in lines)
    with_display = make_plan("demo", venv, display=":0")
    assert installs(with_display) == ["."]  # (the viewer needs no media extra)


def test_make_test_after_make_demo_adds_only_what_the_demo_did_not_install(tmp_path):
    venv = tmp_path / "venv"
    stamps(venv, ".installed-base", ".installed-media", ".kernels-demo")
    lines = make_plan("test", venv)
    assert installs(lines) == ['".[dev,media,results,results-check,dask,rl]"', '".[ray]"']
    assert kernel_builds(lines) == ["ecs_nav"]
    assert not any(line.endswith(" -e .") for line in lines)  # (the package is not installed again)
    stamps(venv, ".installed-tests", ".kernels-all")
    again = make_plan("test", venv)
    assert installs(again) == [] and kernel_builds(again) == []
    demo = make_plan("demo", venv)
    assert installs(demo) == [] and kernel_builds(demo) == []  # (a later demo starts at once)


def test_make_lint_and_docs_install_their_own_extras_only(tmp_path):
    venv = tmp_path / "venv"
    stamps(venv, ".installed-base")
    assert installs(make_plan("lint", venv)) == ['".[dev]"']
    assert installs(make_plan("docs", venv)) == ['".[docs]"']
    assert kernel_builds(make_plan("lint", venv)) == [] and kernel_builds(make_plan("docs", venv)) == []


def test_every_make_install_step_leaves_the_kernels_to_their_own_visible_step(tmp_path):
    lines = make_plan("test", tmp_path / "venv") + make_plan("bench", tmp_path / "venv")
    for line in lines:
        if "pip install" in line and " -e " in line:
            assert "ECS_NAV_AOT=keep" in line and "--no-build-isolation" in line, line
    # the build itself is not quietened: its progress shows under make
    assert all(" -q" not in line for line in lines if "aot_build" in line)
