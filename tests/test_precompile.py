"""A first run of a built-in scene compiles its kernels in parallel processes (ecs_nav.compile.precompile)
from the list in ecs_nav/compile/kernel_manifest.json: the list must be what the scenes use, the work
must be split so that the processes finish soonest, with no function compiled in two processes
for two signatures, a cold run must end with every kernel cached, the same trajectory, and
nothing compiled after it, and whatever fails in it (a worker, a stale manifest, numba's JIT
turned off) must cost only time.

Short form (default): the manifest checked for the chase scene, and cold runs of the platformer
scene (its 10 kernels, about 4 s of CPU). Full form (``ECS_NAV_SOAK=1``): every built-in scene's
manifest entries, and the chase scene cold.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_nav.compile.manifest import (
    MANIFEST_PATH,
    RECORD_TICKS,
    KernelEntry,
    dispatcher_of,
    entries_for,
    numba_version,
    read_manifest,
    scene_entries,
    signature_of,
)
from ecs_nav.compile.precompile import MAX_WORKERS, WORKERS_VARIABLE, worker_count
from ecs_nav.compile.split import WORKER_START_S, function_seconds, shares, units
from ecs_nav.compile.watch import PROGRESS_HEADER
from ecs_nav.cpus import cgroup_cpus, usable_cpus
from ecs_nav.scene.files import builtin_scenes, load_scene

ROOT = Path(__file__).resolve().parent.parent
SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
JIT_ONLY = {**os.environ, "ECS_NAV_AOT": "0"}
"""The environment of the processes here: without the kernels compiled ahead of time, which would
answer the calls whose compiling these tests watch (tests/test_aot.py tests the library)."""
COLD_SCENE = "chase" if SOAK else "platformer"


def test_shares_give_every_entry_once_keep_each_kernel_whole_and_balance_the_seconds():
    seconds = [1.9, 1.4, 1.3, 1.0, 0.9, 0.9, 0.7, 0.4, 0.3, 0.1, 0.1]
    entries = [KernelEntry(f"k{i}", f"({i},)", "", s) for i, s in enumerate(seconds)]
    entries += [KernelEntry("k3", "(99,)", "", 0.2)]  # a second signature of k3
    for parts in (1, 2, 3, 4):
        split = shares(entries, parts)
        assert len(split) == parts
        assert sorted(split_entries := [e for share in split for e in share]) == sorted(entries)
        assert len(split_entries) == len(entries)
        assert sum(any(e.kernel == "k3" for e in share) for share in split) == 1
        loads = [sum(e.seconds for e in share) + (k > 0) * WORKER_START_S for k, share in enumerate(split)]
        # no share exceeds another by more than the largest kernel
        assert max(loads) - min(loads) <= 1.9 + 1e-9
    assert [len(share) for share in shares(entries, 1)] == [len(entries)]
    two = [sum(e.seconds for e in share) + k * WORKER_START_S for k, share in enumerate(shares(entries, 2))]
    assert abs(two[0] - two[1]) <= 0.3 + 1e-9


def test_worker_count_comes_from_the_environment_or_the_cpus(monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "3")
    assert worker_count() == 3
    monkeypatch.setenv(WORKERS_VARIABLE, "0")
    assert worker_count() == 0
    monkeypatch.setenv(WORKERS_VARIABLE, "two")
    with pytest.raises(ValueError, match=WORKERS_VARIABLE):
        worker_count()
    monkeypatch.delenv(WORKERS_VARIABLE)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    quota = cgroup_cpus()
    if quota is not None:
        cpus = min(cpus, max(math.ceil(quota), 1))
    assert worker_count() == min(cpus - 1, MAX_WORKERS) and usable_cpus() == cpus


def test_the_usable_cpus_are_at_most_a_containers_quota_and_the_writer_process_asks_them(monkeypatch):
    """A container limited to 1.5 CPUs on a larger host: two CPUs to use, and a writer process
    starts only while the load leaves half of one of them idle."""
    from ecs_nav import cpus
    from ecs_nav.results import writer_process

    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(cpus, "cgroup_cpus", lambda: 1.5)
    assert cpus.usable_cpus() == 2
    monkeypatch.setattr(cpus, "cgroup_cpus", lambda: None)
    assert cpus.usable_cpus() == 64
    monkeypatch.setattr(writer_process, "usable_cpus", lambda: 2)
    for load, spare in ((1.0, True), (1.5, True), (1.6, False), (40.0, False)):
        monkeypatch.setattr(writer_process.os, "getloadavg", lambda load=load: (load, load, load))
        assert writer_process.spare_core() is spare, load


def test_a_containers_cpu_quota_is_read_from_cgroup_v2_or_v1(tmp_path):
    (tmp_path / "cpu.max").write_text("250000 100000\n")
    assert cgroup_cpus(tmp_path) == 2.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpus(tmp_path) is None
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpus(tmp_path) == 1.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpus(tmp_path) is None
    assert cgroup_cpus(tmp_path / "absent") is None


def test_kernels_sharing_helpers_gather_in_one_process():
    # p and q each cost 2.2 s alone, 2.0 of it the helper they share; r 2.0 s, no helpers
    p = KernelEntry("m.p", "()", "", 0.2, ("m.big (int64,)",), 2.2)
    q = KernelEntry("m.q", "()", "", 0.2, ("m.big (int64,)",), 2.2)
    r = KernelEntry("m.r", "()", "", 2.0)
    assert [[e.kernel for e in share] for share in shares([p, q, r], 2)] == [["m.p", "m.q"], ["m.r"]]


def test_units_keep_every_function_in_one_process():
    a = KernelEntry("m.a", "(x,)", "", 1.0, ("m.h (int64,)",))
    b = KernelEntry("m.b", "(y,)", "", 1.0, ("m.g (float64,)", "m.h (float64,)"))
    h = KernelEntry("m.h", "(bool,)", "", 0.5)  # also called from Python, with other types
    c = KernelEntry("m.c", "(z,)", "", 1.0, ("m.k (int64,)",))
    c2 = KernelEntry("m.c", "(w,)", "", 0.2)  # a second signature of c
    d = KernelEntry("m.d", "(z,)", "", 2.0)
    groups = sorted(sorted(e.kernel + e.signature for e in g) for g in units([a, b, h, c, c2, d]))
    assert groups == [["m.a(x,)", "m.b(y,)", "m.h(bool,)"], ["m.c(w,)", "m.c(z,)"], ["m.d(z,)"]]
    # {a, b, h} 2.5 s, {c, c2} 1.2 s, {d} 2.0 s; a worker starts WORKER_START_S (0.6 s) behind:
    # {c, c2, d} here (3.2 s) and {a, b, h} there (3.1 s) finish first
    split = shares([a, b, h, c, c2, d], 2)
    assert [sorted(e.kernel for e in share) for share in split] == [["m.c", "m.c", "m.d"], ["m.a", "m.b", "m.h"]]


def finishes(split: list[list[KernelEntry]]) -> tuple[int, ...]:
    """The processes' finishes in ms, the last first, then their total, worked out from scratch
    the way ``shares`` counts: every function once per process at the median of what the
    entries recorded for it, a worker WORKER_START_S behind."""
    recorded: dict[str, list[float]] = {}
    for e in (e for share in split for e in share):
        for function, seconds in function_seconds(e).items():
            recorded.setdefault(function, []).append(seconds)
    cost = {f: round(statistics.median(s) * 1000) for f, s in recorded.items()}
    done = []
    for k, share in enumerate(split):
        functions = {f for e in share for f in function_seconds(e)}
        done.append((k > 0) * round(WORKER_START_S * 1000) + sum(cost[f] for f in functions))
    return (*sorted(done, reverse=True), sum(done))


def random_kernels(rng: random.Random, count: int, pool: int = 6) -> list[KernelEntry]:
    """``count`` kernels drawing up to three helpers each from a pool of ``pool`` (shared helpers
    make the best split depend on which kernels sit together), some with a second signature."""
    helper = {f"m.h{i} (int64,)": round(rng.uniform(0.05, 1.5), 2) for i in range(pool)}
    entries = []
    for i in range(count):
        helpers = tuple(sorted(rng.sample(sorted(helper), rng.randint(0, 3))))
        own = round(rng.uniform(0.1, 2.0), 2)
        signature = "(float64,)" if i % 5 == 4 else "()"  # k4 and k9 share a name with k3 and k8
        name = f"m.k{i - 1}" if i % 5 == 4 else f"m.k{i}"
        entries.append(KernelEntry(name, signature, "", own, helpers, own + sum(helper[h] for h in helpers), own,
                                   tuple(helper[h] for h in helpers)))
    return entries


def test_shares_finish_as_soon_as_the_best_of_every_assignment():
    # every assignment of units (a function's signatures together) to processes is tried
    exact = 0
    for seed in range(120):
        rng = random.Random(seed)
        entries = random_kernels(rng, rng.randint(4, 7))
        parts = rng.choice([2, 3])
        groups = units(entries)
        best = min(finishes([[e for g, p in zip(groups, where) if p == k for e in g] for k in range(parts)])[0]
                   for where in itertools.product(range(parts), repeat=len(groups)))
        got = finishes(shares(entries, parts))[0]
        assert got <= best * 1.03, (seed, got, best)
        exact += got == best
    assert exact >= 115  # (measured: all 120)


def test_no_single_move_swap_or_trade_improves_a_split():
    # on larger cases, worked out from scratch: moving one unit to another process, swapping two,
    # or this process taking a worker's whole list never finishes sooner than what shares gave
    for seed in range(60):
        rng = random.Random(1000 + seed)
        entries = random_kernels(rng, rng.randint(8, 14), pool=8)
        parts = rng.choice([2, 3, 4])
        split = shares(entries, parts)
        assert sorted(e for share in split for e in share) == sorted(entries)
        where = {e: k for k, share in enumerate(split) for e in share}
        lists = [[g for g in units(entries) if where[g[0]] == k] for k in range(parts)]
        assert all(len({where[e] for e in g}) == 1 for g in units(entries))  # each unit whole
        got = finishes(split)

        def finish(changed: list[list[list[KernelEntry]]]) -> tuple[int, ...]:
            return finishes([[e for g in share for e in g] for share in changed])

        for b in range(1, parts):
            traded = list(lists)
            traded[0], traded[b] = lists[b], lists[0]
            assert finish(traded) >= got, (seed, "trade", b)
        for a, b in itertools.permutations(range(parts), 2):
            for i in range(len(lists[a])):
                moved = [list(share) for share in lists]
                moved[b].append(moved[a].pop(i))
                assert finish(moved) >= got, (seed, "move", a, i, b)
                for j in range(len(lists[b])):
                    swapped = [list(share) for share in lists]
                    swapped[a][i], swapped[b][j] = lists[b][j], lists[a][i]
                    assert finish(swapped) >= got, (seed, "swap", a, i, b, j)


def test_this_process_takes_the_larger_list_when_that_finishes_sooner():
    # x and y share a 2 s helper (4 s together), z is 3.5 s alone: z here and x, y on the worker
    # (0.6 s behind) finish at 4.6 s, and no single move or swap helps; the other way round, 4.1 s
    x = KernelEntry("m.x", "()", "", 1.0, ("m.h (int64,)",), 3.0, 1.0, (2.0,))
    y = KernelEntry("m.y", "()", "", 1.0, ("m.h (int64,)",), 3.0, 1.0, (2.0,))
    z = KernelEntry("m.z", "()", "", 3.5, (), 3.5, 3.5, ())
    assert shares([x, y, z], 2) == [[x, y], [z]]
    assert finishes([[x, y], [z]])[0] == 4100


def test_a_helper_recorded_under_several_kernels_costs_its_median():
    # h compiled alone under a, b and c took 0.1, 0.1 and 3.0 s (under c it paid for numba's own
    # overloads too): at its median a, b and c take 2.6 s together, so d (3 s) here and they on
    # the worker (0.6 s behind) finish at 3.2 s; at its largest they would seem to take 5.5 s
    # and go here, d to the worker, which finishes at 3.6 s
    def kernel(name: str, own: float, helper: float) -> KernelEntry:
        return KernelEntry(name, "()", "", own, ("m.h (int64,)",), own + helper, own, (helper,))

    a, b, c = kernel("m.a", 0.5, 0.1), kernel("m.b", 1.5, 0.1), kernel("m.c", 0.5, 3.0)
    d = KernelEntry("m.d", "()", "", 3.0, (), 3.0, 3.0, ())
    split = shares([a, b, c, d], 2)
    assert [sorted(e.kernel for e in share) for share in split] == [["m.d"], ["m.a", "m.b", "m.c"]]
    assert finishes(split)[0] == 3200 < finishes([[a, b, c], [d]])[0] == 3600


def test_kernels_sharing_the_map_segment_tests_compile_in_one_process():
    # the chase's split: the graph build's node linking and the PathfindSystem's last leg to the goal both
    # compile the map's segment tests
    entries = entries_for("chase")
    together = [share for share in shares(entries, 2)
                if {"ecs_nav.nav.build._link_nodes", "ecs_nav.geometry.kernels.segments_blocked_into"}
                <= {e.kernel for e in share}]
    assert together, [[e.kernel for e in share] for share in shares(entries, 2)]


def test_the_manifest_lists_every_built_in_scene_for_the_installed_numba():
    data = read_manifest()
    assert data is not None, f"{MANIFEST_PATH} is missing: python -m ecs_nav.compile.recorder writes it"
    assert data["numba"] == numba_version(), (
        f"the manifest was made with numba {data['numba']}, {numba_version()} is installed: first runs compile "
        "one kernel at a time until `python -m ecs_nav.compile.recorder` is run again"
    )
    assert sorted(data["scenes"]) == builtin_scenes()
    for scene in builtin_scenes():
        for e in entries_for(scene):
            assert e.seconds > 0
            args = signature_of(e)
            assert isinstance(args, tuple) and str(args) == e.signature
            assert hasattr(dispatcher_of(e), "compile"), e.kernel
            assert all(h.startswith("ecs_nav.") and " (" in h for h in e.helpers), e.helpers


def test_a_manifest_of_another_numba_release_is_ignored(tmp_path):
    data = read_manifest()
    data["numba"] = "0.0.1"
    path = tmp_path / "kernel_manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert entries_for("chase", path) == ()
    assert entries_for("no such scene") == ()


def loaded_kernels(scene: str, cache: Path) -> set[tuple[str, str]]:
    """What ``scene`` loads from numba's cache folder ``cache`` in its first RECORD_TICKS ticks, in
    a new process (run twice when the first run had to compile: the second then loads everything).
    A folder of its own: in the package's cache, another test process compiling the same kernel
    for other types at the same time can rewrite its index and drop this run's entry."""
    env = {**JIT_ONLY, WORKERS_VARIABLE: "0", "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache)}
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "ecs_nav.compile.recorder", "--list", scene, str(RECORD_TICKS)],
            capture_output=True,
            text=True,
            env=env,
        )
        if proc.returncode == 0:
            return {(e["kernel"], e["signature"]) for e in json.loads(proc.stdout)}
        assert "was compiled" in proc.stderr, proc.stderr
    raise AssertionError(f"{scene}: kernels still compiled on a second run")


