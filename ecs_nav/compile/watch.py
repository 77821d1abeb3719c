"""The kernels' warm-up: how long numba spent compiling (or loading from its cache) our kernels,
and a progress line on a first run, when they are compiled.

numba compiles a kernel on its first call with a new set of argument types and saves the
machine code in its cache (``cache=True``; the package's ``__pycache__``, or the user's cache
folder when that is not writable, or ``$NUMBA_CACHE_DIR``). Later processes load it instead.
numba announces both through its event API: every compile or cache load runs under its global
compiler lock (``numba:compiler_lock``), and a cache miss is a ``numba:compile`` event. One
listener per process counts the seconds spent under the lock (``warmup_seconds``, which
``World.run_timed`` subtracts from a system's time) and, once ``report_progress`` is on, prints
one line per kernel it has to compile.

Nothing here imports numba until ``watch()`` is called: ``import ecs_nav`` stays light.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

PROGRESS_HEADER = "compiling kernels, first run only"
"""The first words of the progress line (tests look for them)."""


class _Clock:
    """Process-wide totals kept by the listener (one numba, one clock)."""

    def __init__(self) -> None:
        self.installed = False
        self.lock_depth = 0
        self.lock_started = 0.0
        self.seconds = 0.0
        self.compile_depth = 0
        self.compile_started = 0.0
        self.compiled = 0
        self.reporting = False
        self.stream: TextIO | None = None


_clock = _Clock()
totals = _clock
"""The process-wide totals, for a hot loop to read without a call (read only): while its
``lock_depth`` is 0, its ``seconds`` is ``warmup_seconds()``."""


def warmup_seconds() -> float:
    """Seconds this process has spent compiling kernels or loading them from numba's cache
    (monotonic; 0.0 before ``watch()``). Nested compilations count once."""
    if _clock.lock_depth > 0:  # asked from inside a compile (a kernel calling back): count so far
        return _clock.seconds + (time.perf_counter() - _clock.lock_started)
    return _clock.seconds


def kernels_compiled() -> int:
    """How many kernels (outermost compilations, not the helpers they call) this process has
    compiled because numba's cache did not hold them, or had compiled by the processes
    ``ecs_nav.compile.precompile`` started for it."""
    return _clock.compiled


def count_compiled_elsewhere(count: int) -> None:
    """Add ``count`` kernels that processes started for this one compiled into numba's cache
    (``ecs_nav.compile.precompile``) to ``kernels_compiled``."""
    _clock.compiled += count


def progress(text: str) -> None:
    """Print ``text`` as progress, when ``report_progress`` is on."""
    if _clock.reporting:
        _write(text)


def report_progress(enabled: bool, stream: TextIO | None = None) -> None:
    """From now on (``enabled``) or no longer, print a progress line for each kernel compiled, to
    ``stream`` or else to whatever ``sys.stderr`` is at the time. Quiet while kernels load from
    the cache."""
    watch()
    _clock.reporting = enabled
    _clock.stream = stream


def _write(text: str) -> None:
    stream = _clock.stream or sys.stderr
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # a closed or broken stream must not break the compile
        pass


def _kernel_name(event) -> str:
    dispatcher = event.data.get("dispatcher") if isinstance(event.data, dict) else None
    func = getattr(dispatcher, "py_func", None)
    if func is None:
        return "a kernel"
    module = func.__module__.removeprefix("ecs_nav.")
    return f"{module}.{func.__name__}"


def watch() -> None:
    """Start counting (imports numba; idempotent)."""
    if _clock.installed:
        return
    from numba.core import event

    class LockListener(event.Listener):
        def on_start(self, ev) -> None:
            _clock.lock_depth += 1
            if _clock.lock_depth == 1:
                _clock.lock_started = time.perf_counter()

        def on_end(self, ev) -> None:
            _clock.lock_depth -= 1
            if _clock.lock_depth == 0:
                _clock.seconds += time.perf_counter() - _clock.lock_started

    class CompileListener(event.Listener):
        def on_start(self, ev) -> None:
            _clock.compile_depth += 1
            if _clock.compile_depth > 1:
                return
            _clock.compiled += 1
            _clock.compile_started = time.perf_counter()
            if _clock.reporting:
                _write(f"{PROGRESS_HEADER}: [{_clock.compiled}] {_kernel_name(ev)} ...")

        def on_end(self, ev) -> None:
            _clock.compile_depth -= 1
            if _clock.compile_depth == 0 and _clock.reporting:
                _write(f" {time.perf_counter() - _clock.compile_started:.1f} s\n")

    event.register("numba:compiler_lock", LockListener())
    event.register("numba:compile", CompileListener())
    _clock.installed = True
