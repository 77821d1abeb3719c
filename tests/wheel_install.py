"""Building the project's wheel and installing it where the checkout is not (shared by the
wheel tests: tests/test_cli.py, tests/test_installed_kit.py)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

NETWORK_ERRORS = ("NewConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "Max retries exceeded",
                  "Temporary failure in name resolution", "Name or service not known", "Network is unreachable",
                  "Connection refused", "ProxyError")
"""What pip prints when it cannot reach the package index."""


def skip_if_index_unreachable(proc: subprocess.CompletedProcess, doing: str) -> None:
    """Skip the test, saying why, when ``proc`` (a pip run) failed for want of the package index."""
    if proc.returncode != 0 and any(marker in proc.stderr for marker in NETWORK_ERRORS):
        pytest.skip(f"{doing} needs the package index, which is unreachable: {proc.stderr.strip().splitlines()[-1:]}")


def build_wheel(folder: Path) -> Path:
    """The project's wheel, built into ``folder`` (pip fetches the build backend from the index).
    Where every part of the checkout's library of kernels compiled ahead of time is what a build
    would write (``aot_build.current_library``), the wheel carries them, as a user's does: the
    build copies them in seconds. Else the wheel is built without one (``ECS_NAV_AOT=0``), not
    compiled again for a minute; its kernels then compile on first use.
    setuptools copies into the checkout's build/lib and never removes what a package layout no
    longer has, so a stale build/lib (an older layout) is cleared first: build/ is generated."""
    import numpy

    from ecs_nav.compile import aot_build
    try:
        current = aot_build.current_library()
    except aot_build.BuildError:
        current = None
    # the isolated build's numpy pinned to this one: its reuse check then agrees with this one
    # (pip 26.2 and later apply only PIP_BUILD_CONSTRAINT to a build's own environment)
    constraints = folder.parent / f"{folder.name}-constraints.txt"
    constraints.write_text(f"numpy=={numpy.__version__}\n", encoding="utf-8")
    env = {**os.environ, "ECS_NAV_AOT": "1" if current is not None else "0", "PIP_CONSTRAINT": str(constraints),
           "PIP_BUILD_CONSTRAINT": str(constraints)}  # fmt: skip
    (ROOT / "build").mkdir(exist_ok=True)
    # one build at a time (another test session's, say): they share build/lib
    with open(ROOT / "build" / ".wheel-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for built in (ROOT / "build").glob("lib*"):  # (build/lib, and build/lib.<platform> of extensions)
            shutil.rmtree(built, ignore_errors=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(ROOT)],
                              capture_output=True, text=True, env=env)
    skip_if_index_unreachable(proc, "building a wheel (setuptools)")
    assert proc.returncode == 0, proc.stderr
    (wheel,) = folder.glob("ecs_nav-*.whl")
    return wheel
