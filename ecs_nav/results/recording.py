"""Recording a run: a system of the user's own, placed after physics, that writes what it sees.

    >>> world = ecs_nav.load_scene("gather")
    >>> with ecs_nav.record(world, "gather.sqlite", every=10):
    ...     world.run(600)

Each tick the Recorder keeps the events of the tick and, per entity, the path walked, the time
stuck and the first arrival (a companion system at the start of the tick notices entities
spawned between ticks, so their path starts where they were placed; one spawned by a system
during a tick is first seen after that tick's physics); every ``every``-th tick it writes the
trajectory rows of every placed entity (the state after that tick: a row with tick T is what
``world.table`` holds when ``world.tick == T``) and the nearest distance between agents. The
tables and formats are listed in ``ecs_nav.results.formats``. Rows go out as the run goes, so
memory stays flat on a long run. A table of up to ``tick_ring.RING_MAX_ROWS`` rows is copied
into a ring by two gathers a tick (``tick_ring.TickRing``); the ring is tallied and its frames
handed on as one block when it is full, when its frames hold ``writer.BLOCK_ROWS`` rows (or
``rows_per_block``) or ``writer.BLOCK_WAIT_S`` seconds after its first frame, and when the
rows change. A larger table is tallied from its columns each tick, and each of its frames is
a block of its own. The tallies add each tick's step in tick order: the sums a tick at a time
makes.

With ``background=True`` (the default) the file's disk work is done by a thread of its own
(``SinkThread``), so no wait for a slow or blocked disk is unbounded. The tick pays for what
only it can do cheaply: copying the columns and, for a sink that stages (SQLite, Parquet and
CSV all do), making the rows ready -- Python's sqlite3 binds each value holding the interpreter
lock and pyarrow makes its arrays holding it, so on a thread that work would stop the
simulation all the same, and cost more: the lock passed back and forth. The thread then
commits (SQLite) or encodes and writes (pyarrow, without the lock). A large SQLite recording
(thousands of rows a frame) is written by a process behind the thread instead
(``writer_process``), while a core is free for it. A writer that fails (a full disk) or is
stuck raises ``RecordingError`` from the tick once; the recording then ends and the World runs
on.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import os
import sys
import time
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
from ecs_nav.results.tick_ring import (
    FRAME_FLOATS,
    MAX_SPEED,
    RING_MAX_ROWS,
    RING_ROWS,
    RING_TICKS,
    TickRing,
    frame_float_indices,
)
from ecs_nav.results.writer import BLOCK_ROWS, BLOCK_WAIT_S, InlineSink, SinkThread

STUCK_SPEED_FRACTION = 0.1
"""An agent following a path (not arrived) counts as stuck in a tick in which it moved less
than this fraction of its max_speed."""


class Recorder(System):
    """Writes a World's run to a sink (see the module docstring). Use ``record()`` to make one.

    Args:
        sink: where rows go (``ecs_nav.results.formats.open_sink`` inside a
            ``writer.InlineSink`` or ``writer.SinkThread``).
        every: write trajectories every this many ticks (>= 1).
        rows_per_block: the rows a folder format buffers before it writes; blocks of frames
            handed on hold no more (nor more than ``writer.BLOCK_ROWS``) unless one frame does.
    """

    name = "Recorder"
    reads_only = True

    def __init__(self, sink, every: int = 1, rows_per_block: int = 200_000):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise ValueError(f"record.every: must be an integer >= 1 (ticks between recorded frames), got {every!r}")
        self.sink = sink
        self.every = int(every)
        self.block_rows = max(min(BLOCK_ROWS, int(rows_per_block)), 1)
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
        # table's rows change (a spawn or a despawn: ``row_version``) and before a summary is read
        self.row_version = -1  # the table's row_version the row arrays are laid out for
        self.row_entity = np.zeros(0, np.int64)
        self.row_name_code = np.zeros(0, np.int32)
        self.row_last_pos = np.zeros((0, 2))
        self.row_path = np.zeros(0)
        self.row_stuck = np.zeros(0, np.int64)
        self.kept_new: np.ndarray | None = None  # newcomer rows of the next tick tallied (not stuck in it)
        self.dt = 0.0
        self.names_now: tuple[str, ...] = ()  # the names as of the last frame (one tuple while unchanged)
        # a small table's ticks wait in a ring (``tick_ring``) and are tallied and written a
        # block at a time; a large one's are tallied each tick and its frames gathered by one
        # gather of floats from the table's buffer (``float_at``)
        self.ring: TickRing | None = None
        self.tally_from = 0  # the ring's ticks before this one are frames only (the one record() keeps)
        self.frames_kept = 0  # the ring's ticks that are frames
        self.frames_since = 0.0  # time.monotonic() when the first of them was kept
        self.float_at = np.zeros((0, FRAME_FLOATS), np.int64)
        self.check_at = 0.0  # time.monotonic() when the writer is checked next

    # --- per tick -----------------------------------------------------------------------------

    def update(self, world: World) -> None:
        if self.closed:
            return
        tick = world.tick + 1  # the state after this tick
        for event in world.events:
            self._keep_event(event)
        self.dt = world.dt
        try:
            table = world.table
            if table.row_version != self.row_version:
                self.kept_new = self._relayout(world, tick)
            if self.ring is not None:
                self._keep_tick(tick)
            else:
                self.tally(table.live("pos")[None], table.live("max_speed")[None],
                           table.live("follow_state")[None].view(np.uint8), table.live("is_agent")[None])
                if tick % self.every == 0:
                    self.write_frame(world, tick)
            now = time.monotonic()
            if now >= self.check_at:  # (a failed, stuck or slow writer is told within CHECK_S of a tick)
                self.check_at = now + CHECK_S
                self.sink.check()
                if self.frames_kept and now - self.frames_since > BLOCK_WAIT_S:
                    self.empty_ring()
        except Exception:
            self.abandon()  # the error is reported once, here; the World runs on unrecorded
            raise

    def _keep_tick(self, tick: int) -> None:
        """Keep the tick in the ring; empty it when full or when its frames make a block."""
        ring = self.ring
        ring.keep(tick)
        if tick % self.every == 0:
            if not self.frames_kept:
                self.frames_since = time.monotonic()
            self.frames_kept += 1
            if self.frames_kept * ring.rows >= self.block_rows:
                self.empty_ring()
                return
        if ring.count == ring.capacity:
            self.empty_ring()

    def abandon(self) -> None:
        """End the recording after its sink failed: no summary, the file keeps what it committed."""
        self.closed = True
        atexit.unregister(self.close_at_exit)
        try:
            self.sink.close()
        except Exception:  # (the sink's failure is the one being reported)
            pass

    def close_at_exit(self) -> None:
        """At interpreter exit, the recording not closed: hand the kept frames to the sink
        (which then writes what it holds and closes the file, without a summary)."""
        try:
            self.empty_ring()
        except Exception as exc:
            print(f"ecs_nav: recording: {type(exc).__name__}: {exc}", file=sys.stderr)

    def _keep_event(self, event: Any) -> None:
        names = EVENT_FIELDS.get(type(event))
        if names is None:
            names = EVENT_FIELDS[type(event)] = (tuple(f.name for f in dataclasses.fields(event))
                                                 if dataclasses.is_dataclass(event) else ())
        fields = {name: getattr(event, name) for name in names} if names else dict(getattr(event, "__dict__", {}))
        entity = fields.pop("entity", None)
        tick = int(fields.pop("tick", -1))
        kind = type(event).__name__
        if entity is not None and 0 <= entity < self.seen.size:
            if kind == "TargetReached" and self.arrival_tick[entity] < 0:
                self.arrival_tick[entity] = tick
            elif kind == "Stuck":
                self.stuck_events[entity] += 1
        text = json.dumps(fields, allow_nan=True, default=_plain)
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
        """Tally the kept ticks and move the row-aligned tallies into the per-entity arrays."""
        self.empty_ring()
        ids = self.row_entity
        self.path_length[ids] += self.row_path
        self.stuck_ticks[ids] += self.row_stuck
        self.last_pos[ids] = self.row_last_pos
        self.row_path[:] = 0.0
        self.row_stuck[:] = 0

    def _relayout(self, world: World, tick: int) -> np.ndarray:
        """Lay the row arrays out for the table's rows as they are now (spawns and despawns
        since the last tick seen at ``tick``), after writing and tallying what was kept of the
        rows before. Returns the mask of the newcomers' rows."""
        self.sync()
        self.kept_new = None  # (what it marked was tallied; the caller marks the newcomers again)
        new = self.register(world, tick)
        table = world.table
        entity = table.live("entity")
        self.row_version = table.row_version
        self.row_entity = entity.copy()
        self.row_name_code = self.name_code[entity]
        self.row_last_pos = self.last_pos[entity]
        self.row_path = np.zeros(entity.size)
        self.row_stuck = np.zeros(entity.size, np.int64)
        if table.n <= RING_MAX_ROWS:
            self.ring = TickRing(table, int(np.clip(RING_ROWS // max(table.n, 1), 1, RING_TICKS)))
        else:
            self.ring = None
            self.float_at = frame_float_indices(table)
        return new

    def start(self, world: World) -> None:
        """Lay the rows out and keep the current state as the first frame (when ``world.tick``
        is a multiple of ``every``): ``record()`` calls it once."""
        self.dt = world.dt
        self._relayout(world, world.tick)
        atexit.register(self.close_at_exit)
        if world.tick % self.every:
            return
        if self.ring is None:
            self.write_frame(world, world.tick)
        else:
            self.tally_from = 1  # (a frame, not a tick: nothing has moved yet)
            self._keep_tick(world.tick)

    def notice_spawns(self, world: World) -> None:
        """Start the tallies of entities spawned between ticks at their spawn position (run by
        the Recorder's companion system at the start of each tick)."""
        if self.closed or world.table.row_version == self.row_version:
            return
        try:
            self._relayout(world, world.tick)
        except Exception:
            self.abandon()
            raise

    def tally(self, pos: np.ndarray, speed: np.ndarray, state: np.ndarray, agent: np.ndarray) -> None:
        """Add ticks to the row-aligned tallies: pos (ticks, rows, 2), max_speed, follow_state
        (as uint8) and is_agent (ticks, rows) after each tick, in tick order. Each tick's step
        from the last position is added (the sums are the ones a tick at a time makes), and a
        stuck tick for each agent following a path that moved under ``STUCK_SPEED_FRACTION`` of
        its speed."""
        if pos.shape[0] == 0 or pos.shape[1] == 0:
            return
        # (a tick at a time, as a large table is tallied: its step from the last position without
        # a copy of both)
        delta = pos - self.row_last_pos if pos.shape[0] == 1 else np.diff(pos, axis=0, prepend=self.row_last_pos[None])
        delta *= delta
        step = np.sqrt(delta[..., 0] + delta[..., 1])  # (ticks, rows)
        if step.shape[0] == 1:
            self.row_path += step[0]
        else:
            self.row_path = np.add.accumulate(np.concatenate([self.row_path[None], step]), axis=0)[-1]
        stuck = FOLLOWING[state]
        stuck &= agent
        stuck &= step < STUCK_SPEED_FRACTION * self.dt * speed
        if self.kept_new is not None:
            stuck[0] &= ~self.kept_new  # a newcomer has not had a tick to move yet
            self.kept_new = None
        self.row_stuck += stuck[0] if stuck.shape[0] == 1 else stuck.sum(axis=0)
        self.row_last_pos[:] = pos[-1]

    def empty_ring(self) -> None:
        """Tally the ring's ticks and hand its frames on, as blocks of frames of one layout
        (the layers and which rows are agents)."""
        ring = self.ring
        if ring is None or ring.count == 0:
            return
        floats, layer, state, agent = ring.columns()
        first = self.tally_from
        self.tally(floats[first:, :, :2], floats[first:, :, MAX_SPEED], state[first:], agent[first:])
        picked = np.flatnonzero(ring.ticks[: ring.count] % self.every == 0)
        ticks, layers, agents = ring.ticks[picked], layer[picked], agent[picked]
        frames = floats[picked, :, :FRAME_FLOATS]
        ring.clear()
        self.tally_from = self.frames_kept = 0
        if not picked.size:
            return
        changed = np.flatnonzero(np.any(layers[1:] != layers[:-1], axis=1) | np.any(agents[1:] != agents[:-1], axis=1))
        cuts = [0, *(changed + 1).tolist(), picked.size]
        self.hand_on([self.block(ticks[a:b], layers[a], agents[a], frames[a:b]) for a, b in zip(cuts[:-1], cuts[1:])])

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

    def block(self, ticks: np.ndarray, layer: np.ndarray, is_agent: np.ndarray, floats: np.ndarray) -> dict:
        """A block of frames of the rows as laid out now (``ecs_nav.results.sqlite_file.batch_columns``)."""
        return {"ticks": ticks, "entity": self.row_entity, "layer": layer, "is_agent": is_agent,
                "name_code": self.row_name_code, "names": self.names_now, "floats": floats}

    def write_frame(self, world: World, tick: int) -> None:
        """Hand on the trajectory rows of the state after ``tick`` (a large table's frame) and
        the events kept so far."""
        table = world.table
        self.hand_on([self.block(np.array([tick], np.int64), table.live("layer").copy(), table.live("is_agent").copy(),
                                 table.float_view[self.float_at][None])])

    def hand_on(self, blocks: list[dict]) -> None:
        events, self.events = self.events, []
        self.sink.write_blocks(blocks, events)

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
        """Write the kept frames, the agents table and the run's final fields, and close the
        file. Once only."""
        if self.closed:
            return
        self.closed = True
        atexit.unregister(self.close_at_exit)
        self.sink.will_finish()
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
    write the per-agent summary and the run's end. ``background``: the disk's work on a thread
    of its own (``SinkThread``; a SQLite recording of ``writer_process.PROCESS_ROWS`` rows a
    frame or more, while a core is free: a process behind it does the writing,
    ``writer_process.ProcessSink``); a writer that fails raises RecordingError from the tick,
    once, and the recording ends. Without: all of it in the tick (``writer.InlineSink``), small
    frames in blocks. ``rows_per_block``: the rows of a Parquet part or a CSV append."""
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
            and writer_process.can_start() and writer_process.spare_core()):
        try:  # (a large SQLite recording: its writer's work off the simulation's interpreter lock)
            process = writer_process.ProcessSink(path)
            sink = SinkThread(NearestTally(process), world.table.n, path, rows_per_block, process=process)
        except OSError:  # (no process could start: the writer thread does it all)
            sink = None
    if sink is None and background:
        sink = SinkThread(open_sink(path, rows_per_block), world.table.n, path, rows_per_block)
    elif sink is None:
        sink = InlineSink(open_sink(path, rows_per_block))
    recorder = Recorder(sink, every, rows_per_block)
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
    recorder.start(world)
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


FOLLOWING = np.zeros(256, bool)
FOLLOWING[[FOLLOW_SEEK, FOLLOW_ARRIVE]] = True
"""By ``follow_state`` (as uint8): an entity following a path, which counts as stuck when slow."""
EVENT_FIELDS: dict[type, tuple[str, ...]] = {}
"""The fields of each dataclass event type seen, in order (an event's row is made from them)."""
CHECK_S = 0.1
"""The Recorder checks its writer (failed, stuck, slow) at the first tick this many seconds
after the last check."""


def scene_digest(scene) -> str | None:
    """blake2b of the scene file's bytes (None for a World built in Python)."""
    source = getattr(scene, "source", None)
    if source is None or not Path(source).is_file():
        return None
    return hashlib.blake2b(Path(source).read_bytes(), digest_size=16).hexdigest()


def _plain(value: Any) -> Any:
    """What JSON writes for a value it has no form of: numpy's numbers and arrays, a dataclass's
    fields (an event's field that is one)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"an event's field of type {type(value).__name__} has no JSON form")
