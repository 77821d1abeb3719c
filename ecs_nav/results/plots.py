"""Plots of a recording (``ecs-nav plot FILE``) and of a sweep's table, as PNG files.

matplotlib draws off-screen (the Agg canvas, no pyplot and no window), so plots work on a
machine without a display. Colours come from perceptually uniform maps (viridis for time and
values, cividis for density): equal steps in the data look like equal steps in the picture,
also in grey and to colour-blind readers, which a rainbow map does not give.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ecs_nav.results.formats import require

TIME_MAP = "viridis"
DENSITY_MAP = "cividis"
MAX_DRAWN_PATHS = 2000
"""Trajectories over the map draw at most this many entities' paths (evenly chosen by id)."""
DENSITY_CELL = 1.0
"""Side of a density map's cell (m)."""


def _figure(width: float = 7.0, height: float = 6.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _draw_area(ax, wkt: str | None, extent) -> None:
    """The walkable floor in light grey on the extent in dark grey (what is not walkable)."""
    if not wkt:
        return
    import shapely
    from matplotlib.patches import Polygon as Patch
    from matplotlib.patches import Rectangle

    xmin, ymin, xmax, ymax = extent
    ax.add_patch(Rectangle((xmin, ymin), xmax - xmin, ymax - ymin, facecolor="0.35", edgecolor="none", zorder=0))
    area = shapely.from_wkt(wkt)
    for polygon in getattr(area, "geoms", [area]):
        ax.add_patch(Patch(np.asarray(polygon.exterior.coords), closed=True, facecolor="0.93", edgecolor="0.4",
                           linewidth=0.8, zorder=0))
        for ring in polygon.interiors:
            ax.add_patch(Patch(np.asarray(ring.coords), closed=True, facecolor="0.35", edgecolor="0.2",
                               linewidth=0.5, zorder=0.5))


def _extent(run: dict[str, Any], traj) -> tuple[float, float, float, float]:
    extent = run.get("extent")
    if extent:
        return tuple(float(v) for v in extent)
    return (float(traj["x"].min()) - 1, float(traj["y"].min()) - 1, float(traj["x"].max()) + 1,
            float(traj["y"].max()) + 1)


def plot_trajectories(recorded, path: Path) -> Path:
    """Each entity's path over the map, coloured by time (viridis)."""
    from matplotlib.collections import LineCollection

    traj, run = recorded.trajectories, recorded.run
    dt = float(run.get("dt") or 1 / 60)
    ids = np.sort(traj["entity"].unique())
    if ids.size > MAX_DRAWN_PATHS:
        ids = ids[np.linspace(0, ids.size - 1, MAX_DRAWN_PATHS).astype(int)]
    shown = traj[traj["entity"].isin(ids)].sort_values(["entity", "tick"], kind="stable")
    xy = shown[["x", "y"]].to_numpy()
    same = shown["entity"].to_numpy()[1:] == shown["entity"].to_numpy()[:-1]
    segments = np.stack([xy[:-1], xy[1:]], axis=1)[same]
    times = shown["tick"].to_numpy()[1:][same] * dt
    figure = _figure()
    ax = figure.add_subplot()
    _draw_area(ax, run.get("walkable_area"), _extent(run, traj))
    lines = LineCollection(segments, array=times, cmap=TIME_MAP, linewidths=0.8, zorder=2)
    ax.add_collection(lines)
    first = shown.groupby("entity").first()
    ax.scatter(first["x"], first["y"], s=4, color="black", zorder=3, label="start")
    xmin, ymin, xmax, ymax = _extent(run, traj)
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    count = traj["entity"].nunique()
    ax.set_title(f"Trajectories: {len(ids)} of {count} entities" if len(ids) < count else f"Trajectories: {count}")
    figure.colorbar(lines, ax=ax, label="time (s)", shrink=0.8)
    ax.legend(loc="upper right", fontsize=8)
    figure.savefig(path)
    return path


def plot_density(recorded, path: Path) -> Path:
    """Mean number of entities per m² over the recorded frames (cividis)."""
    traj, run = recorded.trajectories, recorded.run
    xmin, ymin, xmax, ymax = _extent(run, traj)
    xs = np.arange(xmin, xmax + DENSITY_CELL, DENSITY_CELL)
    ys = np.arange(ymin, ymax + DENSITY_CELL, DENSITY_CELL)
    counts, _, _ = np.histogram2d(traj["x"], traj["y"], bins=[xs, ys])
    frames = max(traj["tick"].nunique(), 1)
    density = counts.T / frames / DENSITY_CELL**2
    figure = _figure()
    ax = figure.add_subplot()
    image = ax.pcolormesh(xs, ys, density, cmap=DENSITY_MAP, shading="flat", zorder=1)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"Density: mean over {frames} frames ({DENSITY_CELL:g} m cells)")
    figure.colorbar(image, ax=ax, label="entities per m²", shrink=0.8)
    figure.savefig(path)
    return path


