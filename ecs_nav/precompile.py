"""A first run compiles a built-in scene's kernels in parallel processes before the scene loads.

numba compiles one kernel at a time in a process (under its global compiler lock), so on an
empty cache a scene waits for every kernel in turn: about 11 CPU s for the chase scene. When
``kernel_manifest`` lists the scene's kernels and their argument types, ``precompile_scene``
splits them between this process and up to ``workers`` others (by the compile seconds
recorded, largest first; a kernel's signatures in one process), each compiling its share into
numba's cache at the same time; the scene then loads every kernel from the cache. The compiled
code is the same whichever process compiled it, so runs stay bit for bit the same.

It does nothing (returns at once) when the cache already holds the kernels: one kernel is
compiled here first, and when that was a cache load the rest are left to load on first use. It
also does nothing for a scene the manifest does not list, for a manifest of another numba
release, on one CPU, in a frozen app (its executable is not a Python to start), or with
``ECS_NAV_COMPILE_WORKERS=0``. A worker that fails costs nothing but time: whatever it did not
compile compiles on first use, as without this module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ecs_nav.compile_watch import PROGRESS_HEADER, count_compiled_elsewhere, kernels_compiled, progress, watch
from ecs_nav.kernel_manifest import KernelEntry, dispatcher_of, entries_for, signature_of

WORKERS_VARIABLE = "ECS_NAV_COMPILE_WORKERS"
WORKER_TIMEOUT_S = 600.0


class PrecompileReport(NamedTuple):
    """What ``precompile_scene`` did: kernels compiled here and in the workers, and the
    processes used (0 when it did nothing)."""

    compiled_here: int
    compiled_by_workers: int
    workers: int


NOTHING = PrecompileReport(0, 0, 0)


def worker_count() -> int:
    """Processes to start beside this one: ``$ECS_NAV_COMPILE_WORKERS``, else one fewer than the
    CPUs this process may use."""
    value = os.environ.get(WORKERS_VARIABLE, "").strip()
    if value:
        try:
            return max(int(value), 0)
        except ValueError:
            raise ValueError(f"{WORKERS_VARIABLE}: expected a whole number of processes, got {value!r}") from None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus - 1


def by_kernel(entries: Sequence[KernelEntry]) -> list[list[KernelEntry]]:
    """``entries`` grouped by kernel, in their order. A kernel's signatures are compiled in one
    process: numba rewrites a kernel's cache index on each compile without a lock, so two
    processes saving signatures of one kernel at once could each drop the other's."""
    groups: dict[str, list[KernelEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.kernel, []).append(entry)
    return list(groups.values())


def shares(entries: Sequence[KernelEntry], parts: int) -> list[list[KernelEntry]]:
    """``entries`` split into ``parts`` lists of about equal recorded seconds, each kernel whole
    (``by_kernel``; largest first, each to the lightest list so far; the first list is this
    process's)."""
    bins: list[list[KernelEntry]] = [[] for _ in range(parts)]
    loads = [0.0] * parts
    for group in sorted(by_kernel(entries), key=lambda g: (-sum(e.seconds for e in g), g[0].kernel)):
        k = loads.index(min(loads))
        bins[k] += group
        loads[k] += sum(e.seconds for e in group)
    return bins


def compile_entries(entries: Sequence[KernelEntry]) -> int:
    """Compile (or load from numba's cache) each entry in this process; returns how many."""
    for entry in entries:
        dispatcher_of(entry).compile(signature_of(entry))
    return len(entries)


def precompile_scene(scene: str, workers: int | None = None) -> PrecompileReport:
    """Compile built-in ``scene``'s kernels in this process and ``workers`` others (default
    ``worker_count()``) when numba's cache lacks them (see the module doc)."""
    workers = worker_count() if workers is None else workers
    if workers < 1 or getattr(sys, "frozen", False):  # (a frozen app's executable is not python)
        return NOTHING
    entries = entries_for(scene)
    watch()  # counts the compilations (the probe's test)
    missing = [e for e in entries if signature_of(e) not in dispatcher_of(e).overloads]
    groups = by_kernel(missing)
    if len(groups) < 2:
        return NOTHING
    # The probe: the cheapest missing kernel. Loaded from the cache, it says the cache is warm.
    probe = min(groups, key=lambda g: sum(e.seconds for e in g))
    before = kernels_compiled()
    compile_entries(probe)
    if kernels_compiled() == before:
        return NOTHING
    rest = [e for g in groups if g is not probe for e in g]
    workers = min(workers, len(groups) - 2)
    if workers < 1:
        return PrecompileReport(len(probe) + compile_entries(rest), 0, 0)
    own, *theirs = shares(rest, workers + 1)
    progress(f"{PROGRESS_HEADER}: {len(missing)} for {scene} in {workers + 1} processes\n")
    index = {entry: k for k, entry in enumerate(entries)}
    procs = [_start_worker(scene, [index[e] for e in share]) for share in theirs]
    try:
        compiled_here = len(probe) + compile_entries(own)
        done = sum(_wait(proc, len(share)) for proc, share in zip(procs, theirs))
    except BaseException:  # interrupted: no process is left compiling for nobody
        for proc in procs:
            proc.kill()
        raise
    count_compiled_elsewhere(done)
    progress(f"{PROGRESS_HEADER}: {done} compiled in the other processes\n")
    return PrecompileReport(compiled_here, done, len(procs))


def _wait(proc: subprocess.Popen, count: int) -> int:
    """Wait for a worker compiling ``count`` entries; returns ``count``, or 0 when it failed."""
    try:
        _, err = proc.communicate(timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    if proc.returncode == 0:
        return count
    last = err.strip().splitlines()[-1:] or ["no message"]
    progress(f"a compile worker failed ({last[0][:200]}); its kernels compile on first use\n")
    return 0


def _start_worker(scene: str, share: list[int]) -> subprocess.Popen:
    """A process compiling the entries ``share`` (positions in ``entries_for(scene)``) with this
    process's ecs_nav (the folder above the package goes first on its path) and environment
    (numba's cache folder included)."""
    package_root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, WORKERS_VARIABLE: "0"}
    return subprocess.Popen(
        [sys.executable, "-m", "ecs_nav.precompile", scene, *map(str, share)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def main(argv: list[str]) -> int:
    """A worker: ``SCENE K...`` compiles the entries at positions K of ``entries_for(SCENE)``."""
    entries = entries_for(argv[0])
    compile_entries([entries[int(k)] for k in argv[1:]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