@pytest.mark.parametrize("scene", builtin_scenes() if SOAK else ["chase"])
def test_the_manifest_is_what_the_scene_calls(scene, tmp_path):
    listed = {(e.kernel, e.signature) for e in entries_for(scene)}
    used = loaded_kernels(scene, tmp_path)
    assert listed == used, (
        f"{scene}: run `python -m ecs_nav.compile.recorder` (missing: {sorted(used - listed)}, "
        f"not used: {sorted(listed - used)})"
    )


CLI = "import sys\nfrom ecs_nav.cli import main\nsys.exit(main())\n"


def decoy_folder(tmp_path: Path) -> Path:
    """A current folder holding a decoy ``ecs_nav`` package and a decoy ``inspect`` module, which
    no compile worker may import (each raises ImportError)."""
    folder = tmp_path / "work"
    (folder / "ecs_nav").mkdir(parents=True, exist_ok=True)
    (folder / "ecs_nav" / "__init__.py").write_text("raise ImportError('a decoy ecs_nav in the current folder')")
    (folder / "inspect.py").write_text("raise ImportError('a decoy inspect in the current folder')")
    return folder


def run_cold(scene: str, env: dict[str, str], tmp_path: Path) -> tuple[dict, str]:
    """``ecs-nav run SCENE --headless --ticks 1 --json`` from a script outside the current folder
    (as the ``ecs-nav`` command runs), in ``decoy_folder``."""
    script = tmp_path / "bin" / "ecs_nav_cli.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(CLI)
    proc = subprocess.run(
        [sys.executable, str(script), "run", scene, "--headless", "--ticks", "1", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=decoy_folder(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_a_cold_run_compiles_in_two_processes_once_each_and_keeps_the_trajectory(tmp_path):
    # (from a current folder of decoys: the worker, which compiles its share, imports neither)
    env = {**JIT_ONLY, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT), WORKERS_VARIABLE: "1"}
    first, err = run_cold(COLD_SCENE, env, tmp_path)
    count = len(entries_for(COLD_SCENE))
    assert re.search(rf"{PROGRESS_HEADER}: \d+ more for {COLD_SCENE} in 2 processes", err), err
    during, _, after = err.partition(" compiled in the other processes\n")
    here = during.count(f"{PROGRESS_HEADER}: [")
    by_worker = int(during.rsplit(" ", 1)[-1])
    assert here >= 1 and by_worker >= 1  # this process compiled its share, the worker the rest
    assert here + by_worker <= count  # (a helper compiled inside another kernel is not compiled again)
    assert PROGRESS_HEADER not in after  # and nothing was compiled after them
    second, err = run_cold(COLD_SCENE, env, tmp_path)
    assert PROGRESS_HEADER not in err and "compiled" not in err
    world = load_scene(COLD_SCENE)
    world.run(1)
    assert first["digest"] == second["digest"] == world.state_digest()


def test_several_scenes_share_one_list_each_kernel_once_and_a_worker_reads_the_same(monkeypatch):
    from ecs_nav.compile import precompile
    assert scene_entries(["chase", "chase"]) == list(entries_for("chase"))
    both = scene_entries(["platformer", "chase"])
    assert both[: len(entries_for("platformer"))] == list(entries_for("platformer"))
    assert len(both) == len({(e.kernel, e.signature) for e in both})
    assert {(e.kernel, e.signature) for e in both} == {(e.kernel, e.signature)
                                                       for s in ("platformer", "chase") for e in entries_for(s)}
    given = []
    monkeypatch.setattr(precompile, "compile_entries", lambda entries: given.append(entries) or 0)
    assert precompile.main(["platformer,chase", "0", str(len(both) - 1)]) == 0
    assert given == [[both[0], both[-1]]]  # the positions the parent sent, in the parent's list


STALE_COMPILE = """
import base64, pickle, sys
from numba import types
from ecs_nav import cli
from ecs_nav.compile import manifest as kernel_manifest
stale = base64.b64encode(pickle.dumps((types.int64,))).decode()
entries = kernel_manifest.entries_for("platformer")  # (the stale one, and the quickest of the rest)
quickest = min(entries[1:], key=lambda entry: entry.seconds)
kernel_manifest.entries_for = lambda scene: (entries[0]._replace(signature_pickle=stale), quickest)
sys.exit(cli.main(["compile", "platformer", "--workers", "0"]))
"""


def test_ecs_nav_compile_says_which_kernels_did_not_compile_and_when_nothing_is_compiled(tmp_path):
    env = {**JIT_ONLY, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", STALE_COMPILE], capture_output=True, text=True, env=env,
                          cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 70, proc.stderr
    assert "1 of 2 kernels did not compile" in proc.stderr
    assert entries_for("platformer")[0].kernel in proc.stderr
    off = subprocess.run([sys.executable, "-m", "ecs_nav.cli", "compile", "platformer"], capture_output=True,
                         text=True, env={**env, "NUMBA_DISABLE_JIT": "1"}, cwd=tmp_path)  # fmt: skip
    assert off.returncode == 0 and "JIT is disabled" in off.stderr and off.stdout == "", off.stderr


FAILING = """
import base64, pickle, subprocess, sys
from numba import types
from ecs_nav.compile import manifest as kernel_manifest
from ecs_nav.compile import precompile
from ecs_nav.compile.watch import report_progress
from ecs_nav.scene.files import load_scene
if sys.argv[2] == "worker":  # a worker that cannot start compiling
    precompile.start_worker = lambda scene, share: subprocess.Popen(
        [sys.executable, "-c", "raise SystemExit('no compiler here')"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
else:  # a manifest older than a kernel: every entry's argument types are wrong
    stale = base64.b64encode(pickle.dumps((types.int64,))).decode()
    entries = kernel_manifest.entries_for(sys.argv[1])
    kernel_manifest.entries_for = lambda scene: tuple(e._replace(signature_pickle=stale) for e in entries)
report_progress(True)
report = precompile.precompile_scene(sys.argv[1], workers=1)
world = load_scene(sys.argv[1])
world.run(1)
print(report.compiled_here, report.compiled_by_workers, report.workers, world.state_digest())
"""


def run_failing(what: str, tmp_path: Path) -> tuple[list[str], str]:
    env = {**JIT_ONLY, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT), WORKERS_VARIABLE: "0"}
    proc = subprocess.run(
        [sys.executable, "-c", FAILING, "platformer", what], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split(), proc.stderr


def platformer_digest() -> str:
    world = load_scene("platformer")
    world.run(1)
    return world.state_digest()


def test_a_failing_worker_or_a_stale_manifest_costs_only_time(tmp_path):
    (here, by_workers, workers, digest), err = run_failing("worker", tmp_path)
    assert int(here) >= 1 and int(by_workers) == 0 and int(workers) == 1
    assert "a compile worker failed (no compiler here); its kernels compile on first use" in err
    expected = platformer_digest()
    assert digest == expected
    # a stale manifest, on the cache the run above filled (an empty one only adds the compiling on
    # first use that the run above did): no entry compiles, so no worker starts
    (here, by_workers, workers, digest), err = run_failing("stale", tmp_path)
    assert "Traceback" not in err
    assert (int(here), int(by_workers), int(workers)) == (0, 0, 0)
    assert digest == expected


EMPTY_SHARE = """
import subprocess, sys
from ecs_nav.compile import precompile
from ecs_nav.compile.watch import report_progress
report_progress(True)
started = []
def start_worker(scene, share):  # a worker that compiles nothing and says so
    started.append(share)
    return subprocess.Popen([sys.executable, "-c", "print(0)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
precompile.start_worker = start_worker
precompile.shares = lambda rest, parts: [[], [], rest[:1], [], rest[1:2]]  # this process's and two workers' empty
report = precompile.precompile_scene("platformer", workers=4)
print(report.workers, [len(share) for share in started])
"""


def test_a_worker_with_nothing_to_compile_is_not_started(tmp_path):
    env = {**JIT_ONLY, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT), WORKERS_VARIABLE: "0"}
    proc = subprocess.run([sys.executable, "-c", EMPTY_SHARE], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(maxsplit=1) == ["2", "[1, 1]\n"], proc.stdout
    assert f"{PROGRESS_HEADER}: " in proc.stderr and " in 3 processes" in proc.stderr, proc.stderr


def test_a_scene_loads_with_numba_jit_disabled(tmp_path):
    env = {**JIT_ONLY, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT), WORKERS_VARIABLE: "1"}
    code = "from ecs_nav.scene.files import load_scene; w = load_scene('chase'); print(w.tick)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


PARTIAL = """
from ecs_nav.compile import manifest as kernel_manifest
from ecs_nav.compile import precompile
entries = sorted(kernel_manifest.entries_for("platformer"), key=lambda e: (e.seconds, e.kernel))
precompile.compile_entries(entries[: len(entries) // 2])  # the cheaper half, as another scene would leave it
"""


def test_ecs_nav_compile_loads_what_another_scene_left_compiles_the_rest_in_parallel_and_then_none(tmp_path):
    env = {**JIT_ONLY, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT), WORKERS_VARIABLE: "0"}
    filled = subprocess.run([sys.executable, "-c", PARTIAL], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert filled.returncode == 0, filled.stderr
    count = len(entries_for("platformer"))

    def ecs_nav(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ecs_nav.cli", *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path)  # fmt: skip

    first = ecs_nav("compile", "platformer", "--workers", "1")
    assert first.returncode == 0, first.stderr
    compiled = int(re.search(rf"^{count} kernels of platformer are in numba's cache \((\d+) compiled now, in 2 "
                             r"processes; ", first.stdout).group(1))  # fmt: skip
    assert 1 <= compiled <= count - count // 2  # here and in the worker; the cached half loaded, not compiled
    run = ecs_nav("run", "platformer", "--headless", "--ticks", "1", "--json")
    assert run.returncode == 0 and PROGRESS_HEADER not in run.stderr, run.stderr
    again = ecs_nav("compile", "platformer", "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert f"{count} kernels of platformer are in numba's cache (0 compiled now, in 1 process; " in again.stdout
    bad = ecs_nav("compile", "nosuch")
    assert bad.returncode == 2 and "not a built-in scene: nosuch" in bad.stderr, bad.stderr
