"""Recording a run: a system of the user's own, placed after physics, that writes what it sees.

    >>> world = ecs_nav.load_scene("gather")
    >>> with ecs_nav.record(world, "gather.sqlite", every=10):
    ...     world.run(600)

Each tick the Recorder keeps the events of the tick and, per entity, the path walked, the time
stuck and the first arrival (a companion system at the start of the tick notices entities
spawned between ticks, so their path starts where they were placed; one spawned by a system
during a tick is first seen after that tick's physics); every ``every``-th tick it writes the trajectory rows of every
placed entity (the state after that tick: a row with tick T is what ``world.table`` holds when
``world.tick == T``) and the nearest distance between agents. The tables and formats are listed
in ``ecs_nav.results.formats``. Rows go out as the run goes (the writer holds at most one
block; small frames go out in batches of up to half a second, ``writer.FrameBatches``), so
memory stays flat on a long run. The per-tick tallies keep each tick's positions and add them
up every few hundred ticks of a small scene (``Recorder.fold``), with the sums a tick at a time makes.

With ``background=True`` (the default) the file is written by a thread of its own that the
Recorder hands each frame to (``SinkThread``): the tick pays for copying the columns, not for
the writing, and no wait for the writer is unbounded. A large SQLite recording (thousands of
rows a frame) is written by a process behind that thread (``writer_process``): Python's sqlite3
holds the interpreter lock while it binds each value, so on a thread that work would stop the
simulation as if it were written in the tick. A writer that fails (a full disk) or is
stuck raises ``RecordingError`` from the tick once; the recording then ends and the World runs on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ecs_nav.core.components import Name
from ecs_nav.core.system import FunctionSystem, System
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_SEEK
from ecs_nav.core.world import World
from ecs_nav.geometry.walkable import walkable_area
from ecs_nav.results import writer_process
from ecs_nav.results.formats import NearestTally, check_out_path, format_of, open_sink
from ecs_nav.results.writer import InlineSink, SinkThread

STUCK_SPEED_FRACTION = 0.1
"""An agent following a path (not arrived) counts as stuck in a tick in which it moved less
than this fraction of its max_speed."""


class Recorder(System):
    """Writes a World's run to a sink (see the module docstring). Use ``record()`` to make one.

    Args:
        sink: where rows go (``ecs_nav.results.formats.open_sink``, or a ``SinkThread`` around one).
        every: write trajectories every this many ticks (>= 1).
    """

    name = "Recorder"
    reads_only = True

    def __init__(self, sink, every: int = 1):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise ValueError(f"record.every: must be an integer >= 1 (ticks between recorded frames), got {every!r}")
        self.sink = sink
        self.every = int(every)
        self.closed = False
        self.run: dict[str, Any] = {}  # the run summary's fields known at the start (record() fills it)
        self.events: list[tuple] = []
        self.names: list[str] = []  # name_code -> name
        self.codes: dict[str, int] = {}  # name -> name_code
        size = 64
        self.name_code = np.full(size, -1, np.int32)
        self.seen = np.zeros(size, bool)
        self.last_pos = np.zeros((size, 2))
        self.spawn_tick = np.full(size, -1, np.int64)
        self.arrival_tick = np.full(size, -1, np.int64)
        self.path_length = np.zeros(size)
        self.stuck_ticks = np.zeros(size, np.int64)
        self.stuck_events = np.zeros(size, np.int64)
        self.is_agent = np.zeros(size, bool)
        # the per-tick tallies run on arrays aligned with the table's rows (no per-entity
        # gathers and scatters on a tick); they move to the per-entity arrays above when the
        # table's rows change (a spawn or a despawn) and before a summary is read
        self.row_entity = np.zeros(0, np.int64)
        self.row_last_pos = np.zeros((0, 2))
        self.row_path = np.zeros(0)
        self.row_stuck = np.zeros(0, np.int64)
        self.row_bytes = b""  # row_entity's bytes: the cheap test of whether the rows changed
        # each tick keeps the rows' pos, max_speed, follow_state and is_agent (a small table: by
        # three gathers, ``tally_gathers``); ``fold`` adds up every ``fold_ticks`` ticks of them
        # at once (a small scene: hundreds of ticks; a large one: each tick as it ends), and on a
        # change of rows and before a summary
        self.kept: list[tuple[np.ndarray, ...]] = []
        self.kept_new: np.ndarray | None = None  # the first kept tick's newcomer rows (not stuck)
        self.fold_ticks = 1
        self.dt = 0.0
        self.tally_for: tuple | None = None  # (table buffer, rows) ``tally_at`` was made for
        self.tally_at: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros((0, 3), np.int64),) * 3
        self.names_now: tuple[str, ...] = ()  # the names as of the last frame (one tuple while unchanged)
        # a frame's columns are read from the table's buffer by three gathers (``frame_gathers``),
        # and its layout (entity, layer, is_agent, name_code) is handed on as the same arrays
        # while it stays the same (sinks batch frames of one layout)
        self.gather_for: tuple | None = None  # (table buffer, rows) the gathers below were made for
        self.gathers: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros((0, 7), np.int64),) * 3
        self.frame_layout: tuple | None = None

    # --- per tick -----------------------------------------------------------------------------

    def update(self, world: World) -> None:
        if self.closed:
            return
        tick = world.tick + 1  # the state after this tick
        for event in world.events:
            self._keep_event(event)
        self._accumulate(world, tick)
        if tick % self.every == 0:
            try:
                self.write_frame(world, tick)
            except Exception:
                self.abandon()  # the error is reported once, here; the World runs on unrecorded
                raise

    def abandon(self) -> None:
        """End the recording after its sink failed: no summary, the file keeps what it committed."""
        self.closed = True
        try:
            self.sink.close()
        except Exception:  # (the sink's failure is the one being reported)
            pass

    def _keep_event(self, event: Any) -> None:
        fields = dataclasses.asdict(event) if dataclasses.is_dataclass(event) else dict(getattr(event, "__dict__", {}))
        entity = fields.pop("entity", None)
        tick = int(fields.pop("tick", -1))
        kind = type(event).__name__
        if entity is not None and 0 <= entity < self.seen.size:
            if kind == "TargetReached" and self.arrival_tick[entity] < 0:
                self.arrival_tick[entity] = tick
            elif kind == "Stuck":
                self.stuck_events[entity] += 1
        text = json.dumps({k: _plain(v) for k, v in fields.items()}, allow_nan=True)
        self.events.append((tick, kind, None if entity is None else int(entity), text))

    def _grow(self, top: int) -> None:
        size = self.seen.size
        if top < size:
            return
        new = max(2 * size, top + 1)
        for attr, fill in (("seen", False), ("spawn_tick", -1), ("arrival_tick", -1), ("path_length", 0.0),
                           ("stuck_ticks", 0), ("stuck_events", 0), ("is_agent", False), ("name_code", -1)):
            old = getattr(self, attr)
            grown = np.full(new, fill, old.dtype)
            grown[:size] = old
            setattr(self, attr, grown)
        grown = np.zeros((new, 2))
        grown[:size] = self.last_pos
        self.last_pos = grown

    def register(self, world: World, tick: int) -> np.ndarray:
        """Start the tallies of the table's entities not seen before (spawned at ``tick``);
        returns the mask of those rows."""
        table = world.table
        entity = table.live("entity")
        if entity.size == 0:
            return np.zeros(0, bool)
        self._grow(int(entity.max()))
        new = ~self.seen[entity]
        if new.any():
            fresh = entity[new]
            self.seen[fresh] = True
            self.spawn_tick[fresh] = tick
            self.last_pos[fresh] = table.live("pos")[new]
            self.is_agent[fresh] = table.live("is_agent")[new]
            self._learn_names(world, fresh)
        return new

    def sync(self) -> None:
        """Move the row-aligned tallies into the per-entity arrays."""
        self.fold()
        ids = self.row_entity
        self.path_length[ids] += self.row_path
        self.stuck_ticks[ids] += self.row_stuck
        self.last_pos[ids] = self.row_last_pos
        self.row_path[:] = 0.0
        self.row_stuck[:] = 0

    def _relayout(self, world: World, tick: int) -> np.ndarray:
        self.sync()
        self.kept_new = None  # (what it marked was folded; the caller marks the newcomers again)
        new = self.register(world, tick)
        entity = world.table.live("entity")
        self.row_entity = entity.copy()
        self.row_bytes = self.row_entity.tobytes()
        self.row_last_pos = self.last_pos[entity]
        self.row_path = np.zeros(entity.size)
        self.row_stuck = np.zeros(entity.size, np.int64)
        self.fold_ticks = int(np.clip(FOLD_ROWS // max(entity.size, 1), 1, FOLD_TICKS))
        return new

    def notice_spawns(self, world: World) -> None:
        """Start the tallies of entities spawned between ticks at their spawn position (run by
        the Recorder's companion system at the start of each tick)."""
        if self.closed:
            return
        if world.table.live("entity").tobytes() != self.row_bytes:
            self._relayout(world, world.tick)

    def _accumulate(self, world: World, tick: int) -> None:
        table = world.table
        if table.live("entity").tobytes() != self.row_bytes:
            self.kept_new = self._relayout(world, tick)  # (folds what was kept first)
        if table.n == 0:
            return
        self.dt = world.dt
        if self.fold_ticks == 1:  # a large table: its columns as they are, added up at once
            self.kept.append((table.live("pos"), table.live("max_speed"), table.live("follow_state"),
                              table.live("is_agent")))
            self.fold()
            return
        if self.tally_for is None or self.tally_for[0] is not table.buffer or self.tally_for[1] != table.n:
            self.tally_at = tally_gathers(table)
            self.tally_for = (table.buffer, table.n)
        at_float, at_state, at_flag = self.tally_at
        self.kept.append((table.float_view[at_float], table.int8_view[at_state], table.flag_view[at_flag]))
        if len(self.kept) >= self.fold_ticks:
            self.fold()

    def fold(self) -> None:
        """Add the kept ticks to the row-aligned tallies: each tick's step from the last
        position, in tick order (the sums are the ones a tick at a time makes), and a stuck tick
        for each agent following a path that moved under ``STUCK_SPEED_FRACTION`` of its speed."""
        kept, self.kept = self.kept, []
        if not kept:
            return
        if len(kept) == 1:  # (a large table's columns: pos, max_speed, follow_state, is_agent)
            pos, speed, state, agent = (column[None] for column in kept[0])  # (1, rows, ...): views
            delta = pos - self.row_last_pos
        else:  # (gathered: (rows, 3) x, y, max_speed; follow_state; is_agent)
            floats, state, agent = (np.stack(columns) for columns in zip(*kept))  # (ticks, rows, ...)
            pos, speed = floats[..., :2], floats[..., 2]
            delta = np.diff(pos, axis=0, prepend=self.row_last_pos[None])
        delta *= delta
        step = np.sqrt(delta[..., 0] + delta[..., 1])  # (ticks, rows)
        if len(kept) == 1:
            self.row_path += step[0]
        else:
            self.row_path = np.add.accumulate(np.concatenate([self.row_path[None], step]), axis=0)[-1]
        stuck = FOLLOWING[state.view(np.uint8)]
        stuck &= agent
        stuck &= step < STUCK_SPEED_FRACTION * self.dt * speed
        if self.kept_new is not None:
            stuck[0] &= ~self.kept_new  # a newcomer has not had a tick to move yet
            self.kept_new = None
        self.row_stuck += stuck[0] if len(kept) == 1 else stuck.sum(axis=0)
        self.row_last_pos[:] = pos[-1]

    def _learn_names(self, world: World, entities: np.ndarray) -> None:
        for entity in entities.tolist():
            component = world.try_get(entity, Name)
            name = "" if component is None else component.value
            if name not in self.codes:
                self.codes[name] = len(self.names)
                self.names.append(name)
            self.name_code[entity] = self.codes[name]
        if len(self.names_now) != len(self.names):
            self.names_now = tuple(self.names)

    def write_frame(self, world: World, tick: int) -> None:
        """Write the trajectory rows of the state after ``tick`` (and the events kept so far)."""
        table = world.table
        if table.live("entity").tobytes() != self.row_bytes:
            self.register(world, tick)  # entities spawned since the last tick
        if self.gather_for is None or self.gather_for[0] is not table.buffer or self.gather_for[1] != table.n:
            self.gathers = frame_gathers(table)
            self.gather_for = (table.buffer, table.n)
        at_float, at_int, at_flag = self.gathers
        ints, is_agent = table.int64_view[at_int], table.flag_view[at_flag]
        layout = self.frame_layout
        if layout is None or layout[0] != ints.tobytes() or layout[1] != is_agent.tobytes():
            entity, layer = np.ascontiguousarray(ints[:, 0]), np.ascontiguousarray(ints[:, 1])
            layout = self.frame_layout = (ints.tobytes(), is_agent.tobytes(), entity, layer, is_agent,
                                          self.name_code[entity])
        frame = {"tick": tick, "entity": layout[2], "layer": layout[3], "is_agent": layout[4],
                 "name_code": layout[5], "names": self.names_now, "floats": table.float_view[at_float]}
        self.sink.write_frame(frame, self.events)
        self.events = []

    # --- the end ------------------------------------------------------------------------------

    def agents(self, dt: float) -> dict[str, np.ndarray]:
        """The per-entity summary (``AGENT_COLUMNS`` less ``min_distance``, which the sink
        tallies from the frames it writes), in entity order."""
        self.sync()
        ids = np.flatnonzero(self.seen)
        names = np.array([*self.names, ""], object)
        return {
            "entity": ids.astype(np.int64),
            "name": names[self.name_code[ids]],
            "is_agent": self.is_agent[ids].copy(),
            "spawn_tick": self.spawn_tick[ids].copy(),
            "arrival_tick": self.arrival_tick[ids].copy(),
            "path_length": self.path_length[ids].copy(),
            "stuck_s": self.stuck_ticks[ids] * dt,
            "stuck_events": self.stuck_events[ids].copy(),
        }

    def close(self, world: World, status: str = "complete") -> None:
        """Write the agents table and the run's final fields, and close the file. Once only."""
        if self.closed:
            return
        self.closed = True
        try:
            run = {**self.run, "ticks": world.tick, "final_digest": world.state_digest(), "status": status,
                   "timings_ms": {s.name: round(world.timings_ms[s.name], 3) for s in world.systems}}
            agents = self.agents(world.dt)
            self.sink.finish(agents, run, self.events)
            self.events = []
        finally:
            self.sink.close()


def record(world: World, path: str | os.PathLike, every: int = 1, background: bool = True,
           rows_per_block: int = 200_000) -> Recording:
    """Record ``world`` from now on to ``path`` (format by suffix: .sqlite/.db, .parquet, .csv;
    see ``ecs_nav.results.formats``), trajectories every ``every`` ticks. Adds a Recorder after
    the PhysicsSystem and writes the current state as the first frame (when ``world.tick`` is a
    multiple of ``every``). Returns a Recording: close it, or use it in a ``with`` block, to
    write the per-agent summary and the run's end. ``background``: write on a thread of its own
    (``SinkThread``; a SQLite recording of ``writer_process.PROCESS_ROWS`` rows a frame or more: a
    process behind it does the writing, ``writer_process.ProcessSink``); a writer that fails
    raises RecordingError from the tick, once, and the recording ends. Without: small frames
    are written in batches in the tick (``writer.InlineSink``)."""
    from ecs_nav import __version__

    check_out_path(path, "record:")
    earlier = world.system(Recorder.name)
    if earlier is not None:  # (a World keeps its Recorder: one recording a World)
        raise ValueError(f"record: this World {'was' if earlier.closed else 'is being'} recorded already (one "
                         "recording a World)")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"record.every: must be an integer >= 1 (ticks between recorded frames), got {every!r}")
    sink = None
    if (background and format_of(path) == "sqlite" and world.table.n >= writer_process.PROCESS_ROWS
            and writer_process.can_start()):
        try:  # (a large SQLite recording: its writer's work off the simulation's interpreter lock)
            process = writer_process.ProcessSink(path)
            sink = SinkThread(NearestTally(process), world.table.n, path, rows_per_block, process=process)
        except OSError:  # (no process could start: the writer thread does it all)
            sink = None
    if sink is None and background:
        sink = SinkThread(open_sink(path, rows_per_block), world.table.n, path, rows_per_block)
    elif sink is None:
        sink = InlineSink(open_sink(path, rows_per_block), world.table.n, rows_per_block)
    recorder = Recorder(sink, every)
    scene = world.resources.get("scene")
    wkt, extent = walkable_area(world)
    recorder.run = {
        "scene": getattr(scene, "source", None), "scene_digest": scene_digest(scene), "seed": world.seed,
        "version": __version__, "dt": world.dt, "every": int(every), "start_tick": world.tick,
        "ticks": world.tick, "final_digest": None, "status": "running", "timings_ms": {},
        "walkable_area": wkt, "walkable_area_digest": hashlib.blake2b(wkt.encode(), digest_size=8).hexdigest(),
        "extent": list(extent),
    }
    sink.begin(recorder.run)
    world.add_system(recorder, after="PhysicsSystem")
    world.add_system(FunctionSystem(recorder.notice_spawns, name="RecorderSpawns", reads_only=True),
                     before="GraphBuildSystem")
    recorder._relayout(world, world.tick)
    if world.tick % recorder.every == 0:
        recorder.write_frame(world, world.tick)
    return Recording(world, recorder)