def plot_arrivals(recorded, path: Path) -> Path:
    """Histogram of arrival times (s) of the agents that arrived."""
    agents, run = recorded.agents, recorded.run
    dt = float(run.get("dt") or 1 / 60)
    arrived = agents[agents["arrival_tick"] >= 0]["arrival_tick"].to_numpy() * dt if len(agents) else np.zeros(0)
    figure = _figure(7, 4.5)
    ax = figure.add_subplot()
    total = int(agents["is_agent"].astype(bool).sum()) if len(agents) else 0
    if arrived.size:
        ax.hist(arrived, bins=min(40, max(5, arrived.size // 5)), color=_colour(0.35), edgecolor="white")
    else:
        ax.text(0.5, 0.5, "no agent arrived", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("arrival time (s)")
    ax.set_ylabel("agents")
    ax.set_title(f"Arrivals: {arrived.size} of {total} agents")
    figure.savefig(path)
    return path


def plot_speeds(recorded, path: Path) -> Path:
    """Speed over time: the mean, the median and the band from the 10th to the 90th percentile."""
    traj, run = recorded.trajectories, recorded.run
    dt = float(run.get("dt") or 1 / 60)
    speed = np.hypot(traj["vx"].to_numpy(), traj["vy"].to_numpy())
    ticks = traj["tick"].to_numpy()
    order = np.argsort(ticks, kind="stable")
    ticks, speed = ticks[order], speed[order]
    frames, starts = np.unique(ticks, return_index=True)
    groups = np.split(speed, starts[1:])
    q10, q50, q90 = (np.array([np.percentile(g, q) for g in groups]) for q in (10, 50, 90))
    mean = np.array([g.mean() for g in groups])
    t = frames * dt
    figure = _figure(7, 4.5)
    ax = figure.add_subplot()
    ax.fill_between(t, q10, q90, color=_colour(0.55), alpha=0.35, label="10th-90th percentile")
    ax.plot(t, q50, color=_colour(0.2), label="median")
    ax.plot(t, mean, color=_colour(0.8), linestyle="--", label="mean")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("speed (m/s)")
    ax.set_title("Speeds over time")
    ax.legend(fontsize=8)
    figure.savefig(path)
    return path


def _colour(at: float):
    from matplotlib import colormaps

    return colormaps[TIME_MAP](at)


def plot_recording(path: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> list[Path]:
    """Write the four PNGs of a recording (trajectories, density, arrivals, speeds) into
    ``out_dir`` (default: ``plot_folder``); returns their paths."""
    require("matplotlib", "pandas", "shapely", what="plotting")
    from ecs_nav.results.read import read_recording

    recorded = read_recording(path)
    if recorded.trajectories.empty:
        raise ValueError(f"{os.fspath(path)!r}: the recording holds no trajectory rows to plot")
    folder = plot_folder(path, out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return [plot_trajectories(recorded, folder / "trajectories.png"),
            plot_density(recorded, folder / "density.png"),
            plot_arrivals(recorded, folder / "arrivals.png"),
            plot_speeds(recorded, folder / "speeds.png")]


def plot_folder(path: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> Path:
    """Where the plots of the recording or sweep table at ``path`` go: ``out_dir`` when given,
    else a folder beside it named after its whole file name and ``_plots`` (``run.sqlite`` ->
    ``run.sqlite_plots``, ``run.csv`` -> ``run.csv_plots``), so that recordings of one run in
    two formats do not write over each other's plots."""
    if out_dir is not None:
        return Path(out_dir)
    source = Path(path)
    return source.with_name(source.name + "_plots")


SWEEP_METRICS = ("arrived", "mean_arrival_s", "last_arrival_s", "ms_per_tick")
"""What ``plot_sweep_table`` draws against each parameter."""


def plot_sweep_table(path: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> list[Path]:
    """One PNG per parameter and metric of a sweep's table (``METRIC_vs_PARAMETER.png``) in
    ``out_dir`` (default: ``plot_folder``); returns their paths."""
    require("matplotlib", "pandas", "pyarrow", what="plotting")
    import pandas as pd

    from ecs_nav.results.sweeps import RESULT_COLUMNS

    table = pd.read_parquet(path)
    parameters = [c for c in table.columns if c not in RESULT_COLUMNS]
    folder = plot_folder(path, out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for parameter in parameters:
        for metric in SWEEP_METRICS:
            if metric in table.columns and table[metric].notna().any():
                written.append(plot_sweep(table, parameter, metric, folder / f"{metric}_vs_{parameter}.png"))
    return written


def is_sweep_table(path: str | os.PathLike) -> bool:
    """A sweep's table is one Parquet file; a Parquet recording is a folder."""
    return Path(path).suffix == ".parquet" and Path(path).is_file()


def plot_sweep(table, parameter: str, metric: str, path: str | os.PathLike) -> Path:
    """A sweep's ``metric`` against ``parameter`` (one point per run; the mean per parameter
    value as a line; other parameters' values are pooled). ``table``: a DataFrame or the path
    of a sweep's Parquet table."""
    require("matplotlib", "pandas", "pyarrow", what="plotting")
    import pandas as pd

    frame = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    for column, label in ((parameter, "parameter"), (metric, "metric")):
        if column not in frame.columns:
            from ecs_nav.scene.values import did_you_mean

            raise ValueError(f"plot_sweep.{label}: no column {column!r} in the sweep table"
                             f"{did_you_mean(column, list(frame.columns))}")
    done = frame[frame["error"].isna()] if "error" in frame.columns else frame
    figure = _figure(7, 4.5)
    ax = figure.add_subplot()
    ax.scatter(done[parameter], done[metric], s=14, color=_colour(0.3), alpha=0.7, label="runs")
    means = done.groupby(parameter)[metric].mean()
    ax.plot(means.index, means.to_numpy(), color=_colour(0.75), marker="o", label="mean")
    ax.set_xlabel(parameter)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} against {parameter} ({int(done[metric].notna().sum())} runs with a value)")
    ax.legend(fontsize=8)
    figure.savefig(path)
    return Path(path)
