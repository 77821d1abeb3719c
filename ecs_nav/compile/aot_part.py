"""One part of the library of kernels compiled ahead of time, compiled by numba's AOT compiler,
``numba.pycc``, in a process of its own: ``ecs_nav.compile.aot_build`` starts one such process a
part, several at a time (``python -m ecs_nav.compile.aot_part FOLDER MIXINS NUMBER TOTAL K...``:
the entries at positions K of ``manifest_entries``, into part NUMBER of TOTAL).

A part is one extension module, ``aot_kernels_<NUMBER>.<platform suffix>``, exporting its kernels
for their argument types and its index (JSON, returned by its function ``index``): each export's
kernel and argument and return types, the numba and numpy releases, the CPU level, and the
digest of every source file of the package the process imported (the kernels and every constant
they read) and of the build's own modules (``BUILD_SOURCES``: how the library is built).

The code is compiled for a CPU level, not for this machine's model (``aot.cpu_level``: x86-64-v3
where this CPU has it, else the architecture's baseline), so that a wheel runs on any CPU of that
level; on one without it the library is not used. It is compiled as numba compiles by default:
the build removes numba's debugging settings from the environment, and compiles on an empty
numba cache of this process's own (numba's cache checks a helper against its own file only, not
the constants it imports).

``numba.pycc`` is numba's own AOT compiler, marked pending deprecation since numba 0.57
("Replacement technology is being developed"). It needs setuptools, Python's headers and a C
compiler. Where it is missing or fails, the build fails with a message and the package works
without the library: its kernels compile on first use.

Two of numba.pycc's steps are adapted here (``part_compiler``; numba is pinned by the kernel
manifest, so the names it relies on are those of one release): the process says which kernel
numba compiles as it reaches it, and the C runtime numba.pycc links into every module (numba's
helper library and reference counting, ``modulemixin.c``: about 4 s of CPU) is compiled once a
build, by the first part that links (``shared_runtime``), under one module name for every part
(the two names it gives that name are hidden inside each module).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ecs_nav.compile.aot import INDEX_EXPORT, LIBRARY, PACKAGE_DIR, cpu_level, numpy_release, source_digest
from ecs_nav.compile.manifest import (
    KernelEntry,
    dispatcher_of,
    numba_version,
    read_manifest,
    return_type_of,
    scene_entries,
    signature_of,
)

EXPORTED_OPTIONS = frozenset({"nopython", "boundscheck", "inline", "_nrt", "cache"})
"""The kernel options whose absence from numba.pycc's export changes no result: the export
compiles without bounds checks (so ``boundscheck`` only when not set), with reference counting
(``_nrt``), and inlines what LLVM chooses to. Any other option (``fastmath``, ``error_model``,
...) would differ between the two paths, so the build refuses it."""

BUILD_SOURCES = ("compile/aot_build.py", "compile/aot_part.py")
"""The build's own modules (how the library is built), relative to the package folder: every
part's index holds their digests."""

RUNTIME_INIT = f"pycc_init_{LIBRARY}"
"""The C runtime's module set-up function, one name for every part (numba.pycc names it after
the module)."""


class BuildError(Exception):
    """The library cannot be built (the message says why)."""


def unexported_options(dispatcher) -> list[str]:
    """The options ``dispatcher`` is compiled with that numba.pycc's export would not apply (its
    ``locals`` types among them)."""
    dropped = [name for name, value in dispatcher.targetoptions.items()
               if name not in EXPORTED_OPTIONS or (name == "boundscheck" and value)]  # fmt: skip
    return sorted(dropped + (["locals"] if dispatcher.locals else []))


def manifest_entries() -> list[KernelEntry]:
    """Every kernel and set of argument types the manifest lists, each once, in its order.

    Raises:
        BuildError: there is no manifest, or one recorded with another numba release."""
    data = read_manifest()
    if data is None:
        raise BuildError("there is no kernel manifest (ecs_nav/compile/kernel_manifest.json)")
    if data.get("numba") != numba_version():
        raise BuildError(f"the kernel manifest was recorded with numba {data.get('numba')}, and numba "
                         f"{numba_version()} is installed: run python -m ecs_nav.compile.recorder")  # fmt: skip
    return scene_entries(list(data["scenes"]))


