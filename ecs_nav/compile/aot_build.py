"""Build the library of kernels compiled ahead of time that ``ecs_nav.compile.aot`` uses:
``python -m ecs_nav.compile.aot_build FOLDER`` writes its parts, the extension modules
``aot_kernels_1.<platform suffix>``, ``aot_kernels_2...``, into FOLDER, compiled side by side in
processes of their own. ``make`` runs it as a step of its own (into the checkout's package folder,
where its progress shows), ``setup.py`` when the package is installed or a wheel is built (where
pip hides it unless ``pip install -v``), ``ecs-nav compile --ahead`` into the installed package.

Every kernel and set of argument types that ``kernel_manifest`` lists for the built-in scenes is
exported from one part (``plan``): the kernels of the demo's scene (``FIRST_SCENES``) first,
split between ``PARTS_PER_STAGE`` parts, then the others the same way, each split
so that its parts finish together (``split.shares``, by the compile seconds the manifest
records, a helper counted in each part that calls it). ``--scenes chase`` builds only the parts
that hold the chase scene's kernels (what ``make demo`` runs: about half the work); the others'
kernels then compile on first use until a whole build. Each part is compiled by
``ecs_nav.compile.aot_part`` (how, for which CPU level, and what its index holds).

It says what it does: a line when it starts (how many kernels, parts and processes), a line as
each part starts, as numba starts each kernel and as the part writes its machine code, and one
when each part is written (its seconds, how many parts are done), on stderr, flushed.

A part already in FOLDER, or in the package's folder (then copied), that is what the build would
write there (``is_current``: the same kernels, numba, numpy and CPU level, from sources with the
digests of the package's as they are) is kept: a build after an edit compiles only the parts
whose sources changed, and a wheel built from a checkout whose parts are current copies them in
seconds. ``--rebuild`` compiles every part. Files of the library that the plan has no place for
(parts of another split, the one module of an older layout) and planned parts that are not
current are removed from FOLDER.

How many parts compile at once: ``--processes N``, else one more than
``precompile.worker_count`` (the CPUs this process may use, or ``$ECS_NAV_COMPILE_WORKERS`` + 1);
the parts themselves are the same whatever the count (``PARTS_PER_STAGE``). Each process
compiles on an empty numba cache of its own, as numba compiles by default (its debugging
settings removed from the environment), with ``ECS_NAV_AOT=0``: kernels already answered by a
library would not be compiled there.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ecs_nav.compile.aot import AOT_VARIABLE, LIBRARY, PACKAGE_DIR, cpu_level, mismatch, part_index, part_paths
from ecs_nav.compile.aot_part import BUILD_SOURCES, BuildError, cpu_seconds, manifest_entries, say
from ecs_nav.compile.manifest import KernelEntry, read_manifest, scene_entries
from ecs_nav.compile.precompile import worker_count
from ecs_nav.compile.split import function_seconds, shares

DEBUG_SETTINGS = ("NUMBA_BOUNDSCHECK", "NUMBA_DEBUGINFO", "NUMBA_OPT", "NUMBA_DISABLE_JIT")
"""numba's environment settings the build ignores (``ecs_nav.compile.aot`` does not use the library under
the first three)."""

FIRST_SCENES = ("chase",)
"""The built-in scenes whose kernels make the first parts: ``make demo`` runs the chase scene
and builds only those (``--scenes chase``)."""

PARTS_PER_STAGE = 2
"""How many parts the first scenes' kernels, and then the others', are split into, however many
processes compile them: the library's layout, and so what a build can keep, is the same on
every machine and under any ``$ECS_NAV_COMPILE_WORKERS``. Two, for the 2-core machine of
bench/RESULTS.md: more parts would compile the helpers they share more times over for little,
since the largest kernel with its helpers (``motion.physics_rows.move_rows``, about 30 s of CPU)
is its part's floor."""


class Part(NamedTuple):
    """One extension module of the library: its number (1, 2, ...) and the entries it exports,
    in their order."""

    number: int
    entries: tuple[KernelEntry, ...]

    @property
    def name(self) -> str:
        """Its module's name in the package (``aot_kernels_<number>``)."""
        return f"{LIBRARY}_{self.number}"


def keys(entries: Sequence[KernelEntry]) -> set[tuple[str, str]]:
    """(kernel, argument types) of each entry."""
    return {(entry.kernel, entry.signature) for entry in entries}


