"""The recording's background writer: a thread that does a sink's disk work off the tick, with
every wait for it bounded (``SinkThread``). ``ecs_nav.results.recording.record`` puts one around
the file's sink unless ``background=False``."""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
import warnings
from typing import Any

import numpy as np

from ecs_nav.compile.watch import warmup_seconds
from ecs_nav.results.sqlite_file import block_rows


class RecordingError(OSError):
    """The recording's writer failed (the cause is chained) or made no progress for
    ``SinkThread.STALL_S`` seconds; the recording has ended, what it committed stays readable."""


class RecordingWarning(UserWarning):
    """The writer has been busy with one call for over ``SinkThread.SLOW_S`` seconds: a slow or
    blocked disk (after ``SinkThread.STALL_S`` seconds it is a RecordingError)."""


class WriterState:
    """What the writer thread tells the simulation: the exception that ended it (and the call it
    ended in), and ``busy``: since when (``time.monotonic()``) it has been busy with which call,
    and the process's compile time then (``warmup_seconds()``), one tuple assigned at once so
    that a reader never pairs one call's start with another's name (None between calls)."""

    def __init__(self):
        self.error: BaseException | None = None
        self.busy: tuple[float, str, float] | None = None
        self.last_call = ""
        self.abandoned = False  # set by the simulation: the writer stops at its next call


BLOCK_ROWS = 16384
BLOCK_WAIT_S = 0.5
"""A small table's frames are handed to the sink in blocks (``ecs_nav.results.recording``) of
up to ``BLOCK_ROWS`` trajectory rows, and ``BLOCK_WAIT_S`` seconds after the first of them at
the latest: a small scene recorded every tick pays for a hand-over, an SQLite statement a table
and a transaction a block, not a frame. A run killed without closing the recording loses the
frames not yet handed on: up to ``BLOCK_WAIT_S`` seconds of them while the World runs (the
clock is read as ticks come, so a World that stops stepping keeps its last block until the
next tick or the close)."""


class InlineSink:
    """A sink written in the tick (``record(..., background=False)``): each block of frames is
    written when the Recorder hands it on."""

    def __init__(self, sink):
        self.sink = sink
        atexit.register(self.close_at_exit)

    def check(self) -> None:
        """Nothing to check: a failure raises from the call that failed."""

    def will_finish(self) -> None:
        """Nothing to prepare: each block is written as it comes."""

    def write_blocks(self, blocks: list[dict], events: list[tuple]) -> None:
        self.sink.write_blocks(blocks, events)

    def begin(self, run):
        self.sink.begin(run)

    def finish(self, agents, run, events):
        self.sink.finish(agents, run, events)

    def close(self) -> None:
        atexit.unregister(self.close_at_exit)
        self.sink.close()

    def close_at_exit(self) -> None:
        """At interpreter exit: close the file (no summary: the recording was not closed),
        without raising."""
        try:
            self.close()
        except Exception as exc:
            print(f"ecs_nav: recording: {type(exc).__name__}: {exc}", file=sys.stderr)


