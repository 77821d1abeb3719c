"""The CPUs this process may use: its affinity mask and a container's CPU quota, not only the
machine's count (``os.cpu_count``), which a container limited to two CPUs on a large host
overstates. A light module: the compile workers and the recording's writer process both ask it."""

from __future__ import annotations

import math
import os
from pathlib import Path


def usable_cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``, where there is one), at most
    what a container's quota allows (``cgroup_cpus``, rounded up); at least 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpus()
    if quota is not None:
        cpus = min(cpus, max(math.ceil(quota), 1))
    return max(cpus, 1)


def cgroup_cpus(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPUs a container's CPU quota allows (Linux cgroup v2 ``cpu.max``, else v1
    ``cpu/cpu.cfs_quota_us`` over ``cpu.cfs_period_us``), or None when there is no quota (the
    CPU affinity mask, what ``os.sched_getaffinity`` reads, does not show one)."""
    try:
        text = (root / "cpu.max").read_text().split()
        quota, period = (None, None) if text[0] == "max" else (int(text[0]), int(text[1]))
    except (OSError, ValueError, IndexError):
        try:
            quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
            period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            return None
        if quota <= 0:  # -1: none
            return None
    if quota is None or not period or period <= 0:
        return None
    return quota / period
