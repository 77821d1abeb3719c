"""Kernels compiled ahead of time: numba's dispatchers, answered by a compiled library where one
is installed with the package.

numba compiles a kernel on its first call with new argument types (0.15 s of CPU for the median
function, about 25 s for the largest): on an empty cache the chase scene waits about 39 s before
its first tick on the 2-core machine of ``bench/RESULTS.md`` (its first-run table, without the
library). ``ecs_nav.compile.aot_build`` compiles every kernel the built-in scenes call from
Python, for the argument types they call it with (``kernel_manifest``), ahead of time into a
few extension modules, its parts ``aot_kernels_1``, ``aot_kernels_2``, ... (numba's AOT
compiler, ``numba.pycc``, one process a part), each carrying its own index. Installing the
package builds them (``setup.py``; ``make`` runs the build as a step of its own, where its
progress shows); ``ecs-nav compile --ahead`` builds again in place the parts that changed.

``kernel`` is the decorator of every kernel in the package: ``numba.njit(cache=True, ...)``, with
the library's code for the argument types it holds put in the dispatcher's own table of compiled
versions. A call from Python with those types runs it: nothing is compiled or loaded from numba's
cache. A call with other types, or from another kernel, compiles as it would without the library.
Both give the same results bit for bit (``tests/test_aot.py`` compares every built-in scene's
state both ways).

A type a kernel's argument types name (a NamedTuple) must be defined above the kernel, or in a
module imported before it: the library's versions are attached as the decorator runs.

A part is used only when its index matches what is installed: the numba release and numpy
major.minor release that built it, a CPU with the instruction set it was compiled for
(``cpu_level``), and every module of the package its build imported (the kernels, and the
constants they read), byte for byte; and not under numba's debugging settings (bounds checks,
debug information, another optimisation level). Otherwise a warning says why and which parts,
once, and their kernels compile on first use as without them; the other parts are used. A
missing part (``make demo`` builds only the parts of its scene's kernels) only means its
kernels compile on first use. ``ECS_NAV_AOT=0`` turns the library off (the kernel recorder and
the tests of numba's cache run so).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.machinery
import json
import os
import platform
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import numba
from numba.core.dispatcher import Dispatcher

from ecs_nav.compile.manifest import decode_types

try:  # (numba's C dispatcher's fingerprint of a value: not public API; its typeof tells the same apart)
    from numba._dispatcher import compute_fingerprint
except ImportError:  # pragma: no cover
    compute_fingerprint = numba.typeof

LIBRARY = "aot_kernels"
"""The first part of the name of the library's modules, its parts, in the package
(``ecs_nav.aot_kernels_1``, ``ecs_nav.aot_kernels_2``, ...)."""
PART_NAME = re.compile(rf"{LIBRARY}_([1-9][0-9]*)")
"""A part's module name; the group is its number."""
INDEX_EXPORT = "index"
"""The library's function returning its index (JSON bytes, as a uint8 array)."""
PACKAGE_DIR = Path(__file__).parents[1]
"""The folder the index's source paths are relative to (the ``ecs_nav`` package's, which holds the
library)."""
AOT_VARIABLE = "ECS_NAV_AOT"
"""The environment variable that turns the library off when set to ``0``."""
X86_64_V3 = "x86-64-v3"
"""The CPU level the library is compiled for where the building CPU has it: the x86-64 of 2013 on
(AVX2, FMA, BMI), at which the kernels run as fast as numba's JIT for this CPU (measured 2026-11-25
on a 2-core AMD EPYC VM: at the architecture's baseline, SSE2, the 10,000-agent PhysicsSystem
took 2.47-2.55 ms against 2.34-2.43)."""
X86_64_V3_FEATURES = ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave", "cx16", "popcnt",
                      "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")  # fmt: skip
"""LLVM's names of the instruction-set features x86-64-v3 implies."""


CHECK_CALLS_VARIABLE = "ECS_NAV_CHECK_CALLS"
"""Set to ``1`` (the test suite sets it: ``tests/conftest.py``), every call of a kernel through
its compiled version (``DirectCall``, and the SteeringSystem's and PhysicsSystem's one-call
kernels) is checked to hand the argument types of the first (``same_types``)."""


class AotWarning(UserWarning):
    """The compiled library is installed but cannot be used; the kernels compile on first use."""


