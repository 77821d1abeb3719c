"""Build the library of kernels compiled ahead of time that ``ecs_nav.compile.aot`` uses:
``python -m ecs_nav.compile.aot_build FOLDER`` writes the extension module ``aot_kernels.<platform
suffix>`` into FOLDER (``setup.py`` runs it when the package is installed or a wheel is
built, ``ecs-nav compile --ahead`` into the installed package).

Every kernel and set of argument types that ``kernel_manifest`` lists for the built-in scenes is
exported from one extension module by numba's AOT compiler, ``numba.pycc``. The code is compiled
for a CPU level, not for this machine's model (``aot.cpu_level``: x86-64-v3 where this CPU has it,
else the architecture's baseline), so that a wheel runs on any CPU of that level; on one without
it the library is not used. The module carries its index (JSON, returned by its function
``index``): each export's kernel and argument and return types, the numba and numpy releases, the
CPU level, and the digest of every source file of the package the build imported, the kernels and
every constant they read, and of this module (how the library is built).

``numba.pycc`` is numba's own AOT compiler, marked pending deprecation since numba 0.57
("Replacement technology is being developed"). It needs setuptools, Python's headers and a C
compiler. Where it is missing or fails, the build fails with a message and the package works
without the library: its kernels compile on first use.

``--reuse`` (what ``setup.py`` passes) copies the library the package already has instead,
where it is what the build would write (``reusable_library``): a wheel built from a source tree
whose library is current (an editable install, ``ecs-nav compile --ahead``) takes seconds, not
the 1.5 minutes of compiling every kernel again.

``main`` compiles on an empty numba cache, as numba compiles by default (its debugging settings
removed from the environment), with ``ECS_NAV_AOT=0``: kernels already answered by a library
would not be compiled here.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba.core import config as numba_config

from ecs_nav.compile.aot import (
    AOT_VARIABLE,
    INDEX_EXPORT,
    LIBRARY,
    PACKAGE_DIR,
    cpu_level,
    mismatch,
    numpy_release,
    source_digest,
)
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


def unexported_options(dispatcher) -> list[str]:
    """The options ``dispatcher`` is compiled with that numba.pycc's export would not apply (its
    ``locals`` types among them)."""
    dropped = [name for name, value in dispatcher.targetoptions.items()
               if name not in EXPORTED_OPTIONS or (name == "boundscheck" and value)]  # fmt: skip
    return sorted(dropped + (["locals"] if dispatcher.locals else []))


DEBUG_SETTINGS = ("NUMBA_BOUNDSCHECK", "NUMBA_DEBUGINFO", "NUMBA_OPT", "NUMBA_DISABLE_JIT")
"""numba's environment settings the build ignores (``ecs_nav.compile.aot`` does not use the library under
the first three)."""


BUILD_SOURCE = "compile/aot_build.py"
"""This module's file, relative to the package folder."""


class BuildError(Exception):
    """The library cannot be built (the message says why)."""


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