class SinkThread:
    """A sink whose disk work runs on a thread of its own, so that a slow or blocked disk never
    holds up the tick. A sink that stages (``stages``: SQLite, Parquet and CSV) splits each call
    in two: the tick stages (SQLite's values bound into a transaction left open, pyarrow's
    arrays made: work that holds the interpreter lock on whichever thread does it, so the thread
    would save the tick nothing and cost it the lock's hand-overs), and the thread commits (the
    transaction written, the parts encoded and written, which SQLite and pyarrow do without the
    lock). Blocks handed on while the thread is busy wait in memory and are staged together once
    it is idle. A sink that does not stage (a writer process's, ``writer_process.ProcessSink``)
    gets whole calls on a bounded queue. A thread, not a process: it needs no importable main
    module, so a plain script, standard input, ``python -c``, a notebook and a frozen app all
    record alike, and it starts at once.

    Small frames travel together (``BLOCK_ROWS``): a small scene recorded every tick pays for a
    hand-over to the writer thread every few thousand ticks or half a second, not every tick.

    No wait is unbounded: once about ``QUEUED_ROWS`` trajectory rows wait (in memory, or on the
    queue: between 4 and 256 calls), the tick waits for the writer, checking it every ``POLL_S``
    seconds. Every block handed over checks the writer first, and so does the Recorder every
    ``recording.CHECK_S`` seconds: one that raised is reported (RecordingError, the cause
    chained) at the next check or within ``POLL_S`` of a wait; one busy with a single call (but
    ``begin``, which starts a writer process's file) for over ``SLOW_S`` seconds is announced at
    once (a RecordingWarning, the first time in a recording): within a second the user knows
    that the disk is slow or blocked, and a slow disk is not taken for a dead writer; one busy
    with a single call for over ``STALL_S`` seconds is reported as stuck (RecordingError). A
    process that exits without closing the recording has the writer finish what was handed over
    first (within ``STALL_S``); the file then reads as a killed run's (no agents table)."""

    QUEUED_ROWS = 400_000
    POLL_S = 0.1
    SLOW_S = 1.0
    STALL_S = 60.0

    def __init__(self, sink, rows_per_frame: int = 1, path: str | os.PathLike = "", rows_per_block: int = 200_000,
                 process=None):
        self.sink = sink
        self.process = process  # the writer process behind ``sink``, if any (``writer_process.ProcessSink``)
        self.path = os.fspath(path)
        self.stages = bool(getattr(sink, "stages", False))
        self.waiting: list[tuple[list[dict], list[tuple]]] = []  # blocks not staged yet (the writer was busy)
        self.waiting_rows = 0
        self.finishing = False  # (will_finish)
        rows_per_call = max(int(rows_per_frame), min(BLOCK_ROWS, max(int(rows_per_block), 1)))
        self.calls: queue.Queue = queue.Queue(maxsize=int(np.clip(self.QUEUED_ROWS // rows_per_call, 4, 256)))
        self.state = WriterState()
        self.failed = self.closing = False
        self.warned = False  # a slow writer was announced (once per recording)
        self.thread: threading.Thread | None = threading.Thread(
            target=write_calls, args=(sink, self.calls, self.state), name="ecs-nav-recorder", daemon=True)
        self.thread.start()
        atexit.register(self.close_at_exit)

    def check(self) -> None:
        """Raise RecordingError if the writer failed, ended or is stuck."""
        state = self.state
        if state.error is not None:
            self.failed = True
            raise RecordingError(f"recording {self.path!r}: the writer failed in {state.last_call}: "
                                 f"{type(state.error).__name__}: {state.error}") from state.error
        if self.thread is None or not self.thread.is_alive():
            self.failed = True
            raise RecordingError(f"recording {self.path!r}: the writer ended early")
        if self.process is not None and not self.closing and self.process.ended():
            self.thread.join(self.POLL_S)  # (one that failed has its error told by the thread)
            if state.error is not None:
                self.check()
            self.failed = True
            raise RecordingError(f"recording {self.path!r}: the writer process ended (exit code "
                                 f"{self.process.process.poll()})")
        self.warn_if_slow()
        busy = state.busy
        if busy is not None and busy_for(busy) > self.STALL_S:
            self.failed = True
            raise RecordingError(f"recording {self.path!r}: the writer is stuck: {busy[1]} has made no "
                                 f"progress for {self.STALL_S:g} s (a blocked disk or file system?)")

    def warn_if_slow(self) -> None:
        """Announce a call busy over ``SLOW_S`` (once per recording)."""
        now_busy = self.state.busy
        if now_busy is None or self.warned or now_busy[1] == "begin()":  # (begin starts a writer process)
            return
        busy_with, busy = now_busy[1], busy_for(now_busy)
        if busy > self.SLOW_S:
            self.warned = True
            warnings.warn(RecordingWarning(
                f"recording {self.path!r}: the writer has been busy with {busy_with} for {busy:.1f} s (a slow "
                f"or blocked disk?); frames wait in memory, and after {self.STALL_S:g} s it is reported as stuck"),
                stacklevel=3)

    def _send(self, method: str, *args: Any) -> None:
        self.check()
        while True:
            try:
                self.calls.put((method, args), timeout=self.POLL_S)
                return
            except queue.Full:
                self.check()

    def write_blocks(self, blocks: list[dict], events: list[tuple]) -> None:
        """Hand blocks of frames on. A sink that stages (``stages``) has them staged here, in
        the tick, while the writer is idle, and only their commit (the disk's work) queued;
        while the writer is busy they wait in memory (about ``QUEUED_ROWS`` rows, then the
        tick waits for it, bounded as above) and are staged with the next ones."""
        if not self.stages:
            self._send("write_blocks", blocks, events)
            return
        self.check()
        self.waiting.append((blocks, events))
        self.waiting_rows += sum(block_rows(block) for block in blocks)
        if (self.finishing or self.calls.unfinished_tasks) and self.waiting_rows <= self.QUEUED_ROWS:
            return
        self.stage_waiting()

    def will_finish(self) -> None:
        """The recording is closing: the blocks handed on from now are staged with its end, in
        one commit."""
        self.finishing = True

    def stage_waiting(self, commit: bool = True) -> None:
        """Stage the blocks waiting and queue their commit (or leave it to the next stage's)."""
        if self.waiting:
            waiting, self.waiting, self.waiting_rows = self.waiting, [], 0
            self._stage("staging the frames", self.sink.stage, [block for blocks, _ in waiting for block in blocks],
                        [event for _, events in waiting for event in events], commit=commit)

    def _stage(self, what: str, call, *args: Any, commit: bool = True) -> None:
        """Once the writer is idle (a bounded wait), run ``call(*args)``, the sink's half of a
        call that stages, here, and queue its commit (or leave it to the next one's)."""
        done = self.calls.all_tasks_done
        with done:
            while self.calls.unfinished_tasks:
                done.wait(self.POLL_S)
                self.check()
        try:
            call(*args)
        except Exception as exc:
            self.failed = True
            raise RecordingError(f"recording {self.path!r}: {what} failed: {type(exc).__name__}: {exc}") from exc
        if commit:
            self._send("commit")

    def begin(self, run):
        """Start the file: a sink that stages its start (SQLite's tables, the folder formats' run
        table) does so here, in the caller's thread, and the writer commits it with the first
        block; a writer process's sink begins on the writer (it starts the process)."""
        if self.stages:  # (committed with the first block: one commit less while the World runs)
            self._stage("starting the file", self.sink.stage_begin, run, commit=False)
        else:
            self._send("begin", run)

    def finish(self, agents, run, events):
        """End the file (the agents table, the run's last fields); staged here where the sink
        stages it, as ``begin``."""
        self.stage_waiting(commit=not self.stages)
        if self.stages:
            self._stage("ending the file", self.sink.stage_finish, agents, run, events)
        else:
            self._send("finish", agents, run, events)

    def close(self) -> None:
        """Have the writer write what is queued and close the file; wait for it (bounded as
        above) and raise RecordingError if it failed. After a failure: let the writer go."""
        if self.thread is None:
            return
        try:
            if not self.failed:
                if not self.closing:
                    self.stage_waiting()
                    self._send("close")
                    self.closing = True
                while self.thread.is_alive():
                    self.thread.join(self.POLL_S)
                    if self.thread.is_alive():
                        self.check()
                if self.state.error is not None:
                    self.check()
        except RecordingError:
            self.detach()
            raise
        # (an interrupt while waiting leaves the writer at work, and the exit waits for it)
        self.detach()

    def detach(self) -> None:
        """Stop waiting for the writer: a failed or stuck one stops at its next call, if any."""
        atexit.unregister(self.close_at_exit)
        self.state.abandoned = True
        self.thread = None

    def close_at_exit(self) -> None:
        """At interpreter exit: write what is queued and close the file (no summary: the
        recording was not closed), without raising."""
        try:
            self.close()
        except RecordingError as exc:
            print(f"ecs_nav: {exc}", file=sys.stderr)


def busy_for(busy: tuple[float, str, float]) -> float:
    """Seconds the writer has been busy with its call (``WriterState.busy``), less the seconds
    the process has spent compiling kernels meanwhile, in any thread: a compile holds the
    interpreter lock the writer needs (the first large recording of an install compiles its
    nearest-distance kernel as it stages), which says nothing of the disk."""
    return time.monotonic() - busy[0] - (warmup_seconds() - busy[2])


BATCH_ROWS = 50_000
"""The writer takes the blocks waiting on its queue together, up to ``BATCH_ROWS`` trajectory
rows (or a few more: the calls it takes are whole), and writes them at once (one SQLite
transaction): a call stays well under a second, so one that takes longer says something of
the disk."""


def write_calls(sink, calls: queue.Queue, state: WriterState) -> None:
    """The writer thread: run each call taken from ``calls`` on ``sink`` until 'close' (then
    close the sink) or an exception (kept in ``state``; the sink is closed too), marking each
    done (``Queue.task_done``: the simulation stages the next blocks once none is unfinished).
    Blocks that wait on the queue together go to ``sink.write_blocks`` at once."""
    waiting = None
    taken = 0  # calls taken from the queue and not yet marked done
    try:
        while True:
            if waiting is None:
                try:
                    waiting = calls.get(timeout=0.5)
                    taken += 1
                except queue.Empty:
                    if state.abandoned:
                        break
                    continue
            method, args = waiting
            waiting = None
            if state.abandoned:
                break
            state.last_call = f"{method}()"
            state.busy = (time.monotonic(), state.last_call, warmup_seconds())
            if method == "close":
                break
            if method == "write_blocks":
                blocks, events = list(args[0]), list(args[1])
                rows = sum(block_rows(block) for block in blocks)
                while rows < BATCH_ROWS:
                    try:
                        waiting = calls.get_nowait()
                        taken += 1
                    except queue.Empty:
                        break
                    if waiting[0] != "write_blocks":
                        break
                    blocks.extend(waiting[1][0])
                    events.extend(waiting[1][1])
                    rows += sum(block_rows(block) for block in waiting[1][0])
                    waiting = None
                sink.write_blocks(blocks, events)
            else:
                getattr(sink, method)(*args)
            state.busy = None
            for _ in range(taken - (waiting is not None)):
                calls.task_done()
            taken = 1 if waiting is not None else 0
    except BaseException as exc:  # reported to the simulation (SinkThread.check)
        state.error = exc
    finally:
        try:
            sink.close()
        except Exception as exc:
            if state.error is None:
                state.error = exc
        state.busy = None
