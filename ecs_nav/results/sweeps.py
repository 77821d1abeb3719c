"""Parameter sweeps: every combination of the values runs as its own World, and the results
gather into one Parquet table with the parameters as columns.

    >>> table = ecs_nav.sweep("crowd", {"world.seed": range(4), "entity.crowd.Agent.max_speed": [2.0, 3.0]},
    ...                       ticks=300, out="crowd_sweep.parquet")

Paths and values are checked against the scene before any run (``ecs_nav.results.params``). A run
that fails is a row with its ``error``; the table is rewritten as rows finish, so a sweep that is
stopped keeps what it finished, and running the same sweep again skips the rows already done
(a row is known by ``run_id``: the scene file's digest, the parameters and the ticks). The
``digest`` column is the World's ``state_digest()`` after the run: the same row from any engine
has the same digest. Engines: ``ecs_nav.results.engines``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ecs_nav.core.limits import SWEEP_RUN_LIMIT
from ecs_nav.results.engines import check_engine, run_specs
from ecs_nav.results.formats import require
from ecs_nav.results.params import check_count, check_params, check_run_count, combinations, parse_param, parse_values

RESULT_COLUMNS = ("run_id", "seed", "ticks", "agents", "arrived", "mean_arrival_s", "last_arrival_s",
                  "stuck_events", "path_failed", "digest", "wall_s", "ms_per_tick", "error")
"""The columns a sweep adds to its parameter columns."""


def run_one(scene_path: str, overrides: dict[str, Any], ticks: int, run_id: str) -> dict[str, Any]:
    """One run of a sweep (in whichever process the engine picks): the scene with
    ``overrides`` applied, run ``ticks`` ticks; its row (errors are caught into ``error``)."""
    from ecs_nav.core.events import PathFailed, Stuck, TargetReached
    from ecs_nav.results.params import apply, load_scene_data
    from ecs_nav.scene.files import build_world
    from ecs_nav.scene.schema import scene_from_dict

    row: dict[str, Any] = {**overrides, "run_id": run_id, "ticks": ticks, "error": None}
    start = time.perf_counter()
    try:
        data, path = load_scene_data(scene_path)
        scene = scene_from_dict(apply(data, overrides), source=str(path), base_dir=path.parent)
        arrivals: dict[int, int] = {}
        counts = {"stuck": 0, "failed": 0}
        with build_world(scene) as world:
            world.on(TargetReached, lambda e: arrivals.setdefault(e.entity, e.tick))
            world.on(Stuck, lambda e: counts.__setitem__("stuck", counts["stuck"] + 1))
            world.on(PathFailed, lambda e: counts.__setitem__("failed", counts["failed"] + 1))
            tick_start = time.perf_counter()
            world.run(ticks)
            run_s = time.perf_counter() - tick_start
            times = [t * world.dt for t in arrivals.values()]
            row.update(seed=world.seed, agents=world.summary()["agents"], arrived=len(arrivals),
                       mean_arrival_s=sum(times) / len(times) if times else float("nan"),
                       last_arrival_s=max(times) if times else float("nan"), stuck_events=counts["stuck"],
                       path_failed=counts["failed"], digest=world.state_digest(),
                       ms_per_tick=1000.0 * run_s / max(ticks, 1))
    except Exception as exc:  # a failed run is a row, never a lost sweep
        row["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
    row["wall_s"] = time.perf_counter() - start
    return row


def run_key(scene_digest: str, overrides: dict[str, Any], ticks: int) -> str:
    text = json.dumps([scene_digest, sorted(overrides.items()), ticks], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def values_of(name: str, values: Any) -> list[Any]:
    """A parameter's values as given to ``sweep``: a list, a range or any iterable; a string in
    the command line's form (``"0:10"``, ``"2.0,3.0"``); or one value. ValueError when there
    are more than a sweep may have runs (``SWEEP_RUN_LIMIT``), before they are listed."""
    if isinstance(values, str):
        return parse_values(values, name)
    if values is None or isinstance(values, (bool, int, float)):
        return [values]
    try:
        if hasattr(values, "__len__"):
            check_count(len(values), f"sweep: {name}")
        listed = list(itertools.islice(values, SWEEP_RUN_LIMIT + 1))
    except TypeError:
        raise ValueError(f"sweep: {name}: expected its values (a list, a range or a string such as '0:10'), "
                         f"got {values!r}") from None
    if len(listed) > SWEEP_RUN_LIMIT:
        raise ValueError(f"sweep: {name}: more than the {SWEEP_RUN_LIMIT} runs a sweep may have (SWEEP_RUN_LIMIT)")
    return listed


def sweep(scene: str | os.PathLike, params: dict[str, Any] | list[str], ticks: int = 600,
          out: str | os.PathLike = "sweep.parquet", engine: str = "local", workers: int | None = None,
          scheduler: str | None = None, address: str | None = None, progress: bool = True):
    """Run every combination of ``params`` (``{"world.seed": range(10), ...}``, each path's
    values as ``values_of`` reads them, or CLI-style ``["world.seed=0:10", ...]``) on ``scene``
    for ``ticks`` ticks; returns the table (a pandas DataFrame, also written to ``out``). Bad
    paths or values raise SceneError before any run."""
    require("pandas", "pyarrow", what="sweeps")
    check_engine(engine)  # (before any run, and before the table is written)
    if isinstance(ticks, bool) or not isinstance(ticks, int) or ticks < 0:
        raise ValueError(f"sweep.ticks: must be an integer >= 0, got {ticks!r}")
    if isinstance(params, (list, tuple)):
        parsed = [parse_param(spec) for spec in params]
        names = [name for name, _ in parsed]
        if len(set(names)) != len(names):
            raise ValueError(f"sweep: a --param path given twice: {sorted({n for n in names if names.count(n) > 1})}")
        params = dict(parsed)
    params = {name: values_of(name, values) for name, values in params.items()}
    check_run_count(params)
    out = Path(out)
    if out.suffix != ".parquet":
        raise ValueError(f"sweep.out: the table is a .parquet file, got {os.fspath(out)!r}")
    if not out.resolve().parent.is_dir():
        raise ValueError(f"sweep.out: folder {str(out.resolve().parent)!r} does not exist")
    previous = _previous_rows(out)
    _, scene_path = check_params(scene, params)
    digest = hashlib.blake2b(scene_path.read_bytes(), digest_size=16).hexdigest()
    plan = combinations(params)
    keys = [run_key(digest, overrides, ticks) for overrides in plan]
    done: dict[str, dict] = {}
    others: list[dict] = []
    if previous is not None:
        for row in previous.to_dict("records"):
            if row.get("run_id") in keys and _is_missing(row.get("error")):
                done[row["run_id"]] = row
            elif row.get("run_id") not in keys:
                others.append(row)  # rows of another sweep into the same table stay
    rows: dict[int, dict] = {i: done[k] for i, k in enumerate(keys) if k in done}
    todo = [i for i in range(len(plan)) if i not in rows]
    bar = Progress(len(plan), len(rows), progress)
    last_write = time.monotonic()
    specs = [(str(scene_path), plan[i], ticks, keys[i]) for i in todo]
    try:
        for index, row in run_specs(engine, run_one, specs, workers, scheduler, address):
            rows[todo[index]] = row
            bar.update(row)
            if time.monotonic() - last_write > 1.0:
                _write(out, params, rows, others)
                last_write = time.monotonic()
    finally:
        table = _write(out, params, rows, others)
        bar.close()
    return table


def _previous_rows(out: Path):
    """The table a sweep into ``out`` finds there (None when there is none yet); ValueError,
    before any run, when ``out`` is no sweep table: the rows would be written over it."""
    if not out.exists():
        return None
    if not out.is_file():
        raise ValueError(f"sweep.out: {os.fspath(out)!r} is a folder (a recording's Parquet folder?), not a sweep "
                         "table: give another name")
    import pandas as pd

    try:
        table = pd.read_parquet(out)
    except Exception as exc:  # (pyarrow raises its own kinds for a file that is not Parquet)
        raise ValueError(f"sweep.out: {os.fspath(out)!r} is not a Parquet table ({exc}): give another name") from None
    if "run_id" not in table.columns:
        raise ValueError(f"sweep.out: {os.fspath(out)!r} is a Parquet table but not a sweep's (it has no run_id "
                         "column): give another name")
    return table


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _write(out: Path, params: dict[str, list], rows: dict[int, dict], others: list[dict]):
    import pandas as pd

    columns = list(params) + list(RESULT_COLUMNS)
    ordered = [rows[i] for i in sorted(rows)] + others
    table = pd.DataFrame(ordered, columns=columns if not others else None)
    table = table[columns + [c for c in table.columns if c not in columns]] if len(table) else \
        pd.DataFrame(columns=columns)
    if "error" in table.columns:
        table["error"] = table["error"].astype("string")
    partial = out.with_suffix(".partial")
    table.to_parquet(partial, index=False)
    os.replace(partial, out)
    return table


class Progress:
    """One line on stderr, rewritten as runs finish: done/total, failures, time per run, time left."""

    def __init__(self, total: int, skipped: int, show: bool):
        self.total, self.skipped, self.done, self.failed = total, skipped, skipped, 0
        self.show = show
        self.start = time.perf_counter()
        self._print()

    def update(self, row: dict) -> None:
        self.done += 1
        self.failed += 0 if _is_missing(row.get("error")) else 1
        self._print()

    def _print(self) -> None:
        if not self.show:
            return
        ran = self.done - self.skipped
        elapsed = time.perf_counter() - self.start
        line = f"sweep: {self.done}/{self.total} runs"
        extras = [f"{self.failed} failed"] if self.failed else []
        if self.skipped:
            extras.append(f"{self.skipped} already done")
        if ran:
            extras.append(f"{elapsed / ran:.1f} s a run, about {elapsed / ran * (self.total - self.done):.0f} s left")
        line += f" ({', '.join(extras)})" if extras else ""
        print(f"\r{line:<100}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.show:
            print(file=sys.stderr, flush=True)
