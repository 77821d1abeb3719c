"""Compile options shared by ecs_nav's numba kernels.

``NO_REFCOUNT`` compiles a kernel without numba's reference counting (NRT). A kernel that takes
arrays and is called once per agent, shape or move otherwise pays an atomic incref and decref
for every array it is handed or takes out of a tuple, on every call: two thirds of
``map_kernels.resolve_disc``'s time (a perf profile, 2026-11-25, 2-core AMD EPYC VM). Only for kernels that
allocate nothing: numba refuses to compile one that does under it.

The option is numba's own (``_nrt``: numba compiles its string helpers with it) but not part of
its public API. Where a numba release no longer lists it, ``NO_REFCOUNT`` is empty and the
kernels compile with reference counting: the same results at the old speed.

One rule rather than an option: a kernel copies an array into another element by element, never
as ``a[:k] = b`` (an array assigned to an array slice). numba compiles the shape-mismatch message
of such an assignment (string formatting), about 2.5 s of CPU on a first run; the loops compile
in a fraction of that.
"""

from __future__ import annotations

from numba.core.cpu import CPUTargetOptions

NO_REFCOUNT: dict[str, bool] = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
"""``**NO_REFCOUNT`` in ``numba.njit(...)``: no reference counting in that kernel (see above)."""
