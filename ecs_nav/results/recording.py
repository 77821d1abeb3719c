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
block), so memory stays flat on a long run.

With ``background=True`` (the default) the file is written by a thread of its own that the
Recorder hands each frame to (``SinkThread``): the tick pays for copying the columns, not for
the writing, and no wait for the writer is unbounded. A writer that fails (a full disk) or is
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
from ecs_nav.results.formats import check_out_path, open_sink
from ecs_nav.results.writer import SinkThread

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
        ids = self.row_entity
        self.path_length[ids] += self.row_path
        self.stuck_ticks[ids] += self.row_stuck
        self.last_pos[ids] = self.row_last_pos
        self.row_path[:] = 0.0
        self.row_stuck[:] = 0

    def _relayout(self, world: World, tick: int) -> np.ndarray:
        self.sync()
        new = self.register(world, tick)
        entity = world.table.live("entity")
        self.row_entity = entity.copy()
        self.row_last_pos = self.last_pos[entity]
        self.row_path = np.zeros(entity.size)
        self.row_stuck = np.zeros(entity.size, np.int64)
        return new

    def notice_spawns(self, world: World) -> None:
        """Start the tallies of entities spawned between ticks at their spawn position (run by
        the Recorder's companion system at the start of each tick)."""
        if self.closed:
            return
        entity = world.table.live("entity")
        if entity.size != self.row_entity.size or not np.array_equal(entity, self.row_entity):
            self._relayout(world, world.tick)

    def _accumulate(self, world: World, tick: int) -> None:
        table = world.table
        entity = table.live("entity")
        new = None
        if entity.size != self.row_entity.size or not np.array_equal(entity, self.row_entity):
            new = self._relayout(world, tick)
        if entity.size == 0:
            return
        pos = table.live("pos")
        delta = pos - self.row_last_pos
        step = np.sqrt(delta[:, 0] ** 2 + delta[:, 1] ** 2)
        self.row_path += step
        state = table.live("follow_state")
        stuck = (state == FOLLOW_SEEK) | (state == FOLLOW_ARRIVE)
        stuck &= table.live("is_agent")
        stuck &= step < STUCK_SPEED_FRACTION * world.dt * table.live("max_speed")
        if new is not None:
            stuck &= ~new  # a newcomer has not had a tick to move yet
        self.row_stuck += stuck
        self.row_last_pos[:] = pos

    def _learn_names(self, world: World, entities: np.ndarray) -> None:
        for entity in entities.tolist():
            component = world.try_get(entity, Name)
            name = "" if component is None else component.value
            if name not in self.codes:
                self.codes[name] = len(self.names)
                self.names.append(name)
            self.name_code[entity] = self.codes[name]

    def write_frame(self, world: World, tick: int) -> None:
        """Write the trajectory rows of the state after ``tick`` (and the events kept so far)."""
        self.register(world, tick)  # entities spawned since the last tick, if any
        table = world.table
        entity = table.live("entity").copy()
        pos, vel, heading = table.live("pos"), table.live("vel"), table.live("heading")
        frame = {
            "tick": np.int64(tick),
            "entity": entity,
            "name_code": self.name_code[entity],
            "names": list(self.names),
            "is_agent": table.live("is_agent").copy(), "layer": table.live("layer").copy(),
            "x": pos[:, 0].copy(), "y": pos[:, 1].copy(), "elevation": table.live("elevation").copy(),
            "vx": vel[:, 0].copy(), "vy": vel[:, 1].copy(), "heading": np.arctan2(heading[:, 1], heading[:, 0]),
        }
        self.sink.write_frame(frame, self.events)
        self.events = []

    # --- the end ------------------------------------------------------------------------------

    def agents(self, dt: float) -> dict[str, np.ndarray]:
        """The per-entity summary (``AGENT_COLUMNS`` less ``min_distance``, which the sink
        tallies from the frames it writes), in entity order."""
        self.sync()
        ids = np.flatnonzero(self.seen)
        names = np.array(self.names + [""], object)
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
    (``SinkThread``); a writer that fails raises RecordingError from the tick, once, and the recording ends."""
    from ecs_nav import __version__

    check_out_path(path, "record:")
    earlier = world.system(Recorder.name)
    if earlier is not None:  # (a World keeps its Recorder: one recording a World)
        raise ValueError(f"record: this World {'was' if earlier.closed else 'is being'} recorded already (one "
                         "recording a World)")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"record.every: must be an integer >= 1 (ticks between recorded frames), got {every!r}")
    sink = open_sink(path, rows_per_block)
    if background:
        sink = SinkThread(sink, world.table.n, path)
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
