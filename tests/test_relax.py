"""Overlap relaxation (``ecs_nav.motion.relax``) against O(n^2) references, and the bound on its
work: pair checks counted by the kernels themselves for stacked, packed and mixed-size crowds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecs_nav.motion.physics import NO_MAP, NO_OPEN_CELLS, relax_agents, relax_layers
from ecs_nav.motion.relax import COLLISION_RESOLVE_FACTOR, MAX_PAIR_CHECKS, bin_by_size, relax_overlaps, relax_pass
from ecs_nav.motion.spatial import bin_into_grid


def test_no_agents_relax_to_no_agents():
    assert relax_overlaps(np.zeros((0, 2)), 1.0).shape == (0, 2)


def _max_overlap(pos, radius):
    d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
    overlap = radius[:, None] + radius[None] - d
    np.fill_diagonal(overlap, -np.inf)
    return overlap.max(initial=-np.inf)


def test_relax_two_agents_moves_each_half_of_the_factor():
    pos = np.array([[0.0, 0.0], [1.0, 0.0]])
    out = relax_overlaps(pos, 1.0, iterations=1)
    # penetration 1, each takes half, DetourCrowd's factor 0.7
    np.testing.assert_allclose(out, [[-0.35, 0.0], [1.35, 0.0]])
    out = relax_overlaps(pos, 1.0, iterations=1, movable=[False, True])
    np.testing.assert_allclose(out, [[0.0, 0.0], [1.7, 0.0]])
    out = relax_overlaps(pos, 1.0, iterations=1, resolve_factor=1.0)
    np.testing.assert_allclose(out, [[-0.5, 0.0], [1.5, 0.0]])
    np.testing.assert_array_equal(pos, [[0.0, 0.0], [1.0, 0.0]])  # input untouched


def test_relax_only_agents_whose_bodies_overlap_in_height():
    pos = np.array([[0.0, 0.0], [1.0, 0.0]])
    apart = relax_overlaps(pos, 1.0, iterations=1, elevation=[0.0, 2.0], body_height=2.0)
    np.testing.assert_array_equal(apart, pos)
    close = relax_overlaps(pos, 1.0, iterations=1, elevation=[0.0, 1.5], body_height=2.0)
    np.testing.assert_allclose(close, [[-0.35, 0.0], [1.35, 0.0]])


def _pair_angle(a, b):
    """splitmix64 of the pair (lower id * golden ratio + higher id), its top 53 bits as a turn:
    written out with Python's integers (the kernel's reference)."""
    mask = 2**64 - 1
    z = (min(a, b) * 0x9E3779B97F4A7C15 + max(a, b)) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return (z >> 11) / 2.0**53 * 2.0 * np.pi


def test_relax_coincident_agents_part_along_their_pairs_own_direction():
    pos = np.zeros((2, 2))
    out = relax_overlaps(pos, 0.5, iterations=1, entity_ids=[7, 3], resolve_factor=1.0)
    u = np.array([np.cos(_pair_angle(3, 7)), np.sin(_pair_angle(3, 7))])
    np.testing.assert_allclose(out, [0.5 * u, -0.5 * u], rtol=0, atol=1e-15)  # id 3 goes to -u
    swapped = relax_overlaps(pos, 0.5, iterations=1, entity_ids=[3, 7], resolve_factor=1.0)
    np.testing.assert_array_equal(swapped, out[::-1])  # the pair's direction, whatever the rows


def test_a_stack_on_one_point_spreads_in_two_dimensions():
    """Every pair of a stack has a direction of its own: the stack spreads as a disc, not along
    a line (parted along x alone, it had no y spread after any number of passes)."""
    out = relax_overlaps(np.full((400, 2), 3.0), 0.5, iterations=16, entity_ids=np.arange(400) * 5 + 2)
    spread = out.max(axis=0) - out.min(axis=0)
    assert spread.min() > 1.0 and spread.max() < 1.5 * spread.min()
    assert np.abs(out.mean(axis=0) - 3.0).max() < 0.1 * spread.min()  # around where it stood


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40).flatmap(lambda k: st.tuples(
    arrays(np.float64, (k, 2), elements=st.floats(-4, 4)),
    arrays(np.float64, (k,), elements=st.floats(0.1, 1.0)))), st.randoms(use_true_random=False))
def test_relax_is_order_independent_and_finite(case, rnd):
    pos, radius = case
    ids = np.arange(len(pos)) * 3 + 11
    out = relax_overlaps(pos, radius, iterations=4, entity_ids=ids)
    assert np.all(np.isfinite(out))
    perm = np.array(rnd.sample(range(len(pos)), len(pos)))
    out_perm = relax_overlaps(pos[perm], radius[perm], iterations=4, entity_ids=ids[perm])
    np.testing.assert_allclose(out_perm, out[perm], rtol=0, atol=1e-9)
    # no claim that the worst overlap shrinks every pass: with several coincident agents a
    # pass can deepen one contact a little (hypothesis found 1.0 -> 1.02); see the crowd test


def test_relax_resolves_a_sparse_crowd():
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 100, (2000, 2))
    radius = np.full(2000, 0.5)
    before = _max_overlap(pos, radius)
    after_4 = _max_overlap(relax_overlaps(pos, radius), radius)
    after_32 = _max_overlap(relax_overlaps(pos, radius, iterations=32), radius)
    assert after_32 < 0.05 * before and after_32 < after_4 < before


def test_relax_pair_converges_geometrically():
    pos = np.array([[0.0, 0.0], [0.4, 0.3]])  # distance 0.5, contact 2.0: penetration 1.5
    out = relax_overlaps(pos, 1.0, iterations=4)
    residual = 2.0 - np.linalg.norm(out[1] - out[0])
    assert residual == pytest.approx(1.5 * 0.3**4)
    assert np.allclose(out.mean(axis=0), pos.mean(axis=0))  # symmetric pushes




# --- size classes: one grid a size, every contact found --------------------------------------


def test_one_size_is_one_grid_binned_as_before():
    rng = np.random.default_rng(4)
    pos = rng.uniform(-20, 20, (300, 2))
    items, grids = bin_by_size(pos, np.full(300, 0.4))
    ox, oy, cell, cols, rows, cell_start, order = bin_into_grid(pos, pos, 0.8)
    assert grids.cols.tolist() == [cols] and grids.rows.tolist() == [rows]
    assert (grids.origin_x[0], grids.origin_y[0], grids.inv_cell[0]) == (ox, oy, 1.0 / cell)
    np.testing.assert_array_equal(items, order)
    np.testing.assert_array_equal(grids.cell_start, cell_start)


def test_each_size_class_holds_the_radii_of_its_halving():
    rng = np.random.default_rng(5)
    radius = np.concatenate([rng.uniform(0.2, 0.4, 500), [0.1, 3.0, 25.0], np.zeros(2)])
    pos = rng.uniform(-30, 30, (radius.size, 2))
    items, grids = bin_by_size(pos, radius)
    assert sorted(items.tolist()) == list(range(radius.size))  # every agent once
    top = radius.max()
    for c in range(grids.cols.size):
        cells = grids.cell_start[grids.cell_base[c]:grids.cell_base[c + 1]]
        members = items[cells[0]:cells[-1]]
        halvings = np.where(radius[members] > 0, np.floor(np.log2(top / np.maximum(radius[members], 1e-300))), 99)
        assert np.unique(np.minimum(halvings, 15)).size == 1  # one class: one halving of the largest radius
        assert grids.max_radius[c] == radius[members].max()


def _one_pass_by_brute_force(pos, radius, factor=COLLISION_RESOLVE_FACTOR):
    """One Jacobi pass written out over every pair (all movable, none coincident)."""
    delta = pos[:, None, :] - pos[None, :, :]
    d = np.linalg.norm(delta, axis=2)
    contact = radius[:, None] + radius[None, :]
    touching = (d < contact) & ~np.eye(len(pos), dtype=bool)
    scale = np.where(touching, (contact - d) / np.where(d > 0, d, 1.0) * 0.5 * factor, 0.0)
    push = (delta * scale[..., None]).sum(axis=1)
    count = touching.sum(axis=1)
    return pos + np.where(count[:, None] > 0, push / np.maximum(count, 1)[:, None], 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_a_pass_over_mixed_sizes_finds_every_contact(seed):
    """Pebbles, people and a few boulders (radii from 0.05 to 6 m): each in the grid of its
    size, and every overlap of any two found, as the O(n^2) pass finds them."""
    rng = np.random.default_rng(seed)
    radius = np.concatenate([rng.uniform(0.05, 0.1, 200), rng.uniform(0.25, 0.45, 300), rng.uniform(2.0, 6.0, 4)])
    pos = rng.uniform(-12, 12, (radius.size, 2))
    ids = np.arange(radius.size, dtype=np.int64)
    got = relax_pass(pos, pos, radius, np.ones(radius.size, bool), ids, np.zeros(radius.size), np.inf,
                     COLLISION_RESOLVE_FACTOR)
    np.testing.assert_allclose(got, _one_pass_by_brute_force(pos, radius), rtol=0, atol=1e-12)


# --- the work of a tick's relaxation is linear in its agents -----------------------------------


def _stacked(n, rng):
    return np.zeros((n, 2)), np.full(n, 0.5)


def _packed(n, rng):
    """Discs of 0.5 m dropped at random into half the floor they would need packed densely."""
    side = np.sqrt(0.5 * n * 2.0 * np.sqrt(3.0) * 0.25)
    return rng.uniform(0, side, (n, 2)), np.full(n, 0.5)


def _boulder_in_a_crowd(n, rng):
    """A crowd of 0.3 m discs standing apart on a lattice, and one disc of 40 m beside it: a
    single grid's cells of 80 m would hold the whole crowd."""
    cols = int(np.ceil(np.sqrt(n - 1)))
    lattice = np.stack(np.meshgrid(np.arange(cols), np.arange(cols)), axis=-1).reshape(-1, 2)[: n - 1] * 0.7
    pos = np.vstack([lattice, [[-40.5, 0.0]]])
    return pos, np.concatenate([np.full(n - 1, 0.3), [40.0]])


