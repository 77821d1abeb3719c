"""Hypothesis strategies shared by the tests."""

import math

from hypothesis import strategies as st

from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp

BOUNDS = (-10.0, -10.0, 10.0, 10.0)


@st.composite
def random_maps(draw):
    """A 20 x 20 map (``BOUNDS``) with up to 8 boxes of mixed heights (some low enough to
    climb), 4 pillars and 2 ramps, placed anywhere, overlapping freely."""
    boxes = [
        Box(
            (draw(st.floats(-8, 8)), draw(st.floats(-8, 8))),
            (draw(st.floats(0.05, 4)), draw(st.floats(0.05, 4))),
            draw(st.sampled_from([0.3, 1.0, 3.0])),
        )
        for _ in range(draw(st.integers(0, 8)))
    ]
    circles = [
        Circle((draw(st.floats(-8, 8)), draw(st.floats(-8, 8))), draw(st.floats(0.1, 2)), 2.0)
        for _ in range(draw(st.integers(0, 4)))
    ]
    ramps = []
    for _ in range(draw(st.integers(0, 2))):
        start = (draw(st.floats(-8, 8)), draw(st.floats(-8, 8)))
        angle, length = draw(st.floats(0, 2 * math.pi)), draw(st.floats(1, 8))
        end = (start[0] + length * math.cos(angle), start[1] + length * math.sin(angle))
        ramps.append(Ramp(start, end, draw(st.floats(0.5, 3)), 0.0, draw(st.floats(0.5, 3))))
    return MapGeometry(BOUNDS, boxes=boxes, ramps=ramps, circles=circles)
