"""CPU time per system, for the benchmarks: ``world.timings_ms`` is wall time, which other jobs
on a shared machine inflate (one system's wall figure doubled between two runs here)."""

from __future__ import annotations

import time


def cpu_per_system(world) -> dict[str, float]:
    """CPU ms each system's ``update`` has used, by name, kept up to date from now on (its
    warm-up included: compare ticks after the first). ``world.timings_ms`` is wall time, which
    other jobs on a shared machine inflate."""
    used = {}
    for system in world.systems:
        used[system.name] = 0.0

        def timed(w, update=system.update, name=system.name):
            start = time.process_time()
            try:
                update(w)
            finally:
                used[name] += (time.process_time() - start) * 1000.0

        system.update = timed
    return used
