"""ORCA's neighbour choice (ecs_nav.motion.orca_neighbours) against a brute-force scan, and the
side preference (ecs_nav.motion.orca_lanes): the oncoming flow against its formula written out
with numpy, the drift it gives, pairs passing on their side, and no change where nobody comes
against an agent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ecs_nav.motion.orca import agent_line, orca_velocities
from ecs_nav.motion.orca_lanes import (
    LANE_DRIFT,
    LANE_FULL,
    LANE_HALF_WIDTH,
    LANE_LOOKAHEAD,
    SIDE_TOLERANCE,
    oncoming_flow,
)
from ecs_nav.motion.orca_neighbours import Crowd, agent_grid, nearest_agents
from ecs_nav.motion.orca_obstacles import NO_OBSTACLES

RADIUS, SPEED, DT = 0.3, 1.4, 1.0 / 60.0


def crowd(pos, velocity=None, preferred=None, neighbour_dist=5.0, max_neighbours=10, side=0.0, layer=None,
          visible=None) -> Crowd:
    """A Crowd of agents that all avoid, on one height, with RVO2's parameters unless given."""
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    n = pos.shape[0]
    ones = np.ones(n)
    return Crowd(pos, np.zeros((n, 2)) if velocity is None else np.ascontiguousarray(velocity, dtype=np.float64),
                 np.zeros((n, 2)) if preferred is None else np.ascontiguousarray(preferred, dtype=np.float64),
                 ones * RADIUS, ones * SPEED, np.ones(n, bool), np.ones(n, bool) if visible is None else visible,
                 np.arange(n, dtype=np.int64), np.zeros(n, np.int64) if layer is None else layer, np.zeros(n),
                 np.broadcast_to(np.asarray(neighbour_dist, dtype=np.float64), (n,)).copy(),
                 np.broadcast_to(np.asarray(max_neighbours, dtype=np.int64), (n,)).copy(), ones * 2.0, ones * 1.0,
                 np.ones(n, np.int64), np.ones(n, np.int64), ones, np.broadcast_to(float(side), (n,)).copy())


def chosen(c: Crowd) -> np.ndarray:
    out = np.empty((c.pos.shape[0], 2))
    orca_velocities(c.pos, c.velocity, c.preferred, c.radius, c.max_speed, c.avoids, c.visible, c.ids, c.layer,
                    c.elevation, 2.0, c.neighbour_dist, c.max_neighbours, c.time_horizon, c.time_horizon_obst,
                    c.avoid_layers, c.avoid_mask, c.priority, c.side, DT, NO_OBSTACLES, out)
    return out


# --- the neighbours ---------------------------------------------------------------------------


def brute_force_neighbours(c: Crowd, i: int) -> list[int]:
    """Every other visible agent of i's layer within range, sorted by (squared distance, row), the first cap."""
    d2 = ((c.pos - c.pos[i]) ** 2).sum(axis=1)
    rows = [j for j in range(c.pos.shape[0]) if j != i and c.visible[j] and c.layer[j] == c.layer[i]
            and d2[j] < c.neighbour_dist[i] ** 2]
    return sorted(rows, key=lambda j: (d2[j], j))[:c.max_neighbours[i]]


