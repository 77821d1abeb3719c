"""The kernels compiled ahead of time (ecs_nav.compile.aot, ecs_nav.compile.aot_build): the library answers the
calls it holds, numba compiles the rest, and the built-in scenes run the same bit for bit with
and without it (all of them with ``ECS_NAV_SOAK=1``: see ``COMPARED``).

The library is built when the package is installed (``pip install -e .``, which ``make`` runs).
Where it is missing or out of date the tests that need it skip and say so; CI sets
``ECS_NAV_EXPECT_AOT=1``, which makes them fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import pytest
from numba.core import types

from ecs_nav.compile import aot, aot_build
from ecs_nav.compile.aot_build import BuildError, manifest_entries
from ecs_nav.compile.manifest import dispatcher_of, signature_of
from ecs_nav.compile.watch import PROGRESS_HEADER
from ecs_nav.scene.files import builtin_scenes

ROOT = Path(__file__).resolve().parent.parent
SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
TICKS = 3600 if SOAK else 240


def needs_library() -> None:
    """Skip (or fail, under ``ECS_NAV_EXPECT_AOT=1``) when the library is not in use here."""
    entries = manifest_entries()
    for entry in entries:
        dispatcher_of(entry)  # (imports its module: the decorator attaches what the library holds)
    if not aot.library():
        why = ("the kernels compiled ahead of time are not installed or out of date here: `pip install -e .` or "
               "`ecs-nav compile --ahead` builds them")  # fmt: skip
        if os.environ.get("ECS_NAV_EXPECT_AOT") == "1":
            pytest.fail(why)
        pytest.skip(why)


def adder(name: str, amount: int):
    """A kernel no process has compiled, ``name(x) = x + amount`` (no cache)."""

    def add(x):
        return x + amount

    add.__name__ = add.__qualname__ = name
    return numba.njit(cache=False)(add)


def attach_stand_in(kernel, amount: int):
    """Attach a compiled ``x + amount`` for int64 to ``kernel``, as the library attaches its
    functions, and return it."""
    other = adder(f"{kernel.py_func.__name__}_stand_in", amount)
    other(1)
    stand_in = other.overloads[(types.int64,)].entry_point  # a compiled function, as the library's are
    aot.attach(kernel, (((types.int64,), stand_in),))
    return stand_in


def test_attached_versions_answer_their_types_and_numba_compiles_the_rest():
    plus_one = adder("plus_one", 1)
    attach_stand_in(plus_one, 2)
    assert plus_one(1) == 3  # the attached version answers its types ...
    assert plus_one.signatures == []  # ... and numba compiled nothing
    assert plus_one(1.5) == 2.5  # other types: numba compiles plus_one itself
    assert plus_one.signatures == [(types.float64,)]

    @numba.njit(cache=False)
    def calls_plus_one(x):
        return plus_one(x)

    assert calls_plus_one(1) == 2  # a kernel calling it links numba's version of the held types
    assert (types.int64,) in plus_one.overloads
    assert plus_one(1) == 3  # and calls from Python still get the attached one
    plus_one.recompile()  # (numba's empties the table)
    assert plus_one(1) == 3 and plus_one(1.5) == 2.5
    assert aot.holds(f"{__name__}.plus_one", (types.int64,))
    assert not aot.holds(f"{__name__}.plus_one", (types.float64,))


def test_the_compiled_version_of_a_call_is_the_one_its_dispatch_would_run():
    plus_three = adder("plus_three", 3)
    stand_in = attach_stand_in(plus_three, 4)
    assert aot.compiled_version(plus_three, (1,)) is stand_in  # the library's, for the types it holds
    assert plus_three.signatures == []
    as_float = aot.compiled_version(plus_three, (1.5,))  # other types: numba's, compiled now
    assert plus_three.signatures == [(types.float64,)]
    assert as_float is plus_three.overloads[(types.float64,)].entry_point
    assert as_float(1.5) == plus_three(1.5) == 4.5
    assert aot.compiled_version(plus_three, (2.5,)) is as_float  # compiled once
    assert aot.compiled_version(plus_three.py_func, (1,)) is plus_three.py_func  # numba's JIT disabled


def test_a_direct_call_checks_every_call_against_the_first_where_asked(monkeypatch):
    """``DirectCall`` calls the compiled version of its first call's types; where
    ``$ECS_NAV_CHECK_CALLS`` is 1 (the test suite's setting) a later call with another type is a
    TypeError naming the kernel and the argument, and without it nothing is checked. A new
    kernel object where the caller reads it (a spy) is looked up again."""
    import numpy as np

    @numba.njit
    def total(values, scale):
        return values.sum() * scale

    current = [total]
    monkeypatch.setenv(aot.CHECK_CALLS_VARIABLE, "1")
    checked = aot.DirectCall(lambda: current[0])
    assert checked(np.ones(3), 2.0) == 6.0
    assert checked(np.ones(5), 1.0) == 5.0  # the same types: other values and shapes
    with pytest.raises(TypeError, match=r"total: argument 0 is a array\(float64, 2d, C\)"):
        checked(np.ones((2, 2)), 1.0)
    with pytest.raises(TypeError, match="argument 0 is a readonly array"):
        checked(np.frombuffer(bytes(24)), 1.0)  # (three float64 zeros, read-only)
    current[0] = lambda values, scale: -1.0  # (a spy where the caller reads the kernel)
    assert checked(np.ones((2, 2)), 1.0) == -1.0
    monkeypatch.setenv(aot.CHECK_CALLS_VARIABLE, "0")
    unchecked = aot.DirectCall(lambda: total)
    assert unchecked(np.ones(3), 2.0) == 6.0
    assert unchecked(np.arange(3.0), 1) == 3.0  # an int handed to a float: converted, not checked


def test_every_kernel_of_the_manifest_is_answered_by_the_library():
    needs_library()
    for entry in manifest_entries():
        assert aot.holds(entry.kernel, signature_of(entry)), entry.kernel


def test_the_build_requires_the_numba_the_manifest_was_recorded_with():
    try:
        import tomllib
    except ModuleNotFoundError:  # (Python 3.10)
        import tomli as tomllib

    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    recorded = json.loads((ROOT / "ecs_nav" / "compile" / "kernel_manifest.json").read_text())["numba"]
    assert f"numba=={recorded}" in requires


def test_the_build_refuses_a_kernel_option_its_export_would_drop():
    from ecs_nav.compile.aot_build import unexported_options

    def twice(x):
        return x * 2.0

    assert unexported_options(numba.njit(cache=False)(twice)) == []
    assert unexported_options(numba.njit(cache=False, inline="always", _nrt=False)(twice)) == []
    assert unexported_options(numba.njit(cache=False, fastmath=True)(twice)) == ["fastmath"]
    assert unexported_options(numba.njit(cache=False, boundscheck=True)(twice)) == ["boundscheck"]
    assert unexported_options(numba.njit(cache=False, error_model="numpy")(twice)) == ["error_model"]
    assert unexported_options(numba.njit(cache=False, locals={"x": numba.float32})(twice)) == ["locals"]


COMPARED = builtin_scenes() if SOAK else [s for s in builtin_scenes() if s not in ("evacuation", "platformer")]
"""The scenes run without the library too (numba compiles every kernel they call on a clean
clone: about 100 s of CPU for all, 70 without these two; the platformer's kernels without the
library are compared with this process's for a tick in tests/test_precompile.py)."""


def scene_digests(env: dict[str, str], ticks: int, scenes: list[str]) -> tuple[dict[str, str], int]:
    """Each scene's state digest after ``ticks`` ticks, in a new process that fails on an
    ``AotWarning``: (digests, how many kernels the library answered there)."""
    code = ("import json, sys, warnings\nfrom ecs_nav import load_scene\nfrom ecs_nav.compile import aot\n"
            "warnings.simplefilter('error', aot.AotWarning)  # (before any kernel is decorated)\n"
            "ticks = int(sys.argv[1]); digests = {}\n"
            "for name in sys.argv[2:]:\n"
            "    world = load_scene(name); world.run(ticks); digests[name] = world.state_digest()\n"
            "print(json.dumps([digests, len(aot.attached())]))")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, str(ticks), *scenes], capture_output=True, text=True, env=env,
                          cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    digests, answered = json.loads(proc.stdout)
    return digests, answered


def test_the_built_in_scenes_run_the_same_with_and_without_the_library():
    needs_library()
    with_library, answered = scene_digests(dict(os.environ), TICKS, builtin_scenes())
    compiled, none = scene_digests({**os.environ, aot.AOT_VARIABLE: "0"}, TICKS, COMPARED)
    assert answered == len({entry.kernel for entry in manifest_entries()}) and none == 0
    assert set(with_library) == set(builtin_scenes())
    assert {name: with_library[name] for name in COMPARED} == compiled


FIRST_RUNS = """
import sys
from ecs_nav.cli import main
for scene in sys.argv[1:]:  # (one process: each run's start is not what is tested)
    print(scene, file=sys.stderr)
    assert main(["run", scene, "--headless", "--ticks", "120", "--json"]) == 0, scene
"""


def test_a_first_run_on_an_empty_numba_cache_compiles_nothing(tmp_path):
    needs_library()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", FIRST_RUNS, *builtin_scenes()], capture_output=True, text=True,
                          env=env, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.split() == builtin_scenes(), proc.stderr  # no progress, nothing "compiled"
    assert PROGRESS_HEADER not in proc.stderr and "compiled" not in proc.stderr, proc.stderr
    assert not list((tmp_path / "numba").rglob("*.nbi")), "numba compiled a kernel the library holds"


def test_an_index_that_does_not_match_what_is_installed_is_said(tmp_path):
    source = tmp_path / "kernels.py"
    source.write_text("x = 1\n")
    physics = aot.source_digest(aot.PACKAGE_DIR / "motion" / "physics.py")
    index = {"numba": numba.__version__, "numpy": aot.numpy_release(), "sources": {"motion/physics.py": physics},
             "kernels": []}  # fmt: skip
    assert aot.mismatch(index) is None
    assert aot.mismatch({**index, "numba": "0.1"}) == (f"it was built with numba 0.1, and numba {numba.__version__} "
                                                        "is installed")  # fmt: skip
    assert aot.mismatch({**index, "sources": {"motion/physics.py": aot.source_digest(source)}}) == \
        "motion/physics.py changed since it was built"
    assert aot.mismatch({**index, "sources": {"gone.py": "0" * 64}}) == "gone.py changed since it was built"


def test_a_library_of_another_numpy_or_under_numba_debugging_is_not_used(monkeypatch):
    index = {"numba": numba.__version__, "numpy": aot.numpy_release(), "sources": {}, "kernels": []}
    assert aot.mismatch(index) is None
    assert aot.mismatch({**index, "numpy": "1.26"}) == (f"it was built with numpy 1.26, and numpy "
                                                       f"{aot.numpy_release()} is installed")  # fmt: skip
    monkeypatch.setattr(numba.config, "BOUNDSCHECK", 1)
    assert aot.mismatch(index) == "it was compiled without numba's debugging settings, and NUMBA_BOUNDSCHECK is set"


def test_a_library_for_a_cpu_level_this_cpu_lacks_is_said(monkeypatch):
    import llvmlite.binding as llvm

    index = {"numba": numba.__version__, "numpy": aot.numpy_release(), "cpu": aot.X86_64_V3, "sources": {},
             "kernels": []}  # fmt: skip
    without_avx2 = {feature: True for feature in aot.X86_64_V3_FEATURES} | {"avx2": False, "fma": False}
    monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: without_avx2)
    assert aot.mismatch(index) == "it was compiled for x86-64-v3, and this CPU lacks avx2, fma"
    assert aot.mismatch({**index, "cpu": ""}) is None  # the baseline runs anywhere
    assert aot.cpu_level() == ""  # and is what a build on this CPU would use
    monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: dict.fromkeys(aot.X86_64_V3_FEATURES, True))
    assert aot.mismatch(index) is None


