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
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numba
import pytest
from numba.core import types

from ecs_nav.compile import aot, aot_build
from ecs_nav.compile.aot_build import BuildError, manifest_entries
from ecs_nav.compile.manifest import dispatcher_of, scene_entries, signature_of
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
    from ecs_nav.compile.aot_part import unexported_options

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
    monkeypatch.setattr("ecs_nav.compile.aot_part.read_manifest", lambda: {"numba": "0.1", "scenes": {}})
    with pytest.raises(BuildError, match="recorded with numba 0.1"):
        manifest_entries()
    monkeypatch.setattr("ecs_nav.compile.aot_part.read_manifest", lambda: None)
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


def test_a_build_keeps_the_current_parts_and_copies_them_elsewhere_compiling_nothing(tmp_path, monkeypatch):
    needs_library()
    parts = aot_build.plan(manifest_entries())
    current = aot_build.current_library()
    assert current is not None and [path.parent for path in current] == [aot.PACKAGE_DIR] * len(parts)
    # another kernel list, another CPU level or a changed source is built, not kept
    assert not aot_build.is_current(current[0], parts[0]._replace(entries=parts[0].entries[:-1]))
    assert not aot_build.is_current(current[0], parts[0]._replace(entries=parts[0].entries[::-1]))
    assert not aot_build.is_current(current[0], parts[1])
    with monkeypatch.context() as patch:
        patch.setattr(aot_build, "cpu_level", lambda: "" if aot.cpu_level() else aot.X86_64_V3)
        assert not aot_build.is_current(current[0], parts[0])
    with monkeypatch.context() as patch:
        patch.setattr(aot_build, "mismatch", lambda index: "motion/physics.py changed since it was built")
        assert not aot_build.is_current(current[0], parts[0])

    out = tmp_path / "out"
    out.mkdir()
    stale = [out / f"{aot.LIBRARY}_{len(parts) + 1}{suffix}" for suffix in EXTENSION_SUFFIXES[:1]] + \
        [out / f"{aot.LIBRARY}{EXTENSION_SUFFIXES[0]}", out / "aot_kernels_notes.txt"]  # fmt: skip
    for path in stale:
        path.write_bytes(b"not a part of this build")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    build = [sys.executable, "-m", "ecs_nav.compile.aot_build", str(out)]
    proc = subprocess.run([*build, "--scenes", "chase"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "compiling" not in proc.stderr and proc.stderr.count("copied") == 2, proc.stderr  # the chase scene's two
    assert sorted(p.name for p in out.iterdir()) == sorted([current[0].name, current[1].name, "aot_kernels_notes.txt"])
    proc = subprocess.run(build, capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "compiling" not in proc.stderr and proc.stderr.count("copied") == len(parts) - 2, proc.stderr
    for path in current:
        assert (out / path.name).read_bytes() == path.read_bytes()
    assert aot_build.copy_library(current[0], current[0].parent) == current[0]  # (onto itself: left as it is)
    for bad in (["--scenes", "chese"], ["--processes", "two"]):
        proc = subprocess.run([*build, *bad], capture_output=True, text=True, cwd=ROOT, env=env)
        assert proc.returncode in (1, 2) and ("chese" in proc.stderr or "usage" in proc.stderr), proc.stderr


def test_the_wheel_carries_the_current_library_copied_not_compiled_again(ecs_nav_wheel):
    import zipfile

    needs_library()
    current = aot_build.current_library()
    assert current is not None
    wheel = zipfile.ZipFile(ecs_nav_wheel)
    for path in current:
        assert wheel.read(f"ecs_nav/{path.name}") == path.read_bytes()
    assert not [name for name in wheel.namelist() if ".aot-build-" in name]


def test_the_parts_hold_every_kernel_once_the_demo_scenes_first_each_stage_balanced():
    entries = manifest_entries()
    parts = aot_build.plan(entries)
    assert aot_build.plan(entries) == parts  # the same every time: what a build can keep
    assert [part.number for part in parts] == list(range(1, len(parts) + 1))
    held = [(e.kernel, e.signature) for part in parts for e in part.entries]
    assert sorted(held) == sorted((e.kernel, e.signature) for e in entries)  # each once
    chase = {(e.kernel, e.signature) for e in scene_entries(list(aot_build.FIRST_SCENES))}
    first = [part for part in parts if {(e.kernel, e.signature) for e in part.entries} & chase]
    assert first == parts[: aot_build.PARTS_PER_STAGE]
    assert {(e.kernel, e.signature) for part in first for e in part.entries} == chase
    # the two costliest of the demo scene's kernels (with their helpers) compile side by side
    costliest = sorted(scene_entries(list(aot_build.FIRST_SCENES)), key=lambda e: -e.seconds_alone)[:2]
    assert [next(p.number for p in parts if e in p.entries) for e in costliest] in ([1, 2], [2, 1])


def test_a_plan_splits_a_function_of_two_signatures_where_that_finishes_sooner():
    from ecs_nav.compile.manifest import KernelEntry
    from ecs_nav.compile.split import shares

    def entry(name: str, signature: str, seconds: float) -> KernelEntry:
        return KernelEntry(f"m.{name}", signature, "", seconds, seconds_alone=seconds)

    # f is compiled for two sets of argument types: the first-run split keeps them in one process
    # (numba's cache index is shared), the library's build need not (a numba cache a process)
    f1, f2, g, h = entry("f", "(int64,)", 5.0), entry("f", "(float64,)", 5.0), entry("g", "(int64,)", 4.0), \
        entry("h", "(int64,)", 1.0)  # fmt: skip
    parts = aot_build.plan([f1, f2, g, h], first=[])
    assert [sum(e.kernel == "m.f" for e in part.entries) for part in parts] == [1, 1]
    assert max(aot_build.part_seconds(part) for part in parts) == 9.0  # 5 + 4 | 5 + 1: none finishes sooner
    jit = shares([f1, f2, g, h], 2, start_s=0.0)
    assert max(sum(e.seconds for e in share) for share in jit) == 10.0  # f's two together
    staged = aot_build.plan([f1, f2, g, h], first=[g])
    assert staged[0].entries == (g,) and sorted(len(part.entries) for part in staged[1:]) == [1, 2]


def test_the_library_is_every_part_that_matches_and_a_part_that_does_not_is_named(monkeypatch):
    import importlib
    import types as namespaces

    import numpy as np

    def part(index: dict, **exports) -> namespaces.SimpleNamespace:
        payload = np.frombuffer(json.dumps(index).encode(), np.uint8)
        return namespaces.SimpleNamespace(index=lambda: payload.copy(), **exports)

    index = {"numba": numba.__version__, "numpy": aot.numpy_release(), "sources": {},
             "kernels": [{"kernel": "m.f", "export": "k000", "signature_pickle": "F"}]}  # fmt: skip
    parts = {"ecs_nav.aot_kernels_1": part(index, k000=len),
             "ecs_nav.aot_kernels_2": part({**index, "numba": "0.1"}, k000=abs),
             "ecs_nav.aot_kernels_3": part({**index, "kernels": [{"kernel": "m.g", "export": "k000",
                                                                  "signature_pickle": "G"}]}, k000=max)}  # fmt: skip
    monkeypatch.setenv(aot.AOT_VARIABLE, "1")
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name, package=None: parts.get(name) or real(name, package))
    monkeypatch.setattr(aot, "part_paths", lambda folder=aot.PACKAGE_DIR: {n.partition(".")[2]: Path(n) for n in parts})
    aot.library.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found = aot.library()
    finally:
        aot.library.cache_clear()  # (read again, as installed, where asked next)
    assert found == {"m.f": (("F", len),), "m.g": (("G", max),)}
    assert [w.category for w in caught] == [aot.AotWarning]
    assert f"it was built with numba 0.1, and numba {numba.__version__} is installed (aot_kernels_2)" in \
        str(caught[0].message)  # fmt: skip


def test_parts_compile_side_by_side_saying_how_far_they_are_and_link_one_runtime(tmp_path, monkeypatch, capfd):
    import importlib.util

    import numpy as np

    from ecs_nav.compile.aot_part import short_name

    picked = ("ecs_nav.platformer.level.tile_at", "ecs_nav.platformer.level.is_ground",
              "ecs_nav.motion.arrival._count_still")  # (three that compile in about a second)
    entries = [e for e in manifest_entries() if e.kernel in picked]
    parts = [aot_build.Part(1, tuple(entries[:2])), aot_build.Part(2, tuple(entries[2:]))]
    monkeypatch.setenv(aot.AOT_VARIABLE, "0")  # (as the build's own command sets it)
    try:
        written = aot_build.build_parts(tmp_path, parts, 2, 2)
    except BuildError as exc:  # (no C compiler or Python headers here)
        if os.environ.get("ECS_NAV_EXPECT_AOT") == "1":
            raise
        pytest.skip(f"numba.pycc cannot build here: {exc}")
    err = capfd.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)  # (no scratch left)
    for part in parts:
        path = aot.part_paths(tmp_path)[part.name]
        assert aot_build.is_current(path, part)
        for k, entry in enumerate(part.entries, 1):
            assert f"ecs_nav: part {part.number}/2: kernel {k}/{len(part.entries)} {short_name(entry.kernel)}\n" in err
    assert err.count("optimising and writing the machine code") == 2
    assert err.count("compiling the C runtime every part links") == 1, err
    assert err.count("parts compiled") == 2 and "2 of 2 parts compiled" in err

    holder = next(part for part in parts if any(e.kernel.endswith(".tile_at") for e in part.entries))
    path = aot.part_paths(tmp_path)[holder.name]  # the exported function answers as the kernel does
    spec = importlib.util.spec_from_file_location(f"ecs_nav.{holder.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    export = next(k["export"] for k in aot.part_index(module)["kernels"] if k["kernel"].endswith(".tile_at"))
    level = np.arange(12, dtype=np.uint8).reshape(3, 4)
    tile_at = dispatcher_of(next(e for e in entries if e.kernel.endswith(".tile_at")))
    for x, y in [(0, 0), (3, 2), (1, 1), (-1, 0), (4, 3)]:
        assert getattr(module, export)(level, x, y) == tile_at.py_func(level, x, y)
