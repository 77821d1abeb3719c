"""A recording's SQLite file: JuPedSim's trajectory schema and ecs_nav's tables beside it
(``SqliteSink``; ``ecs_nav.results.formats`` lists the tables), written many rows to a statement
(``insert_rows``). This module imports nothing of ecs_nav, so that the writer process of a large
SQLite recording (``ecs_nav.results.writer_process``) runs it as a script (``serve``) and starts
in a fraction of a second: Python, numpy and sqlite3, not numba and the simulation.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import numpy as np

AGENT_COLUMNS = ("entity", "name", "is_agent", "spawn_tick", "arrival_tick", "path_length", "stuck_s",
                 "stuck_events", "min_distance")
JUPEDSIM_SCHEMA_VERSION = 2


CACHE_KIB = 65536
"""SQLite's page cache of a recording, at most (KiB): it holds the most rows a background writer
stages in one transaction (``writer.SinkThread.QUEUED_ROWS``, 400,000; a row takes about 106
bytes of the file, as the crowd benchmark's 95.5 MB for 900,000 rows), so staging in the tick
writes nothing to the file."""


def block_rows(block: dict[str, Any]) -> int:
    """The trajectory rows of a block of frames: frames x rows."""
    return len(block["ticks"]) * len(block["entity"])


def batch_columns(blocks: list[dict[str, Any]], named: bool = True) -> dict[str, np.ndarray]:
    """The trajectory rows of ``blocks``, frame after frame, as ``TRAJECTORY_COLUMNS`` (less
    ``name`` unless ``named``) and ``name_code``. A block, as the Recorder hands it over, holds
    frames of one layout of rows: ``ticks`` (frames,), per row ``entity``, ``layer``,
    ``is_agent`` and ``name_code`` (rows,), ``names`` (every name so far: a name's code never
    changes) and ``floats`` (frames, rows, 7): x, y, vx, vy, the heading as a unit vector,
    elevation."""
    floats = np.concatenate([block["floats"].reshape(-1, 7) for block in blocks])
    rows = [len(block["entity"]) for block in blocks]
    ticks = np.concatenate([np.repeat(block["ticks"], n) for block, n in zip(blocks, rows)])
    entity = np.concatenate([np.tile(block["entity"], len(block["ticks"])) for block in blocks])
    name_code = np.concatenate([np.tile(block["name_code"], len(block["ticks"])) for block in blocks])
    columns = {"tick": ticks, "entity": entity, "name_code": name_code, "x": floats[:, 0], "y": floats[:, 1],
               "elevation": floats[:, 6], "vx": floats[:, 2], "vy": floats[:, 3],
               "heading": np.arctan2(floats[:, 5], floats[:, 4])}
    if named:
        columns["name"] = np.array([*blocks[-1]["names"], ""], object)[name_code]
    return columns


SQL_VARIABLES = 999
"""The fewest bound values an SQLite statement may take (SQLITE_MAX_VARIABLE_NUMBER of releases
before 3.32); ``insert_rows`` asks the connection for its own limit where Python can."""
ROWS_PER_STATEMENT = 256
"""At most this many rows in one INSERT (a power of two). A statement is parsed the first time
a connection uses it, at about 4 µs a row (a 4096-row one of 7 values: 18 ms, which a small
recording felt at its close), while the cost of running it falls little past a few hundred rows
(0.31 µs a row of 7 values from 166 rows up, measured 2026-11-28)."""


def insert_rows(db: sqlite3.Connection, table: str, rows: np.ndarray) -> None:
    """Insert ``rows`` ((n, c) float64, one column per column of ``table``) into ``table``, many
    rows to a statement: statements of ``ROWS_PER_STATEMENT`` rows (or as many as the
    connection's limit on bound values allows), the rest in statements of halving sizes, so
    that a recording uses a dozen or so statement texts whatever its frames' sizes (SQLite and
    Python's sqlite3 cache each once parsed). Integer values (ids, frames: exact in float64
    below 2**53) go in as floats and are stored as INTEGER by the columns' integer affinity."""
    insert_values(db, table, rows.ravel().tolist(), rows.shape[1])


def insert_values(db: sqlite3.Connection, table: str, values: list, c: int) -> None:
    """``insert_rows`` of ``values``, a list of rows of ``c`` values one after the other."""
    n = len(values) // c
    limit = db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) if hasattr(db, "getlimit") else SQL_VARIABLES
    size = 1 << max(min(max(limit // c, 1), ROWS_PER_STATEMENT).bit_length() - 1, 0)
    done = 0
    while done < n:
        while size > n - done:
            size //= 2
        count = (n - done) // size
        step = size * c
        db.executemany(insert_statement(table, c, size),
                       (values[k:k + step] for k in range(done * c, (done + count * size) * c, step)))
        done += count * size


STATEMENTS: dict[tuple[str, int, int], str] = {}


def insert_statement(table: str, columns: int, rows: int) -> str:
    """``INSERT INTO table VALUES (?, ...), ...`` for ``rows`` rows (the text made once)."""
    key = (table, columns, rows)
    if key not in STATEMENTS:
        STATEMENTS[key] = f"INSERT INTO {table} VALUES " + ",".join(["(" + ",".join("?" * columns) + ")"] * rows)
    return STATEMENTS[key]


class SqliteSink:
    """One SQLite file in JuPedSim's trajectory schema plus ecs_nav's tables (module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.exists():
            self.path.unlink()
        # autocommit mode: transactions are explicit, of whole recorded ticks; a background writer
        # binds the rows in the simulation's thread and commits on its own (one thread at a time:
        # check_same_thread off)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # a killed process leaves a hot journal that the next reader rolls back: the committed
        # frames survive; only a power cut could lose them (synchronous=OFF)
        self.db.execute("PRAGMA synchronous=OFF")
        # the rows staged at once stay in the page cache until their commit (``CACHE_KIB``)
        self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.every = 1
        self.names_written = np.zeros(64, bool)  # by entity id: its name is in ecs_nav_names

    def begin(self, run: dict[str, Any]) -> None:
        self.stage_begin(run)
        self.commit()

    def stage_begin(self, run: dict[str, Any]) -> None:
        """``begin``'s tables and the run's first fields, in a transaction left open (``commit``)."""
        self.every = int(run["every"])
        wkt = run["walkable_area"]
        xmin, ymin, xmax, ymax = run["extent"]
        geometry_hash = int.from_bytes(bytes.fromhex(run["walkable_area_digest"])[:7], "big")
        fps = 1.0 / (float(run["dt"]) * self.every)
        script = [
            "CREATE TABLE trajectory_data (frame INTEGER NOT NULL, id INTEGER NOT NULL, "
            "pos_x REAL NOT NULL, pos_y REAL NOT NULL, ori_x REAL NOT NULL, ori_y REAL NOT NULL)",
            "CREATE TABLE metadata (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE geometry (hash INTEGER NOT NULL, wkt TEXT NOT NULL)",
            "CREATE TABLE frame_data (frame INTEGER NOT NULL, geometry_hash INTEGER NOT NULL)",
            "CREATE TABLE ecs_nav_trajectory (frame INTEGER NOT NULL, id INTEGER NOT NULL, tick INTEGER NOT NULL, "
            "elevation REAL NOT NULL, vx REAL NOT NULL, vy REAL NOT NULL, heading REAL NOT NULL)",
            "CREATE TABLE ecs_nav_names (id INTEGER PRIMARY KEY, name TEXT)",
            "CREATE TABLE ecs_nav_events (tick INTEGER NOT NULL, type TEXT NOT NULL, entity INTEGER, "
            "fields TEXT NOT NULL)",
            "CREATE TABLE ecs_nav_run (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)",
        ]
        db = self.db
        self.open_transaction()
        for statement in script:
            db.execute(statement)
        db.executemany("INSERT INTO metadata VALUES (?, ?)",
                       [("version", str(JUPEDSIM_SCHEMA_VERSION)), ("fps", repr(fps)), ("xmin", repr(xmin)),
                        ("xmax", repr(xmax)), ("ymin", repr(ymin)), ("ymax", repr(ymax))])
        db.execute("INSERT INTO geometry VALUES (?, ?)", (geometry_hash, wkt))
        self.geometry_hash = geometry_hash
        self._write_run(run)

    def _write_run(self, run: dict[str, Any]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO ecs_nav_run VALUES (?, ?)",
                            [(k, json.dumps(v)) for k, v in run.items()])

    stages = True
    """``write_blocks`` is ``stage`` then ``commit``: a background writer (``writer.SinkThread``)
    stages in the simulation's thread, where Python's sqlite3 binds the values (it holds the
    interpreter lock to bind them, on any thread), and commits on its own."""

    def write_blocks(self, blocks: list[dict[str, Any]], events: list[tuple]) -> None:
        """Blocks of frames (``batch_columns``) and events in one transaction, the rows in
        statements of up to ``ROWS_PER_STATEMENT`` rows (``insert_rows``): a small scene recorded
        every tick pays for a statement per few hundred rows, not per frame. The rows go in frame
        by frame, as written one frame at a time."""
        self.stage(blocks, events)
        self.commit()

    def stage(self, blocks: list[dict[str, Any]], events: list[tuple]) -> None:
        """The rows of ``write_blocks`` inserted in a transaction left open: in SQLite's page
        cache (a block of a few thousand rows stays within it), not yet written to the file."""
        self.open_transaction()
        self._insert_blocks(blocks)
        self._write_events(events)

    def open_transaction(self) -> None:
        """BEGIN, unless a staged transaction is open (its commit then holds both)."""
        if not self.db.in_transaction:
            self.db.execute("BEGIN")

    def commit(self) -> None:
        """Write the staged transaction to the file."""
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def _insert_blocks(self, blocks: list[dict[str, Any]]) -> None:
        rows = batch_columns(blocks, named=False)
        entity, heading, tick_of = rows["entity"], rows["heading"], rows["tick"]
        frame_of = tick_of // self.every
        db = self.db
        insert_rows(db, "trajectory_data", np.column_stack(
            [frame_of, entity, rows["x"], rows["y"], np.cos(heading), np.sin(heading)]))
        insert_rows(db, "ecs_nav_trajectory", np.column_stack(
            [frame_of, entity, tick_of, rows["elevation"], rows["vx"], rows["vy"], heading]))
        index = (np.concatenate([block["ticks"] for block in blocks]) // self.every).tolist()
        insert_values(db, "frame_data", [v for k in index for v in (k, self.geometry_hash)], 2)
        ids = np.concatenate([block["entity"] for block in blocks])
        written = self.names_written
        if ids.size and ids.max() >= written.size:
            written = self.names_written = np.concatenate(
                [written, np.zeros(max(written.size, int(ids.max()) + 1), bool)])
        fresh = ~written[ids]
        if fresh.any():  # (an entity's name never changes: the last block's names hold every code)
            new, first = np.unique(ids[fresh], return_index=True)
            codes = np.concatenate([block["name_code"] for block in blocks])[fresh][first]
            names = np.array([*blocks[-1]["names"], ""], object)[codes]
            db.executemany("INSERT OR REPLACE INTO ecs_nav_names VALUES (?, ?)", zip(new.tolist(), names.tolist()))
            written[new] = True

    def _write_events(self, events: list[tuple]) -> None:
        if events:
            self.db.executemany("INSERT INTO ecs_nav_events VALUES (?, ?, ?, ?)", events)

    def finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        self.stage_finish(agents, run, events)
        self.commit()

    def stage_finish(self, agents: dict[str, np.ndarray], run: dict[str, Any], events: list[tuple]) -> None:
        """``finish``'s tables and index and the run's last fields, in a transaction left open (``commit``)."""
        db = self.db
        self.open_transaction()
        self._write_events(events)
        db.execute("CREATE TABLE ecs_nav_agents (entity INTEGER PRIMARY KEY, name TEXT, is_agent INTEGER, "
                   "spawn_tick INTEGER, arrival_tick INTEGER, path_length REAL, stuck_s REAL, "
                   "stuck_events INTEGER, min_distance REAL)")
        db.executemany("INSERT INTO ecs_nav_agents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       zip(*(agents[c].tolist() for c in AGENT_COLUMNS)))
        db.execute("CREATE INDEX frame_id_idx ON trajectory_data(frame, id)")
        self._write_run(run)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def serve() -> None:
    """The writer process: run the calls read from standard input on an ``SqliteSink`` until ``close``
    or the end of the input (the simulation ended without closing: the file is closed as it
    stands), answering each on standard output (print goes to standard error). Ctrl-C in the
    terminal is the simulation's to handle (``ecs-nav run`` then closes the recording as
    interrupted, through this process): the process ignores it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = sys.stdin.buffer
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sink = None
    try:
        while True:
            head = requests.read(8)
            if len(head) < 8:
                return
            method, args = pickle.loads(requests.read(int.from_bytes(head, "little")))
            error = None
            try:
                if method == "open":
                    sink = SqliteSink(*args)
                elif method == "close":
                    if sink is not None:
                        sink, closing = None, sink
                        closing.close()
                else:
                    getattr(sink, method)(*args)
            except Exception as exc:
                error = exc
            try:
                answer = pickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # (an exception that does not pickle is told by its text)
                answer = pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))
            replies.write(len(answer).to_bytes(8, "little") + answer)
            replies.flush()
            if method == "close" or error is not None:
                return
    finally:
        if sink is not None:
            sink.close()


if __name__ == "__main__":
    serve()