def plan(entries: Sequence[KernelEntry], first: Sequence[KernelEntry] | None = None,
         parts: int = PARTS_PER_STAGE) -> list[Part]:
    """``entries`` as the library's parts: those also in ``first`` (default: the kernels of
    ``FIRST_SCENES``) split into ``parts`` parts, then the others likewise, so that each stage's
    parts take as long as each other to compile (``split.shares``, entry by entry, as processes
    that start at once; a share left empty makes no part), numbered from 1 in that order. The
    same entries give the same parts."""
    first_keys = keys(scene_entries(FIRST_SCENES) if first is None else first)
    stages = ([e for e in entries if (e.kernel, e.signature) in first_keys],
              [e for e in entries if (e.kernel, e.signature) not in first_keys])  # fmt: skip
    found = [share for stage in stages if stage
             for share in shares(stage, max(min(parts, len(stage)), 1), together=False, start_s=0.0)
             if share]  # fmt: skip
    return [Part(number, tuple(share)) for number, share in enumerate(found, 1)]


def part_seconds(part: Part) -> float:
    """The CPU seconds the manifest records for compiling the part's kernels and helpers (each
    function once): the order parts are started in, the longest first."""
    seconds: dict[str, float] = {}
    for entry in part.entries:
        for function, spent in function_seconds(entry).items():
            seconds[function] = max(seconds.get(function, 0.0), spent)
    return sum(seconds.values())


def read_index(path: Path) -> dict:
    """The index of the part in the file ``path`` (loaded into this process under its module's
    name, not imported: ``sys.modules`` is left as it is).

    Raises:
        Exception: the file does not load here, or holds no index."""
    spec = importlib.util.spec_from_file_location(f"ecs_nav.{path.name.partition('.')[0]}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return part_index(module)


def is_current(path: Path, part: Part) -> bool:
    """Whether the file ``path`` is what building ``part`` would write here: built with this
    numba and numpy, for this CPU level, from sources with the digests of the package's as they
    are (``aot.mismatch``) by this build, and exporting the part's entries in their order."""
    try:
        index = read_index(path)
        held = [(k["kernel"], k["signature_pickle"], k["return_pickle"]) for k in index["kernels"]]
        same = (mismatch(index) is None and all(source in index["sources"] for source in BUILD_SOURCES)
                and index.get("cpu") == cpu_level())  # fmt: skip
    except Exception:  # (none, or one that does not load here or has another index: build)
        return False
    return same and held == [(entry.kernel, entry.signature_pickle, entry.return_pickle) for entry in part.entries]


def current_part(part: Part, folders: Sequence[Path]) -> Path | None:
    """The first file of ``part`` in ``folders`` that ``is_current``, else None."""
    for folder in folders:
        path = part_paths(folder).get(part.name) if folder.is_dir() else None
        if path is not None and is_current(path, part):
            return path
    return None


def current_library(folder: Path = PACKAGE_DIR) -> list[Path] | None:
    """The files of every part of the library in ``folder`` (default: the package's) where each
    is current (``is_current``, for ``plan(manifest_entries())``), else None.

    Raises:
        BuildError: there is no manifest, or one recorded with another numba release."""
    found = [current_part(part, [folder]) for part in plan(manifest_entries())]
    return None if None in found else found


def copy_library(library: Path, folder: Path) -> Path:
    """The file ``library`` (a part) copied into ``folder`` (replacing one there, as a build
    does); its path there."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / library.name
    if target.exists() and target.samefile(library):
        return target
    with tempfile.TemporaryDirectory(dir=folder, prefix=".aot-build-") as scratch:
        copied = Path(scratch) / library.name
        shutil.copy2(library, copied)
        os.replace(copied, target)
    return target


def unplanned_files(folder: Path, parts: Sequence[Part]) -> list[Path]:
    """The library's files in ``folder`` that ``parts`` have no place for: parts of another
    split, and the one module of the older layout (``aot_kernels.<suffix>``)."""
    planned = {part.name for part in parts}
    found = [path for name, path in part_paths(folder).items() if name not in planned]
    return found + [folder / f"{LIBRARY}{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES
                    if (folder / f"{LIBRARY}{suffix}").is_file()]  # fmt: skip


def build_parts(folder: Path, parts: Sequence[Part], processes: int, total: int) -> list[Path]:
    """Compile ``parts`` (of ``total``) into ``folder``, ``processes`` at a time (the longest
    first, ``part_seconds``), each in a process of its own (``ecs_nav.compile.aot_part``) with an
    empty numba cache of its own, all linking one C runtime compiled once; their progress goes to
    stderr as it comes. Returns the files written.

    Raises:
        BuildError: a part's process failed (it said why); the others are stopped."""
    entries = manifest_entries()
    position = {(entry.kernel, entry.signature): k for k, entry in enumerate(entries)}
    folder = folder.resolve()  # (its processes run from another folder)
    waiting = sorted(parts, key=lambda part: (-part_seconds(part), part.number))
    running: dict[subprocess.Popen, tuple[Part, float]] = {}
    written: list[Path] = []
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".aot-build-") as scratch:
        try:
            while waiting or running:
                while waiting and len(running) < processes:
                    part = waiting.pop(0)
                    say(f"part {part.number}/{total}: compiling {len(part.entries)} kernels")
                    env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(scratch) / f"numba-{part.number}")}
                    command = [sys.executable, "-m", "ecs_nav.compile.aot_part", str(folder),
                               str(Path(scratch) / "runtime"), str(part.number), str(total),
                               *(str(position[(e.kernel, e.signature)]) for e in part.entries)]  # fmt: skip
                    # (run from the folder above this ecs_nav: the process imports the same one)
                    proc = subprocess.Popen(command, cwd=PACKAGE_DIR.parent, env=env, stdin=subprocess.DEVNULL)
                    running[proc] = (part, time.perf_counter())
                time.sleep(0.1)
                for proc in [proc for proc in running if proc.poll() is not None]:
                    part, _ = running.pop(proc)
                    if proc.returncode != 0:
                        raise BuildError(f"part {part.number}/{total} was not compiled (its process said why, above)")
                    written.append(part_paths(folder)[part.name])
                    say(f"{len(written)} of {len(parts)} parts compiled, {time.perf_counter() - started:.0f} s")
        except BaseException:  # failed or interrupted: no process is left compiling for nobody
            for proc in running:
                proc.kill()
                proc.wait()
            raise
    return written