def imported_sources() -> dict[str, str]:
    """``{path relative to the package folder: sha256}`` of every module of the package imported
    so far (the top-level systems/ and scenes/ folders of a source tree define no kernel)."""
    sources = {}
    for name, module in sorted(sys.modules.items()):
        path = Path(getattr(module, "__file__", None) or "-").resolve()
        if (name == "ecs_nav" or name.startswith("ecs_nav.")) and path.suffix == ".py":
            if path.is_relative_to(PACKAGE_DIR.resolve()):
                sources[path.relative_to(PACKAGE_DIR.resolve()).as_posix()] = source_digest(path)
    return sources


def say(text: str) -> None:
    """One line of the build's progress on stderr, flushed at once (``make`` shows it as it comes;
    lines of parts compiled side by side interleave whole)."""
    print(f"ecs_nav: {text}", file=sys.stderr, flush=True)


def short_name(kernel: str) -> str:
    """A kernel's name without the package's (``motion.physics_rows.move_rows``)."""
    return kernel.removeprefix("ecs_nav.")


class Announced(list):
    """numba.pycc's exports, calling ``announce(symbol)`` as its first pass over them reaches
    each (that pass compiles them: ``ModuleCompiler._cull_exports``; later passes only name them)
    and ``announce(None)`` when it is through."""

    def __init__(self, exports: list, announce: Callable[[str | None], None]):
        super().__init__(exports)
        self.announce = announce
        self.announced = False

    def __iter__(self) -> Iterator:
        if self.announced:
            return super().__iter__()
        self.announced = True
        return self._announcing()

    def _announcing(self) -> Iterator:
        for export in list.__iter__(self):
            self.announce(export.symbol)
            yield export
        self.announce(None)


def shared_runtime(folder: Path, compile_into: Callable[[str], list[str]]) -> list[str] | None:
    """The object files of the C runtime (numba.pycc's mixins) in ``folder``: compiled there by
    ``compile_into(folder)`` for the first part of a build that links, under a file lock, and
    the same files for every later part. None where file locks are not available (each part
    then compiles its own)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (not on Windows)
        return None
    folder.mkdir(parents=True, exist_ok=True)
    listing = folder / "objects.json"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if listing.is_file():
            return json.loads(listing.read_text(encoding="utf-8"))
        say("compiling the C runtime every part links (numba's helpers and reference counting), once a build ...")
        objects = compile_into(str(folder))
        listing.write_text(json.dumps(objects), encoding="utf-8")
        return objects


def part_compiler(name: str, runtime: Path | None, announce: Callable[[str | None], None]):
    """numba.pycc's ``CC`` for the module ``name``, announcing each export as it compiles it
    (``Announced``) and linking the C runtime compiled once a build in the folder ``runtime``
    (``shared_runtime``; None: its own), set up by ``RUNTIME_INIT``.

    Raises:
        ImportError: numba.pycc does not import."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its pending deprecation: see the module doc)
        from numba.pycc import CC

    class PartCompiler(CC):
        @property
        def _export_entries(self):
            return Announced(super()._export_entries, announce)

        def _get_mixin_defines(self):
            defines = super()._get_mixin_defines()
            return [(key, LIBRARY if key == "PYCC_MODULE_NAME" else value) for key, value in defines]

        def _compile_mixins(self, build_dir):
            compile_into = super()._compile_mixins
            shared = None if runtime is None else shared_runtime(runtime, compile_into)
            return compile_into(build_dir) if shared is None else shared

    compiler = PartCompiler(name)  # (it looks for a C compiler)
    compiler._init_function = RUNTIME_INIT
    return compiler


def index_function(data: bytes) -> Callable[[], np.ndarray]:
    """A function returning ``data``, compiled into the part: its index travels inside it."""
    payload = np.frombuffer(data, np.uint8)

    def index() -> np.ndarray:
        return payload.copy()

    return index


