"""Plots of a recording: four PNGs, drawn headless, with perceptually uniform colour maps."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")
pytest.importorskip("shapely")

from results_scene import write_room  # noqa: E402

import ecs_nav  # noqa: E402
from ecs_nav import plots  # noqa: E402
from ecs_nav.cli import main  # noqa: E402
from ecs_nav.recording import record  # noqa: E402


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


def test_plots_use_perceptually_uniform_colour_maps():
    assert plots.TIME_MAP in ("viridis", "cividis") and plots.DENSITY_MAP in ("viridis", "cividis")


def test_plotting_a_missing_recording_is_a_clear_error(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "none.sqlite")]) == 2
    assert "no such recording" in capsys.readouterr().err
