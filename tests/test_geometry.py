"""Map geometry: shapes, surface heights, segment tests, circle collision."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import BOUNDS, random_maps

from ecs_nav.geometry.kernels import MIN_COLLISION_RADIUS, resolve_circles_into
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp

# --- shapes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: Box((0, 0), (-1, 2), 1), "size"),
        (lambda: Box((0, 0), (1, 2), float("nan")), "height"),
        (lambda: Box((0, float("nan")), (1, 2), 1), "center"),
        (lambda: Box((0, 0), (1, 2), -1), "height"),
        (lambda: Ramp((0, 0), (0, 4), -2, 0, 1), "width"),
        (lambda: Ramp((0, 0), (0, 0), 2, 0, 1), "end"),
        (lambda: Ramp((0, 0), (0, 4), 2, 0, float("inf")), "high"),
        (lambda: Circle((0, 0), -1, 1), "radius"),
        (lambda: Circle((0, 0), 1, 1, base=float("nan")), "base"),
    ],
)
def test_shapes_validate_and_name_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_bounds_validated():
    with pytest.raises(ValueError, match="bounds"):
        MapGeometry((0, 0, -1, 1))


def test_ramp_corners_and_aabb():
    ramp = Ramp(start=(0, 0), end=(0, 8), width=4, low=0, high=2)
    assert ramp.length == 8
    assert ramp.aabb() == pytest.approx((-2, 0, 2, 8))
    diagonal = Ramp(start=(0, 0), end=(3, 4), width=2, low=0, high=1)
    assert diagonal.length == 5
    assert diagonal.moved_to((0, 0)).center == pytest.approx((0, 0))


# --- surface heights -------------------------------------------------------------------------------


def ramp_map() -> MapGeometry:
    return MapGeometry(
        BOUNDS,
        boxes=[Box((5, 5), (2, 2), 3.0), Box((-5, 5), (2, 2), 1.0, base=2.0)],
        ramps=[Ramp(start=(0, -8), end=(0, 0), width=2, low=0.0, high=2.0)],
        circles=[Circle((5, -5), 1.0, 1.5)],
        floor=0.0,
    )


def test_surface_height_boxes_circles_floor_and_misses():
    g = ramp_map()
    pts = [[5, 5], [5.99, 5], [6.01, 5], [5, -5], [-9, -9], [10.5, 0], [-5, 5]]
    h = g.surface_height(pts)
    assert h[:5] == pytest.approx([3.0, 3.0, 0.0, 1.5, 0.0])
    assert math.isnan(h[5])  # off the map: the ray missed
    assert h[6] == 3.0  # a floating box: its top (base 2 + height 1)


def test_surface_height_interpolates_ramps():
    g = ramp_map()
    ys = np.array([-8.0, -6.0, -4.0, -2.0, 0.0])
    h = g.surface_height(np.stack([np.zeros(5), ys], axis=1))
    assert h == pytest.approx((ys + 8) / 8 * 2.0)
    # off the ramp's side: the floor
    assert g.surface_height([[1.01, -4]])[0] == 0.0


def test_surface_height_from_below_and_support():
    g = ramp_map()
    # a ray starting below the box top sees the floor
    assert g.surface_height([[5, 5]], from_height=2.0)[0] == 0.0
    assert g.surface_height([[5, 5]], from_height=3.0)[0] == 3.0
    # standing on the floor beside a 3 m box: still on the floor; on the box: on its top
    assert g.support_height([[5, 5]], 0.0, 0.5)[0] == 0.0
    assert g.support_height([[5, 5]], 3.0, 0.5)[0] == 3.0
    # on the ramp at elevation 1.0 (y = -4), a step up the ramp follows its surface
    assert g.support_height([[0, -3.5]], 1.0, 0.5)[0] == pytest.approx(1.125)
    # under the floating box (base 2), an agent on the floor stays on the floor
    assert g.support_height([[-5, 5]], 0.0, 0.5)[0] == 0.0


# --- segments --------------------------------------------------------------------------------------


def test_segment_blocked_boxes():
    g = MapGeometry(BOUNDS, boxes=[Box((0, 0), (2, 2), 2.0), Box((5, 0), (2, 2), 1.0, base=2.0)])
    a = [[-3, 0, 1], [-3, 0, 2.5], [-3, 0, 2.0], [-3, 1.0, 1], [-3, 2.5, 1], [5, -3, 0.5], [5, -3, 2.5],
         [-1.5, 0.9, 1]]
    b = [[3, 0, 1], [3, 0, 2.5], [3, 0, 2.0], [3, 1.0, 1], [3, 2.5, 1], [5, 3, 0.5], [5, 3, 2.5],
         [0.9, -1.5, 1]]
    assert g.segment_blocked(a, b).tolist() == [
        True,   # through the box
        False,  # above it
        False,  # lying on its top: touching is not crossing
        False,  # grazing its face
        False,  # beside it
        False,  # under a floating box
        True,   # through the floating box
        True,   # cutting the corner
    ]


def test_segment_blocked_ramp_solid_under_surface():
    g = MapGeometry(BOUNDS, ramps=[Ramp(start=(0, -8), end=(0, 0), width=2, low=0.0, high=2.0)])
    # across the ramp at y = -4 (surface 1.0): below the surface is solid, above is air
    assert g.segment_blocked([[-3, -4, 0.9], [-3, -4, 1.1]], [[3, -4, 0.9], [3, -4, 1.1]]).tolist() == [
        True, False]
    # along the ramp, 0.2 above its surface: free; a straight line from its foot to its top
    # through the slab (0.1 under the surface): blocked
    assert not g.segment_blocked([[0, -8, 0.2]], [[0, 0, 2.2]])[0]
    assert g.segment_blocked([[0, -7, 0.15]], [[0, -1, 1.65]])[0]


def test_segment_blocked_cylinders():
    g = MapGeometry(BOUNDS, circles=[Circle((0, 0), 1.0, 2.0)])
    a = [[-3, 0, 1], [-3, 0.99, 1], [-3, 1.01, 1], [-3, 0, 2.5], [0, 0, -1]]
    b = [[3, 0, 1], [3, 0.99, 1], [3, 1.01, 1], [3, 0, 2.5], [0, 0, 3]]
    assert g.segment_blocked(a, b).tolist() == [True, True, False, False, True]


def test_segment_blocked_broadphase_on_a_big_tile_map():
    rng = np.random.default_rng(1)
    blocked = rng.random((120, 150)) < 0.3
    g = MapGeometry.from_grid(blocked, cell_size=1.0, origin=(0, 0), height=2.0)
    a = np.column_stack([rng.uniform(0, 150, 3000), rng.uniform(0, 120, 3000), np.full(3000, 1.0)])
    b = a + np.column_stack([rng.uniform(-3, 3, (3000, 2)), np.zeros(3000)])
    hit = g.segment_blocked(a, b)
    # reference: dense samples strictly inside a blocked cell
    t = np.linspace(0, 1, 401)
    pts = a[:, None, :2] + t[None, :, None] * (b - a)[:, None, :2]
    col, row_world = np.floor(pts[..., 0]).astype(int), np.floor(pts[..., 1]).astype(int)
    inside_map = (col >= 0) & (col < 150) & (row_world >= 0) & (row_world < 120)
    frac_x, frac_y = pts[..., 0] - col, pts[..., 1] - row_world
    deep = (frac_x > 1e-6) & (frac_x < 1 - 1e-6) & (frac_y > 1e-6) & (frac_y < 1 - 1e-6)
    cell_blocked = np.zeros_like(inside_map)
    cell_blocked[inside_map] = blocked[119 - row_world[inside_map], col[inside_map]]
    sampled_hit = (cell_blocked & deep & inside_map).any(axis=1)
    assert np.all(hit[sampled_hit])
    # a few misses of the sampler may be real hits (a corner nicked between samples), not many
    assert (hit & ~sampled_hit).sum() <= 0.02 * len(hit)


# --- edits -----------------------------------------------------------------------------------------


def test_add_move_remove_keep_ids_and_report_regions():
    g = MapGeometry(BOUNDS, boxes=[Box((0, 0), (2, 2), 2.0)])
    assert g.version == 0
    cid = g.add(Circle((5, 5), 1.0, 2.0))
    assert cid == 1 and g.version == 1
    assert g.surface_height([[5, 5]])[0] == 2.0
    changed = g.move(cid, (-5, -5))
    assert changed == pytest.approx((-6, -6, 6, 6))
    assert g.surface_height([[5, 5], [-5, -5]]).tolist() == [0.0, 2.0]
    changed = g.move(0, Box((0, 0), (4, 4), 1.0))
    assert changed == pytest.approx((-2, -2, 2, 2))
    assert g.surface_height([[1.5, 1.5]])[0] == 1.0
    assert g.remove(0) == pytest.approx((-2, -2, 2, 2))
    assert g.surface_height([[0, 0]])[0] == 0.0
    assert sorted(g.shapes) == [cid] and g.version == 4
    with pytest.raises(KeyError, match="no shape with id 0"):
        g.remove(0)


def test_from_grid_merges_runs_and_keeps_text_orientation():
    text = ["#####.....",
            "#####.....",
            "..........",
            "......###.",
            "......###."]
    blocked = np.array([[c == "#" for c in line] for line in text])
    g = MapGeometry.from_grid(blocked, cell_size=2.0, origin=(10.0, 20.0), height=3.0)
    assert len(g.boxes) == 2
    assert g.bounds == (10.0, 20.0, 30.0, 30.0)
    # text row 0 is the top of the map: cell (col 0, text row 0) spans [10, 12) x [28, 30)
    rows, cols = blocked.shape
    c, r = np.meshgrid(np.arange(cols), np.arange(rows))
    centres = np.column_stack([10 + (c.ravel() + 0.5) * 2, 20 + (rows - 1 - r.ravel() + 0.5) * 2])
    h = g.surface_height(centres)
    assert np.array_equal(h == 3.0, blocked.ravel())


def test_from_grid_box_count_stays_small():
    blocked = np.zeros((64, 64), dtype=bool)
    blocked[10:50, 20:30] = True  # one block
    blocked[:, 0] = True  # one column
    g = MapGeometry.from_grid(blocked)
    assert len(g.boxes) == 2


# --- circle collision ------------------------------------------------------------------------------


def test_slides_along_a_wall():
    g = MapGeometry(BOUNDS, boxes=[Box((0, 0), (2, 20), 3.0)])  # wall x in [-1, 1]
    pos, elev = g.resolve_circles([[-3, 0]], [[0, 1.5]], 0.5, 0.0, 0.5)
    # the normal component is removed, the tangential one kept
    assert pos[0] == pytest.approx([-1.5, 1.5])
    assert elev[0] == 0.0


def test_no_tunnelling_through_a_thin_wall_at_any_speed():
    g = MapGeometry(BOUNDS, boxes=[Box((0, 0), (0.05, 20), 3.0)])
    prev = np.array([[-2.0, 0.0], [-2.0, 1.0], [-0.5, 0.0]])
    new = np.array([[9.0, 0.0], [9.0, -8.0], [0.5, 0.0]])
    for radius in (0.0, 0.1, 0.5):
        pos, _ = g.resolve_circles(prev, new, radius, 0.0, 0.5)
        assert np.all(pos[:, 0] <= -0.025 - max(radius, MIN_COLLISION_RADIUS) + 1e-9)


def test_steps_onto_low_boxes_but_not_high_ones():
    g = MapGeometry(BOUNDS, boxes=[Box((2, 0), (2, 2), 0.4), Box((2, 5), (2, 2), 0.6)])
    pos, elev = g.resolve_circles([[-1, 0], [-1, 5]], [[2, 0], [2, 5]], 0.3, 0.0, 0.5)
    assert pos[0] == pytest.approx([2, 0]) and elev[0] == pytest.approx(0.4)
    assert pos[1] == pytest.approx([0.7, 5]) and elev[1] == 0.0


def test_walks_up_a_ramp_onto_the_wall_and_down_the_other_side():
    g = MapGeometry(
        (-20, -20, 20, 20),
        boxes=[Box((0, 0), (40, 4), 3.0)],  # wall y in [-2, 2]
        ramps=[Ramp(start=(0, -14), end=(0, -2), width=3, low=0, high=3),
               Ramp(start=(5, 14), end=(5, 2), width=3, low=0, high=3)],
    )
    pos, elev = np.array([[0.0, -16.0]]), np.array([0.0])
    track = []
    for target in ([0, 0], [5, 0], [5, 16]):
        for _ in range(400):
            d = np.asarray(target, float) - pos[0]
            step = d if np.linalg.norm(d) < 0.1 else d / np.linalg.norm(d) * 0.1
            pos, elev = g.resolve_circles(pos, pos + step, 0.4, elev, 0.5)
            track.append((*pos[0], elev[0]))
        assert pos[0] == pytest.approx(target, abs=1e-6)
    track = np.array(track)
    on_wall = np.abs(track[:, 1]) < 1.5
    assert np.all(track[on_wall, 2] == 3.0)  # on top of the wall, not inside it
    assert np.all(np.abs(np.diff(track[:, 2])) <= 0.5)  # never a jump: ramps all the way
    assert elev[0] == 0.0
    # without the ramps the same walk is stopped at the wall's face
    flat = MapGeometry((-20, -20, 20, 20), boxes=[Box((0, 0), (40, 4), 3.0)])
    pos2, elev2 = flat.resolve_circles([[0, -16]], [[0, 0]], 0.4, 0.0, 0.5)
    assert pos2[0] == pytest.approx([0, -2.4]) and elev2[0] == 0.0


def test_stays_inside_bounds_and_refuses_nan():
    g = MapGeometry(BOUNDS)
    pos, _ = g.resolve_circles([[9, 9], [0, 0]], [[50, 50], [-30, 2]], 0.5, 0.0, 0.5)
    assert pos == pytest.approx(np.array([[9.5, 9.5], [-9.5, 2.0]]))
    with pytest.raises(ValueError, match="new_pos"):
        g.resolve_circles([[0, 0]], [[np.nan, 0]], 0.5, 0.0, 0.5)


def test_corner_of_two_walls():
    g = MapGeometry(BOUNDS, boxes=[Box((0, 3), (6, 2), 3.0), Box((3, 0), (2, 6), 3.0)])
    pos, _ = g.resolve_circles([[0, 0]], [[5, 5]], 0.5, 0.0, 0.5)
    assert pos[0] == pytest.approx([1.5, 1.5])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometry=random_maps(), seed=st.integers(0, 2**31 - 1))
def test_agents_never_end_inside_a_wall(geometry, seed):
    rng = np.random.default_rng(seed)
    k = 200
    radius = rng.uniform(0.0, 0.6, k)
    pos = rng.uniform(-9.5, 9.5, (k, 2))
    elev = geometry.surface_height(pos, 0.0)  # on the floor
    ok = geometry.penetration(pos, radius, elev, 0.5) <= 0.0
    pos, radius, elev = pos[ok], radius[ok], elev[ok]
    for _ in range(15):
        step = rng.normal(0, 1, pos.shape) * rng.choice([0.05, 0.5, 5.0], (len(pos), 1))
        new_pos, new_elev = geometry.resolve_circles(pos, pos + step, radius, elev, 0.5)
        assert np.all(np.isfinite(new_pos)) and np.all(np.isfinite(new_elev))
        pen = geometry.penetration(new_pos, radius, new_elev, 0.5)
        assert np.all(pen <= 1e-6), (geometry.shapes, pos[pen > 1e-6], step[pen > 1e-6], radius[pen > 1e-6],
                                     elev[pen > 1e-6], new_elev[pen > 1e-6])
        assert np.all(new_pos >= -10 + radius[:, None] - 1e-9) and np.all(new_pos <= 10 - radius[:, None] + 1e-9)
        # the agent stands on a surface at its position
        assert np.array_equal(geometry.surface_height(new_pos, new_elev), new_elev)
        pos, elev = new_pos, new_elev


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometry=random_maps(), seed=st.integers(0, 2**31 - 1))
def test_open_floor_shortcut_agrees_with_the_full_sweep(geometry, seed):
    """resolve_circles skips the sweep for a disc on the floor whose swept box touches no shape's
    footprint box; with every footprint box made the whole map the sweep always runs, and the
    results must agree."""
    rng = np.random.default_rng(seed)
    k = 300
    radius = rng.uniform(0.0, 0.6, k)
    pos = rng.uniform(-9.5, 9.5, (k, 2))
    elev = geometry.surface_height(pos, 0.0)
    step = rng.normal(0, 1, pos.shape) * rng.choice([0.05, 0.5, 5.0], (k, 1))
    fast, fast_elev = geometry.resolve_circles(pos, pos + step, radius, elev, 0.5)
    data = geometry.kernel_data()
    everywhere = np.tile(np.asarray(BOUNDS), (data[6].shape[0], 1))
    out = np.empty(k), np.empty(k), np.empty(k)
    resolve_circles_into(data[:6] + (everywhere,), pos[:, 0].copy(), pos[:, 1].copy(), pos[:, 0] + step[:, 0],
                         pos[:, 1] + step[:, 1], radius, elev, np.full(k, 0.5), 2.0, *out)
    assert np.allclose(fast, np.stack(out[:2], axis=1), atol=1e-9)
    assert np.array_equal(fast_elev, out[2])


@pytest.mark.parametrize("query", [
    lambda g: g.penetration([[np.nan, 0.0]], 0.5, 0.0, 0.5),
    lambda g: g.surface_height([[0.0, np.inf]]),
])
def test_non_finite_query_points_are_refused_not_answered(query):
    g = MapGeometry(BOUNDS, boxes=[Box((0, 0), (2, 2), 1.0)])
    with pytest.raises(ValueError, match="finite"):
        query(g)
