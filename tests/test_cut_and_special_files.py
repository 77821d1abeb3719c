"""A recording cut short names its file and what is missing; a FIFO, a device or a socket
given where a file goes is named as not a regular file."""

from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

from ecs_nav import Agent, Name, Position, Velocity, World  # noqa: E402
from ecs_nav.cli import main  # noqa: E402
from ecs_nav.results.read import read_recording  # noqa: E402
from ecs_nav.results.recording import record  # noqa: E402
from ecs_nav.scene.files import SceneError, load_scene  # noqa: E402
from ecs_nav.testing.stand_ins import Integrate  # noqa: E402


@pytest.fixture(scope="module", params=[".parquet", ".csv"])
def recording(request, tmp_path_factory):
    """A closed recording of three walkers over 20 ticks, one of them named across a line break."""
    path = tmp_path_factory.mktemp("rec") / f"walk{request.param}"
    with World(seed=1) as world:
        world.add_systems(Integrate())
        for i, name in enumerate(("a", "line\nbreak", "c")):
            world.spawn(Position(i, 0), Velocity(1, 0.5), Agent(), Name(name))
        with record(world, path, every=2, background=False):
            world.run(20)
    assert len(read_recording(path).trajectories) == 33  # (it reads whole)
    return path


def cut_copy(recording, tmp_path, table: str, keep) -> tuple:
    """A copy of ``recording`` whose ``table`` file keeps ``keep`` bytes (a function of the
    content), and that file."""
    copy = tmp_path / recording.name
    shutil.copytree(recording, copy)
    if recording.suffix == ".parquet":
        file = copy / table / "part-000000.parquet" if (copy / table).is_dir() else copy / f"{table}.parquet"
    else:
        file = copy / f"{table}.csv"
    data = file.read_bytes()
    file.write_bytes(data[:keep(data)])
    return copy, file


@pytest.mark.parametrize("table", ["trajectories", "agents", "run"])
def test_a_recording_file_cut_in_half_is_named_with_what_is_missing(recording, tmp_path, table):
    copy, file = cut_copy(recording, tmp_path, table, lambda data: len(data) // 2)
    with pytest.raises(ValueError) as caught:
        read_recording(copy)
    message = str(caught.value)
    assert message.startswith(f"{os.fspath(file)!r}: cut short")
    if recording.suffix == ".parquet":
        assert "its Parquet footer, the index of its columns written last, is missing" in message
    else:
        assert "its last line (line " in message and "has no end" in message


def test_an_empty_recording_file_is_named(recording, tmp_path):
    copy, file = cut_copy(recording, tmp_path, "trajectories", lambda data: 0)
    with pytest.raises(ValueError, match=r"empty \(0 bytes\)") as caught:
        read_recording(copy)
    assert os.fspath(file) in str(caught.value)


def test_a_csv_cut_right_after_a_line_break_inside_a_name_says_the_quoted_field_never_closes(recording, tmp_path):
    if recording.suffix != ".csv":
        pytest.skip("a CSV case")
    copy, file = cut_copy(recording, tmp_path, "trajectories", lambda data: data.index(b"line\n") + 5)
    with pytest.raises(ValueError) as caught:
        read_recording(copy)
    assert str(caught.value).startswith(f"{os.fspath(file)!r}: cut or damaged")
    assert "a quoted field opened and never closed" in str(caught.value)


def test_the_cli_reports_a_cut_recording_in_one_line(recording, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    copy, file = cut_copy(recording, tmp_path, "trajectories", lambda data: len(data) - 3)
    assert main(["plot", str(copy), "--out-dir", str(tmp_path / "plots")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"ecs-nav: error: {os.fspath(file)!r}: cut short")


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "scene.toml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_given_as_a_scene_is_not_a_regular_file(request, kind, capsys):
    path = request.getfixturevalue("fifo") if kind == "fifo" else "/dev/null"
    what = "a FIFO" if kind == "fifo" else "a character device"
    with pytest.raises(SceneError) as caught:
        load_scene(path)
    assert caught.value.problems == [f"{path}: not a regular file ({what}): a scene is a .toml file"]
    for argv in (["validate", str(path)], ["run", str(path), "--headless", "--ticks", "1"]):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == \
            f"ecs-nav: error: {path}: not a regular file ({what}): a scene is a .toml file"


def test_a_fifo_given_as_a_sqlite_recording_is_refused_without_opening_it(tmp_path):
    path = tmp_path / "run.sqlite"
    os.mkfifo(path)
    with pytest.raises(ValueError, match="not a regular file"):
        read_recording(path)  # (opening a FIFO would wait for a writer for good)
