"""Reading a recording back (any of the formats of ``ecs_nav.results.formats``) as pandas
DataFrames with the same columns whatever the format."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecs_nav.results.formats import AGENT_COLUMNS, EVENT_COLUMNS, TRAJECTORY_COLUMNS, format_of


@dataclass
class RecordedRun:
    """A recording read back: ``trajectories``, ``events`` and ``agents`` (DataFrames with the
    columns of ``ecs_nav.results.formats``) and ``run`` (the run summary as a dict;
    ``timings_ms`` a dict of ms per system)."""

    trajectories: Any
    events: Any
    agents: Any
    run: dict[str, Any]


MEASURED_COLUMNS = ("x", "y", "elevation", "vx", "vy", "heading")
"""The trajectory columns that are floats whatever the format (a CSV column of whole numbers,
an elevation of 0 everywhere, would read back as integers)."""
MEASURED_AGENT_COLUMNS = ("path_length", "stuck_s", "min_distance")
"""The agents table's columns that are floats whatever the format."""


def read_recording(path: str | os.PathLike) -> RecordedRun:
    """Read the recording at ``path``; ValueError naming it when it is missing or not one, and
    naming the file of a Parquet or CSV recording that is cut short, and what is missing. A
    recording that was never closed (a killed run) reads up to its last committed block, with
    an empty agents table."""
    path = Path(path)
    kind = format_of(path, "recording")
    if not path.exists():
        raise ValueError(f"{os.fspath(path)!r}: no such recording")
    if kind == "sqlite" and not path.is_file():  # (a FIFO would block the reader, a folder is no database)
        raise ValueError(f"{os.fspath(path)!r}: not a regular file (a SQLite recording is one file)")
    reader = {"sqlite": _read_sqlite, "parquet": _read_parquet, "csv": _read_csv}[kind]
    try:
        trajectories, events, agents, run = reader(path)
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{os.fspath(path)!r}: not an ecs_nav recording (SQLite says: {exc})") from None
    if not run:
        raise ValueError(f"{os.fspath(path)!r}: not an ecs_nav recording (no run table in it)")
    for frame, columns, name in ((trajectories, TRAJECTORY_COLUMNS, "trajectories"), (events, EVENT_COLUMNS, "events"),
                                 (agents, AGENT_COLUMNS, "agents")):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{os.fspath(path)!r}: not an ecs_nav recording (its {name} table has no "
                             f"{', '.join(missing)} column)")
    run = {k: _from_text(k, v) for k, v in run.items()}
    trajectories = trajectories.astype(dict.fromkeys(MEASURED_COLUMNS, "float64"))
    agents = agents.astype(dict.fromkeys(MEASURED_AGENT_COLUMNS, "float64"))
    trajectories = trajectories.sort_values(["tick", "entity"], kind="stable").reset_index(drop=True)
    return RecordedRun(trajectories[list(TRAJECTORY_COLUMNS)], events[list(EVENT_COLUMNS)],
                       agents[list(AGENT_COLUMNS)], run)


def _first_row(frame) -> dict[str, Any]:
    """The run table's one row as a dict ({} when the table is empty or missing)."""
    return frame.iloc[0].to_dict() if len(frame) else {}


def _from_text(key: str, value: Any) -> Any:
    if key in ("timings_ms", "extent") and isinstance(value, str):
        return json.loads(value)
    return value


def _read_sqlite(path: Path):
    import pandas as pd

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "trajectory_data" not in tables or "ecs_nav_run" not in tables:
            raise ValueError(f"{os.fspath(path)!r}: not an ecs_nav recording (no trajectory_data / ecs_nav_run table)")
        trajectories = pd.read_sql_query(
            "SELECT e.tick AS tick, t.id AS entity, COALESCE(n.name, '') AS name, t.pos_x AS x, t.pos_y AS y, "
            "e.elevation AS elevation, e.vx AS vx, e.vy AS vy, e.heading AS heading "
            "FROM trajectory_data t JOIN ecs_nav_trajectory e ON e.frame = t.frame AND e.id = t.id "
            "LEFT JOIN ecs_nav_names n ON n.id = t.id", db)
        events = pd.read_sql_query("SELECT tick, type, entity, fields FROM ecs_nav_events", db)
        if "ecs_nav_agents" in tables:
            agents = pd.read_sql_query("SELECT * FROM ecs_nav_agents ORDER BY entity", db)
            agents["is_agent"] = agents["is_agent"].astype(bool)
        else:
            agents = pd.DataFrame({c: [] for c in AGENT_COLUMNS})
        run = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM ecs_nav_run")}
    return trajectories, events, agents, run


