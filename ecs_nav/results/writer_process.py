"""The recording's writer process: a sink whose work runs in a Python process of its own
(``ProcessSink``), so that writing a large crowd's frames does not hold the simulation's
interpreter lock. Python's sqlite3 binds every value of a row while holding it, and the
nearest-distance tally's compiled kernel holds it too: on a writer thread, that work stops the
simulation as if it were written in the tick, and the lock passed back and forth between two
busy threads costs more. ``ecs_nav.results.recording.record`` puts one behind its writer thread
(``SinkThread``, which bounds every wait and reports a failed, stuck or slow writer as for any
sink) for SQLite recordings of at least ``PROCESS_ROWS`` rows a frame, where the process can
start (not in a frozen app).

The process is ``sys.executable`` running ``serve``: no main module is imported, so a script,
standard input, ``python -c`` and a notebook record alike. Each call (its arguments pickled) is
sent on the process's standard input and answered on its standard output (None, or the
exception it raised, re-raised here); the writer thread waits for the answer without the
interpreter lock. A process that ends (killed, out of memory) ends the recording: the call
waiting for it raises ``WriterEnded``, and ``ended()`` tells the writer thread's checks at once.
A simulation killed without closing the recording closes the process's standard input: the
process closes the file (what it committed stays readable, as for a killed run).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

PROCESS_ROWS = 4096
"""SQLite recordings of at least this many rows a frame are written by a process (below, the
process's start, half a second or more, would cost more than it saves)."""
WAIT_AT_CLOSE_S = 60.0
"""``close`` waits this long for the process to end after its last call, then kills it."""


class WriterEnded(OSError):
    """The writer process ended before it answered (its exit code in the message)."""


def can_start() -> bool:
    """Whether a writer process can start here: a Python interpreter to run (not a frozen app)."""
    return not getattr(sys, "frozen", False) and bool(sys.executable) and Path(sys.executable).is_file()


class ProcessSink:
    """A sink (``ecs_nav.results.formats.open_sink(path, rows_per_block)``) opened and written
    by a process of its own; its calls block until the process has run them. The file is
    opened by the first call (``begin``), so a path that cannot be written to is reported by
    the writer's checks, as a RecordingError from the next tick."""

    def __init__(self, path: str | os.PathLike, rows_per_block: int = 200_000):
        import ecs_nav

        root = str(Path(ecs_nav.__file__).resolve().parent.parent)  # the child imports this ecs_nav
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from ecs_nav.results.writer_process import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.opening = (os.fspath(path), int(rows_per_block))
        self.closed = False

    def ended(self) -> bool:
        """The process has ended (before ``close``: it failed)."""
        return self.process.poll() is not None

    def call(self, method: str, *args: Any) -> None:
        data = pickle.dumps((method, args), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.process.stdin.write(len(data).to_bytes(8, "little") + data)
            self.process.stdin.flush()
            head = self.process.stdout.read(8)
            reply = self.process.stdout.read(int.from_bytes(head, "little")) if len(head) == 8 else b""
        except (BrokenPipeError, ConnectionError, ValueError):
            reply = b""
        if not reply:
            code = self.process.wait(timeout=5.0) if self.ended() else None
            raise WriterEnded(f"the writer process ended in {method}() (exit code {code})")
        error = pickle.loads(reply)
        if error is not None:
            raise error

    def begin(self, run: dict[str, Any]) -> None:
        self.call("open", *self.opening)
        self.call("begin", run)

    def write_frames(self, frames: list) -> None:
        self.call("write_frames", frames)

    def finish(self, agents, run, events) -> None:
        self.call("finish", agents, run, events)

    def close(self) -> None:
        """Have the process close the file and end; kill it if it has not ended within
        ``WAIT_AT_CLOSE_S`` seconds."""
        if self.closed:
            return
        self.closed = True
        try:
            if not self.ended():
                self.call("close")
        except OSError:
            pass  # (it ended or failed: what failed was reported by the call that failed)
        finally:
            for pipe in (self.process.stdin, self.process.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
            try:
                self.process.wait(timeout=WAIT_AT_CLOSE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def serve() -> None:
    """The writer process: run the calls read from standard input on a sink until ``close``
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
                    from ecs_nav.results.formats import open_sink

                    sink = open_sink(*args)
                    sink.warm_up()  # (loads the tally's kernels: part of begin(), not of the first frames)
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