class Recording:
    """A recording in progress: ``close()`` (or leaving a ``with`` block) ends it."""

    def __init__(self, world: World, recorder: Recorder):
        self.world, self.recorder = world, recorder

    def close(self, status: str = "complete") -> None:
        self.recorder.close(self.world, status)

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close("complete" if exc_type is None else "interrupted")


FRAME_FLOATS = (("pos", 0), ("pos", 1), ("vel", 0), ("vel", 1), ("heading", 0), ("heading", 1), ("elevation", 0))
"""A frame's ``floats`` columns (``ecs_nav.results.formats.batch_columns`` names them)."""
FOLD_ROWS = 16384
FOLD_TICKS = 256
"""The Recorder adds up its per-tick tallies every ``FOLD_ROWS // rows`` ticks (1 to
``FOLD_TICKS``)."""
FOLLOWING = np.zeros(256, bool)
FOLLOWING[[FOLLOW_SEEK, FOLLOW_ARRIVE]] = True
"""By ``follow_state`` (as uint8): an entity following a path, which counts as stuck when slow."""


def frame_gathers(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a frame's values lie in ``table.buffer`` (byte offsets ``table.layout``), for its
    live rows: indices into ``float_view`` ((n, 7): ``FRAME_FLOATS``), ``int64_view`` ((n, 2):
    entity, layer) and ``flag_view`` ((n,): is_agent). One gather per element type copies a
    frame (a few dozen agents: a microsecond, against several for a copy per column)."""
    names, rows = table.columns, np.arange(table.n)

    def at(name: str, item: int, itemsize: int) -> np.ndarray:
        width = int(np.prod(getattr(table, name).shape[1:], dtype=np.int64))
        return int(table.layout[names.index(name)]) // itemsize + rows * width + item

    return (np.column_stack([at(name, item, 8) for name, item in FRAME_FLOATS]),
            np.column_stack([at("entity", 0, 8), at("layer", 0, 8)]), at("is_agent", 0, 1))


def tally_gathers(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the per-tick tallies' values lie in ``table.buffer``, for its live rows: indices
    into ``float_view`` ((n, 3): x, y, max_speed), ``int8_view`` (follow_state) and
    ``flag_view`` (is_agent)."""
    names, rows = table.columns, np.arange(table.n)
    start = {name: int(table.layout[names.index(name)]) for name in ("pos", "max_speed", "follow_state", "is_agent")}
    return (np.column_stack([start["pos"] // 8 + 2 * rows, start["pos"] // 8 + 2 * rows + 1,
                             start["max_speed"] // 8 + rows]), start["follow_state"] + rows, start["is_agent"] + rows)


def scene_digest(scene) -> str | None:
    """blake2b of the scene file's bytes (None for a World built in Python)."""
    source = getattr(scene, "source", None)
    if source is None or not Path(source).is_file():
        return None
    return hashlib.blake2b(Path(source).read_bytes(), digest_size=16).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value