def _read_parquet(path: Path):
    import pandas as pd

    def table(name: str, columns) -> Any:
        folder, single = path / name, path / f"{name}.parquet"
        if folder.is_dir() and any(folder.glob("part-*.parquet")):
            parts = sorted(folder.glob("part-*.parquet"))
            return pd.concat([_parquet_file(p) for p in parts], ignore_index=True)
        if single.is_file():
            return _parquet_file(single)
        return pd.DataFrame({c: [] for c in columns})

    run = _first_row(table("run", ()))
    return (table("trajectories", TRAJECTORY_COLUMNS), table("events", EVENT_COLUMNS),
            table("agents", AGENT_COLUMNS), run)


def _read_csv(path: Path):
    import pandas as pd

    def table(name: str, columns) -> Any:
        file = path / f"{name}.csv"
        if not file.is_file():
            return pd.DataFrame({c: [] for c in columns})
        return _csv_file(file, keep_default_na=False, na_values={"min_distance": [""], "entity": [""]}
                         if name != "trajectories" else None)

    run = {k: (None if v == "" else v) for k, v in _first_row(table("run", ())).items()}
    trajectories = table("trajectories", TRAJECTORY_COLUMNS)
    if "name" in trajectories.columns:
        trajectories["name"] = trajectories["name"].fillna("").astype(str)
    return trajectories, table("events", EVENT_COLUMNS), table("agents", AGENT_COLUMNS), run


PARQUET_MAGIC = b"PAR1"
"""A Parquet file begins and ends with these 4 bytes; the footer before the last ones indexes
its columns (written last: a file cut short has none)."""


def _parquet_file(file: Path):
    """One Parquet file of a recording as a DataFrame; ValueError naming it and what is missing
    when it is empty, cut short or not Parquet (a recording's parts are written whole and
    renamed into place: a cut one was damaged after, by a copy or a full disk)."""
    import pandas as pd

    size = file.stat().st_size
    where = f"{os.fspath(file)!r}"
    if size == 0:
        raise ValueError(f"{where}: empty (0 bytes): this part of the recording was cut; its rows are missing")
    with open(file, "rb") as f:
        head = f.read(4)
        f.seek(max(size - 4, 0))
        tail = f.read(4)
    if head != PARQUET_MAGIC:
        raise ValueError(f"{where}: not a Parquet file (it does not begin with {PARQUET_MAGIC!r})")
    if size < 12 or tail != PARQUET_MAGIC:
        raise ValueError(f"{where}: cut short ({size} bytes): its Parquet footer, the index of its columns written "
                         "last, is missing, so none of its rows can be read")
    try:
        return pd.read_parquet(file)
    except Exception as exc:  # (pyarrow raises its own kinds for a damaged file)
        raise ValueError(f"{where}: a damaged Parquet file ({size} bytes): its footer is there but its columns do "
                         f"not read back ({type(exc).__name__})") from None


def _csv_file(file: Path, **options):
    """One CSV file of a recording as a DataFrame; ValueError naming it and what is missing
    when it is empty or cut short (each block is appended whole, ending in a newline: a file
    that does not was cut in the middle of a row)."""
    import pandas as pd

    where = f"{os.fspath(file)!r}"
    size = file.stat().st_size
    if size == 0:
        raise ValueError(f"{where}: empty (0 bytes): its header line and rows are missing (a cut recording?)")
    with open(file, "rb") as f:
        f.seek(size - 1)
        last = f.read(1)
    lines = _count_lines(file)
    if last != b"\n":
        what = "its header line" if lines == 0 else f"its last line (line {lines + 1})"
        raise ValueError(f"{where}: cut short: {what} has no end; the rest of that row and any rows after it are "
                         "missing")
    try:
        return pd.read_csv(file, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        problem = "a quoted field opened and never closed" if "EOF inside string" in str(exc) else \
            "a row whose fields do not read as the header says"
        raise ValueError(f"{where}: cut or damaged ({lines} lines): {problem}") from None


def _count_lines(file: Path) -> int:
    with open(file, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
