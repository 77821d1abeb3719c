"""A first run compiles a built-in scene's kernels in parallel processes before the scene loads.

numba compiles one kernel at a time in a process (under its global compiler lock), so on an
empty cache a scene waits for every kernel in turn: about 50 CPU s for the chase scene on the
2-core machine of ``bench/RESULTS.md`` (its first-run table, one process). When
``kernel_manifest`` lists the scene's kernels and their argument types, ``precompile_scene``
splits them between this process and up to ``workers`` others (``compile_split``: by the
compile seconds recorded for each kernel and helper, kernels sharing costly helpers together, a
function compiled for several sets of argument types all in one process), each compiling its
share into numba's cache at the same time; the scene then loads every kernel from the cache.
The compiled code is the same whichever process compiled it, so runs stay bit for bit the same.
``precompile_scenes`` does the same for several scenes' kernels at once (``ecs-nav compile``:
the cache filled before any first run).

It costs nothing when the cache already holds the kernels: they are compiled here one group
at a time, cheapest first, which loads them from the cache as the scene would, until one is
not there; the rest are then compiled in parallel (a scene that shares kernels with another
that ran before loads those it meets first; any met later load in the process they fall to). It
also does nothing for a scene the manifest does not list, for kernels the library of kernels
compiled ahead of time answers (``ecs_nav.compile.aot``: with it, nothing), for a manifest of another numba
release, on one CPU, in a frozen app (its executable is not a Python to start), with numba's
JIT disabled, or with ``ECS_NAV_COMPILE_WORKERS=0``. Whatever fails here (a worker, a
manifest older than a kernel) costs only time: what was not compiled compiles on first use, as
without this module.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ecs_nav.compile import aot
from ecs_nav.compile.manifest import KernelEntry, dispatcher_of, scene_entries, signature_of
from ecs_nav.compile.split import shares, units
from ecs_nav.compile.watch import PROGRESS_HEADER, count_compiled_elsewhere, kernels_compiled, progress, watch
from ecs_nav.cpus import usable_cpus

WORKERS_VARIABLE = "ECS_NAV_COMPILE_WORKERS"
MAX_WORKERS = 7
WORKER_TIMEOUT_S = 600.0
# a worker's program: this ecs_nav's folder on the path where ``python -c`` puts the current
# folder (a folder whose files could shadow ecs_nav or the standard library)
_WORKER = ("import sys; sys.path[0] = sys.argv[1]; import ecs_nav.compile.precompile as p; "
           "sys.exit(p.main(sys.argv[2:]))")


class PrecompileReport(NamedTuple):
    """What ``precompile_scene`` did: kernels compiled here and in the workers (cache loads not
    counted), and the processes started (0 when it did nothing)."""

    compiled_here: int
    compiled_by_workers: int
    workers: int


NOTHING = PrecompileReport(0, 0, 0)


def worker_count() -> int:
    """Processes to start beside this one: ``$ECS_NAV_COMPILE_WORKERS``, else one fewer than the
    CPUs this process may use (``ecs_nav.cpus.usable_cpus``),
    at most ``MAX_WORKERS``.

    Raises:
        ValueError: the variable is set to something other than a whole number."""
    value = os.environ.get(WORKERS_VARIABLE, "").strip()
    if value:
        try:
            return max(int(value), 0)
        except ValueError:
            raise ValueError(f"{WORKERS_VARIABLE}: expected a whole number of processes, got {value!r}") from None
    return min(usable_cpus() - 1, MAX_WORKERS)


def compile_entries(entries: Sequence[KernelEntry]) -> int:
    """Compile (or load from numba's cache) each entry in this process; returns how many were
    compiled (not loaded from the cache, not failed). An entry that does not compile (a manifest
    older than a change to the kernel) is left to compile on first use."""
    compiled = 0
    for entry in entries:
        before = kernels_compiled()
        try:
            dispatcher_of(entry).compile(signature_of(entry))
        except Exception:  # the kernel's first call compiles it and says what is wrong
            continue
        compiled += kernels_compiled() > before
    return compiled


def precompile_scene(scene: str, workers: int | None = None) -> PrecompileReport:
    """Compile built-in ``scene``'s kernels in this process and ``workers`` others (default
    ``worker_count()``) when numba's cache lacks them (see the module doc). Whatever goes wrong
    here only means the kernels compile on first use (said on the progress stream).

    Raises:
        ValueError: ``$ECS_NAV_COMPILE_WORKERS`` is not a whole number."""
    return precompile_scenes([scene], workers)


def precompile_scenes(scenes: Sequence[str], workers: int | None = None) -> PrecompileReport:
    """``precompile_scene`` for the kernels of several built-in scenes at once (each kernel
    once, ``scene_entries``): ``ecs-nav compile`` fills numba's cache this way before a first
    run (docs: guide/install.md says where numba then reads that cache: the same user, path and CPU)."""
    workers = worker_count() if workers is None else workers
    if workers < 1 or getattr(sys, "frozen", False):  # (a frozen app's executable is not python)
        return NOTHING
    try:
        return _precompile(list(scenes), workers)
    except Exception as exc:  # a first run that compiles one kernel at a time still runs
        progress(f"{PROGRESS_HEADER}: not in parallel ({type(exc).__name__}: {exc}); kernels compile on first use\n")
        return NOTHING


def _precompile(scenes: list[str], workers: int) -> PrecompileReport:
    from numba import config

    if config.DISABLE_JIT:
        return NOTHING
    entries = scene_entries(scenes)
    missing = [e for e in entries if signature_of(e) not in dispatcher_of(e).overloads  # (imports its module)
               and not aot.holds(e.kernel, signature_of(e))]  # fmt: skip
    groups = sorted(units(missing), key=lambda g: (sum(max(e.seconds_alone, e.seconds) for e in g), g[0].kernel))
    if len(groups) < 2:  # (one group compiles in one process)
        return NOTHING
    # The probes: the groups cheapest first, until one compiles (the cache lacks it: the rest are
    # compiled in parallel). A group loaded from the cache is one the scene loads anyway.
    watch()  # counts the compilations
    here = probed = 0
    while here == 0:
        if probed == len(groups):
            return NOTHING
        here = compile_entries(groups[probed])
        probed += 1
    groups = groups[probed:]
    rest = [e for g in groups for e in g]
    workers = min(workers, len(groups) - 1)
    if workers < 1:
        return PrecompileReport(here + compile_entries(rest), 0, 0)
    own, *theirs = shares(rest, workers + 1)
    theirs = [share for share in theirs if share]  # (a process with nothing to compile is not started)
    progress(f"{PROGRESS_HEADER}: {len(rest)} more for {', '.join(scenes)} in {len(theirs) + 1} processes\n")
    index = {entry: k for k, entry in enumerate(entries)}
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    procs: list[subprocess.Popen] = []
    try:
        for share in theirs:
            procs.append(start_worker(",".join(scenes), [index[e] for e in share]))
        here += compile_entries(own)
        done = sum(_wait(proc, deadline) for proc in procs)
    except BaseException:  # failed or interrupted: no process is left compiling for nobody
        for proc in procs:
            proc.kill()
        raise
    count_compiled_elsewhere(done)
    progress(f"{PROGRESS_HEADER}: {done} compiled in the other processes\n")
    return PrecompileReport(here, done, len(procs))


def _wait(proc: subprocess.Popen, deadline: float) -> int:
    """Wait (until ``deadline``, ``time.monotonic()``) for a worker: how many kernels it
    compiled, 0 when it failed."""
    try:
        out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err = f"no answer in {WORKER_TIMEOUT_S:.0f} s"
    last_line = (out or "").strip().rpartition("\n")[2].strip()  # (numba's debug output may come before it)
    if proc.returncode == 0 and last_line.isdigit():
        return int(last_line)
    last = (err or "").strip().splitlines()[-1:] or ["no message"]
    progress(f"a compile worker failed ({last[0][:200]}); its kernels compile on first use\n")
    return 0


def start_worker(scenes: str, share: list[int]) -> subprocess.Popen:
    """A process compiling the entries ``share`` (positions in ``scene_entries`` of the scenes
    named in ``scenes``, joined by commas) into numba's cache, with this process's environment
    and its ecs_nav: the folder above the package as this process imported it (no link resolved:
    numba's cache folders are named by the source's path) goes first on the worker's path, before
    the current folder."""
    root = str(Path(__file__).parents[2])
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, root, scenes, *map(str, share)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env={**os.environ, WORKERS_VARIABLE: "0"},
    )


def main(argv: list[str]) -> int:
    """A worker: ``SCENE[,SCENE...] K...`` compiles the entries at positions K of
    ``scene_entries`` of those scenes and prints how many kernels it compiled (cache loads not
    counted)."""
    entries = scene_entries(argv[0].split(","))
    watch()
    print(compile_entries([entries[int(k)] for k in argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
