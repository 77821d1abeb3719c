"""Checks of a component's field values: each returns the value as a float, or raises a
ValueError naming the component and the field (``Agent.max_speed: must be > 0, got -1``)."""

from __future__ import annotations

from typing import Any

from ecs_nav.core.limits import COORDINATE_LIMIT, NUMBER_LIMIT, SPEED_LIMIT, check_number


def check_coordinate(owner: str, name: str, value: Any, limit: float = COORDINATE_LIMIT) -> float:
    """A finite number at most ``limit`` in magnitude (a coordinate, by default)."""
    return check_number(owner, name, value, limit=limit)


def check_speed(owner: str, name: str, value: Any) -> float:
    """A finite speed at most ``SPEED_LIMIT`` in magnitude."""
    return check_number(owner, name, value, limit=SPEED_LIMIT)


def check_positive(owner: str, name: str, value: Any, allow_zero: bool = False, limit: float = NUMBER_LIMIT,
              allow_inf: bool = False) -> float:
    """A number > 0 (>= 0 with ``allow_zero``), finite (unless ``allow_inf``) and at most ``limit``."""
    v = check_number(owner, name, value, limit=limit, allow_inf=allow_inf)
    if not (v >= 0 if allow_zero else v > 0):
        raise ValueError(f"{owner}.{name}: must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def check_length(owner: str, name: str, value: Any) -> float:
    """A length > 0, m, at most ``COORDINATE_LIMIT``."""
    return check_positive(owner, name, value, limit=COORDINATE_LIMIT)


def check_length_or_zero(owner: str, name: str, value: Any) -> float:
    """A length >= 0, m, at most ``COORDINATE_LIMIT``."""
    return check_positive(owner, name, value, allow_zero=True, limit=COORDINATE_LIMIT)


MIN_MASS = 1e-3
"""kg. ``Agent.mass`` is at least this (force / mass stays finite)."""


def check_mass(owner: str, name: str, value: Any) -> float:
    """A mass, kg, at least ``MIN_MASS``."""
    v = check_positive(owner, name, value)
    if v < MIN_MASS:
        raise ValueError(f"{owner}.{name}: must be >= {MIN_MASS:g}, got {value!r}")
    return v
