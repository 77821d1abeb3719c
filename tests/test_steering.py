"""Steering behaviours and combiners against hand-computed cases from seed 001 (Buckland ch. 3)
and seed 004's pipeline; no NaN from degenerate inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecs_nav.motion import steering as S
from ecs_nav.motion import steering_group, steering_obstacles
from ecs_nav.motion.neighbours import neighbours_within

A = np.array
Z = np.zeros((1, 2))


def row(*xy):
    return A([xy], dtype=float)


# --- seek, flee, arrive --------------------------------------------------------------------

def test_seek_is_desired_minus_current_velocity():
    force = S.seek(row(0, 0), row(1, 0), A([3.0, 4.0]), 10.0)
    np.testing.assert_allclose(force, [[6 - 1, 8]])
    np.testing.assert_allclose(S.seek(row(3, 4), row(1, 2), row(3, 4), 10.0), [[-1, -2]])


def test_flee_only_within_panic_distance():
    np.testing.assert_allclose(S.flee(row(0, 0), row(1, 0), row(3, 4), 10.0), [[-6 - 1, -8]])
    np.testing.assert_allclose(S.flee(row(0, 0), row(1, 0), row(3, 4), 10.0, panic_distance=6), [[-7, -8]])
    np.testing.assert_array_equal(S.flee(row(0, 0), row(1, 0), row(3, 4), 10.0, panic_distance=4), Z)


def test_arrive_seed_formula():
    # decel normal (2) at distance 3: speed = 3 / (2 * 0.3) = 5
    np.testing.assert_allclose(S.arrive(row(0, 0), Z, row(3, 0), 10.0, S.DECELERATION_NORMAL), [[5, 0]])
    # ... clamped to max_speed
    np.testing.assert_allclose(S.arrive(row(0, 0), Z, row(3, 0), 4.0, 2), [[4, 0]])
    # slow (3): 3 / 0.9; fast (1): 3 / 0.3 = 10, minus the current velocity
    np.testing.assert_allclose(S.arrive(row(0, 0), row(1, 1), row(0, 3), 100.0, S.DECELERATION_SLOW),
                               [[-1, 3 / 0.9 - 1]])
    np.testing.assert_allclose(S.arrive(row(0, 0), Z, row(0, -3), 100.0, S.DECELERATION_FAST), [[0, -10]])
    # per-agent decelerations in one call
    force = S.arrive(np.zeros((3, 2)), np.zeros((3, 2)), A([3.0, 0.0]), 100.0, A([3, 2, 1]))
    np.testing.assert_allclose(force[:, 0], [3 / 0.9, 5, 10])
    # zero force at the target, whatever the velocity
    np.testing.assert_array_equal(S.arrive(row(2, 2), row(5, 5), row(2, 2), 10.0, 2), Z)
    assert S.DECELERATION_TWEAKER == 0.3


# --- pursuit and evade -----------------------------------------------------------------------

def test_pursuit_head_on_seeks_current_position():
    force = S.pursuit(row(0, 0), Z, row(1, 0), 3.0, row(10, 0), row(-2, 0), row(-1, 0))
    np.testing.assert_allclose(force, [[3, 0]])


def test_pursuit_look_ahead():
    # evader crossing: T = 10 / (3 + 2) = 2, target dead ahead -> no turn-around time
    force = S.pursuit(row(0, 0), Z, row(1, 0), 3.0, row(10, 0), row(0, 2), row(0, 1))
    np.testing.assert_allclose(force, 3 * np.array([[10, 4]]) / math.hypot(10, 4))
    # facing away from the evader: turn-around (−1 − 1)·−0.5 = 1 s more -> T = 3
    force = S.pursuit(row(0, 0), Z, row(-1, 0), 3.0, row(10, 0), row(0, 2), row(0, 1))
    np.testing.assert_allclose(force, 3 * np.array([[10, 6]]) / math.hypot(10, 6))
    # the same with the turn-around disabled
    force = S.pursuit(row(0, 0), Z, row(-1, 0), 3.0, row(10, 0), row(0, 2), row(0, 1),
                      turnaround_coefficient=0.0)
    np.testing.assert_allclose(force, 3 * np.array([[10, 4]]) / math.hypot(10, 4))
    # head-on headings but the evader behind: not the head-on branch
    force = S.pursuit(row(0, 0), Z, row(-1, 0), 3.0, row(10, 0), row(1, 0), row(1, 0),
                      turnaround_coefficient=0.0)
    np.testing.assert_allclose(force, [[3, 0]])
    assert S.HEAD_ON_RELATIVE_HEADING == -0.95


def test_evade_flees_predicted_position_within_threat_range():
    # T = 4 / (3 + 1) = 1: predicted (3, 0); flee -> (-3, 0)
    force = S.evade(row(0, 0), Z, 3.0, row(4, 0), row(-1, 0))
    np.testing.assert_allclose(force, [[-3, 0]])
    np.testing.assert_array_equal(S.evade(row(0, 0), row(1, 1), 3.0, row(101, 0), row(-1, 0)), Z)
    np.testing.assert_array_equal(
        S.evade(row(0, 0), row(1, 1), 3.0, row(4, 0), row(-1, 0), threat_range=3.9), Z)
    assert S.THREAT_RANGE == 100.0


# --- wander ------------------------------------------------------------------------------

def test_wander_hand_case():
    force, target = S.wander(row(5, 5), Z, row(0, 1), row(1, 0), 1.0, 2.0, 10.0, 0.1, row(0, 1))
    h = math.sqrt(0.5)
    np.testing.assert_allclose(target, [[h, h]])
    # local (2 + h, h); heading (0, 1), side (-1, 0): world offset (-h, 2 + h)
    np.testing.assert_allclose(force, [[-h, 2 + h]])


def test_wander_stays_on_circle_and_is_per_entity():
    ids = np.arange(200) * 7 + 3
    rng = np.random.default_rng(0)
    heading = S.normalize(rng.normal(size=(200, 2)))
    angle = rng.uniform(0, 2 * np.pi, 200)
    target = 1.5 * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    pos = rng.uniform(-10, 10, (200, 2))
    perm = rng.permutation(200)
    for tick in range(5):
        u = S.entity_uniforms(42, ids, tick)
        assert u.shape == (200, 2) and u.min() >= -1 and u.max() < 1
        np.testing.assert_array_equal(S.entity_uniforms(42, ids[perm], tick), u[perm])
        force, new = S.wander(pos, None, heading, target, 1.5, 2.0, 80.0, 1 / 60, u)
        np.testing.assert_allclose(np.linalg.norm(new, axis=1), 1.5)
        force_p, new_p = S.wander(pos[perm], None, heading[perm], target[perm], 1.5, 2.0, 80.0, 1 / 60,
                                  S.entity_uniforms(42, ids[perm], tick))
        np.testing.assert_array_equal(new_p, new[perm])
        np.testing.assert_array_equal(force_p, force[perm])
        target = new
    assert not np.array_equal(S.entity_uniforms(42, ids, 0), S.entity_uniforms(42, ids, 1))
    assert not np.array_equal(S.entity_uniforms(42, ids, 0), S.entity_uniforms(43, ids, 0))
    assert not np.array_equal(S.entity_uniforms(42, ids, 0), S.entity_uniforms(42, ids, 0, stream=1))


def test_entity_uniforms_look_uniform():
    u = S.entity_uniforms(7, np.arange(100_000), 3)
    assert abs(u.mean()) < 0.01
    assert abs(u.var() - 1 / 3) < 0.01
    assert abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.01


# --- obstacle and wall avoidance ----------------------------------------------------------

def test_obstacle_avoidance_hand_case():
    # at rest: box = 10; obstacle r 1 at local (5, 0.5); agent r 0.5 (expanded 1.5)
    # multiplier = 1 + (10 - 5)/10 = 1.5; lateral (1 - 0.5)·1.5 = 0.75; braking (1 - 5)·0.2 = -0.8
    force = steering_obstacles.obstacle_avoidance(row(0, 0), Z, row(1, 0), 0.5, 2.0, A([[5.0, 0.5]]), A([1.0]), 10.0)
    np.testing.assert_allclose(force, [[-0.8, 0.75]])
    # same situation rotated: heading (0, 1), side (-1, 0); obstacle at world (-0.5, 5)
    force = steering_obstacles.obstacle_avoidance(row(0, 0), Z, row(0, 1), 0.5, 2.0, A([[-0.5, 5.0]]), A([1.0]), 10.0)
    np.testing.assert_allclose(force, [[-0.75, -0.8]], atol=1e-12)
    # at full speed the box doubles: multiplier = 1 + (20 - 5)/20
    force = steering_obstacles.obstacle_avoidance(row(0, 0), row(2, 0), row(1, 0), 0.5, 2.0, A([[5.0, 0.5]]),
                                                  A([1.0]), 10.0)
    np.testing.assert_allclose(force, [[-0.8, 0.5 * 1.75]])
    assert steering_obstacles.BRAKING_WEIGHT == 0.2


def test_obstacle_avoidance_filters_and_closest_wins():
    centres = A([[-3.0, 0.0],   # behind
                 [4.0, 2.0],    # |y| = 2 >= 1 + 0.5: clear of the box
                 [30.0, 0.0],   # beyond the detection range
                 [8.0, -0.2],   # intersecting, ip = 8 - sqrt(1.5² - 0.04)
                 [6.0, 1.0]])   # intersecting, ip = 6 - sqrt(1.5² - 1) = 4.88: closest
    radii = np.ones(5)
    force = steering_obstacles.obstacle_avoidance(row(0, 0), Z, row(1, 0), 0.5, 2.0, centres, radii, 10.0)
    multiplier = 1 + (10 - 6) / 10
    np.testing.assert_allclose(force, [[(1 - 6) * 0.2, (1 - 1) * multiplier]], atol=1e-12)
    force = steering_obstacles.obstacle_avoidance(row(0, 0), Z, row(1, 0), 0.5, 2.0, centres[:3], radii[:3], 10.0)
    np.testing.assert_array_equal(force, Z)
    # agent inside an obstacle: ip = cx + sqrt(...)
    force = steering_obstacles.obstacle_avoidance(row(0, 0), Z, row(1, 0), 0.5, 2.0, A([[0.5, 0.0]]), A([1.0]), 10.0)
    np.testing.assert_allclose(force, [[(1 - 0.5) * 0.2, 1 * (1 + 9.5 / 10)]])


def test_obstacle_avoidance_matches_brute_force_on_many_agents():
    rng = np.random.default_rng(5)
    k, m = 400, 60
    pos = rng.uniform(0, 50, (k, 2))
    vel = rng.normal(size=(k, 2))
    heading = S.normalize(vel)
    centres = rng.uniform(0, 50, (m, 2))
    radii = rng.uniform(0.3, 2.0, m)
    got = steering_obstacles.obstacle_avoidance(pos, vel, heading, 0.5, 2.0, centres, radii, 3.0)
    expected = np.zeros((k, 2))
    for i in range(k):  # Buckland's loop, one agent at a time, every obstacle: no grid
        speed = np.linalg.norm(vel[i])
        box = 3.0 * (1 + speed / 2.0)
        best = None
        for j in range(m):
            d = centres[j] - pos[i]
            if d @ d >= (box + radii[j]) ** 2:
                continue
            lx, ly = d @ heading[i], d @ S.perp(heading[i:i + 1])[0]
            expanded = radii[j] + 0.5
            if lx < 0 or abs(ly) >= expanded:
                continue
            ip = lx - math.sqrt(expanded**2 - ly**2)
            if ip <= 0:
                ip = lx + math.sqrt(expanded**2 - ly**2)
            if best is None or ip < best[0]:
                best = (ip, j, lx, ly)
        if best is not None:
            _, j, lx, ly = best
            local = A([[(radii[j] - lx) * 0.2, (radii[j] - ly) * (1 + (box - lx) / box)]])
            expected[i] = S.to_world_vector(local, heading[i:i + 1])[0]
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert np.count_nonzero(np.any(expected != 0, axis=1)) > 20


def test_wall_avoidance_overshoot_along_facing_normal():
    walls_a, walls_b = A([[3.0, -5.0]]), A([[3.0, 5.0]])
    # ahead feeler (4, 0) crosses x = 3 at 3/4: overshoot 1; side feelers (±1.41) fall short
    force = steering_obstacles.wall_avoidance(row(0, 0), row(1, 0), walls_a, walls_b, 4.0)
    np.testing.assert_allclose(force, [[-1, 0]])
    force = steering_obstacles.wall_avoidance(row(0, 0), row(1, 0), walls_b, walls_a, 4.0)  # either winding
    np.testing.assert_allclose(force, [[-1, 0]])
    np.testing.assert_array_equal(steering_obstacles.wall_avoidance(row(0, 0), row(-1, 0), walls_a, walls_b, 4.0), Z)
    # a side feeler: heading (1, 0), wall y = 1 along x; the +45° feeler (length 2) tip at y = 1.414
    force = steering_obstacles.wall_avoidance(row(0, 0), row(1, 0), A([[-5.0, 1.0]]), A([[5.0, 1.0]]), 4.0)
    np.testing.assert_allclose(force, [[0, -(2 - math.sqrt(2))]], atol=1e-12)


def test_wall_avoidance_deepest_feeler_and_closest_wall():
    # a corner ahead: x = 3 (overshoot 1 for the 4-long ahead feeler) and y = 0.5 (the +45° feeler,
    # length 2, crosses at 0.5·√2 along it: overshoot 2 - 0.707 = 1.29): the deeper one wins
    walls_a = A([[3.0, -5.0], [-5.0, 0.5], [3.5, -5.0]])
    walls_b = A([[3.0, 5.0], [5.0, 0.5], [3.5, 5.0]])  # a second wall behind the first
    force = steering_obstacles.wall_avoidance(row(0, 0), row(1, 0), walls_a, walls_b, 4.0)
    np.testing.assert_allclose(force, [[0, -(2 - 0.5 * math.sqrt(2))]], atol=1e-12)
    force = steering_obstacles.wall_avoidance(row(0, 0), row(1, 0), walls_a[[0, 2]], walls_b[[0, 2]], 4.0)
    np.testing.assert_allclose(force, [[-1, 0]])  # closest crossing (x = 3), not x = 3.5


# --- group behaviours ------------------------------------------------------------------------

def test_separation_alignment_cohesion_hand_case():
    pos = A([[0.0, 0.0], [2.0, 0.0], [0.0, -1.0], [50.0, 50.0]])
    heading = A([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    offsets, rows = A([0, 2, 2, 2, 2]), A([1, 2])  # agent 0 sees 1 and 2; the others see nobody
    sep = steering_group.separation(pos, offsets, rows)
    np.testing.assert_allclose(sep, [[-2 / 4, 1 / 1], [0, 0], [0, 0], [0, 0]])
    np.testing.assert_allclose(steering_group.alignment(heading, offsets, rows), [[-1, 1], [0, 0], [0, 0], [0, 0]])
    coh = steering_group.cohesion(pos, np.zeros((4, 2)), 5.0, offsets, rows)
    np.testing.assert_allclose(coh, [[2 / math.sqrt(5), -1 / math.sqrt(5)], [0, 0], [0, 0], [0, 0]])
    # through the grid
    offsets, rows = neighbours_within(pos, 3.0)
    np.testing.assert_allclose(steering_group.separation(pos, offsets, rows)[0], sep[0])


@pytest.mark.parametrize("seed", range(5))
def test_flock_in_one_pass_equals_the_behaviours_over_neighbour_lists(seed):
    rng = np.random.default_rng(seed)
    k = 400
    pos = rng.uniform(0, 20, (k, 2))
    pos[:20] = pos[20:40]  # coincident pairs: no separation direction, still neighbours
    angle = rng.uniform(0, 2 * math.pi, k)
    heading = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    vel = rng.normal(0, 1, (k, 2))
    max_speed = rng.uniform(1, 3, k)
    radius = rng.choice([0.0, 0.5, 1.5, 3.0], k)
    offsets, rows = neighbours_within(pos, radius)
    sep, ali, coh = steering_group.flock(pos, vel, heading, max_speed, radius)
    np.testing.assert_allclose(sep, steering_group.separation(pos, offsets, rows), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ali, steering_group.alignment(heading, offsets, rows), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(coh, steering_group.cohesion(pos, vel, max_speed, offsets, rows), rtol=1e-9, atol=1e-12)
    assert np.count_nonzero(np.diff(offsets)) > k // 2  # the case is not empty


def test_follow_flow():
    np.testing.assert_allclose(S.follow_flow(row(1, 0), row(0, 1), 3.0), [[-1, 3]])


# --- combiners and the pipeline ----------------------------------------------------------

def _stack(*forces):
    return A([forces], dtype=float)


def test_weighted_sum_truncates_the_total():
    forces = _stack([3, 0], [0, 4], [1, 1])
    np.testing.assert_allclose(S.combine_weighted_sum(forces, A([[1, 1, 0]]), 10.0), [[3, 4]])
    np.testing.assert_allclose(S.combine_weighted_sum(forces, A([[2, 2, 0]]), 5.0), [[3, 4]])


def test_prioritized_accumulates_until_max_force():
    forces = _stack([3, 0], [0, 4], [5, 0])
    total = S.combine_prioritized(forces, np.ones((1, 3)), 5.0)
    # (3,0) fits; (0,4) cut to the remaining 2; then |(3,2)| = 3.606 leaves 1.394 for (5,0)
    np.testing.assert_allclose(total, [[3 + 5 - math.hypot(3, 2), 2]])
    # used up exactly by the first: nothing else counts
    np.testing.assert_allclose(S.combine_prioritized(_stack([5, 0], [0, 4]), np.ones((1, 2)), 5.0), [[5, 0]])
    # weights scale before accumulating; zero weight skips
    np.testing.assert_allclose(S.combine_prioritized(forces, A([[0, 0.5, 0]]), 5.0), [[0, 2]])


def test_dithered_picks_first_chosen_nonzero():
    forces = _stack([0, 0], [0, 4], [5, 0])
    weights = np.ones((1, 3))
    prob = A([0.5, 0.5, 0.25])
    # behaviour 0 is chosen but zero; 1 chosen: 4 * 1 / 0.5 = 8, truncated to 6
    np.testing.assert_allclose(S.combine_dithered(forces, weights, prob, 6.0, A([[0.1, 0.2, 0.0]])), [[0, 6]])
    # 1 not drawn: 2 drawn: 5 / 0.25 = 20, truncated to 10
    np.testing.assert_allclose(S.combine_dithered(forces, weights, prob, 10.0, A([[0.1, 0.7, 0.2]])), [[10, 0]])
    np.testing.assert_array_equal(S.combine_dithered(forces, weights, prob, 10.0, A([[0.9, 0.9, 0.9]])), Z)
    np.testing.assert_array_equal(S.combine_dithered(forces, weights, A([0, 0, 0]), 10.0, A([[0, 0, 0]])), Z)


def test_behaviours_in_bucklands_priority_order():
    assert S.BEHAVIOURS[:4] == ("wall_avoidance", "obstacle_avoidance", "evade", "flee")
    assert S.BEHAVIOURS.index("separation") < S.BEHAVIOURS.index("seek") < S.BEHAVIOURS.index("follow_path")
    assert len(set(S.BEHAVIOURS)) == len(S.BEHAVIOURS)


def test_apply_steering_pipeline():
    # force truncated to 2, / mass 2 = 1 per second; dt 0.5 -> +0.5
    np.testing.assert_allclose(S.apply_steering(row(1, 0), row(10, 0), 2.0, 100.0, 2.0, 0.5), [[1.5, 0]])
    # the speed cap
    np.testing.assert_allclose(S.apply_steering(row(3, 0), row(0, 4), 1.0, 4.0, 10.0, 1.0),
                               [[3 * 4 / 5, 4 * 4 / 5]])
    with pytest.raises(ValueError):
        S.apply_steering(row(0, 0), row(1, 0), 0.0, 1.0, 1.0, 0.1)


def test_truncate_and_normalize():
    v = A([[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]])
    np.testing.assert_allclose(S.truncate(v, 1.0), [[0.6, 0.8], [0, 0], [0.3, 0.4]])
    np.testing.assert_allclose(S.normalize(v), [[0.6, 0.8], [0, 0], [0.6, 0.8]])
    np.testing.assert_allclose(S.truncate(v, A([10.0, 1.0, 0.0])), [[3, 4], [0, 0], [0, 0]])


# --- no NaN from degenerate inputs (hypothesis) -------------------------------------------

small = st.sampled_from([0.0, 1e-300, -1.0, 1.0, 2.5, 1e-8])
vec = arrays(np.float64, (3, 2), elements=small)


@settings(max_examples=200, deadline=None)
@given(vec, vec, vec, vec, vec, st.sampled_from([0.0, 1.0, 3.0]))
def test_no_nan_from_zero_vectors_and_coincident_points(pos, vel, target, other_vel, heading_raw, max_speed):
    heading = S.normalize(heading_raw)  # may be zero: behaviours must still be finite
    max_force = 2.0
    forces = [
        S.seek(pos, vel, target, max_speed),
        S.flee(pos, vel, target, max_speed, panic_distance=1.0),
        S.arrive(pos, vel, target, max_speed, 2.0),
        S.pursuit(pos, vel, heading, max_speed, target, other_vel, S.normalize(other_vel)),
        S.evade(pos, vel, max_speed, target, other_vel),
        S.wander(pos, vel, heading, target, 1.0, 2.0, 1.0, 0.1, np.zeros((3, 2)))[0],
        steering_obstacles.obstacle_avoidance(pos, vel, heading, 0.5, max_speed, target, np.ones(3), 2.0),
        steering_obstacles.wall_avoidance(pos, heading, target, target + other_vel, 2.0),
        S.follow_flow(vel, S.normalize(other_vel), max_speed),
    ]
    offsets, rows = neighbours_within(pos, 3.0)
    forces += [steering_group.separation(pos, offsets, rows), steering_group.alignment(heading, offsets, rows),
               steering_group.cohesion(pos, vel, max_speed, offsets, rows)]
    stacked = np.stack(forces, axis=1)
    weights = np.ones(stacked.shape[:2])
    for total in (S.combine_weighted_sum(stacked, weights, max_force),
                  S.combine_prioritized(stacked, weights, max_force),
                  S.combine_dithered(stacked, weights, np.full(stacked.shape[1], 0.5), max_force,
                                     np.full(stacked.shape[:2], 0.25))):
        assert np.all(np.isfinite(total))
        assert np.all(np.linalg.norm(total, axis=1) <= max_force + 1e-9)
        new_vel = S.apply_steering(vel, total, 1.0, max_speed, max_force, 1 / 60)
        assert np.all(np.isfinite(new_vel))
    assert all(np.all(np.isfinite(f)) for f in forces)
