"""What a new user waits for: ``import ecs_nav``, and ``ecs-nav run chase --headless --ticks 1``
on an empty numba cache (cold) and on a filled one (warm). With the kernels compiled ahead of time
(``ecs_nav.compile.aot``: the checkout's library, built by ``pip install -e .``) nothing compiles; "without
the library" (``ECS_NAV_AOT=0``) every kernel the scene uses compiles, by default in parallel
processes (``ecs_nav.compile.precompile``; "one process" turns that off with ``ECS_NAV_COMPILE_WORKERS=0``).
A checkout older than either variable ignores it.
Beside them, numba's own floor, the least any numba program pays: ``import numba``, and one
trivial cached kernel (``a + b`` on two floats) called on an empty cache and on a filled one.

The checkout's Python files are compiled to bytecode first and the runs may write it, as
installing a wheel and a user's Python do: where ``PYTHONDONTWRITEBYTECODE`` is set (it is on the
machine of ``bench/RESULTS.md``) an editable checkout's sources would otherwise be compiled again
by every run, about 0.16 s of each.

Each figure is a new process; wall-clock seconds and the CPU seconds it used (user + system,
children included), with the load average beside them: the CPU time is the steadier figure on a
shared machine. ``--baseline DIR`` measures another checkout (``git worktree add /tmp/base
REF``, or ``git archive REF | tar -x -C /tmp/base``) the same way in the same run, for a before/after
side by side.

    python bench/cold_start.py [--baseline /tmp/base] [--repeat 3] [--scene chase] [--compile-all]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHAT = ("cold run", "warm run", "cold run, without the library", "cold run, without the library, one process",
        "warm run, without the library", "import ecs_nav")
FLOOR = ("numba floor: import numba", "numba floor: one trivial kernel, cold", "numba floor: one trivial kernel, warm")
TRIVIAL_KERNEL = "import numba\n\n@numba.njit(cache=True)\ndef add(a, b):\n    return a + b\n"


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one process running ``command`` in ``cwd`` (the checkout measured: python
    puts the current folder first on the path); raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def measure(checkout: Path, scene: str, repeat: int) -> dict[str, list[tuple[float, float, str]]]:
    run = [sys.executable, "-m", "ecs_nav.cli", "run", scene, "--headless", "--ticks", "1", "--json"]
    rows: dict[str, list[tuple[float, float, str]]] = {what: [] for what in WHAT}
    base = {k: v for k, v in os.environ.items()
            if k not in ("ECS_NAV_COMPILE_WORKERS", "ECS_NAV_AOT", "PYTHONDONTWRITEBYTECODE")}  # defaults
    sources = [str(checkout / folder) for folder in ("ecs_nav", "systems") if (checkout / folder).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *sources], env=base, check=True, capture_output=True)
    for library, suffix in ((True, ""), (False, ", without the library")):
        with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache, \
                tempfile.TemporaryDirectory(prefix="numba-cold-") as one_cache:  # fmt: skip
            env = {**base, "PYTHONPATH": str(checkout), "NUMBA_CACHE_DIR": cache}
            env |= {} if library else {"ECS_NAV_AOT": "0"}
            rows[f"cold run{suffix}"].append((*timed(run, env, checkout), load()))
            if not library:
                one = {**env, "NUMBA_CACHE_DIR": one_cache, "ECS_NAV_COMPILE_WORKERS": "0"}
                rows[f"cold run{suffix}, one process"].append((*timed(run, one, checkout), load()))
            for _ in range(repeat):
                rows[f"warm run{suffix}"].append((*timed(run, env, checkout), load()))
            for _ in range(repeat if library else 0):
                rows["import ecs_nav"].append((*timed([sys.executable, "-c", "import ecs_nav"], env, checkout), load()))
    return rows


def numba_floor(repeat: int) -> dict[str, list[tuple[float, float, str]]]:
    """numba's own start, whatever the package: the import, and a trivial cached kernel's first call
    on an empty cache (numba's registries, LLVM and one compile) and on the filled one (one load)."""
    with tempfile.TemporaryDirectory(prefix="numba-floor-") as name:
        folder = Path(name)
        (folder / "trivial_kernel.py").write_text(TRIVIAL_KERNEL)
        env = {**os.environ, "PYTHONPATH": str(folder), "NUMBA_CACHE_DIR": str(folder / "cache")}
        call = [sys.executable, "-c", "import trivial_kernel; trivial_kernel.add(1.0, 2.0)"]
        rows: dict[str, list[tuple[float, float, str]]] = {what: [] for what in FLOOR}
        for _ in range(repeat):
            rows[FLOOR[0]].append((*timed([sys.executable, "-c", "import numba"], env, folder), load()))
        rows[FLOOR[1]].append((*timed(call, env, folder), load()))  # (one: the cache is then filled)
        for _ in range(repeat):
            rows[FLOOR[2]].append((*timed(call, env, folder), load()))
    return rows


def compile_all(checkout: Path) -> dict[str, tuple[float, float, str]]:
    """On an empty numba cache: ``ecs-nav compile`` (every built-in scene's kernels into numba's
    cache, in parallel processes, ``ECS_NAV_AOT=0``), and the library's build (``python -m
    ecs_nav.compile.aot_build``, what installing the package runs; into a temporary folder): (wall s, CPU
    s, load) of each."""
    env = {k: v for k, v in os.environ.items() if k != "ECS_NAV_COMPILE_WORKERS"}
    env = {**env, "PYTHONPATH": str(checkout), "ECS_NAV_AOT": "0"}
    found = {}
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        command = [sys.executable, "-m", "ecs_nav.cli", "compile"]
        found["ecs-nav compile, every built-in scene, cold"] = (*timed(command, {**env, "NUMBA_CACHE_DIR": cache},
                                                                       checkout), load())  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache, tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "ecs_nav.compile.aot_build", out, "--rebuild"]  # (not copied: compiled)
        found["the library's build (what installing runs), cold"] = (*timed(command, {**env, "NUMBA_CACHE_DIR": cache},
                                                                             checkout), load())  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to measure the same way, side by side")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs and imports per checkout (median shown)")
    parser.add_argument("--scene", default="chase")
    parser.add_argument("--compile-all", action="store_true",
                        help="also time `ecs-nav compile` of every built-in scene and the library's build on an empty "
                             "cache (this checkout)")
    args = parser.parse_args()
    sides = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    results = {name: measure(path, args.scene, args.repeat) for name, path in sides.items()}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; scene {args.scene}; load average 1/5/15 min")
    print(f"| what | {' | '.join(f'{n} wall s | {n} CPU s' for n in sides)} | load |")
    print(f"|---|{'---:|---:|' * len(sides)}---|")
    for what in WHAT:
        cells, loads = [], []
        for name in sides:
            samples = results[name][what]
            cells += [f"{statistics.median(s[column] for s in samples):.2f}" for column in (0, 1)]
            loads.append(samples[-1][2])
        print(f"| {what} | {' | '.join(cells)} | {', '.join(loads)} |")
    if args.compile_all:
        blanks = " | |" * (len(sides) - 1)  # (the baseline's columns: a checkout may predate the commands)
        for what, (wall, cpu, at) in compile_all(ROOT).items():
            print(f"| {what} | {wall:.2f} | {cpu:.2f}{blanks} | {at} |")
    floor = numba_floor(args.repeat)
    for what, samples in floor.items():
        cells = [f"{statistics.median(s[column] for s in samples):.2f}" for column in (0, 1)]
        print(f"| {what} | {' | '.join(cells + [''] * (2 * len(sides) - 2))} | {samples[-1][2]} |")


if __name__ == "__main__":
    main()
