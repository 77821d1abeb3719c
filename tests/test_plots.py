"""Plots of a recording: four PNGs, drawn headless, with perceptually uniform colour maps."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")
pytest.importorskip("shapely")

from results_scene import write_room  # noqa: E402

import ecs_nav  # noqa: E402
from ecs_nav.cli import main  # noqa: E402
from ecs_nav.results import plots  # noqa: E402
from ecs_nav.results.recording import record  # noqa: E402


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plots")
    out = folder / "room.parquet"
    with ecs_nav.load_scene(write_room(folder)) as world, record(world, out, every=10, background=False):
        world.run(360)
    return out


def _png_pixels(path):
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(path)


def test_ecs_nav_plot_writes_four_pngs_that_show_something(recording, tmp_path, capsys):
    assert main(["plot", str(recording), "--out-dir", str(tmp_path)]) == 0
    written = capsys.readouterr().out.split()
    assert [p.rsplit("/", 1)[-1] for p in written] == ["trajectories.png", "density.png", "arrivals.png",
                                                       "speeds.png"]
    for name in written:
        pixels = _png_pixels(tmp_path / name.rsplit("/", 1)[-1])
        assert pixels.shape[0] > 300 and pixels.shape[1] > 500
        assert np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0).shape[0] > 50  # not a blank canvas


def test_plots_of_one_run_in_two_formats_go_to_two_folders_named_after_the_whole_file_name(tmp_path, capsys):
    for name in ("room.sqlite", "room.csv"):
        with ecs_nav.load_scene(write_room(tmp_path)) as world, record(world, tmp_path / name, every=20,
                                                                        background=False):
            world.run(120)
    names = ["trajectories.png", "density.png", "arrivals.png", "speeds.png"]
    for name in ("room.sqlite", "room.csv"):
        assert main(["plot", str(tmp_path / name)]) == 0
        out, err = capsys.readouterr()
        folder = tmp_path / f"{name}_plots"
        assert out.split() == [str(folder / n) for n in names]
        assert sorted(p.name for p in folder.iterdir()) == sorted(names)
        assert f"plots of {tmp_path / name}: 4 PNGs in {folder}" in err and "replacing" not in err
    assert main(["plot", str(tmp_path / "room.csv")]) == 0
    assert (f"in {tmp_path / 'room.csv_plots'}, replacing 4 earlier files of that name: "
            + ", ".join(names)) in capsys.readouterr().err


def test_plots_use_perceptually_uniform_colour_maps():
    assert plots.TIME_MAP in ("viridis", "cividis") and plots.DENSITY_MAP in ("viridis", "cividis")


def test_plotting_a_missing_recording_is_a_clear_error(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "none.sqlite")]) == 2
    assert "no such recording" in capsys.readouterr().err


def test_a_file_or_folder_that_is_not_a_recording_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "junk.sqlite").write_text("not a database")
    (tmp_path / "empty.sqlite").write_bytes(b"")
    (tmp_path / "folder.parquet").mkdir()
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "columns.csv").mkdir()
    (tmp_path / "columns.csv" / "run.csv").write_text("scene,ticks\nroom,10\n")
    (tmp_path / "columns.csv" / "trajectories.csv").write_text("tick,x\n0,1.0\n")
    for name, says in (("junk.sqlite", "SQLite says: file is not a database"), ("empty.sqlite", "no trajectory_data"),
                       ("folder.parquet", "no run table"), ("folder.csv", "no run table"),
                       ("columns.csv", "its trajectories table has no entity, name, y")):
        assert main(["plot", str(tmp_path / name)]) == 2, name
        err = capsys.readouterr().err
        assert f"{name}': not an ecs_nav recording" in err and says in err, err
        assert "internal error" not in err


def test_a_sweep_table_plots_each_metric_against_each_parameter(tmp_path, capsys):
    import pandas as pd

    table = pd.DataFrame({"world.seed": [0, 0, 1, 1], "prefab.walker.Agent.max_speed": [2.0, 3.0, 2.0, 3.0],
                          "run_id": list("abcd"), "arrived": [3, 8, 4, 9],
                          "mean_arrival_s": [5.0, 3.5, 5.2, 3.4], "error": [None] * 4})
    table.to_parquet(tmp_path / "sweep.parquet")
    assert main(["plot", str(tmp_path / "sweep.parquet")]) == 0
    written = sorted(p.rsplit("/", 1)[-1] for p in capsys.readouterr().out.split())
    assert written == sorted(f"{m}_vs_{p}.png" for m in ("arrived", "mean_arrival_s")
                             for p in ("world.seed", "prefab.walker.Agent.max_speed"))
    _png_pixels(tmp_path / "sweep.parquet_plots" / "arrived_vs_world.seed.png")
