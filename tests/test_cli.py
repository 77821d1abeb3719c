"""The ecs-nav command: exit codes and output shapes."""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ecs_nav
import ecs_nav.cli
from ecs_nav.cli import main
from ecs_nav.compile.watch import PROGRESS_HEADER


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
    assert set(summary["warmup_ms"]) == set(summary["timings_ms"])
    assert summary["version"] == ecs_nav.__version__


def test_the_summary_json_and_the_side_panel_list_the_same_five_event_counts_zeros_included(capsys):
    """One source (``event_count_table``): the steering scene raises no event, the chase some."""
    from ecs_nav.render.panel import event_lines

    five = ["TargetReached", "WaypointReached", "PathChanged", "PathFailed", "Stuck"]
    for scene in ("steering", "chase"):
        assert main(["run", scene, "--headless", "--ticks", "60", "--json"]) == 0
        events = json.loads(capsys.readouterr().out)["events"]
        assert list(events) == five
        assert main(["run", scene, "--headless", "--ticks", "60"]) == 0
        line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("events: "))
        assert line == "events: " + ", ".join(f"{name} {events[name]}" for name in five)
        with ecs_nav.load_scene(scene) as world:
            world.run(60)
            panel = [t.split() for t in event_lines(world)[1:]]
            assert panel == [[name, str(count)] for name, count in world.summary()["events"].items()]
            assert world.summary()["events"] == events  # (same scene, same seed: the same run)
    assert sum(events.values()) > 0 and events["PathFailed"] == 0  # the chase: counts, and zeros beside them


def test_a_users_own_event_type_is_counted_after_the_five():
    from dataclasses import dataclass

    from ecs_nav.core.events import event_count_table

    @dataclass(frozen=True)
    class Cheered:
        entity: int

    with ecs_nav.World() as world:
        world.emit(Cheered(1))
        world.emit(Cheered(2))
        assert list(world.summary()["events"].items())[-2:] == [("Stuck", 0), ("Cheered", 2)]
    assert event_count_table({"Zeta": 1, "Alpha": 2, "Stuck": 3}) == {
        "TargetReached": 0, "WaypointReached": 0, "PathChanged": 0, "PathFailed": 0, "Stuck": 3, "Alpha": 2, "Zeta": 1}


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"ecs-nav {ecs_nav.__version__}"


def test_run_text_summary(capsys):
    assert main(["run", "patrol", "--headless", "--ticks", "10"]) == 0
    out = capsys.readouterr().out
    assert "10 ticks" in out and "ms/tick" in out
    assert main(["run", "chase", "--headless", "--ticks", "1"]) == 0
    assert capsys.readouterr().out.startswith("chase: 1 tick (0.02 s simulated)")


def test_list_gives_each_scene_a_whole_first_sentence(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("evacuation") and line.endswith("by a shared flow field.") for line in lines)


def test_misnamed_scenes_and_recordings_are_named_with_a_suggestion_or_the_formats(capsys, tmp_path):
    assert main(["compile", "chse"]) == 2
    assert 'not a built-in scene: chse (did you mean "chase"?)' in capsys.readouterr().err
    (tmp_path / "summary.json").write_text("{}")
    assert main(["plot", str(tmp_path / "summary.json")]) == 2
    err = capsys.readouterr().err
    assert f"error: recording {str(tmp_path / 'summary.json')!r}: unknown recording format '.json'" in err


@pytest.mark.parametrize("command", [[], ["list"], ["validate"], ["run"], ["view"]])
def test_help_on_every_command(command):
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.cli", *command, "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "usage: ecs-nav" in proc.stdout


def test_headless_run_never_imports_pyglet():
    """Not for any built-in scene, nor validating one."""
    code = ("import sys; from ecs_nav.cli import main; from ecs_nav.scene.files import builtin_scenes\n"
            "for name in builtin_scenes():\n"
            "    assert main(['validate', name]) == 0\n"
            "    assert main(['run', name, '--headless', '--ticks', '3']) == 0\n"
            "bad = [m for m in sys.modules if m == 'pyglet' or m.startswith('pyglet.')]\n"
            "assert not bad, f'pyglet imported in a headless run: {bad[:3]}'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_reader_that_goes_away_stops_the_output_quietly():
    # (the pipe's read end is closed before ecs-nav starts: its first write fails, as under `| head -1`)
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "ecs_nav.cli", "list"], stdout=write, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    finally:
        os.close(write)
    assert proc.returncode == ecs_nav.cli.EXIT_BROKEN_PIPE == 141 and proc.stderr == "", proc.stderr


