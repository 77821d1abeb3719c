"""The ecs-nav command: exit codes and output shapes."""

import json
import subprocess
import sys

import pytest

from ecs_nav.cli import main


def test_list_shows_builtin_scenes(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("chase", "steering", "patrol", "crowd"):
        assert any(line.startswith(name) for line in out.splitlines())


def test_validate_ok_and_bad(capsys, tmp_path):
    assert main(["validate", "chase"]) == 0
    assert ": ok (" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text('[[entity]]\nPosition = { x = 1, y = 2 }\nCollider = { radius = -1 }\n')
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ecs-nav: error: {bad}: entity[0] Collider.radius: must be > 0, got -1"]


def test_unknown_scene_is_one_line_not_a_traceback(capsys):
    assert main(["run", "chse", "--headless", "--ticks", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'did you mean "chase"' in err[0]


def test_run_headless_json_summary(capsys):
    assert main(["run", "chase", "--headless", "--ticks", "30", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ticks"] == 30
    assert summary["agents"] >= 2
    assert isinstance(summary["events"], dict)
    assert set(summary["timings_ms"]) >= {"GraphBuildSystem", "PathfindSystem", "PathFollowSystem",
                                          "SteeringSystem", "PhysicsSystem"}


def test_run_text_summary(capsys):
    assert main(["run", "patrol", "--headless", "--ticks", "10"]) == 0
    out = capsys.readouterr().out
    assert "10 ticks" in out and "ms/tick" in out


@pytest.mark.parametrize("command", [[], ["list"], ["validate"], ["run"], ["view"]])
def test_help_on_every_command(command):
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.cli", *command, "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "usage: ecs-nav" in proc.stdout


def test_headless_run_never_imports_pyglet():
    code = ("import sys; from ecs_nav.cli import main; main(['run','chase','--headless','--ticks','5']);"
            "assert 'pyglet' not in sys.modules, 'pyglet imported in a headless run'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_installed_wheel_finds_builtin_scenes(tmp_path):
    """A wheel (not the checkout) carries the scenes: `ecs-nav list` works outside the repo."""
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "-w", str(tmp_path), str(root)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr.strip().splitlines()[-1:]}")
    (wheel,) = tmp_path.glob("ecs_nav-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "from ecs_nav.scene import builtin_scenes, scenes_dir; print(scenes_dir()); print(builtin_scenes())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}).stdout
    assert str(site) in out and "'chase'" in out and "'patrol'" in out
