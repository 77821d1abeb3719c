"""Where a recording goes: one sink per file format, chosen by the file's suffix.

Every sink takes the same calls from the Recorder (``ecs_nav.results.recording``) and writes the same
four tables, so a reader sees the same columns whatever the format:

=============  ================================================================================
table          columns
=============  ================================================================================
trajectories   tick, entity, name, x, y (m), elevation (m), vx, vy (m/s), heading (rad, from +x)
events         tick, type, entity, fields (the event's other fields as a JSON object)
agents         entity, name, is_agent, spawn_tick, arrival_tick (-1: never), path_length (m),
               stuck_s (s), stuck_events, min_distance (m; NaN: never near another agent of its layer)
run            scene, scene_digest, seed, version, dt, every, ticks, final_digest, status,
               timings_ms (JSON: ms per system), walkable_area (WKT)
=============  ================================================================================

* ``.sqlite`` / ``.db``: one SQLite file in JuPedSim's trajectory schema (version 2:
  ``trajectory_data(frame, id, pos_x, pos_y, ori_x, ori_y)``, ``metadata`` with ``version``,
  ``fps`` and the extent, ``geometry(hash, wkt)``, ``frame_data``), so PedPy's
  ``load_trajectory_from_jupedsim_sqlite`` reads it; ecs_nav's own tables beside it:
  ``ecs_nav_trajectory`` (tick, elevation, velocity, heading per frame and id), ``ecs_nav_names``,
  ``ecs_nav_events``, ``ecs_nav_agents``, ``ecs_nav_run``. A frame is ``tick // every``.
  Each transaction holds whole recorded ticks: one, or several (small frames are handed on in
  batches, ``ecs_nav.results.writer.FrameBatches``, and a background writer takes together
  the ones it finds waiting), their rows in one statement a table.
* ``.parquet``: a folder: ``trajectories/part-NNNNNN.parquet`` and ``events/part-...`` (each
  part written whole, then renamed into place), ``agents.parquet``, ``run.parquet``.
* ``.csv``: a folder: ``trajectories.csv``, ``events.csv`` (appended a block at a time),
  ``agents.csv``, ``run.csv``.

A run that is killed leaves every committed block readable; the agents table and the run's
final fields are written when the recording is closed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ecs_nav.motion.spatial import layer_members, nearest_distances
from ecs_nav.results.sqlite_file import (  # noqa: F401  (SQLite's sink lives there, for its writer process)
    AGENT_COLUMNS,
    JUPEDSIM_SCHEMA_VERSION,
    ROWS_PER_STATEMENT,
    SQL_VARIABLES,
    SqliteSink,
    batch_columns,
    frame_rows,
    insert_rows,
    insert_values,
)

FORMATS = {".sqlite": "sqlite", ".db": "sqlite", ".parquet": "parquet", ".csv": "csv"}
"""File suffix -> format."""

TRAJECTORY_COLUMNS = ("tick", "entity", "name", "x", "y", "elevation", "vx", "vy", "heading")
EVENT_COLUMNS = ("tick", "type", "entity", "fields")
BRUTE_FORCE_NEAREST = 32
"""Up to this many agents of a layer in a frame, the nearest distances come from all pairs in
numpy; above, from the compiled grid search (``motion.spatial.nearest_distances``), which a
small recording then never waits for numba to compile."""


class ResultsUnavailable(RuntimeError):
    """A package that recordings, plots or sweeps need is not installed."""


SPAWNED_MAIN = ("a process started with 'spawn' imports the main script first: in a script, run this under "
                '`if __name__ == "__main__":`')
"""Why a worker process can end at once, and what to do: a sweep's local workers are spawned
processes (no fork of a process that holds numba's threads). The recording's writer is a thread
and needs no guard."""


def require(*modules: str, what: str = "recording", extra: str = "results") -> None:
    """Raise ResultsUnavailable naming the missing ``modules`` and ``extra``, the extra of
    pyproject.toml that installs them (``pip install 'ecs-nav[results]'``)."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ResultsUnavailable(f"{what} needs {', '.join(missing)}: pip install 'ecs-nav[{extra}]'")


def format_of(path: str | os.PathLike, what: str = "--out") -> str:
    """The format a recording's file name asks for; ValueError naming ``what`` the path is and the
    suffixes known."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{what} {os.fspath(path)!r}: unknown recording format {suffix or '(no suffix)'!r}; "
                         f"use one of {', '.join(FORMATS)}")
    return FORMATS[suffix]


def check_out_path(path: str | os.PathLike, what: str = "--out") -> None:
    """Raise ValueError naming ``what`` the path is (the command line's ``--out``, or the
    function given it) and the path when a recording cannot go to ``path``: unknown suffix, or a
    parent folder that does not exist."""
    kind = format_of(path, what)
    require("shapely", *(("pyarrow",) if kind != "sqlite" else ()))
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise ValueError(f"{what} {os.fspath(path)!r}: folder {str(parent)!r} does not exist")


def open_sink(path: str | os.PathLike, rows_per_block: int = 200_000):
    """A sink for ``path``'s format (an existing recording there is replaced), tallying each
    agent's nearest distance to another agent over the frames it writes."""
    kind = format_of(path)
    if kind == "sqlite":
        return NearestTally(SqliteSink(path))
    if kind == "parquet":
        return NearestTally(ParquetSink(path, rows_per_block))
    return NearestTally(CsvSink(path, rows_per_block))


class NearestTally:
    """Wraps a sink: for each frame, the centre distance from every agent to its nearest other
    agent of its layer (``motion.spatial.nearest_distances`` per layer: ``Collider.layer``), kept as a running
    minimum per entity and written as the agents table's ``min_distance`` (NaN: never two agents
    of one layer in a frame). It runs where the sink runs, so a background writer takes this
    work off the tick too."""

    def __init__(self, sink):
        self.sink = sink
        self.closest = np.full(64, np.inf)

    def begin(self, run: dict[str, Any]) -> None:
        self.sink.begin(run)

    def write_frames(self, frames: list[tuple[dict[str, Any], list[tuple]]]) -> None:
        """Several ``(frame, events)`` at once (one SQLite transaction)."""
        layouts = [(f["entity"], f["layer"], f["is_agent"]) for f, _ in frames]
        start = 0
        while start < len(frames):  # runs of frames of one layout (the same arrays) are tallied together
            entity, layer, agent = layouts[start]
            end = start + 1
            while end < len(frames) and layouts[end][0] is entity and layouts[end][1] is layer \
                    and layouts[end][2] is agent:
                end += 1
            if end - start > 1:
                self.tally_stacked([frame for frame, _ in frames[start:end]])
            else:
                self.tally(frames[start][0])
            start = end
        self.sink.write_frames(frames)

    def write_frame(self, frame: dict[str, Any], events: list[tuple]) -> None:
        self.write_frames([(frame, events)])

    def tally_stacked(self, frames: list[dict[str, Any]]) -> None:
        """``tally`` of frames of one layout (the same rows, layers and agents): layers of up to
        ``BRUTE_FORCE_NEAREST`` agents for all the frames at once, larger ones frame by frame."""
        first = frames[0]
        agent = first["is_agent"]
        if np.count_nonzero(agent) < 2:
            return
        ids, layer = first["entity"][agent], first["layer"][agent]
        self._grow(int(ids.max()))
        floats = np.stack([frame["floats"] for frame in frames])
        x, y = floats[:, agent, 0], floats[:, agent, 1]  # (frames, agents)
        for members in layer_members(layer):
            members = np.arange(ids.size)[members]  # (one layer: a slice)
            if members.size < 2:
                continue
            if members.size > BRUTE_FORCE_NEAREST:
                for k in range(len(frames)):
                    self._tally(np.column_stack([x[k, members], y[k, members]]), ids[members])
                continue
            dx = x[:, members, None] - x[:, None, members]
            dy = y[:, members, None] - y[:, None, members]
            squared = dx * dx + dy * dy  # (frames, members, members)
            squared[:, np.arange(members.size), np.arange(members.size)] = np.inf
            nearest = np.sqrt(squared.min(axis=2).min(axis=0))
            self.closest[ids[members]] = np.minimum(self.closest[ids[members]], nearest)

    def _grow(self, top: int) -> None:
        if top >= self.closest.size:
            grown = np.full(max(2 * self.closest.size, top + 1), np.inf)
            grown[: self.closest.size] = self.closest
            self.closest = grown

    def tally(self, frame: dict[str, Any]) -> None:
        """Lower each agent's running nearest distance by this frame's."""
        agent = frame["is_agent"]
        if np.count_nonzero(agent) >= 2:
            ids, layer = frame["entity"][agent], frame["layer"][agent]
            self._grow(int(ids.max()))
            points = frame["floats"][agent, :2]
            for members in layer_members(layer):
                self._tally(points[members], ids[members])

    def _tally(self, points: np.ndarray, ids: np.ndarray) -> None:
        """The running minimum of ``ids`` over their distances to each other's ``points``."""
        if ids.size < 2:
            return
        if ids.size <= BRUTE_FORCE_NEAREST:
            delta = points[:, None, :] - points[None, :, :]
            squared = delta[..., 0] ** 2 + delta[..., 1] ** 2
            np.fill_diagonal(squared, np.inf)
            nearest = np.sqrt(squared.min(axis=1))
        else:
            nearest = np.empty(ids.size)
            nearest_distances(np.ascontiguousarray(points), nearest)
        self.closest[ids] = np.minimum(self.closest[ids], nearest)

    def finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        ids = agents["entity"]
        closest = np.full(ids.size, np.inf)
        known = ids < self.closest.size
        closest[known] = self.closest[ids[known]]
        agents = {**agents, "min_distance": np.where(np.isfinite(closest), closest, np.nan)}
        self.sink.finish({c: agents[c] for c in AGENT_COLUMNS}, run, events)

    def close(self) -> None:
        self.sink.close()


# --- SQLite (JuPedSim's schema) -------------------------------------------------------------------


# --- Parquet and CSV (folders of tables) ----------------------------------------------------------


class _BlockSink:
    """Shared by the folder formats: frames and events gather into blocks of at most
    ``rows_per_block`` rows, and each block is written whole (``write_block``)."""

    suffix = ""

    def __init__(self, path: str | os.PathLike, rows_per_block: int):
        self.path = Path(path)
        if self.path.is_file():
            self.path.unlink()
        self.path.mkdir(exist_ok=True)
        for table in ("trajectories", "events", "agents", "run"):
            self.remove_table(table)
        self.rows_per_block = max(int(rows_per_block), 1)
        self.frames: list[dict[str, Any]] = []
        self.events: list[tuple] = []
        self.buffered = 0
        self.blocks = 0

    def remove_table(self, table: str) -> None:
        """Forget what an earlier recording left under this name."""
        raise NotImplementedError

    def begin(self, run: dict[str, Any]) -> None:
        self.run = dict(run)
        self.write_table("run", _run_columns(self.run))

    def write_frames(self, frames: list[tuple[dict[str, Any], list[tuple]]]) -> None:
        for frame, events in frames:
            self.write_frame(frame, events)

    def write_frame(self, frame: dict[str, Any], events: list[tuple]) -> None:
        self.frames.append(frame)
        self.events.extend(events)
        self.buffered += frame_rows(frame)
        if self.buffered >= self.rows_per_block:
            self.flush()

    def flush(self) -> None:
        if self.frames:
            rows = batch_columns(self.frames)
            self.write_block("trajectories", {c: np.ascontiguousarray(rows[c]) for c in TRAJECTORY_COLUMNS})
        if self.events:
            self.write_block("events", _event_columns(self.events))
        self.frames, self.events, self.buffered = [], [], 0
        self.blocks += 1

    def finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        self.events.extend(events)
        self.flush()
        self.write_table("agents", agents)
        self.write_table("run", _run_columns(run))

    def close(self) -> None:
        self.frames, self.events = [], []

    def write_block(self, table: str, columns: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def write_table(self, table: str, columns: dict[str, Any]) -> None:
        raise NotImplementedError


def _arrow_table(columns: dict[str, Any]):
    import pyarrow as pa

    arrays = {}
    for name, values in columns.items():
        if isinstance(values, np.ndarray) and values.dtype == object:
            arrays[name] = pa.array(values.tolist(), type=pa.string())
        else:
            arrays[name] = pa.array(values)
    return pa.table(arrays)


class ParquetSink(_BlockSink):
    """A folder of Parquet files (module docstring); each block is one part file."""

    def remove_table(self, table: str) -> None:
        folder = self.path / table
        if folder.is_dir():
            for part in folder.glob("part-*.parquet"):
                part.unlink()
        (self.path / f"{table}.parquet").unlink(missing_ok=True)

    def write_block(self, table: str, columns: dict[str, np.ndarray]) -> None:
        import pyarrow.parquet as pq

        folder = self.path / table
        folder.mkdir(exist_ok=True)
        target = folder / f"part-{self.blocks:06d}.parquet"
        partial = target.with_suffix(".partial")  # a reader never sees half a part
        pq.write_table(_arrow_table(columns), partial)
        os.replace(partial, target)

    def write_table(self, table: str, columns: dict[str, Any]) -> None:
        import pyarrow.parquet as pq

        target = self.path / f"{table}.parquet"
        partial = target.with_suffix(".partial")
        pq.write_table(_arrow_table(columns), partial)
        os.replace(partial, target)


class CsvSink(_BlockSink):
    """A folder of CSV files (module docstring); each block is appended in one write."""

    def remove_table(self, table: str) -> None:
        (self.path / f"{table}.csv").unlink(missing_ok=True)

    def write_block(self, table: str, columns: dict[str, np.ndarray]) -> None:
        target = self.path / f"{table}.csv"
        text = _csv_bytes(columns, header=not target.exists())
        with open(target, "ab") as f:
            f.write(text)

    def write_table(self, table: str, columns: dict[str, Any]) -> None:
        target = self.path / f"{table}.csv"
        partial = target.with_suffix(".partial")
        partial.write_bytes(_csv_bytes(columns, header=True))
        os.replace(partial, target)


def _csv_bytes(columns: dict[str, Any], header: bool) -> bytes:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    sink = pa.BufferOutputStream()
    pacsv.write_csv(_arrow_table(columns), sink, write_options=pacsv.WriteOptions(include_header=header))
    return sink.getvalue().to_pybytes()


def _event_columns(events: list[tuple]) -> dict[str, np.ndarray]:
    ticks, types, entities, fields = zip(*events)
    return {"tick": np.array(ticks, np.int64), "type": np.array(types, object),
            "entity": np.array(entities, np.int64), "fields": np.array(fields, object)}


def _run_columns(run: dict[str, Any]) -> dict[str, Any]:
    """The run summary as one row; nested values (timings, extent) as JSON text."""
    out = {}
    for key, value in run.items():
        if isinstance(value, (dict, list, tuple)):
            value = json.dumps(value)
        out[key] = np.array([value], dtype=object if isinstance(value, str) or value is None else None)
    return out