def test_render_in_a_scene_systems_is_bad_input(capsys, tmp_path):
    scene = tmp_path / "s.toml"
    scene.write_text('[world]\nsystems = ["physics", "render"]\n')
    assert main(["validate", str(scene)]) == 2
    assert "unknown system 'render'" in capsys.readouterr().err


@pytest.mark.parametrize("args, option", [
    (["--size", "-5", "10", "--record", "x.gif"], "--size"),
    (["--size", "0", "0", "--screenshot", "x.png"], "--size"),
    (["--fps", "0", "--record", "x.gif"], "--fps"),
    (["--ticks", "-1"], "--ticks"),
    (["--seed", "-1"], "--seed"),
    (["--seed", "one"], "--seed"),
])
def test_bad_numbers_are_rejected_naming_the_option(capsys, args, option):
    with pytest.raises(SystemExit) as info:
        main(["run", "chase", "--headless", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {option}:" in err and "Traceback" not in err


@pytest.fixture
def no_scene_loading(monkeypatch):
    """Fails the test if the command gets as far as loading the scene."""
    import ecs_nav.scene.files

    def load_scene(*args, **kwargs):
        raise AssertionError("the scene was loaded before the bad option was noticed")

    monkeypatch.setattr(ecs_nav.scene.files, "load_scene", load_scene)


@pytest.mark.parametrize("args, message", [
    (["--screenshot", "OUT/shot.xyz"], "screenshot: 'OUT/shot.xyz': the file must end in one of .png"),
    (["--record", "OUT/run.txt"], "record: 'OUT/run.txt': the file must end in .gif or one of .mp4"),
    (["--record", "OUT/run.mp4", "--size", "101", "100"], "record: video frames need even sizes, got 101x100"),
    (["--every", "5"], "--every: it says how often --out writes trajectories; give --out FILE too"),
])
def test_bad_output_files_fail_before_the_run(capsys, no_scene_loading, tmp_path, args, message):
    args = [a.replace("OUT", str(tmp_path)) for a in args]
    assert main(["run", "chase", "--headless", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ecs-nav: error: {message.replace('OUT', str(tmp_path))}")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("flag, name", [("--screenshot", "shot.png"), ("--record", "run.gif"), ("--record", "run.mp4")])
def test_an_output_file_that_cannot_be_written_fails_before_the_run(capsys, no_scene_loading, tmp_path, flag, name):
    (tmp_path / "taken").write_text("a file, not a folder")
    out = tmp_path / "taken" / name
    assert main(["run", "chase", "--headless", flag, str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ecs-nav: error: {flag[2:]}: cannot write {str(out)!r}: "), err
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_checking_an_output_file_leaves_what_was_there_and_nothing_else(tmp_path):
    from ecs_nav.render.capture import check_writable

    there = tmp_path / "there.png"
    there.write_bytes(b"an image already")
    check_writable(there, "screenshot")
    assert there.read_bytes() == b"an image already"
    check_writable(tmp_path / "new" / "shot.png", "screenshot")
    assert not (tmp_path / "new" / "shot.png").exists()
    link = tmp_path / "link.gif"
    link.symlink_to(tmp_path / "target.gif")  # dangling: the capture will write through it
    check_writable(link, "record")
    assert link.is_symlink() and not (tmp_path / "target.gif").exists()


def test_missing_imageio_is_its_own_error_before_the_run(capsys, monkeypatch, no_scene_loading, tmp_path):
    monkeypatch.setitem(sys.modules, "imageio", None)  # `import imageio` raises ImportError
    assert main(["run", "chase", "--headless", "--screenshot", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ecs-nav: error: screenshots and recordings need imageio: pip install 'ecs-nav[media]'"]


def errors_past_compiling(capsys) -> list[str]:
    """stderr's lines without a first run's compile progress (an empty numba cache prints it
    before a run's own error)."""
    return [line for line in capsys.readouterr().err.strip().splitlines()
            if not line.startswith((PROGRESS_HEADER, "compiled "))]


def test_a_first_run_prints_its_compile_progress_on_stderr_only(capsys, monkeypatch):
    calls = []

    def compile_once(args):  # stands in for a run whose kernels are not cached yet
        import numba
        import numpy as np

        calls.append(numba.njit(lambda values: values.sum() * 2.0)(np.ones(3)))
        print("the summary")
        return 0

    parser = ecs_nav.cli.build_parser()
    monkeypatch.setattr(ecs_nav.cli, "build_parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv: argparse.Namespace(fn=compile_once, debug=False))
    assert main(["list"]) == 0 and calls == [6.0]
    captured = capsys.readouterr()
    assert captured.out == "the summary\n"
    assert f"{PROGRESS_HEADER}: [" in captured.err and "<lambda> ..." in captured.err
    assert "compiled 1 kernel; numba cached it, later runs load it" in captured.err


def test_no_opengl_is_exit_3_and_other_runtime_errors_are_not(capsys, monkeypatch, tmp_path):
    from ecs_nav.systems.render import RenderUnavailable

    import ecs_nav.render.capture

    def no_gl(*args, **kwargs):
        raise RenderUnavailable("cannot create an OpenGL context (headless EGL): no EGL here")

    monkeypatch.setattr(ecs_nav.render.capture, "screenshot", no_gl)
    assert main(["run", "chase", "--headless", "--ticks", "1", "--screenshot", str(tmp_path / "x.png")]) == 3
    assert errors_past_compiling(capsys) == [
        "ecs-nav: error: cannot create an OpenGL context (headless EGL): no EGL here"]

    def bug(*args, **kwargs):
        raise RuntimeError("a bug, not a missing display")

    monkeypatch.setattr(ecs_nav.render.capture, "screenshot", bug)
    args = ["run", "chase", "--headless", "--ticks", "1", "--screenshot", str(tmp_path / "x.png")]
    assert main(args) == 70  # an internal error: one line naming the version, not exit 3
    (line,) = errors_past_compiling(capsys)
    assert line.startswith("ecs-nav: internal error (a bug in ecs-nav ") and "RuntimeError: a bug" in line
    assert "--debug" in line
    with pytest.raises(RuntimeError, match="a bug"):  # --debug shows the traceback
        main(args + ["--debug"])


def test_non_utf8_scene_names_the_file(capsys, tmp_path):
    scene = tmp_path / "latin1.toml"
    scene.write_bytes("# caf\xe9\n[world]\n".encode("latin-1"))
    assert main(["validate", str(scene)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ecs-nav: error: {scene}: not UTF-8 text")


def test_validate_reports_a_bad_tile_map(capsys, tmp_path):
    scene = tmp_path / "grid.toml"
    scene.write_text("[map]\ngrid = '''\n....\n..?.\n'''\n")
    assert main(["validate", str(scene)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ecs-nav: error: {scene}: map.grid: line 2, column 3:")


def test_installed_wheel_finds_builtin_scenes(tmp_path, ecs_nav_wheel):
    """A wheel (not the checkout) carries the scenes: `ecs-nav list` works outside the repo."""
    import zipfile

    wheel = ecs_nav_wheel
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "from ecs_nav.scene.files import builtin_scenes, scenes_dir; print(scenes_dir()); print(builtin_scenes())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}).stdout
    assert str(site) in out and "'chase'" in out and "'patrol'" in out


@pytest.mark.parametrize("args, message", [
    (["run", "chase", "--headless", "--size", "100000", "100000", "--screenshot", "x.png"],
     "argument --size: must be <= 8192, got 100000"),
    (["run", "chase", "--headless", "--seed", "18446744073709551616"], "argument --seed: must be <="),
    (["run", "chase", "--ticks", "-5"], "argument --ticks: must be >= 0, got -5"),
    (["run"], "the following arguments are required: scene"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_every_bad_flag_is_exit_2_on_one_line_before_the_run(capsys, args, message):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "error: " in line and message in line


def test_a_bad_scene_is_exit_2_for_validate_and_run_alike(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[map.circle]]\ncenter = [1e308, -50]\nradius = 1\nheight = 2\n")
    for command in (["validate", str(bad)], ["run", str(bad), "--headless", "--ticks", "1"]):
        assert main(command) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 2  # bounds missing, centre too far


def test_an_interrupt_is_exit_130_on_one_line(capsys, monkeypatch):
    import ecs_nav.scene.files

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ecs_nav.scene.files, "load_scene", interrupted)
    assert main(["run", "chase", "--headless", "--ticks", "1"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["ecs-nav: interrupted"]


SPLIT_SCENE = """
[map]
bounds = [-20, -10, 20, 10]
[[map.box]]
center = [0, 0]
size = [1, 20]
height = 2.0
[navmap]
scan_range = [20, 10, 10]
spacing = 1.0
clearance = 0.5
[[entity]]
name = "crowd"
count = 30
spawn_area = [-19, -9, -2, 9]
Agent = {}
Collider = { radius = 0.3 }
Velocity = {}
SteeringWeights = { weights = { follow_path = 1.0 } }
PathRequest = { goal = [10, 0] }
"""


def test_a_split_map_is_one_warning_in_validate_and_in_run(capsys, tmp_path):
    scene = tmp_path / "split.toml"
    scene.write_text(SPLIT_SCENE)
    assert main(["validate", str(scene)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("ok (30 entities, systems: graph_build, pathfind, path_follow, steering, physics)")
    assert len(out) == 2 and 'warning: entity "crowd": goal (10, 0) unreachable from 30 of 30 agents: gap at' in out[1]
    assert "(2.0 m between the two parts of the nav graph)" in out[1]
    assert main(["run", str(scene), "--headless", "--ticks", "120"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("warning:")] == [out[1].split(": ", 1)[1]]


def test_a_target_entity_behind_a_wall_is_named_in_the_warning(capsys, tmp_path):
    scene = tmp_path / "split_target.toml"
    scene.write_text(SPLIT_SCENE.replace("PathRequest = { goal = [10, 0] }", 'PathRequest = { target = "prey" }')
                     + '[[entity]]\nname = "prey"\nPosition = { x = 10, y = 0 }\nAgent = {}\n')
    assert main(["validate", str(scene)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert 'warning: entity "crowd": goal entity "prey" unreachable from 30 of 30 agents' in out[1]


def test_a_component_no_system_reads_is_a_warning_in_validate_and_in_run(capsys, tmp_path):
    chase = (Path(__file__).parents[1] / "scenes" / "chase.toml").read_text()
    scene = tmp_path / "no_paths.toml"
    scene.write_text(re.sub(r"(?m)^systems = .*$", 'systems = ["steering", "physics"]', chase))
    assert main(["validate", str(scene)]) == 0
    warned = [line.split(": warning: ")[1] for line in capsys.readouterr().out.splitlines()[1:]]
    assert warned == ['entity "npc": a PathRequest, and no PathfindSystem serves it',
                      'entity "npc": a PathRequest, and no PathFollowSystem follows its path',
                      'entity "player": a Path, and no PathFollowSystem follows it']
    assert main(["run", str(scene), "--headless", "--ticks", "2"]) == 0
    assert [line.removeprefix("warning: ") for line in capsys.readouterr().err.splitlines()
            if line.startswith("warning:")] == warned
    for name in ("chase", "patrol", "steering", "platformer"):  # the built-in scenes use what they carry
        assert main(["validate", name]) == 0
        assert "warning" not in capsys.readouterr().out


def test_a_reachable_goal_gives_no_warning(capsys):
    assert main(["validate", "gather"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_the_wheel_carries_the_license_the_typing_marker_the_one_version_and_no_top_level_systems(ecs_nav_wheel):
    import zipfile

    names = zipfile.ZipFile(ecs_nav_wheel).namelist()
    assert "ecs_nav/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert f"ecs_nav-{ecs_nav.__version__}-" in ecs_nav_wheel.name
    # the systems install inside the package: no top-level `systems` to collide with another's
    assert "ecs_nav/systems/__init__.py" in names
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"ecs_nav"}