def test_not_used_warns_with_the_reason_and_the_remedy():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        aot.not_used("motion/physics.py changed since it was built")
    assert [w.category for w in caught] == [aot.AotWarning]
    assert "motion/physics.py changed since it was built" in str(caught[0].message)
    assert "ecs-nav compile --ahead" in str(caught[0].message)


def test_the_build_refuses_a_manifest_of_another_numba(monkeypatch):
    monkeypatch.setattr("ecs_nav.compile.aot_build.read_manifest", lambda: {"numba": "0.1", "scenes": {}})
    with pytest.raises(BuildError, match="recorded with numba 0.1"):
        manifest_entries()
    monkeypatch.setattr("ecs_nav.compile.aot_build.read_manifest", lambda: None)
    with pytest.raises(BuildError, match="no kernel manifest"):
        manifest_entries()


def test_compile_ahead_names_no_scene():
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.cli", "compile", "--ahead", "chase"], capture_output=True,
                          text=True, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 2
    assert "name no scene" in proc.stderr


def test_ecs_nav_compile_has_nothing_to_do_where_the_library_answers():
    needs_library()
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.cli", "compile"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "nothing to compile" in proc.stdout


def test_a_read_only_install_with_the_library_compiles_nothing_and_writes_nothing(tmp_path):
    from test_cold_start import read_only_copy

    needs_library()
    site = read_only_copy(tmp_path)  # (the library's file is copied with the package)
    user_cache = tmp_path / "user-cache"
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(user_cache), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("NUMBA_CACHE_DIR", None)
    try:
        code = ("import sys, warnings\nfrom ecs_nav.compile import aot\n"
                "warnings.simplefilter('error', aot.AotWarning)\n"
                "from ecs_nav.cli import main\n"
                "sys.exit(main(['run', 'chase', '--headless', '--ticks', '60', '--json']))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "AotWarning" not in proc.stderr
        assert PROGRESS_HEADER not in proc.stderr and "compiled" not in proc.stderr
        assert not list(user_cache.rglob("*.nbi")), "numba compiled a kernel the library holds"
    finally:
        for path in site.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)


