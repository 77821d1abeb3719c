"""The AgentTable's columns inside a kernel: views carved from its one buffer by its layout.

A compiled kernel's call costs time for every array handed to it (numba types and unpacks each
one); the systems' one-call ticks read about twenty columns. They take the table's ``buffer``
and ``layout`` instead (``ecs_nav.table``) and carve the columns they read with the functions
below, which are inlined and cost nothing at run time: each is the same C-contiguous array the
table holds as an attribute (``table.pos``), reading and writing the same memory.

    pos = float_pairs(buffer, layout, POS, capacity)   # table.pos: (capacity, 2) float64

``column`` is a column's place in ``ecs_nav.table.COLUMNS``; the constants below name those the
kernels read.
"""

from __future__ import annotations

import numpy as np

from ecs_nav.aot import kernel
from ecs_nav.table import COLUMNS

(ENTITY, POS, VEL, HEADING, ELEVATION, RADIUS, MAX_SPEED, MAX_FORCE, MASS, TURN_SPEED, MAX_CLIMB, FORCE, WEIGHTS,
 COMBINER, DECELERATION, FEELER_LENGTH, NEIGHBOUR_RADIUS, STEER_TARGET, FOLLOW_STATE, PREV_POS, HAS_VELOCITY,
 HAS_COLLIDER, IS_AGENT, HAS_STEERING, HAS_STEER_TARGET) = (COLUMNS.index(name) for name in (
    "entity", "pos", "vel", "heading", "elevation", "radius", "max_speed", "max_force", "mass", "turn_speed",
    "max_climb", "force", "weights", "combiner", "deceleration", "feeler_length", "neighbour_radius",
    "steer_target", "follow_state", "prev_pos", "has_velocity", "has_collider", "is_agent", "has_steering",
    "has_steer_target"))
"""Places in ``layout`` of the columns the kernels read by name."""


@kernel(inline="always")
def float_column(buffer, layout, column, capacity):
    """A (capacity,) float64 column."""
    return buffer[layout[column]:layout[column] + 8 * capacity].view(np.float64)


@kernel(inline="always")
def float_pairs(buffer, layout, column, capacity):
    """A (capacity, 2) float64 column (a position, a velocity, ...)."""
    return buffer[layout[column]:layout[column] + 16 * capacity].view(np.float64).reshape((capacity, 2))


@kernel(inline="always")
def float_rows(buffer, layout, column, capacity):
    """A (capacity, width) float64 column, its width what the layout gives it (the weights)."""
    width = (layout[column + 1] - layout[column]) // (8 * capacity)
    return buffer[layout[column]:layout[column] + 8 * capacity * width].view(np.float64).reshape((capacity, width))


@kernel(inline="always")
def flag_column(buffer, layout, column, capacity):
    """A (capacity,) bool column."""
    return buffer[layout[column]:layout[column] + capacity].view(np.bool_)


@kernel(inline="always")
def int8_column(buffer, layout, column, capacity):
    """A (capacity,) int8 column (a code)."""
    return buffer[layout[column]:layout[column] + capacity].view(np.int8)


@kernel(inline="always")
def int64_column(buffer, layout, column, capacity):
    """A (capacity,) int64 column (an entity id)."""
    return buffer[layout[column]:layout[column] + 8 * capacity].view(np.int64)