def main(argv: list[str]) -> int:
    """``python -m ecs_nav.compile.aot_build FOLDER [--scenes NAME,...] [--processes N]
    [--rebuild]``: 0 when the parts asked for are current in FOLDER (built, kept or copied), 1
    (with the reason) when not, 2 for a bad command line."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ecs_nav.compile.aot_build",
                                     description="Build the kernels compiled ahead of time into FOLDER.")
    parser.add_argument("folder", type=Path, help="where the library's parts go (the package's folder to use them)")
    parser.add_argument("--scenes", default="", help="only the parts holding these built-in scenes' kernels "
                        "(comma-separated; default: every part)")
    parser.add_argument("--processes", type=int, default=None, help="parts compiled at once (default: the CPUs)")
    parser.add_argument("--rebuild", action="store_true", help="compile every part again, current or not")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    os.environ[AOT_VARIABLE] = "0"  # (its processes compile every kernel: none answered by an older library)
    for setting in DEBUG_SETTINGS:  # (the library is compiled as numba compiles by default)
        os.environ.pop(setting, None)
    folder = args.folder
    try:
        processes = max(args.processes if args.processes is not None else worker_count() + 1, 1)
        entries = manifest_entries()
        scenes = [name for name in args.scenes.split(",") if name]
        known = list(read_manifest()["scenes"])
        unknown = [name for name in scenes if name not in known]
        if unknown:
            raise BuildError(f"--scenes: not a built-in scene: {', '.join(unknown)} (built-in: {', '.join(known)})")
        parts = plan(entries)
        wanted_keys = keys(scene_entries(scenes)) if scenes else keys(entries)
        wanted = [part for part in parts if keys(part.entries) & wanted_keys]
        for path in unplanned_files(folder, parts) if folder.is_dir() else []:
            path.unlink()
        todo = []
        for part in parts:
            current = None if args.rebuild else current_part(part, [folder, PACKAGE_DIR])
            if part in wanted and current is not None:
                if copy_library(current, folder) != current:
                    say(f"part {part.number}/{len(parts)}: current in {current.parent}: copied")
            elif part in wanted:
                todo.append(part)
            elif current is None and part.name in part_paths(folder):  # (not asked for, and of no use)
                part_paths(folder)[part.name].unlink()
        kernels = sum(len(part.entries) for part in wanted)
        scope = (f"{kernels} kernels for the {' and '.join(scenes)} scene{'s' if len(scenes) > 1 else ''}" if scenes
                 else f"every built-in scene's {kernels} kernels")  # fmt: skip
        if not todo:
            say(f"kernels compiled ahead of time: {scope}, in {len(wanted)} parts, are current in {folder}")
            return 0
        say(f"compiling kernels ahead of time (numba.pycc) into {folder}: {scope}, in {len(wanted)} parts of "
            f"{len(parts)}; {len(todo)} to compile, {min(processes, len(todo))} at a time")
        build_parts(folder, todo, processes, len(parts))
    except (BuildError, OSError, ValueError) as exc:
        say(f"the kernels were not compiled ahead of time: {exc}")
        return 1
    except KeyboardInterrupt:
        say("the build of the kernels compiled ahead of time was interrupted; the parts written are kept")
        return 130
    say(f"kernels compiled ahead of time: {scope}, in {len(wanted)} parts ({len(todo)} compiled now) in "
        f"{time.perf_counter() - started:.1f} s ({cpu_seconds():.0f} s of CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