def test_a_build_with_reuse_copies_the_library_built_from_these_sources_and_nothing_else(tmp_path, monkeypatch):
    needs_library()
    entries = manifest_entries()
    current = aot_build.reusable_library(entries)
    assert current is not None and current.parent == aot.PACKAGE_DIR
    # another kernel list, another CPU level or a changed source is built, not copied
    assert aot_build.reusable_library(entries[:-1]) is None
    assert aot_build.reusable_library(entries[::-1]) is None
    with monkeypatch.context() as patch:
        patch.setattr(aot_build, "cpu_level", lambda: "" if aot.cpu_level() else aot.X86_64_V3)
        assert aot_build.reusable_library(entries) is None
    with monkeypatch.context() as patch:
        patch.setattr(aot_build, "mismatch", lambda index: "motion/physics.py changed since it was built")
        assert aot_build.reusable_library(entries) is None

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.compile.aot_build", str(tmp_path / "out"), "--reuse"],
                          capture_output=True, text=True, cwd=ROOT, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "copied" in proc.stderr and "compiling" not in proc.stderr
    copied = tmp_path / "out" / current.name
    assert copied.read_bytes() == current.read_bytes()
    assert [p.name for p in (tmp_path / "out").iterdir()] == [current.name]  # (no scratch folder left)
    assert aot_build.copy_library(current, current.parent) == current  # (onto itself: left as it is)
    bad = subprocess.run([sys.executable, "-m", "ecs_nav.compile.aot_build", "--reuse"], capture_output=True, text=True,
                         cwd=ROOT)  # fmt: skip
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_the_wheel_carries_the_current_library_copied_not_compiled_again(ecs_nav_wheel):
    import zipfile

    needs_library()
    current = aot_build.reusable_library(manifest_entries())
    assert current is not None
    held = zipfile.ZipFile(ecs_nav_wheel).read(f"ecs_nav/{current.name}")
    assert held == current.read_bytes()