@pytest.mark.parametrize("crowd", [_stacked, _packed, _boulder_in_a_crowd])
def test_a_ticks_relaxation_work_grows_at_most_linearly_with_its_agents(crowd):
    """The kernel counts its pair checks: per agent and pass at most MAX_PAIR_CHECKS whatever
    the crowd, and the checks an agent makes do not grow with the crowd (a stack of 4,000 on
    one point cost 4,000 checks an agent a pass before: 16 million a pass)."""
    rng = np.random.default_rng(7)
    per_agent = {}
    for n in (500, 1000, 2000, 4000):
        pos, radius = crowd(n, rng)
        previous = pos.copy()
        passes, checks, widest = relax_agents(NO_MAP, tuple(NO_OPEN_CELLS), False, pos, previous, np.zeros(n), radius,
                                              np.full(n, 0.5), np.ones(n, bool), np.arange(n, dtype=np.int64), 2.0,
                                              16, 1e-3)
        assert 1 <= passes <= 16 and np.all(np.isfinite(pos))
        assert checks <= passes * n * MAX_PAIR_CHECKS
        per_agent[n] = checks / n
        if crowd is _boulder_in_a_crowd:  # each size in its own grid: nobody's reach holds the crowd, none sampled
            assert widest <= MAX_PAIR_CHECKS
    assert per_agent[4000] <= 1.5 * per_agent[500]  # (quadratic work would be 8 times)


