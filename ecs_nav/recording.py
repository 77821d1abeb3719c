"""Recording a run: a system of the user's own, placed after physics, that writes what it sees.

    >>> world = ecs_nav.load_scene("gather")
    >>> with ecs_nav.record(world, "gather.sqlite", every=10):
    ...     world.run(600)

Each tick the Recorder keeps the events of the tick and, per entity, the path walked, the time
stuck and the first arrival; every ``every``-th tick it writes the trajectory rows of every
placed entity (the state after that tick: a row with tick T is what ``world.table`` holds when
``world.tick == T``) and the nearest distance between agents. The tables and formats are listed
in ``ecs_nav.recording_formats``. Rows go out as the run goes (the writer holds at most one
block), so memory stays flat on a long run.

With ``background=True`` (the default) the file is written by a separate process that the
Recorder hands each block to: the tick pays for copying the columns, not for the writing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np

from ecs_nav.components import Agent, Name
from ecs_nav.recording_formats import AGENT_COLUMNS, check_out_path, open_sink
from ecs_nav.table import FOLLOW_ARRIVE, FOLLOW_SEEK
from ecs_nav.world import System, World

STUCK_SPEED_FRACTION = 0.1
"""An agent following a path (not arrived) counts as stuck in a tick in which it moved less
than this fraction of its max_speed."""


class Recorder(System):
    """Writes a World's run to a sink (see the module docstring). Use ``record()`` to make one.

    Args:
        sink: where rows go (``ecs_nav.recording_formats.open_sink`` or a ``SinkProcess``).
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
        self.names: dict[int, str] = {}
        size = 64
        self.seen = np.zeros(size, bool)
        self.last_pos = np.zeros((size, 2))
        self.spawn_tick = np.full(size, -1, np.int64)
        self.arrival_tick = np.full(size, -1, np.int64)
        self.path_length = np.zeros(size)
        self.stuck_ticks = np.zeros(size, np.int64)
        self.stuck_events = np.zeros(size, np.int64)
        self.min_distance = np.full(size, np.inf)
        self.is_agent = np.zeros(size, bool)

    # --- per tick -----------------------------------------------------------------------------

    def update(self, world: World) -> None:
        if self.closed:
            return
        tick = world.tick + 1  # the state after this tick
        for event in world.events:
            self._keep_event(event)
        self._accumulate(world, tick)
        if tick % self.every == 0:
            self.write_frame(world, tick)

    def _keep_event(self, event: Any) -> None:
        fields = dataclasses.asdict(event) if dataclasses.is_dataclass(event) else dict(vars(event))
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
                           ("stuck_ticks", 0), ("stuck_events", 0), ("min_distance", np.inf), ("is_agent", False)):
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

    def _accumulate(self, world: World, tick: int) -> None:
        new = self.register(world, tick)
        if new.size == 0:
            return
        table = world.table
        entity, pos = table.live("entity"), table.live("pos")
        step = np.hypot(*(pos - self.last_pos[entity]).T)
        self.path_length[entity] += step
        following = np.isin(table.live("follow_state"), (FOLLOW_SEEK, FOLLOW_ARRIVE)) & table.live("is_agent")
        slow = step < STUCK_SPEED_FRACTION * table.live("max_speed") * world.dt
        self.stuck_ticks[entity[following & slow & ~new]] += 1
        self.last_pos[entity] = pos

    def _learn_names(self, world: World, entities: np.ndarray) -> None:
        for entity in entities.tolist():
            name = world.try_get(entity, Name)
            self.names[entity] = "" if name is None else name.value

    def write_frame(self, world: World, tick: int) -> None:
        """Write the trajectory rows of the state after ``tick`` (and the events kept so far)."""
        table = world.table
        entity = table.live("entity").copy()
        if entity.size:
            self._grow(int(entity.max()))
            unseen = entity[~np.isin(entity, np.fromiter(self.names, np.int64, len(self.names)))]
            if unseen.size:
                self._learn_names(world, unseen)
        pos, vel, heading = table.live("pos"), table.live("vel"), table.live("heading")
        frame = {
            "tick": np.int64(tick),
            "entity": entity,
            "name": np.array([self.names.get(e, "") for e in entity.tolist()], object),
            "x": pos[:, 0].copy(), "y": pos[:, 1].copy(), "elevation": table.live("elevation").copy(),
            "vx": vel[:, 0].copy(), "vy": vel[:, 1].copy(), "heading": np.arctan2(heading[:, 1], heading[:, 0]),
        }
        self._nearest(entity, pos, table.live("is_agent"))
        self.sink.write_frame(frame, self.events)
        self.events = []

    def _nearest(self, entity: np.ndarray, pos: np.ndarray, agent: np.ndarray) -> None:
        """Smallest centre distance from each agent to another agent, sampled at this frame."""
        if np.count_nonzero(agent) < 2:
            return
        from scipy.spatial import cKDTree

        points = pos[agent]
        distance, _ = cKDTree(points).query(points, k=2)
        ids = entity[agent]
        self.min_distance[ids] = np.minimum(self.min_distance[ids], distance[:, 1])

    # --- the end ------------------------------------------------------------------------------

    def agents(self, dt: float) -> dict[str, np.ndarray]:
        """The per-entity summary (``AGENT_COLUMNS``), in entity order."""
        ids = np.flatnonzero(self.seen)
        closest = self.min_distance[ids]
        return {
            "entity": ids.astype(np.int64),
            "name": np.array([self.names.get(int(e), "") for e in ids], object),
            "is_agent": self.is_agent[ids].copy(),
            "spawn_tick": self.spawn_tick[ids].copy(),
            "arrival_tick": self.arrival_tick[ids].copy(),
            "path_length": self.path_length[ids].copy(),
            "stuck_s": self.stuck_ticks[ids] * dt,
            "stuck_events": self.stuck_events[ids].copy(),
            "min_distance": np.where(np.isfinite(closest), closest, np.nan),
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
            assert tuple(agents) == AGENT_COLUMNS
            self.sink.finish(agents, run, self.events)
            self.events = []
        finally:
            self.sink.close()


def record(world: World, path: str | os.PathLike, every: int = 1, background: bool = True,
           rows_per_block: int = 200_000) -> Recording:
    """Record ``world`` from now on to ``path`` (format by suffix: .sqlite/.db, .parquet, .csv;
    see ``ecs_nav.recording_formats``), trajectories every ``every`` ticks. Adds a Recorder after
    the PhysicsSystem and writes the current state as the first frame (when ``world.tick`` is a
    multiple of ``every``). Returns a Recording: close it, or use it in a ``with`` block, to
    write the per-agent summary and the run's end. ``background``: write in a separate process."""
    from ecs_nav import __version__

    check_out_path(path)
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"record.every: must be an integer >= 1 (ticks between recorded frames), got {every!r}")
    sink = SinkProcess(path, rows_per_block) if background else open_sink(path, rows_per_block)
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
    recorder.register(world, world.tick)
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