@pytest.mark.parametrize("seed", range(12))
def test_the_neighbours_are_the_nearest_within_range_nearest_first_ties_by_row(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    if seed % 3 == 0:  # on a lattice: many agents at one distance (ties)
        side = int(math.ceil(math.sqrt(n)))
        pos = np.stack(np.divmod(np.arange(n), side), axis=1).astype(np.float64) * rng.choice([0.5, 1.0])
    else:
        pos = rng.uniform(0, rng.uniform(2, 40), (n, 2))
    if seed % 4 == 1:
        pos[: n // 3] = pos[0]  # coincident agents
    c = crowd(pos, neighbour_dist=rng.uniform(0.3, 6.0, n), max_neighbours=rng.integers(0, 13, n),
              layer=rng.integers(0, 2, n).astype(np.int64), visible=rng.random(n) < 0.9)
    grid = agent_grid(c.pos, float(c.neighbour_dist.max()))
    near, near_d2 = np.empty(14, np.int64), np.empty(14)
    for i in range(n):
        k = nearest_agents(i, c, 2.0, grid, near, near_d2)
        assert near[:k].tolist() == brute_force_neighbours(c, i), (seed, i)


# --- the side preference ----------------------------------------------------------------------


def numpy_oncoming_flow(c: Crowd, i: int, heading) -> float:
    """orca_lanes' sum written out: agents ahead within LANE_LOOKAHEAD and less than
    LANE_HALF_WIDTH off the line, their speed against the heading, over i's maximum speed."""
    h = np.asarray(heading, dtype=np.float64)
    d = c.pos - c.pos[i]
    ahead = d @ h
    off = np.abs(d[:, 0] * h[1] - d[:, 1] * h[0])
    against = -(c.velocity @ h)
    counted = (ahead > 0) & (ahead <= LANE_LOOKAHEAD) & (off < LANE_HALF_WIDTH) & (against > 0) & c.visible
    counted[i] = False
    return float(against[counted].sum() / c.max_speed[i])


@pytest.mark.parametrize("seed", range(6))
def test_the_oncoming_flow_is_the_speed_against_the_heading_of_the_agents_in_the_way(seed):
    rng = np.random.default_rng(100 + seed)
    n = 300
    c = crowd(rng.uniform(-20, 20, (n, 2)), velocity=rng.uniform(-1.4, 1.4, (n, 2)), visible=rng.random(n) < 0.9)
    grid = agent_grid(c.pos, 5.0)
    for i in range(0, n, 7):
        angle = rng.uniform(0, 2 * math.pi)
        h = (math.cos(angle), math.sin(angle))
        assert oncoming_flow(i, h[0], h[1], c, grid) == pytest.approx(numpy_oncoming_flow(c, i, h), rel=1e-12,
                                                                      abs=1e-12)


def oncoming_ahead(offsets, speed=SPEED):
    """Agent 0 at the origin heading +x at full speed, and agents at ``offsets`` walking -x at ``speed``,
    further than neighbour_dist, so that only the drift acts."""
    pos = np.array([[0.0, 0.0], *offsets])
    velocity = np.array([[SPEED, 0.0]] + [[-speed, 0.0]] * len(offsets))
    return pos, velocity


@pytest.mark.parametrize("count", [1, 2, 5, 8])
def test_the_drift_turns_the_preferred_velocity_to_its_side_by_the_oncoming_flow(count):
    pos, velocity = oncoming_ahead([(8.0 + k, 0.5 * (k % 3) - 0.5) for k in range(count)])
    c = crowd(pos, velocity=velocity, preferred=velocity, side=1.0)
    f = min(1.0, count / LANE_FULL)
    drifted = np.array([SPEED, -LANE_DRIFT * SPEED * f])  # to the heading's right
    expected = drifted * min(1.0, SPEED / np.hypot(*drifted))  # the closest velocity within the speed limit
    np.testing.assert_allclose(chosen(c)[0], expected, rtol=0, atol=1e-12)
    left = crowd(pos, velocity=velocity, preferred=velocity, side=-1.0)
    np.testing.assert_allclose(chosen(left)[0], expected * [1.0, -1.0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("offsets", [[(-8.0, 0.0)] * 3, [(8.0, LANE_HALF_WIDTH + 0.1)] * 3,
                                     [(LANE_LOOKAHEAD + 0.5, 0.0)] * 3],
                         ids=["behind", "beside the way", "beyond the lookahead"])
def test_agents_that_are_not_in_its_way_ahead_give_no_drift(offsets):
    pos, velocity = oncoming_ahead(offsets)
    c = crowd(pos, velocity=velocity, preferred=velocity, side=1.0)
    np.testing.assert_array_equal(chosen(c)[0], [SPEED, 0.0])


def test_a_crowd_walking_one_way_chooses_as_without_a_side():
    rng = np.random.default_rng(7)
    n = 120
    pos = rng.uniform(0, 15, (n, 2))
    velocity = np.stack([rng.uniform(0.2, 1.4, n), rng.uniform(-0.3, 0.3, n)], axis=1)
    preferred = np.tile([SPEED, 0.0], (n, 1))
    with_side = chosen(crowd(pos, velocity=velocity, preferred=preferred, side=1.0))
    without = chosen(crowd(pos, velocity=velocity, preferred=preferred, side=0.0))
    assert np.array_equal(with_side, without)


def head_on(side: float, ticks: int = 900) -> np.ndarray:
    """Two agents walking at each other along y = 0 to the other's start, each tick's chosen
    velocity moving them: the positions after every tick, (ticks, 2, 2)."""
    pos = np.array([[-5.0, 0.0], [5.0, 0.0]])
    goals = pos[::-1].copy()
    velocity = np.zeros((2, 2))
    trace = []
    for _ in range(ticks):
        to_goal = goals - pos
        distance = np.hypot(*to_goal.T)[:, None]
        preferred = np.where(distance > SPEED, to_goal / np.maximum(distance, 1e-300) * SPEED, to_goal)
        velocity = chosen(crowd(pos, velocity=velocity, preferred=preferred, side=side))
        pos = pos + velocity * DT
        trace.append(pos.copy())
    return np.array(trace)


@pytest.mark.parametrize("side", [1.0, -1.0], ids=["right", "left"])
def test_two_walkers_head_on_pass_each_other_on_their_side_without_touching(side):
    trace = head_on(side)
    gap = np.hypot(*(trace[:, 0] - trace[:, 1]).T)
    passing = int(np.argmin(np.abs(trace[:, 0, 0] - trace[:, 1, 0])))  # where they are level
    # the eastbound walker's right is -y, the westbound one's +y
    assert -side * trace[passing, 0, 1] > RADIUS / 2 and side * trace[passing, 1, 1] > RADIUS / 2
    assert gap.min() >= 2 * RADIUS * (1 - 1e-9)
    np.testing.assert_allclose(trace[-1], [[5.0, 0.0], [-5.0, 0.0]], rtol=0, atol=1e-3)


def leg_direction(rp, side: float) -> np.ndarray:
    """The direction of the ORCA line agent_line gives an agent walking +x at full speed for a
    neighbour at ``rp`` walking -x at full speed, with a horizon of 5 s (they would touch within
    it: the line lies on a leg of the velocity obstacle)."""
    lines = np.empty((1, 4))
    agent_line(rp[0], rp[1], 2 * SPEED, 0.0, SPEED, 0.0, 2 * RADIUS, 0.5, 1 / 5.0, 1 / DT, True, side, lines, 0)
    return lines[0, 2:]


def test_a_neighbour_passed_on_the_other_side_is_moved_to_its_side_only_within_the_tolerance():
    combined = 2 * RADIUS
    for miss, forced in ((0.9 * SIDE_TOLERANCE * combined, True), (1.1 * SIDE_TOLERANCE * combined, False)):
        rp = np.array([6.0, -miss])  # on course to touch, the neighbour a little to the agent's right
        natural = leg_direction(rp, 0.0)  # RVO2: pass with it on the right, the agent's left leg
        dist_sq, leg = rp @ rp, math.sqrt(rp @ rp - combined ** 2)
        right_leg = -np.array([rp[0] * leg + rp[1] * combined, -rp[0] * combined + rp[1] * leg]) / dist_sq
        np.testing.assert_allclose(leg_direction(rp, 1.0), right_leg if forced else natural, rtol=0, atol=1e-15)
        np.testing.assert_allclose(leg_direction(rp, -1.0), natural, rtol=0, atol=1e-15)  # its side already
