"""The recording's writer process: an SQLite file written by a Python process of its own
(``ProcessSink``), so that writing a large crowd's rows does not hold the simulation's
interpreter lock. Python's sqlite3 binds every value of a row while holding it: on a writer
thread, that work stops the simulation as if it were written in the tick, and the lock passed
back and forth between two busy threads costs more. ``ecs_nav.results.recording.record`` puts
one behind its writer thread (``SinkThread``, which bounds every wait and reports a failed,
stuck or slow writer as for any sink; the nearest-distance tally stays on that thread) for
SQLite recordings of at least ``PROCESS_ROWS`` rows a frame, where the process can start (not
in a frozen app) and a core is free for it (``spare_core``).

The process is ``sys.executable`` running ``ecs_nav.results.sqlite_file`` as a script
(``serve``), which imports no ecs_nav and no main module: it starts in a fraction of a second,
and a script, standard input, ``python -c`` and a notebook record alike. Each call (its
arguments pickled) is sent on the process's standard input and answered on its standard output
(None, or the exception it raised, re-raised here); the writer thread waits for the answer
without the interpreter lock. A process that ends (killed, out of memory) ends the recording: the call
waiting for it raises ``WriterEnded``, and ``ended()`` tells the writer thread's checks at once.
A simulation killed without closing the recording closes the process's standard input: the
process closes the file (what it committed stays readable, as for a killed run).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

from ecs_nav.cpus import usable_cpus

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


def spare_core() -> bool:
    """Whether a core is free for the process: the load average over the last minute (the
    simulation's own work counts about 1) leaves at least half of one of the CPUs this process
    may use (``ecs_nav.cpus.usable_cpus``) idle.
    Without one, the process's work competes with the simulation's and costs more than the
    writer thread's staging, which does the least work (``writer.SinkThread``)."""
    cpus = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except OSError:  # (no load average on this system)
        return cpus > 1
    return load <= cpus - 0.5


class ProcessSink:
    """An ``ecs_nav.results.sqlite_file.SqliteSink`` opened and written by a process of its
    own; its calls block until the process has run them. The file is opened by the first call
    (``begin``), so a path that cannot be written to is reported by the writer's checks, as a
    RecordingError from the next tick."""

    def __init__(self, path: str | os.PathLike):
        from ecs_nav.results import sqlite_file

        script = str(Path(sqlite_file.__file__).resolve())  # (run by path: its folder is not put on sys.path)
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"import runpy; runpy.run_path({script!r}, run_name='__main__')"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.opening = (os.fspath(path),)
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

    def write_blocks(self, blocks: list, events: list) -> None:
        self.call("write_blocks", blocks, events)

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
