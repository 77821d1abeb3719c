"""The group behaviours' neighbour sums for the row kernel: which agents are each agent's
neighbours, per ``Collider.layer``, and their ``flock_sums``.

``neighbour_pass`` gathers the agent rows of the table (``is_agent`` or ``has_steering``) and
runs ``ecs_nav.motion.steering_group.flock_sums`` over a grid of their positions; with agents on
several layers ``layer_pass`` runs it per layer, as a world holding only that layer's agents
would. A few agents none of which has another within its radius (at most ``SMALL_LAYER``) get
the zero sums without a grid. ``ecs_nav.motion.steering_rows.steer_tick`` calls it; the
SteeringSystem calls it too when it computes the forces itself. Positions in m, radii in m (>= 0).
"""

from __future__ import annotations

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.core.finite import all_finite
from ecs_nav.motion.spatial import SMALL_LAYER, bin_into_grid, layer_runs, single_layer
from ecs_nav.motion.steering_group import flock_sums


@kernel(inline="always")
def _any_neighbour(run, pos, radius):
    """Whether an agent of ``run`` has another strictly within its radius (radius > 0), as
    ``flock_sums`` counts a neighbour; pair by pair."""
    for a in range(run.shape[0]):
        i = run[a]
        r = radius[i]
        if r <= 0.0:
            continue
        for b in range(run.shape[0]):
            j = run[b]
            dx, dy = pos[i, 0] - pos[j, 0], pos[i, 1] - pos[j, 1]
            if j != i and dx * dx + dy * dy < r * r:
                return True
    return False


@kernel
def layer_pass(pos, heading, radius, layer, with_heading):
    """``neighbour_pass``'s sums for agents on several layers: for each layer, ``flock_sums``
    over a grid of that layer's agents alone with cells of their largest radius (at least 1e-6),
    as a world holding only them would compute. A layer of one agent, or of at most
    ``SMALL_LAYER`` of which none has another within its radius, keeps the zeros the pass would
    give, without a grid. (k, 2), (k, 2), (k,), (k,) in; (count (k,), sums (k, 6)) out."""
    k = pos.shape[0]
    count, sums = np.zeros(k, np.int64), np.zeros((k, 6))
    order, starts = layer_runs(layer)
    for r in range(starts.shape[0] - 1):
        run = order[starts[r]:starts[r + 1]]
        m = run.shape[0]
        if m < 2 or (m <= SMALL_LAYER and not _any_neighbour(run, pos, radius)):
            continue  # no neighbour: the zeros flock_sums would give
        r_pos, r_heading, r_radius = np.empty((m, 2)), np.empty((m, 2)), np.empty(m)
        top = 0.0
        for j in range(m):
            i = run[j]
            r_pos[j, 0], r_pos[j, 1] = pos[i, 0], pos[i, 1]
            r_heading[j, 0], r_heading[j, 1] = heading[i, 0], heading[i, 1]
            r_radius[j] = radius[i]
            top = max(top, radius[i])
        ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(r_pos, r_pos, max(top, 1e-6))
        r_count, r_sums = flock_sums(r_pos, r_heading, r_radius, with_heading, ox, oy, 1.0 / cell, cols, rows,
                                     cell_start, cell_items)
        for j in range(m):
            i = run[j]
            count[i] = r_count[j]
            for c in range(6):
                sums[i, c] = r_sums[j, c]
    return count, sums


@kernel
def neighbour_pass(n, is_agent, has_steering, pos, heading, radius, layer, n_members, max_radius, with_heading):
    """The group behaviours' neighbour sums over the rows [0, n) that are agents (``is_agent`` or
    ``has_steering``, ``n_members`` of them): ``flock_sums`` over a grid of their positions with
    cells of ``max_radius`` (at least 1e-6). ``radius`` (n,): each row's group radius
    (``steering_survey``'s). Agents on different layers (``layer`` (n,)) are not neighbours:
    with more than one layer, each layer's members get the sums of a pass over them alone
    (``layer_pass``). Returns (whether every member's position is finite -- nothing else is
    computed otherwise --, each row's index among the members or -1, count, sums)."""
    if n_members == n:  # every row takes part (the usual crowd): the columns in place
        index, m_pos, m_heading, m_radius, m_layer = np.arange(n), pos[:n], heading[:n], radius[:n], layer[:n]
    else:
        index = np.full(n, -1, np.int64)
        m_pos, m_heading, m_radius = np.empty((n_members, 2)), np.empty((n_members, 2)), np.empty(n_members)
        m_layer = np.empty(n_members, np.int64)
        m = 0
        for i in range(n):
            if is_agent[i] or has_steering[i]:
                index[i] = m
                m_pos[m, 0], m_pos[m, 1] = pos[i, 0], pos[i, 1]
                m_heading[m, 0], m_heading[m, 1] = heading[i, 0], heading[i, 1]
                m_radius[m], m_layer[m] = radius[i], layer[i]
                m += 1
    if not all_finite(m_pos):
        return False, index, np.zeros(0, np.int64), np.zeros((0, 6))
    if n_members < 2 or (n_members <= SMALL_LAYER and single_layer(m_layer)
                         and not _any_neighbour(np.arange(n_members), m_pos, m_radius)):
        # a lone agent, or a few none of which has another within its radius: the sums flock_sums
        # would give, without a grid
        return True, index, np.zeros(n_members, np.int64), np.zeros((n_members, 6))
    if not single_layer(m_layer):
        count, sums = layer_pass(m_pos, m_heading, m_radius, m_layer, with_heading)
        return True, index, count, sums
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(m_pos, m_pos, max(max_radius, 1e-6))
    count, sums = flock_sums(m_pos, m_heading, m_radius, with_heading, ox, oy, 1.0 / cell, cols, rows, cell_start,
                             cell_items)
    return True, index, count, sums