def build(folder: Path, entries: list[KernelEntry]) -> Path:
    """Compile ``entries`` (``manifest_entries()``) into ``folder`` (the library, replaced whole);
    returns its path.

    Raises:
        BuildError: numba's AOT compiler is missing or fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (its pending deprecation: see the module doc)
            from numba.pycc import CC
    except ImportError as exc:
        raise BuildError(f"numba's AOT compiler (numba.pycc) does not import: {exc}") from None
    kernels = []
    try:
        library = CC(LIBRARY)  # (it looks for a C compiler)
        library.verbose = False
        library.target_cpu = cpu_level()
        for number, entry in enumerate(entries):
            export = f"k{number}"
            dispatcher = dispatcher_of(entry)
            dropped = unexported_options(dispatcher)
            if dropped:
                raise BuildError(f"{entry.kernel} is compiled with {', '.join(dropped)}, which numba.pycc's export "
                                 "would not apply: add it to the export or drop it from the kernel")  # fmt: skip
            library.export(export, return_type_of(entry)(*signature_of(entry)))(dispatcher.py_func)
            kernels.append({"kernel": entry.kernel, "export": export, "signature": entry.signature,
                            "signature_pickle": entry.signature_pickle,
                            "return_pickle": entry.return_pickle})  # fmt: skip
    except BuildError:
        raise
    except Exception as exc:  # (no C compiler; a kernel pycc cannot export)
        raise BuildError(f"numba.pycc: {type(exc).__name__}: {exc}") from exc
    # (this module, run as __main__, is among the sources: how the library is built is part of it)
    sources = {**imported_sources(), BUILD_SOURCE: source_digest(PACKAGE_DIR / BUILD_SOURCE)}
    index = {"numba": numba_version(), "numpy": numpy_release(), "cpu": library.target_cpu, "sources": sources,
             "kernels": kernels}  # fmt: skip
    library.export(INDEX_EXPORT, "uint8[::1]()")(index_function(json.dumps(index).encode()))
    folder.mkdir(parents=True, exist_ok=True)
    # built beside its place and renamed over it: a process that has the old one loaded keeps it
    # (copied over in place across file systems, the loaded file would change under it: SIGBUS)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".aot-build-") as scratch:
        library.output_dir = scratch
        system_temp, tempfile.tempdir = tempfile.tempdir, scratch  # (pycc's own build folder: removed with it)
        try:
            library.compile()
        except Exception as exc:
            raise BuildError(f"numba.pycc failed: {type(exc).__name__}: {exc}") from exc
        finally:
            tempfile.tempdir = system_temp
        built = Path(scratch) / library.output_file
        os.replace(built, folder / built.name)
    return folder / built.name


def reusable_library(entries: list[KernelEntry]) -> Path | None:
    """The library ``import ecs_nav.aot_kernels`` finds (the package folder's, or the one an
    editable install of this checkout maps it to) where it is what ``build(folder, entries)``
    would write here: built with this numba and numpy, for this CPU level, from sources with the
    digests of the package's as they are (``aot.mismatch``), and exporting ``entries`` in their
    order; else None. Where it was found does not matter: the digests say what it was built from."""
    try:
        module = importlib.import_module(f"ecs_nav.{LIBRARY}")
        index = json.loads(bytes(getattr(module, INDEX_EXPORT)()))
        held = [(k["kernel"], k["signature_pickle"], k["return_pickle"]) for k in index["kernels"]]
        same = mismatch(index) is None and BUILD_SOURCE in index["sources"] and index.get("cpu") == cpu_level()
    except Exception:  # (none, or one that does not load here or has another index: build)
        return None
    if not same or held != [(entry.kernel, entry.signature_pickle, entry.return_pickle) for entry in entries]:
        return None
    return Path(module.__file__)


def copy_library(library: Path, folder: Path) -> Path:
    """``library`` copied into ``folder`` (replacing one there, as ``build`` does); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / library.name
    if target.exists() and target.samefile(library):
        return target
    with tempfile.TemporaryDirectory(dir=folder, prefix=".aot-build-") as scratch:
        copied = Path(scratch) / library.name
        shutil.copy2(library, copied)
        os.replace(copied, target)
    return target


def index_function(data: bytes) -> Callable[[], np.ndarray]:
    """A function returning ``data``, compiled into the library: its index travels inside it."""
    payload = np.frombuffer(data, np.uint8)

    def index() -> np.ndarray:
        return payload.copy()

    return index


def main(argv: list[str]) -> int:
    """``python -m ecs_nav.compile.aot_build FOLDER [--reuse]``: 0 when built (or, with ``--reuse``, copied
    from the package folder: ``reusable_library``), 1 (with the reason) when not."""
    reuse = "--reuse" in argv
    argv = [arg for arg in argv if arg != "--reuse"]
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m ecs_nav.compile.aot_build FOLDER [--reuse]", file=sys.stderr)
        return 2
    os.environ[AOT_VARIABLE] = "0"  # (this process compiles every kernel: none answered by an older library)
    started = time.perf_counter()
    try:
        # numba's cache checks a helper against its own file only, not the constants it imports:
        # the library is compiled from the sources as they are, on an empty cache
        with tempfile.TemporaryDirectory(prefix="ecs-nav-aot-numba-") as cache:
            os.environ["NUMBA_CACHE_DIR"] = cache
            for setting in DEBUG_SETTINGS:  # (the library is compiled as numba compiles by default)
                os.environ.pop(setting, None)
            numba_config.reload_config()
            entries = manifest_entries()
            current = reusable_library(entries) if reuse else None
            if current is not None:
                try:
                    path = copy_library(current, Path(argv[0]))
                except OSError as exc:  # (compiling may still write it)
                    print(f"ecs_nav: could not copy {current}: {exc}", file=sys.stderr)
                else:
                    done = f"{path} is" if path == current else f"copied {current} to {path}:"
                    print(f"ecs_nav: {done} the library built from these sources for this numba, numpy and CPU "
                          "level", file=sys.stderr)  # fmt: skip
                    return 0
            print(f"ecs_nav: compiling {len(entries)} kernels ahead of time (numba.pycc) ...", file=sys.stderr)
            path = build(Path(argv[0]), entries)
    except BuildError as exc:
        print(f"ecs_nav: the kernels were not compiled ahead of time: {exc}", file=sys.stderr)
        return 1
    print(f"ecs_nav: {path} built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
