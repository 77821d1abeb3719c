"""The AgentTable's columns inside a kernel, sliced out of its buffer by its layout.

A compiled kernel's call costs time for every array handed to it (numba types and unpacks each
one, about 50 ns); the systems' one-call ticks read about twenty columns. They take the table's
``layout`` and its buffer viewed as each element type they read (``table.float_view``,
``pair_view``, ``flag_view``, ``int8_view``, ``int64_view``: ``ecs_nav.core.table``), and ``column``
slices each column out of the view of its type: the same C-contiguous array the table holds as
an attribute (``table.pos``), reading and writing the same memory. A slice costs a few ns; a
numba ``view`` or ``reshape`` inside a kernel about 35, so the views are made once, in Python,
when the table is carved (only the weights, ``float_rows``, take a ``reshape`` a call).

    pos = column(pair_view, layout[POS], capacity)          # table.pos: (capacity, 2) float64
    max_speed = column(float_view, layout[MAX_SPEED], capacity)

The constants below are the places in ``layout`` of the columns the kernels read: their places in
``ecs_nav.core.table.COLUMNS``, the columns of every World's table (``default_columns``; a test checks
that order). The kernels trust them and do no bounds checks.
"""

from __future__ import annotations

from ecs_nav.compile.aot import kernel
from ecs_nav.core.table import COLUMNS

(ENTITY, POS, VEL, HEADING, ELEVATION, RADIUS, LAYER, MAX_SPEED, MAX_FORCE, MASS, TURN_SPEED, MAX_CLIMB, FORCE, WEIGHTS,
 COMBINER, DECELERATION, FEELER_LENGTH, NEIGHBOUR_RADIUS, STEER_TARGET, FOLLOW_STATE, PREV_POS, HAS_VELOCITY,
 HAS_COLLIDER, IS_AGENT, HAS_STEERING, HAS_STEER_TARGET) = (COLUMNS.index(name) for name in (
    "entity", "pos", "vel", "heading", "elevation", "radius", "layer", "max_speed", "max_force", "mass", "turn_speed",
    "max_climb", "force", "weights", "combiner", "deceleration", "feeler_length", "neighbour_radius",
    "steer_target", "follow_state", "prev_pos", "has_velocity", "has_collider", "is_agent", "has_steering",
    "has_steer_target"))
"""Places in ``layout`` of the columns the kernels read by name."""
(TARGET_ENTITY, PANIC_DISTANCE, THREAT_RANGE, WANDER_RADIUS, WANDER_DISTANCE, WANDER_JITTER, WANDER_TARGET,
 DETECTION_BOX_LENGTH) = (COLUMNS.index(name) for name in (
    "target_entity", "panic_distance", "threat_range", "wander_radius", "wander_distance", "wander_jitter",
    "wander_target", "detection_box_length"))
"""The same, for the columns of the behaviours that read more than their own row
(``ecs_nav.motion.steering_given``)."""


@kernel
def column(view, offset, capacity):
    """The column at byte ``offset`` (``layout[index]``) as ``capacity`` rows of ``view``, the
    table's buffer viewed as its element type (``pair_view`` for a (capacity, 2) column)."""
    start = offset // view.strides[0]
    return view[start:start + capacity]


@kernel
def float_rows(floats, offset, capacity, width):
    """The (capacity, width) float64 column at byte ``offset`` (the weights); ``floats``: the
    table's ``float_view``."""
    start = offset // floats.strides[0]
    return floats[start:start + capacity * width].reshape((capacity, width))
