"""The recording's background writer: a thread that runs a sink's calls off the tick, with
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


class RecordingError(OSError):
    """The recording's writer failed (the cause is chained) or made no progress for
    ``SinkThread.STALL_S`` seconds; the recording has ended, what it committed stays readable."""


class RecordingWarning(UserWarning):
    """The writer has been busy with one call for over ``SinkThread.SLOW_S`` seconds: a slow or
    blocked disk (after ``SinkThread.STALL_S`` seconds it is a RecordingError)."""


class WriterState:
    """What the writer thread tells the simulation: the exception that ended it (and the call it
    ended in), and ``busy``: since when (``time.monotonic()``) it has been busy with which call,
    one tuple assigned at once so that a reader never pairs one call's start with another's
    name (None between calls)."""

    def __init__(self):
        self.error: BaseException | None = None
        self.busy: tuple[float, str] | None = None
        self.last_call = ""
        self.abandoned = False  # set by the simulation: the writer stops at its next call


class FrameBatches:
    """Small frames gathered in the simulation's thread and handed on together (``hand_on``):
    frames of fewer than ``BATCH_ROWS_IN_TICK`` rows (and of ``rows_per_block``, the rows a
    folder format buffers before it writes), up to ``BATCH_FRAMES`` of them or ``BATCH_WAIT_S``
    seconds' worth, so that a small scene recorded every tick pays for a hand-over, an SQLite
    statement a table and a transaction a batch, not a frame. A run killed without closing
    the recording loses the frames gathered and not yet handed on: up to ``BATCH_FRAMES``, or
    ``BATCH_WAIT_S`` seconds of them while the World runs (the clock is read as frames come, so
    a World that stops stepping keeps its last batch until the next frame or the close)."""

    BATCH_ROWS_IN_TICK = 4096
    BATCH_FRAMES = 1024
    BATCH_WAIT_S = 0.5

    def __init__(self, rows_per_frame: int = 1, rows_per_block: int = 200_000):
        rows_per_frame = max(int(rows_per_frame), 1)
        rows = min(self.BATCH_ROWS_IN_TICK, max(int(rows_per_block), 1))
        self.batch_frames = int(np.clip(rows // rows_per_frame, 1, self.BATCH_FRAMES))
        self.pending: list = []  # frames gathered in the tick, not yet handed on
        self.pending_since = 0.0

    def write_frame(self, frame, events):
        self.check()
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append((frame, events))
        if len(self.pending) >= self.batch_frames or time.monotonic() - self.pending_since > self.BATCH_WAIT_S:
            self.flush()

    def flush(self) -> None:
        """Hand the frames gathered so far on."""
        if self.pending:
            frames, self.pending = self.pending, []
            self.hand_on(frames)

    def check(self) -> None:
        """Raise if the frames cannot be written (the writer failed)."""

    def hand_on(self, frames: list) -> None:
        raise NotImplementedError


class InlineSink(FrameBatches):
    """A sink written in the tick (``record(..., background=False)``), small frames in batches
    (``FrameBatches``)."""

    def __init__(self, sink, rows_per_frame: int = 1, rows_per_block: int = 200_000):
        super().__init__(rows_per_frame, rows_per_block)
        self.sink = sink
        atexit.register(self.close_at_exit)

    def hand_on(self, frames: list) -> None:
        self.sink.write_frames(frames)

    def begin(self, run):
        self.sink.begin(run)

    def finish(self, agents, run, events):
        self.flush()
        self.sink.finish(agents, run, events)

    def close(self) -> None:
        atexit.unregister(self.close_at_exit)
        self.pending = []  # (after a failure: what is gathered is dropped with the recording)
        self.sink.close()

    def close_at_exit(self) -> None:
        """At interpreter exit: write the frames gathered and close the file (no summary: the
        recording was not closed), without raising."""
        try:
            self.flush()
            self.close()
        except Exception as exc:
            print(f"ecs_nav: recording: {type(exc).__name__}: {exc}", file=sys.stderr)


class SinkThread(FrameBatches):
    """A sink whose writing runs on a thread of its own: each call goes on a bounded queue, so
    the tick pays for copying a frame, not for writing it (pyarrow releases the GIL for much of
    its work; SQLite only inside each statement, and the nearest-distance tally's kernel not at
    all). A thread, not a process: it needs no importable main module, so a plain script,
    standard input, ``python -c``, a notebook and a frozen app all record alike, and it starts
    at once. Its sink may itself be a process (``writer_process.ProcessSink``, started as
    ``python -c``, so no main module either), for the large SQLite recordings whose writing
    would otherwise hold the GIL.

    Small frames travel together (``FrameBatches``): a small scene recorded every tick pays for
    one hand-over to the writer thread (its lock and the interpreter lock) every few hundred
    ticks, not every tick.

    No wait is unbounded: a call finds the queue full when more than about ``QUEUED_ROWS``
    trajectory rows (between 4 and 256 calls) wait, and then waits for the writer, checking it
    every ``POLL_S`` seconds. Every frame handed over checks the writer first: one that raised is
    reported (RecordingError, the cause chained) on the next frame or within ``POLL_S`` of a
    wait; one busy with a single call (but ``begin``, which imports the format's library) for
    over ``SLOW_S`` seconds is announced at once (a RecordingWarning, the first time in a
    recording): within a second the user knows that the disk is slow or blocked, and a slow disk
    is not taken for a dead writer; one busy with a single call for over ``STALL_S`` seconds is
    reported as stuck (RecordingError). A process that exits without closing the recording has
    the writer finish what was handed over first (within ``STALL_S``); the file then reads as a
    killed run's (no agents table)."""

    QUEUED_ROWS = 400_000
    POLL_S = 0.1
    SLOW_S = 1.0
    STALL_S = 60.0

    def __init__(self, sink, rows_per_frame: int = 1, path: str | os.PathLike = "", rows_per_block: int = 200_000,
                 process=None):
        super().__init__(rows_per_frame, rows_per_block)
        self.sink = sink
        self.process = process  # the writer process behind ``sink``, if any (``writer_process.ProcessSink``)
        self.path = os.fspath(path)
        rows_per_call = max(int(rows_per_frame), 1) * self.batch_frames
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
        if busy is not None and time.monotonic() - busy[0] > self.STALL_S:
            self.failed = True
            raise RecordingError(f"recording {self.path!r}: the writer is stuck: {busy[1]} has made no "
                                 f"progress for {self.STALL_S:g} s (a blocked disk or file system?)")

    def warn_if_slow(self) -> None:
        """Announce a call busy over ``SLOW_S`` (once per recording)."""
        now_busy = self.state.busy
        if now_busy is None or self.warned or now_busy[1] == "begin()":  # (begin imports pyarrow: a second or more)
            return
        since, busy_with = now_busy
        busy = time.monotonic() - since
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

    def hand_on(self, frames: list) -> None:
        self._send("write_frames", frames)

    def begin(self, run):
        self._send("begin", run)

    def finish(self, agents, run, events):
        self.flush()
        self._send("finish", agents, run, events)

    def close(self) -> None:
        """Have the writer write what is queued and close the file; wait for it (bounded as
        above) and raise RecordingError if it failed. After a failure: let the writer go."""
        if self.thread is None:
            return
        try:
            if not self.failed:
                if not self.closing:
                    self.flush()
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


BATCH_ROWS = 50_000
BATCH_FRAMES_WRITTEN = 1024
"""The writer takes the frames waiting on its queue together, up to ``BATCH_ROWS`` trajectory
rows or ``BATCH_FRAMES_WRITTEN`` frames (or a few more: the calls it takes are whole), and
writes them as one batch (one SQLite transaction): a call stays well under a second, so one
that takes longer says something of the disk."""


def write_calls(sink, calls: queue.Queue, state: WriterState) -> None:
    """The writer thread: run each call taken from ``calls`` on ``sink`` until 'close' (then
    close the sink) or an exception (kept in ``state``; the sink is closed too). Frames that
    wait on the queue together go to ``sink.write_frames`` at once."""
    waiting = None
    try:
        while True:
            if waiting is None:
                try:
                    waiting = calls.get(timeout=0.5)
                except queue.Empty:
                    if state.abandoned:
                        break
                    continue
            method, args = waiting
            waiting = None
            if state.abandoned:
                break
            state.last_call = f"{method}()"
            state.busy = (time.monotonic(), state.last_call)
            if method == "close":
                break
            if method != "write_frames":
                getattr(sink, method)(*args)
                state.busy = None
                continue
            frames = list(args[0])
            rows = sum(len(frame["entity"]) for frame, _ in frames)
            while rows < BATCH_ROWS and len(frames) < BATCH_FRAMES_WRITTEN:
                try:
                    waiting = calls.get_nowait()
                except queue.Empty:
                    break
                if waiting[0] != "write_frames":
                    break
                frames.extend(waiting[1][0])
                rows += sum(len(frame["entity"]) for frame, _ in waiting[1][0])
                waiting = None
            sink.write_frames(frames)
            state.busy = None
    except BaseException as exc:  # reported to the simulation (SinkThread.check)
        state.error = exc
    finally:
        try:
            sink.close()
        except Exception as exc:
            if state.error is None:
                state.error = exc
        state.busy = None