def checking_calls() -> bool:
    """Whether ``$ECS_NAV_CHECK_CALLS`` is ``1``: read at a kernel's first call through its
    compiled version, which then keeps its types to check every later call against."""
    return os.environ.get(CHECK_CALLS_VARIABLE, "").strip() == "1"


def enabled() -> bool:
    """Whether the library may be used: ``$ECS_NAV_AOT`` is not ``0``."""
    return os.environ.get(AOT_VARIABLE, "").strip() != "0"


def source_digest(path: Path) -> str:
    """The sha256 of a source file's bytes (hex)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lacking(cpu: str) -> list[str]:
    """The features of CPU level ``cpu`` ("" for the architecture's baseline, or ``X86_64_V3``)
    that this CPU lacks (LLVM's names)."""
    if not cpu:
        return []
    import llvmlite.binding as llvm

    have = llvm.get_host_cpu_features()
    return [feature for feature in X86_64_V3_FEATURES if not have.get(feature, False)]


def cpu_level() -> str:
    """The CPU level to compile the library for here: ``X86_64_V3`` on an x86-64 CPU that has it,
    else "" (the architecture's baseline)."""
    if platform.machine().lower() not in ("x86_64", "amd64") or lacking(X86_64_V3):
        return ""
    return X86_64_V3


def numpy_release() -> str:
    """numpy's major.minor release (numba's code for a numpy function may differ between them)."""
    import numpy

    return ".".join(numpy.__version__.split(".")[:2])


def debug_settings() -> list[str]:
    """numba's debugging settings that are on (the library was compiled without them)."""
    config = numba.config
    settings = {"NUMBA_BOUNDSCHECK": bool(config.BOUNDSCHECK), "NUMBA_DEBUGINFO": bool(config.DEBUGINFO_DEFAULT),
                "NUMBA_OPT": int(config.OPT) != 3 or bool(getattr(config.OPT, "is_opt_max", False))}  # fmt: skip
    return [name for name, on in settings.items() if on]


def mismatch(index: dict) -> str | None:
    """Why a library with this index does not belong to what is installed, or None when it does."""
    if index.get("numba") != numba.__version__:
        return f"it was built with numba {index.get('numba')}, and numba {numba.__version__} is installed"
    if index.get("numpy") != numpy_release():
        return f"it was built with numpy {index.get('numpy')}, and numpy {numpy_release()} is installed"
    debugging = debug_settings()
    if debugging:
        return f"it was compiled without numba's debugging settings, and {', '.join(debugging)} is set"
    missing = lacking(index.get("cpu", ""))
    if missing:
        return f"it was compiled for {index['cpu']}, and this CPU lacks {', '.join(missing)}"
    for name, digest in index["sources"].items():
        path = PACKAGE_DIR / name
        if not path.is_file() or source_digest(path) != digest:
            return f"{name} changed since it was built"
    return None


def part_paths(folder: Path = PACKAGE_DIR) -> dict[str, Path]:
    """The library's parts in ``folder`` (default: the package's), ``{"aot_kernels_1": file,
    ...}`` in the order of their numbers: the files named as modules of this Python's extension
    suffixes (the first suffix that names one, as an import takes)."""
    found: dict[str, Path] = {}
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for path in folder.glob(f"{LIBRARY}_*{suffix}"):
            name = path.name[: -len(suffix)]
            if PART_NAME.fullmatch(name):
                found.setdefault(name, path)
    return dict(sorted(found.items(), key=lambda item: int(PART_NAME.fullmatch(item[0]).group(1))))


def part_index(module) -> dict:
    """The index a part's module carries (its function ``index``: JSON bytes)."""
    return json.loads(bytes(getattr(module, INDEX_EXPORT)()))


@functools.lru_cache(maxsize=1)
def library() -> dict[str, tuple[tuple[str, Callable], ...]]:
    """The installed library, every part that matches what is installed together: ``{"module.function":
    ((pickled argument types, compiled function), ...)}``; {} when there is none or ``$ECS_NAV_AOT``
    is 0. A part that does not match is left out, and a warning says why and which (once per
    reason). The argument types are decoded as each kernel is decorated (``kernel``): they may
    name a type of the kernel's own module."""
    if not enabled():
        return {}
    found: dict[str, list] = {}
    refused: dict[str, list[str]] = {}  # reason -> parts
    for name in part_paths():
        try:
            module = importlib.import_module(f"ecs_nav.{name}")
            index = part_index(module)
            reason = mismatch(index)
            if reason is None:
                versions = [(entry["kernel"], entry["signature_pickle"], getattr(module, entry["export"]))
                            for entry in index["kernels"]]  # fmt: skip
        except Exception as exc:  # (a part of another layout or platform is only not used)
            reason = f"it does not load ({type(exc).__name__}: {exc})"
        if reason is not None:
            refused.setdefault(reason, []).append(name)
            continue
        for kernel_name, types, compiled in versions:
            found.setdefault(kernel_name, []).append((types, compiled))
    for reason, names in refused.items():
        not_used(f"{reason} ({', '.join(names)})")
    return {kernel_name: tuple(versions) for kernel_name, versions in found.items()}


def installed() -> bool:
    """Whether any part of the library is installed (used or not)."""
    return bool(part_paths())


def not_used(reason: str) -> None:
    """Warn that the library (or a part of it) is not used, and why."""
    if "must be defined above it" in reason:
        remedy = "this is a bug in ecs_nav"
    elif reason.startswith("it was built with numba "):
        remedy = ("`python -m ecs_nav.compile.recorder` records the kernels for this numba, then `ecs-nav compile "
                  "--ahead` builds them")  # fmt: skip
    elif "debugging settings" in reason:
        remedy = "without those settings they are used again"
    else:
        remedy = "`ecs-nav compile --ahead` builds them again"
    warnings.warn(f"ecs_nav: kernels compiled ahead of time are not used: {reason}. They compile on first use; "
                  f"{remedy}.", AotWarning, stacklevel=3)  # fmt: skip


_held: dict[str, dict[tuple, Callable]] = {}
"""The library's functions attached so far: kernel name -> {argument types: function}."""


def kernel_name(dispatcher: Callable) -> str:
    """ "module.function" of a kernel (a numba dispatcher, or the function it compiles)."""
    function = getattr(dispatcher, "py_func", dispatcher)
    return f"{function.__module__}.{function.__name__}"


def attached() -> set[str]:
    """The kernels ("module.function") the library answers for, among those imported so far."""
    return {name for name, held in _held.items() if held}


def holds(kernel_name: str, args: tuple) -> bool:
    """Whether the library answers ``kernel_name`` ("module.function") for argument types ``args``
    (once the kernel's module is imported)."""
    return args in _held.get(kernel_name, ())


def compiled_version(dispatcher: Callable, args: tuple) -> Callable:
    """The compiled function that ``dispatcher(*args)`` runs: the library's for the types of
    ``args`` where it holds them, else numba's (compiled, or loaded from its cache, now when it
    has not been). Calling it skips numba's dispatch, which types every argument on every call:
    about 0.15 µs an array and 0.65-0.8 µs a tuple of arrays, about 1 µs a call of the one-call
    kernels (measured 2026-11-27 on a 2-core AMD EPYC VM). It checks nothing: call it only with arguments of
    the types of ``args``, arrays of the same dtype, dimensions and layout, and scalars of the
    same kind. Another array is misread (an int64 array of the same item size read as float64)
    or crashes the process (another number of dimensions); numba converts a scalar to the type
    it was compiled for (2.5 handed to an int64 is 2). ``same_types`` checks a call where
    ``checking_calls()``. ``dispatcher`` itself where numba's JIT is disabled."""
    if not isinstance(dispatcher, Dispatcher):
        return dispatcher
    types = tuple(dispatcher.typeof_pyval(value) for value in args)
    held = _held.get(kernel_name(dispatcher), {})
    if types in held:
        return held[types]
    compiled = dispatcher.overloads.get(types)
    return compiled.entry_point if compiled is not None else dispatcher.compile(types)


def call_types(args: tuple) -> tuple:
    """What numba's dispatch tells apart in ``args``, argument by argument: numba's own
    fingerprint of each (dtype, dimensions, layout and writability of an array; the kind of a
    scalar; tuples element by element), from its C dispatcher, about 0.15 µs an argument."""
    return tuple(map(compute_fingerprint, args))


def same_types(kernel: Callable, first: tuple, args: tuple) -> None:
    """Raise TypeError naming ``kernel`` and the first argument whose type is not that of the
    first call (``first``: ``call_types`` of its arguments): a call through the compiled version
    checks nothing itself (``compiled_version``)."""
    now = call_types(args)
    if now != first:
        i = next(i for i, (a, b) in enumerate(zip(first, now, strict=True)) if a != b)
        raise TypeError(f"{kernel_name(kernel)}: argument {i} is a {numba.typeof(args[i])}, of another type than at "
                        "the first call; a kernel called through its compiled version must be handed the same types")


def pin(kernel: Callable, args: tuple) -> tuple[Callable, Callable, tuple | None]:
    """(``kernel``, its compiled version for the types of ``args``, those types where
    ``checking_calls()`` else None): what a caller keeps to call ``kernel`` without dispatch,
    checking a later call with ``same_types`` where the types were kept."""
    return kernel, compiled_version(kernel, args), call_types(args) if checking_calls() else None


class DirectCall:
    """Calls the kernel that ``current()`` returns without numba's dispatch: its compiled version
    for the argument types of the first call (``compiled_version``), looked up again only when
    ``current()`` returns another object (as when a test puts a spy where the caller reads the
    kernel: ``current`` reads it there, e.g. ``lambda: waypoint_hits``). It checks nothing (but
    where ``checking_calls()``), so its caller must hand it arguments of the same types on every
    call, by construction. A call through it costs about 0.2 µs more than the same lookup
    written inline, as the SteeringSystem and PhysicsSystem write it for their one-call kernels,
    a small world's whole tick (measured 2026-11-27 on a 2-core AMD EPYC VM)."""

    __slots__ = ("_current", "_kernel", "_call", "_types")

    def __init__(self, current: Callable[[], Callable]):
        self._current = current
        self._kernel = self._call = self._types = None

    def __call__(self, *args):
        kernel = self._current()
        if kernel is not self._kernel:
            self._kernel, self._call, self._types = pin(kernel, args)
        elif self._types is not None:
            same_types(kernel, self._types, args)
        return self._call(*args)


def attach(dispatcher: Dispatcher, versions: tuple[tuple[tuple, Callable], ...]) -> None:
    """Put compiled ``versions`` ((argument types, function), from the library) in ``dispatcher``'s
    table: its calls with those types run them. numba's dispatcher has no public way to add a
    compiled function; ``_insert`` is how its own ``add_overload`` does it. When a kernel calling
    this one later needs the types compiled by numba, that version is kept in ``overloads`` (the
    caller links it) but not put in the table a second time; ``recompile`` puts the library's back.
    (Called directly, the library's functions check nothing: an array of another type or shape is
    read as if it were right.)"""
    held = _held.setdefault(kernel_name(dispatcher), {})
    held.update(versions)
    numba_add, numba_recompile = dispatcher.add_overload, dispatcher.recompile

    def insert() -> None:
        for args, function in versions:  # (``_code``: the number numba's dispatch table keys a type by)
            dispatcher._insert([t._code for t in args], function, False)

    def add_overload(cres) -> None:
        args = tuple(cres.signature.args)
        if args in held:
            dispatcher.overloads[args] = cres
        else:
            numba_add(cres)

    def recompile() -> None:  # (numba's empties the table, the library's versions with it)
        numba_recompile()
        insert()

    insert()
    dispatcher.add_overload = add_overload
    dispatcher.recompile = recompile


def kernel(function: Callable | None = None, /, **options) -> Callable:
    """``numba.njit(cache=True, **options)``, with the library's versions of the function attached
    (``attach``): ``@kernel`` or ``@kernel(inline="always")``."""

    def decorate(function: Callable) -> Callable:
        dispatcher = numba.njit(cache=True, **options)(function)
        name = kernel_name(function)
        pickled = library().get(name)
        if pickled and isinstance(dispatcher, Dispatcher):  # (not with numba's JIT disabled)
            try:
                attach(dispatcher, tuple((decode_types(types), compiled) for types, compiled in pickled))
            except (AttributeError, ImportError) as exc:
                not_used(f"{name}'s argument types do not load ({exc}): a type they name must be defined above it")
        return dispatcher

    return decorate if function is None else decorate(function)
