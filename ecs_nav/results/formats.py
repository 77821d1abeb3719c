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
  blocks, ``ecs_nav.results.writer.BLOCK_ROWS``, and a background writer takes together the
  ones it finds waiting), their rows in statements of up to 256 rows.
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
    block_rows,
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
    of one layer in a frame). It runs with the sink's first half: where the sink stages (SQLite,
    Parquet, CSV), as the rows are staged, in the tick; behind a writer process, in that
    process."""

    def __init__(self, sink):
        self.sink = sink
        self.closest = np.full(64, np.inf)

    def begin(self, run: dict[str, Any]) -> None:
        self.sink.begin(run)

    def write_blocks(self, blocks: list[dict[str, Any]], events: list[tuple]) -> None:
        """Blocks of frames (``batch_columns``) and events at once (one SQLite transaction)."""
        for block in blocks:
            self.tally(block)
        self.sink.write_blocks(blocks, events)

    @property
    def stages(self) -> bool:
        """Whether the sink stages: ``stage`` (the tallies too) and ``commit`` are the two halves
        of ``write_blocks``."""
        return bool(getattr(self.sink, "stages", False))

    def stage(self, blocks: list[dict[str, Any]], events: list[tuple]) -> None:
        for block in blocks:
            self.tally(block)
        self.sink.stage(blocks, events)

    def stage_begin(self, run: dict[str, Any]) -> None:
        """``begin`` less its commit (a sink that stages)."""
        self.sink.stage_begin(run)

    def stage_finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        """``finish`` less its commit (a sink that stages)."""
        self.sink.stage_finish(self.final(agents), run, events)

    def commit(self) -> None:
        self.sink.commit()

    def tally(self, block: dict[str, Any]) -> None:
        """Lower each agent's running nearest distance by each of the block's frames': layers
        of up to ``BRUTE_FORCE_NEAREST`` agents from all pairs of all the frames at once,
        larger ones frame by frame by the compiled grid search."""
        agent = block["is_agent"]
        if np.count_nonzero(agent) < 2:
            return
        ids, layer = block["entity"][agent], block["layer"][agent]
        self._grow(int(ids.max()))
        floats = block["floats"]
        x, y = floats[:, agent, 0], floats[:, agent, 1]  # (frames, agents)
        for members in layer_members(layer):
            members = np.arange(ids.size)[members]  # (one layer: a slice)
            if members.size < 2:
                continue
            if members.size > BRUTE_FORCE_NEAREST:
                nearest = np.empty(members.size)
                for k in range(len(floats)):
                    nearest_distances(np.column_stack([x[k, members], y[k, members]]), nearest)
                    self.closest[ids[members]] = np.minimum(self.closest[ids[members]], nearest)
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

    def final(self, agents: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The agents table with each one's ``min_distance`` (NaN: never near another agent)."""
        ids = agents["entity"]
        closest = np.full(ids.size, np.inf)
        known = ids < self.closest.size
        closest[known] = self.closest[ids[known]]
        agents = {**agents, "min_distance": np.where(np.isfinite(closest), closest, np.nan)}
        return {c: agents[c] for c in AGENT_COLUMNS}

    def finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        self.sink.finish(self.final(agents), run, events)

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
        self.pending: list[dict[str, Any]] = []  # blocks of frames not yet written
        self.parts: list[tuple] = []  # (table, part number, pyarrow table) prepared, not yet written
        self.events: list[tuple] = []
        self.buffered = 0
        self.blocks = 0

    def remove_table(self, table: str) -> None:
        """Forget what an earlier recording left under this name."""
        raise NotImplementedError

    stages = True
    """Each call is a stage (the pyarrow tables made from the frames, which holds the interpreter
    lock) and a ``commit`` (the files' encoding and writing, which pyarrow does without it): a
    background writer (``writer.SinkThread``) stages in the simulation's thread and commits on
    its own."""

    def begin(self, run: dict[str, Any]) -> None:
        self.stage_begin(run)
        self.commit()

    def stage_begin(self, run: dict[str, Any]) -> None:
        self.parts.append(("run", None, _arrow_table(_run_columns(run))))

    def write_blocks(self, blocks: list[dict[str, Any]], events: list[tuple]) -> None:
        self.stage(blocks, events)
        self.commit()

    def stage(self, blocks: list[dict[str, Any]], events: list[tuple]) -> None:
        """Buffer the blocks and events; once they hold ``rows_per_block`` rows, make them the
        next part's tables (``prepare``)."""
        self.pending.extend(blocks)
        self.events.extend(events)
        self.buffered += sum(block_rows(block) for block in blocks)
        if self.buffered >= self.rows_per_block:
            self.prepare()

    def prepare(self) -> None:
        """The buffered frames and events as the next part's pyarrow tables."""
        if self.pending:
            rows = batch_columns(self.pending)
            self.parts.append(("trajectories", self.blocks, _arrow_table(
                {c: np.ascontiguousarray(rows[c]) for c in TRAJECTORY_COLUMNS})))
        if self.events:
            self.parts.append(("events", self.blocks, _arrow_table(_event_columns(self.events))))
        self.pending, self.events, self.buffered = [], [], 0
        self.blocks += 1

    def commit(self) -> None:
        """Write the tables staged: parts of a table (a part number) or whole ones (None)."""
        parts, self.parts = self.parts, []
        for table, number, arrow in parts:
            if number is None:
                self.write_table(table, arrow)
            else:
                self.write_block(table, number, arrow)

    def flush(self) -> None:
        """Write the buffered frames and events as a part now."""
        self.prepare()
        self.commit()

    def finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        self.stage_finish(agents, run, events)
        self.commit()

    def stage_finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        self.events.extend(events)
        self.prepare()
        self.parts.append(("agents", None, _arrow_table(agents)))
        self.parts.append(("run", None, _arrow_table(_run_columns(run))))

    def close(self) -> None:
        """Write what is still buffered (a recording that was not finished: a process exiting
        without closing it keeps its frames) and forget it."""
        try:
            if self.pending or self.events or self.parts:
                self.flush()
        finally:
            self.pending, self.events, self.parts = [], [], []

    def write_block(self, table: str, number: int, arrow) -> None:
        """Write part ``number`` of ``table`` (a pyarrow table)."""
        raise NotImplementedError

    def write_table(self, table: str, arrow) -> None:
        """Write ``table`` whole (a pyarrow table), replacing it."""
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

    def write_block(self, table: str, number: int, arrow) -> None:
        import pyarrow.parquet as pq

        folder = self.path / table
        folder.mkdir(exist_ok=True)
        target = folder / f"part-{number:06d}.parquet"
        partial = target.with_suffix(".partial")  # a reader never sees half a part
        pq.write_table(arrow, partial)
        os.replace(partial, target)

    def write_table(self, table: str, arrow) -> None:
        import pyarrow.parquet as pq

        target = self.path / f"{table}.parquet"
        partial = target.with_suffix(".partial")
        pq.write_table(arrow, partial)
        os.replace(partial, target)


class CsvSink(_BlockSink):
    """A folder of CSV files (module docstring); each block is appended in one write."""

    def remove_table(self, table: str) -> None:
        (self.path / f"{table}.csv").unlink(missing_ok=True)

    def write_block(self, table: str, number: int, arrow) -> None:
        target = self.path / f"{table}.csv"
        text = _csv_bytes(arrow, header=not target.exists())
        with open(target, "ab") as f:
            f.write(text)

    def write_table(self, table: str, arrow) -> None:
        target = self.path / f"{table}.csv"
        partial = target.with_suffix(".partial")
        partial.write_bytes(_csv_bytes(arrow, header=True))
        os.replace(partial, target)


def _csv_bytes(arrow, header: bool) -> bytes:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    sink = pa.BufferOutputStream()
    pacsv.write_csv(arrow, sink, write_options=pacsv.WriteOptions(include_header=header))
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
