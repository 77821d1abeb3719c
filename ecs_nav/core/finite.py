"""``all_finite``: the common case of a NaN guard -- every value finite -- in one compiled pass;
``refuse_non_finite``: the error a system raises when it is not.

The systems check what they computed before they write it (``refuse_non_finite`` names the
entities and raises). Almost every tick everything is finite, and for a few rows
``np.isfinite(a)`` plus a count costs ~0.8 µs an array, several times the data; this pass costs
~0.2 µs, and at 20,000 values ~1 µs against numpy's 3-5 µs (it has no early exit, so LLVM
vectorises it). A caller asks it first and calls ``refuse_non_finite`` only when it says no.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel


@kernel
def all_finite(values) -> bool:
    """Whether every element of the float array ``values`` (any shape) is finite: ``x - x`` is
    0 for a finite x and NaN for inf and NaN (numba raises no floating-point warnings)."""
    flat = values.ravel()
    bad = False
    for i in range(flat.size):
        x = flat[i]
        bad |= (x - x) != 0.0
    return not bad


def refuse_non_finite(system: str, entities: np.ndarray, **arrays: np.ndarray) -> None:
    """Raise FloatingPointError naming ``system`` and the entities whose row in any of
    ``arrays`` ((k,) or (k, d), aligned with ``entities``) is not finite: a system computes
    first, checks, and refuses rather than write NaN into the table."""
    for what, arr in arrays.items():
        finite = np.isfinite(arr)
        if np.count_nonzero(finite) == finite.size:  # (faster than .all() on a few rows)
            continue
        bad = ~finite.all(axis=1) if arr.ndim == 2 else ~finite
        ids = [int(e) for e in entities[bad]]
        shown = ", ".join(map(str, ids[:20])) + (f" ... ({len(ids)} in all)" if len(ids) > 20 else "")
        raise FloatingPointError(f"{system}: non-finite {what} for entity id(s) {shown}; refusing to update")