def walkable_area(world: World) -> tuple[str, tuple[float, float, float, float]]:
    """The floor an agent can walk as WKT, and its extent: the map's bounds less every box or
    circle an agent cannot climb (taller than Agent's default max_climb); without a map, the
    box around the placed entities grown by 1 m (JuPedSim's files always hold a geometry)."""
    import shapely
    from shapely.geometry import Point, box

    geometry = world.map
    if geometry is None:
        pos = world.table.live("pos")
        lo, hi = (pos.min(axis=0) - 1.0, pos.max(axis=0) + 1.0) if len(pos) else (np.full(2, -1.0), np.ones(2))
        area = box(lo[0], lo[1], hi[0], hi[1])
    else:
        climb = geometry.floor + Agent().max_climb
        solids = [box(*b.aabb()) for b in geometry.boxes if b.top > climb]
        solids += [Point(c.center).buffer(c.radius, quad_segs=8) for c in geometry.circles if c.top > climb]
        area = box(*geometry.bounds)
        if solids:
            area = area.difference(shapely.union_all(solids))
    return area.wkt, tuple(float(v) for v in area.bounds)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


# --- writing in another process ---------------------------------------------------------------------


class SinkProcess:
    """A sink that lives in a separate process: each call is sent down a pipe, so the
    simulation pays for copying a block, not for writing it. A pipe holds little, so the
    simulation waits when the writer falls behind (memory stays flat). If the simulation's
    process dies, the writer sees the pipe close and closes its file: what it committed stays."""

    def __init__(self, path: str | os.PathLike, rows_per_block: int):
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=serve_sink, args=(os.fspath(path), rows_per_block, child),
                                       name="ecs-nav-recorder", daemon=True)
        self.process.start()
        child.close()

    def _send(self, method: str, *args: Any) -> None:
        if self.connection.poll():
            self._raise_error()
        self.connection.send((method, args))

    def _raise_error(self) -> None:
        kind, message = self.connection.recv()
        raise OSError(f"recording writer failed: {message}")

    def begin(self, run):
        self._send("begin", run)

    def write_frame(self, frame, events):
        self._send("write_frame", frame, events)

    def finish(self, agents, run, events):
        self._send("finish", agents, run, events)

    def close(self) -> None:
        if self.process is None:
            return
        try:
            if not self.connection.poll():  # no error waiting: ask the writer to close
                self.connection.send(("close", ()))
            reply = self.connection.recv()
        except (EOFError, OSError):
            reply = ("error", "the writer process ended early")
        finally:
            self.process.join(timeout=60)
            self.connection.close()
            self.process = None
        if reply[0] != "closed":
            raise OSError(f"recording writer failed: {reply[1]}")


def serve_sink(path: str, rows_per_block: int, connection) -> None:
    """The writer process: open the sink, run each call received, close on 'close' or when the
    simulation's end of the pipe closes."""
    sink = None
    try:
        sink = open_sink(path, rows_per_block)
        while True:
            try:
                method, args = connection.recv()
            except EOFError:  # the simulation died: keep what was committed
                return
            if method == "close":
                sink.close()
                sink = None
                connection.send(("closed", None))
                return
            getattr(sink, method)(*args)
    except Exception as exc:  # reported to the simulation on its next call
        try:
            connection.send(("error", f"{type(exc).__name__}: {exc}"))
        except OSError:
            pass
    finally:
        if sink is not None:
            sink.close()
