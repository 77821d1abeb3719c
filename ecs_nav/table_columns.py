"""The AgentTable's columns inside a kernel: views carved from its one buffer by its layout.

A compiled kernel's call costs time for every array handed to it (numba types and unpacks each
one); the systems' one-call ticks read about twenty columns. They take the table's ``buffer``
and ``layout`` instead (``ecs_nav.table``) and carve the columns they read: ``typed_views``
views the buffer once as each element type, and ``column`` slices a column out of the view of
its type, the same C-contiguous array the table holds as an attribute (``table.pos``), reading
and writing the same memory. (A slice costs a few ns; numba's ``view`` and ``reshape`` of an
array about 35 each, so they are done once a call, not once a column.)

    floats, pairs, flags, codes, ids = typed_views(buffer)
    pos = column(pairs, layout, POS, capacity)          # table.pos: (capacity, 2) float64
    max_speed = column(floats, layout, MAX_SPEED, capacity)

``column``'s third argument, ``index``, is a column's place in ``ecs_nav.table.COLUMNS``; the constants below
name those the kernels read.
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
def typed_views(buffer):
    """The whole buffer as each element type of the columns: (float64, float64 pairs (k, 2),
    bool, int8, int64), for ``column``."""
    floats = buffer.view(np.float64)
    return floats, floats.reshape((floats.size // 2, 2)), buffer.view(np.bool_), buffer.view(np.int8), \
        buffer.view(np.int64)


@kernel(inline="always")
def column(view, layout, index, capacity):
    """The column at ``layout[index]`` as ``capacity`` rows of ``view`` (the one of
    ``typed_views`` of its element type: a float64 pair for a (capacity, 2) column)."""
    start = layout[index] // view.strides[0]
    return view[start:start + capacity]


@kernel(inline="always")
def float_rows(floats, layout, index, capacity, width):
    """The (capacity, width) float64 column at ``layout[index]`` (the weights); ``floats``:
    ``typed_views``' first."""
    start = layout[index] // 8
    return floats[start:start + capacity * width].reshape((capacity, width))
