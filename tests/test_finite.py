"""all_finite: the NaN guards' fast answer equals numpy's ``np.isfinite(a).all()``."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.core.finite import all_finite


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, None])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 2), (1000, 2)])
def test_it_answers_as_numpy_does(bad, shape):
    rng = np.random.default_rng(len(shape) * 100 + shape[0])
    values = rng.normal(0.0, 1e300, shape)  # large but finite: x - x stays 0
    if bad is not None and values.size:
        values.flat[rng.integers(values.size)] = bad
    assert all_finite(values) == bool(np.isfinite(values).all())


def test_views_that_are_not_contiguous():
    values = np.zeros((6, 4))
    values[3, 1] = np.nan
    assert all_finite(values[:, ::2]) is True  # column 1 is left out
    assert all_finite(values[:, 1]) is False
    assert all_finite(values.T) is False
