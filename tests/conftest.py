"""Shared fixtures: where the Moving AI benchmark maps live, an offscreen OpenGL window; the
hypothesis profile."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# `make test` and CI replay the same examples every run (a red run can be re-run and debugged);
# ECS_NAV_SOAK=1 explores new ones
settings.register_profile("ecs_nav", derandomize=os.environ.get("ECS_NAV_SOAK") != "1")
settings.load_profile("ecs_nav")

# Tests run in parallel already (pytest -n): a cold built-in scene does not start compile
# processes of its own (ecs_nav.compile.precompile) unless a test asks for them
os.environ.setdefault("ECS_NAV_COMPILE_WORKERS", "0")

# every call of a kernel through its compiled version, without numba's dispatch, is checked to
# hand the types of its first (ecs_nav.compile.aot.checking_calls, read at a kernel's first such call)
os.environ.setdefault("ECS_NAV_CHECK_CALLS", "1")

# the testing kit's fixtures (nav_world, make_nav_world, ascii_map): an installed ecs-nav brings
# them through its pytest11 entry point; a checkout that is not installed gets them here
pytest_plugins = ["ecs_nav.testing.plugin"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def maps_dir() -> Path | None:
    """The Moving AI maps folder: $ECS_NAV_MAPS, else ../shared/maps beside the project."""
    path = Path(os.environ.get("ECS_NAV_MAPS", PROJECT_ROOT.parent / "shared" / "maps"))
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def ecs_nav_wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once per test session, for every pytest-xdist worker of it
    (skips when the index is unreachable)."""
    import fcntl

    from wheel_install import build_wheel

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build_wheel(tmp_path_factory.mktemp("wheel"))
    shared = tmp_path_factory.getbasetemp().parent  # (this session's, above each worker's own)
    with open(shared / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted((shared / "wheel").glob("ecs_nav-*.whl"))
        return built[0] if built else build_wheel(shared / "wheel")


@pytest.fixture
def movingai_dir() -> Path:
    path = maps_dir()
    if path is None:
        pytest.skip("Moving AI maps not found: set ECS_NAV_MAPS or put them in ../shared/maps")
    return path


@pytest.fixture(scope="module")
def gl_window():
    """An offscreen window for rendering tests (skips where no OpenGL context can be made)."""
    import ecs_nav.systems.render as render

    try:
        return render.offscreen_window()
    except render.RenderUnavailable as exc:
        pytest.skip(f"no OpenGL context here: {exc}")
