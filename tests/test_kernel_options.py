"""NO_REFCOUNT: the per-shape and per-agent helper kernels compile without reference counting."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from ecs_nav.compile.options import NO_REFCOUNT
from ecs_nav.geometry import kernels as map_kernels
from ecs_nav.motion import physics, steering_obstacles


def test_the_installed_numba_takes_the_option():
    """Where a numba release drops ``_nrt`` the kernels still run (reference counted, slower):
    this test is what says so."""
    assert NO_REFCOUNT == {"_nrt": False}


@pytest.mark.parametrize("kernel", [map_kernels.resolve_disc, physics.moves_freely, steering_obstacles.wall_force])
def test_the_hot_helpers_are_compiled_with_it(kernel):
    assert kernel.targetoptions.get("_nrt") is False


def test_a_kernel_that_allocates_is_refused_under_it():
    """Why only allocation-free kernels may take it: numba will not compile one that allocates."""

    @numba.njit(**NO_REFCOUNT)
    def allocates(n):
        scratch = np.empty(n)
        scratch[0] = 1.0
        return scratch[0]

    with pytest.raises(numba.core.errors.TypingError, match="Only accept returning of array passed"):
        allocates(3)
