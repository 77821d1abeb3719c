"""Lanes: a side preference for ORCA (``Avoidance.side``), so that opposing streams pass each
other in lanes instead of jamming.

Pedestrians who meet a stream walking against them keep to one side, and two opposing streams
sort themselves into lanes (Helbing and Molnár, "Social force model for pedestrian dynamics",
1995: lanes form from avoiding that is biased to one side; Moussaïd et al., "Experimental study
of the behavioural mechanisms underlying self-organization in human crowds", 2009: the bias
measured). RVO2's agents have no side: each pair parts to whichever side the pair happens to
lean, two dense streams meet as two walls, and they press through each other a few at a time.
An agent whose ``side`` is +1 (pass on the right) or -1 (the left) does two things more:

* **it drifts to its side ahead of the meeting.** Its preferred velocity (heading ``h``, speed
  ``s``) gets a sideways part ``side * LANE_DRIFT * s * f`` to its right (or left), where ``f``
  is the oncoming flow in its way: ``oncoming_flow``, the sum over the agents ahead of it within
  ``LANE_LOOKAHEAD`` m and less than ``LANE_HALF_WIDTH`` m to either side of its line of their
  speed against ``h`` (in units of its own maximum speed), divided by ``LANE_FULL`` and capped
  at 1. With ``LANE_DRIFT = 1`` the drift turns it by up to 45 degrees and the speed limit then
  takes some of its forward speed: it yields as it moves over. An agent whose way ahead is clear
  of oncoming agents walks its course, so a lane once formed keeps its width rather than pressing
  into the wall. Both streams, moving over each to its own side, are sorted before they meet.
* **it passes an oncoming agent on its side.** Where ORCA, for a neighbour ahead that walks
  against its heading, would project the relative velocity on the leg of the velocity obstacle
  that lies on the other side, it takes the leg on its side (``agent_line``'s ``side``),
  unless the pair already misses on the other side by more than ``SIDE_TOLERANCE`` of the sum
  of radii: someone already passing on the left is not made to cut across. Both agents of a
  pair that share a side part the same way.

Agents with opposite sides meeting head on each part toward the same wall and jam as RVO2's
agents can; a scene gives a crowd one side (a prefab). Measured on the corridor scene and its
variations: ``bench/orca_corridor.py`` and ``bench/RESULTS.md``.
"""

from __future__ import annotations

import math

from ecs_nav.compile.aot import kernel
from ecs_nav.motion.spatial import cell_range

LANE_LOOKAHEAD = 15.0
"""m. How far ahead an agent with a side looks for agents walking against it."""

LANE_HALF_WIDTH = 3.0
"""m. An oncoming agent counts when it is less than this to either side of the agent's line."""

LANE_FULL = 5.0
"""The oncoming flow (agents, each weighted by its speed against the agent's heading over the
agent's maximum speed) at which the drift is full."""

LANE_DRIFT = 1.0
"""The full drift's sideways speed over the preferred speed (1: turned by 45 degrees)."""

SIDE_TOLERANCE = 0.8
"""An oncoming neighbour is passed on the agent's side unless the pair already misses on the
other side by more than this fraction of the sum of their radii."""


@kernel
def oncoming_flow(i, hx, hy, C, G):
    """The flow against agent i's unit heading (hx, hy) in its way: the module docstring's sum,
    before the division by ``LANE_FULL``. ``oncoming_rows`` over a ``Crowd`` and an ``AgentGrid``."""
    return oncoming_rows(i, hx, hy, C.pos, C.velocity, C.visible, C.max_speed[i], G.origin_x, G.origin_y,
                         G.inv_cell, G.cols, G.rows, G.cell_start, G.cell_items)


@kernel(inline="always")
def oncoming_rows(i, hx, hy, pos, velocity, visible, max_speed, origin_x, origin_y, inv_cell, cols, rows, cell_start,
                  cell_items):
    """``oncoming_flow`` on the columns themselves, for the loop over every agent
    (``orca_neighbours.nearest_rows`` says why); ``max_speed``: agent i's, m/s."""
    px, py = pos[i, 0], pos[i, 1]
    ex, ey = px + LANE_LOOKAHEAD * hx, py + LANE_LOOKAHEAD * hy
    cx0, cx1 = cell_range(min(px, ex) - LANE_HALF_WIDTH, max(px, ex) + LANE_HALF_WIDTH, origin_x, inv_cell, cols)
    cy0, cy1 = cell_range(min(py, ey) - LANE_HALF_WIDTH, max(py, ey) + LANE_HALF_WIDTH, origin_y, inv_cell, rows)
    flow = 0.0
    for cy in range(cy0, cy1 + 1):
        for s in range(cell_start[cy * cols + cx0], cell_start[cy * cols + cx1 + 1]):
            j = cell_items[s]
            if j == i or not visible[j]:
                continue
            dx, dy = pos[j, 0] - px, pos[j, 1] - py
            ahead = dx * hx + dy * hy
            if ahead <= 0.0 or ahead > LANE_LOOKAHEAD or abs(dx * hy - dy * hx) >= LANE_HALF_WIDTH:
                continue
            against = -(velocity[j, 0] * hx + velocity[j, 1] * hy)
            if against > 0.0:
                flow += against
    return flow / max_speed


@kernel(inline="always")
def heading(prx, pry):
    """The unit direction of a preferred velocity and its speed: (hx, hy, speed); (0, 0, 0) for
    one shorter than 1e-12 m/s."""
    speed = math.sqrt(prx * prx + pry * pry)
    if speed <= 1e-12:
        return 0.0, 0.0, 0.0
    return prx / speed, pry / speed, speed


@kernel(inline="always")
def drifted(side, prx, pry, flow):
    """A preferred velocity (prx, pry), m/s, with the drift of ``side`` (+1, -1) for the oncoming
    ``flow`` in its way (``oncoming_flow``): (x, y), m/s (the module docstring)."""
    hx, hy, speed = heading(prx, pry)
    f = min(1.0, flow / LANE_FULL)
    if speed == 0.0 or f <= 0.0:
        return prx, pry
    shift = side * LANE_DRIFT * speed * f
    return prx + shift * hy, pry - shift * hx  # (hy, -hx): the heading's right


@kernel(inline="always")
def passing_side(i, j, hx, hy, pos, velocity, side):
    """The side on which agent i (unit heading (hx, hy)) passes neighbour j: i's ``side`` (the
    Crowd's column) when j is ahead of it and walks against its heading, else 0 (ORCA's own
    choice). ``pos``, ``velocity``: the Crowd's columns."""
    if side[i] == 0.0:
        return 0.0
    if (pos[j, 0] - pos[i, 0]) * hx + (pos[j, 1] - pos[i, 1]) * hy <= 0.0:
        return 0.0
    if velocity[j, 0] * hx + velocity[j, 1] * hy >= 0.0:
        return 0.0
    return side[i]