def test_layers_add_up_their_work():
    rng = np.random.default_rng(8)
    pos = rng.uniform(0, 10, (600, 2))
    layer = np.repeat([0, 1, 2], 200)
    args = (np.full(600, 0.4), np.full(600, 0.5), np.ones(600, bool), np.arange(600, dtype=np.int64))
    total = 0
    for members in (slice(0, 200), slice(200, 400), slice(400, 600)):
        alone = pos[members].copy()
        total += relax_agents(NO_MAP, tuple(NO_OPEN_CELLS), False, alone, alone.copy(), np.zeros(200),
                              *(a[members] for a in args), 2.0, 16, 1e-3)[1]
    layered = pos.copy()
    _, checks, _ = relax_layers(NO_MAP, tuple(NO_OPEN_CELLS), False, layered, pos.copy(), np.zeros(600), *args, layer,
                                2.0, 16, 1e-3)
    assert checks == total > 0


@pytest.mark.parametrize("seed", range(12))
def test_a_small_single_layer_relaxes_as_relax_agents_whether_or_not_two_overlap(seed):
    """``relax_layers`` on one layer of at most ``SMALL_LAYER`` agents tests them pair by pair
    first and skips the pass when none overlap: positions and elevations equal ``relax_agents``'
    bit for bit, those that touch (a few seeds) and those that do not (the rest)."""
    from ecs_nav.motion.spatial import SMALL_LAYER

    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, SMALL_LAYER + 1))
    pos = rng.uniform(0, 4.0 if seed % 3 == 0 else 40.0, (k, 2))
    radius = rng.uniform(0.2, 0.6, k)
    args = (radius, np.full(k, 0.5), rng.random(k) < 0.8, np.arange(k, dtype=np.int64))
    results = []
    for relax in (relax_agents, relax_layers):
        moved, elevation = pos.copy(), np.zeros(k)
        layer = () if relax is relax_agents else (np.zeros(k, np.int64),)
        relax(NO_MAP, tuple(NO_OPEN_CELLS), False, moved, pos.copy(), elevation, *args, *layer, 2.0, 4, 1e-3)
        results.append((moved, elevation))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    overlap = _max_overlap(pos, radius) > 0
    assert overlap == (not np.array_equal(results[0][0], pos))  # a touching pair moved; else nobody