def build_part(folder: Path, number: int, entries: Sequence[KernelEntry], total: int = 1,
               runtime: Path | None = None) -> Path:
    """Compile ``entries`` into part ``number`` (of ``total``) of the library in ``folder`` (the
    file replaced whole), saying on stderr which kernel it compiles and when it writes the
    machine code; returns the file's path. ``runtime``: the build's folder of the C runtime
    compiled once (``shared_runtime``); None: this part compiles its own.

    Raises:
        BuildError: numba's AOT compiler is missing or fails, or a kernel has an option its
            export would drop."""
    name, label = f"{LIBRARY}_{number}", f"part {number}/{total}"
    exports = {f"k{position:03d}": entry for position, entry in enumerate(entries)}  # (pycc sorts them by name)
    done = []

    def announce(symbol: str | None) -> None:
        if symbol is None:
            say(f"{label}: optimising and writing the machine code of its {len(entries)} kernels ...")
        elif symbol in exports:
            done.append(symbol)
            say(f"{label}: kernel {len(done)}/{len(entries)} {short_name(exports[symbol].kernel)}")

    kernels = []
    try:
        compiler = part_compiler(name, runtime, announce)
        compiler.verbose = False
        compiler.target_cpu = cpu_level()
        for export, entry in exports.items():
            dispatcher = dispatcher_of(entry)
            dropped = unexported_options(dispatcher)
            if dropped:
                raise BuildError(f"{entry.kernel} is compiled with {', '.join(dropped)}, which numba.pycc's export "
                                 "would not apply: add it to the export or drop it from the kernel")  # fmt: skip
            compiler.export(export, return_type_of(entry)(*signature_of(entry)))(dispatcher.py_func)
            kernels.append({"kernel": entry.kernel, "export": export, "signature": entry.signature,
                            "signature_pickle": entry.signature_pickle,
                            "return_pickle": entry.return_pickle})  # fmt: skip
    except BuildError:
        raise
    except ImportError as exc:
        raise BuildError(f"numba's AOT compiler (numba.pycc) does not import: {exc}") from None
    except Exception as exc:  # (no C compiler; a kernel pycc cannot export)
        raise BuildError(f"numba.pycc: {type(exc).__name__}: {exc}") from exc
    sources = {**imported_sources(), **{source: source_digest(PACKAGE_DIR / source) for source in BUILD_SOURCES}}
    index = {"numba": numba_version(), "numpy": numpy_release(), "cpu": compiler.target_cpu, "sources": sources,
             "kernels": kernels}  # fmt: skip
    compiler.export(INDEX_EXPORT, "uint8[::1]()")(index_function(json.dumps(index).encode()))
    folder.mkdir(parents=True, exist_ok=True)
    # built beside its place and renamed over it: a process that has the old one loaded keeps it
    # (copied over in place across file systems, the loaded file would change under it: SIGBUS)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".aot-build-") as scratch:
        compiler.output_dir = scratch
        system_temp, tempfile.tempdir = tempfile.tempdir, scratch  # (pycc's own build folder: removed with it)
        try:
            compiler.compile()
        except Exception as exc:
            raise BuildError(f"numba.pycc failed: {type(exc).__name__}: {exc}") from exc
        finally:
            tempfile.tempdir = system_temp
        built = Path(scratch) / compiler.output_file
        os.replace(built, folder / built.name)
    return folder / built.name


def main(argv: list[str]) -> int:
    """A worker of ``aot_build``: ``FOLDER RUNTIME NUMBER TOTAL K...`` builds part NUMBER of
    TOTAL from the entries at positions K of ``manifest_entries()`` into FOLDER, with the C
    runtime shared in the folder RUNTIME (``-``: its own). 0 when built, 1 (with the reason on
    stderr) when not."""
    folder, runtime, number, total, *positions = argv
    started = time.perf_counter()
    try:
        entries = manifest_entries()
        path = build_part(Path(folder), int(number), [entries[int(k)] for k in positions], int(total),
                          None if runtime == "-" else Path(runtime))  # fmt: skip
    except BuildError as exc:
        say(f"part {number}/{total} was not compiled: {exc}")
        return 1
    say(f"part {number}/{total}: {path.name} written in {time.perf_counter() - started:.1f} s ({cpu_seconds():.1f} s "
        "of CPU)")
    return 0


def cpu_seconds() -> float:
    """CPU seconds (user and system) this process and the processes it waited for (the C
    compiler) have spent; 0.0 where the platform does not say."""
    try:
        import resource
    except ImportError:  # pragma: no cover (not on Windows)
        return 0.0
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in used)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
