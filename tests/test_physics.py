"""PhysicsSystem: integration, map collisions (slide, no tunnelling, climbing), agent-agent
relaxation, heading, determinism and the NaN guard."""

import math

import numpy as np
import pytest
from ecs_nav.systems.physics import PhysicsSystem

from ecs_nav import Agent, Collider, Position, Velocity, World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp
from ecs_nav.motion.physics import open_cells, relax_agents, yaw_lerp
from ecs_nav.motion.relax import COLLISION_RESOLVE_FACTOR, relax_pass
from ecs_nav.testing import DriveTo


def make_world(geometry=None, dt=1.0 / 60.0, systems=()):
    world = World(seed=3, dt=dt)
    world.map = geometry
    world.add_systems(PhysicsSystem(), *systems)
    return world


def spawn_agent(world, x, y, vx=0.0, vy=0.0, radius=0.5, **agent):
    return world.spawn(Position(x, y), Velocity(vx, vy), Agent(**agent), Collider(radius=radius))


def row(world, entity):
    return world.table.row_of(entity)


# --- integration ----------------------------------------------------------------------------------


def test_integrates_velocity_with_the_fixed_dt_and_records_prev_pos():
    world = make_world(dt=0.1)
    e = spawn_agent(world, 1.0, 2.0, 3.0, -4.0)
    world.step()
    r = row(world, e)
    assert world.table.pos[r] == pytest.approx([1.3, 1.6])
    assert world.table.prev_pos[r] == pytest.approx([1.0, 2.0])
    assert world.table.vel[r] == pytest.approx([3.0, -4.0])  # no collision: velocity kept
    world.step()
    assert world.table.pos[r] == pytest.approx([1.6, 1.2])
    assert world.table.prev_pos[r] == pytest.approx([1.3, 1.6])
    assert world.table.elevation[r] == 0.0  # no map: elevation untouched


def test_only_agents_with_a_velocity_move():
    world = make_world(dt=0.1)
    no_agent = world.spawn(Position(0, 0), Velocity(1, 0))
    no_velocity = world.spawn(Position(5, 0), Agent())
    agent = spawn_agent(world, 10, 0, 1, 0)
    world.run(3)
    t = world.table
    assert t.pos[row(world, no_agent)] == pytest.approx([0, 0])
    assert t.pos[row(world, no_velocity)] == pytest.approx([5, 0])
    assert t.pos[row(world, agent)] == pytest.approx([10.3, 0])


def test_velocity_written_above_max_speed_is_truncated():
    world = make_world(dt=0.1)
    e = spawn_agent(world, 0, 0, 30.0, 40.0, max_speed=5.0)
    world.step()
    assert world.table.vel[row(world, e)] == pytest.approx([3.0, 4.0])
    assert world.table.pos[row(world, e)] == pytest.approx([0.3, 0.4])


# --- map collisions -------------------------------------------------------------------------------

BOUNDS = (-20, -20, 20, 20)


def test_slides_along_a_wall_keeping_the_tangential_component():
    wall = MapGeometry(BOUNDS, boxes=[Box((0, 0), (2, 20), 3.0)])  # x in [-1, 1]
    world = make_world(wall, dt=0.1)
    e = spawn_agent(world, -1.5, 0.0, 3.0, 3.0, max_speed=10.0)
    world.step()
    r = row(world, e)
    assert world.table.pos[r] == pytest.approx([-1.5, 0.3])
    # the collision removed the normal component of the velocity, the tangential one stays
    assert world.table.vel[r] == pytest.approx([0.0, 3.0])
    world.run(5)
    assert world.table.pos[r] == pytest.approx([-1.5, 1.8])
    assert wall.penetration(world.table.pos[[r]], 0.5, 0.0, 0.5)[0] == 0.0


def test_head_on_into_a_wall_stops_and_velocity_stops_pushing():
    wall = MapGeometry(BOUNDS, boxes=[Box((0, 0), (2, 20), 3.0)])
    world = make_world(wall, dt=0.1)
    e = spawn_agent(world, -3.0, 0.0, 5.0, 0.0)
    world.run(10)
    r = row(world, e)
    assert world.table.pos[r] == pytest.approx([-1.5, 0.0])
    assert world.table.vel[r] == pytest.approx([0.0, 0.0], abs=1e-9)


def test_no_tunnelling_through_a_thin_box_at_max_speed_with_a_large_dt():
    thin = MapGeometry(BOUNDS, boxes=[Box((0, 0), (0.05, 30), 3.0)])
    world = make_world(thin, dt=0.5)
    fast = [spawn_agent(world, -2.0, y, 40.0, vy, radius=radius, max_speed=40.0)
            for y, vy, radius in ((0.0, 0.0, 0.5), (3.0, -20.0, 0.1), (-3.0, 5.0, 0.3))]
    for _ in range(5):
        world.step()
        for e in fast:
            r = row(world, e)
            assert world.table.pos[r, 0] <= -0.025 - world.table.radius[r] + 1e-9


def test_climbs_a_ramp_onto_a_wall_top_and_is_blocked_by_a_wall_too_high():
    ramped = MapGeometry(
        BOUNDS,
        boxes=[Box((0, 0), (40, 4), 3.0)],  # wall y in [-2, 2], 3 high
        ramps=[Ramp(start=(0, -14), end=(0, -2), width=3, low=0, high=3)],
    )
    world = World(seed=1, dt=1.0 / 60.0)
    world.map = ramped
    climber = spawn_agent(world, 0.0, -16.0, radius=0.4)
    blocked = spawn_agent(world, 8.0, -16.0, radius=0.4)
    world.add_systems(PhysicsSystem(), DriveTo({climber: (0.0, 0.0), blocked: (8.0, 0.0)}))
    t = world.table
    elevations = []
    for _ in range(600):
        world.step()
        elevations.append(t.elevation[row(world, climber)])
        pos = t.pos[: t.n]
        pen = ramped.penetration(pos, t.radius[: t.n], t.elevation[: t.n], t.max_climb[: t.n])
        assert np.all(pen <= 1e-6)
    rc, rb = row(world, climber), row(world, blocked)
    # the climber walked up the ramp and stands on top of the wall
    assert t.pos[rc] == pytest.approx([0.0, 0.0], abs=1e-6)
    assert t.elevation[rc] == pytest.approx(3.0)
    assert np.all(np.diff(elevations) >= -1e-12) and np.max(np.diff(elevations)) <= 0.5
    # the other one met the wall's face away from the ramp: stopped, still on the floor
    assert t.pos[rb] == pytest.approx([8.0, -2.4], abs=1e-6)
    assert t.elevation[rb] == 0.0
    assert t.vel[rb] == pytest.approx([0.0, 0.0], abs=1e-9)


# --- agent-agent non-penetration ------------------------------------------------------------------


def test_two_overlapping_agents_are_separated():
    world = make_world(dt=0.1)
    a = spawn_agent(world, 0.0, 0.0, radius=0.5)
    b = spawn_agent(world, 0.3, 0.1, radius=0.5)
    c = spawn_agent(world, 5.0, 5.0, radius=0.5)
    d = spawn_agent(world, 5.0, 5.0, radius=0.5)  # coincident
    world.run(3)
    t = world.table
    for p, q in ((a, b), (c, d)):
        gap = np.linalg.norm(t.pos[row(world, p)] - t.pos[row(world, q)])
        assert gap >= 1.0 - 1e-2
    # a relaxation push is a correction, not motion: velocities stay zero
    assert np.all(t.vel[: t.n] == 0.0)


def test_static_colliders_push_but_are_not_pushed():
    world = make_world(dt=0.1)
    post = world.spawn(Position(0.0, 0.0), Collider(radius=0.5))
    e = spawn_agent(world, 0.6, 0.0, radius=0.5)
    world.run(3)
    t = world.table
    assert t.pos[row(world, post)] == pytest.approx([0.0, 0.0])
    assert t.pos[row(world, e), 0] >= 1.0 - 1e-2


def test_agents_at_different_heights_do_not_push_each_other():
    """One agent on a 2 m box top, one at the box's foot, overlapping in plan: their bodies
    (2 m tall) do not meet, so neither moves; two on the top do push."""
    top = MapGeometry(BOUNDS, boxes=[Box((0, 0), (4, 4), 2.0)])  # x, y in [-2, 2]
    world = World(seed=0, dt=0.1)
    world.map = top
    world.add_systems(PhysicsSystem())
    up = spawn_agent(world, 1.8, 0.0, radius=0.5)
    down = spawn_agent(world, 2.5, 0.0, radius=0.5)
    t = world.table
    assert (t.elevation[row(world, up)], t.elevation[row(world, down)]) == (2.0, 0.0)
    world.run(3)
    assert t.pos[row(world, up)] == pytest.approx([1.8, 0.0])
    assert t.pos[row(world, down)] == pytest.approx([2.5, 0.0])
    neighbour = spawn_agent(world, 1.0, 0.0, radius=0.5)
    world.run(3)
    assert np.linalg.norm(t.pos[row(world, up)] - t.pos[row(world, neighbour)]) > 0.9


def _full_passes(geometry, pos, elev, radius, climb, movable, ids, body_height, iterations, tolerance):
    """The relaxation spelled out: every pass over every agent, grid rebuilt, then the map."""
    pos, elev, movable = pos.copy(), elev.copy(), movable.copy()
    previous = pos.copy()
    for _ in range(iterations):
        relaxed = relax_pass(pos, previous, radius, movable, ids, elev, body_height, COLLISION_RESOLVE_FACTOR)
        shift = relaxed - pos
        shift2 = np.einsum("ij,ij->i", shift, shift)
        moved = np.flatnonzero(shift2 > 0)
        if moved.size == 0:
            break
        p2, e2 = geometry.resolve_circles(pos[moved], relaxed[moved], radius[moved], elev[moved], climb[moved],
                                          body_height)
        held = np.einsum("ij,ij->i", p2 - pos[moved], shift[moved]) < 0.5 * shift2[moved]
        movable[moved[held]] = False
        relaxed[moved], elev[moved] = p2, e2
        pos = relaxed
        if shift2.max() < tolerance ** 2:
            break
    return pos, elev


@pytest.mark.parametrize("seed", range(4))
def test_relaxation_visiting_only_live_contacts_equals_full_passes(seed):
    rng = np.random.default_rng(seed)
    geometry = MapGeometry(BOUNDS, boxes=[Box((0, 0), (1, 12), 3.0), Box((6, 4), (5, 1), 0.3)],
                           circles=[Circle((-6, 5), 1.5, 2.0)])
    k = 600
    pos = rng.uniform(-9, 9, (k, 2))
    radius = rng.uniform(0.2, 0.6, k)
    elev = geometry.surface_height(pos, 0.3)
    free = geometry.penetration(pos, radius, elev, 0.5) <= 0
    pos, radius, elev = pos[free], radius[free], elev[free]
    k = pos.shape[0]
    climb = np.full(k, 0.5)
    movable = rng.random(k) < 0.9
    ids = rng.permutation(k).astype(np.int64)
    want_pos, want_elev = _full_passes(geometry, pos, elev, radius, climb, movable, ids, 2.0, 8, 1e-3)
    got_pos, got_elev = pos.copy(), elev.copy()
    G = geometry.kernel_data()
    passes, _, _ = relax_agents(G, open_cells(G), True, got_pos, pos.copy(), got_elev, radius, climb, movable, ids,
                                2.0, 8, 1e-3)
    assert passes >= 3  # a crowded case, not a trivial one
    np.testing.assert_allclose(got_pos, want_pos, atol=1e-9)
    np.testing.assert_allclose(got_elev, want_elev, atol=1e-9)


@pytest.mark.parametrize("max_substeps, passes_through", [(8, False), (1, True)])
def test_fast_agents_do_not_pass_through_each_other(max_substeps, passes_through):
    """Head-on at 30 m/s, radius 0.25, dt 1/30: a 1 m step per tick, twice the sum of the radii.
    Sub-stepped, they meet and stay on their sides; without sub-steps they jump past."""
    world = World(seed=0, dt=1.0 / 30.0)
    world.add_systems(PhysicsSystem(max_substeps=max_substeps))
    left = spawn_agent(world, -5.25, 0.0, 30.0, 0.0, radius=0.25, max_speed=30.0)
    right = spawn_agent(world, 5.25, 0.0, -30.0, 0.0, radius=0.25, max_speed=30.0)
    t = world.table
    for _ in range(15):
        world.step()
    crossed = t.pos[row(world, left), 0] > t.pos[row(world, right), 0]
    assert crossed == passes_through
    if not passes_through:
        assert t.pos[row(world, right), 0] - t.pos[row(world, left), 0] >= 0.5 - 1e-2
        assert t.vel[row(world, left), 0] <= 1e-9  # the contact took the closing speed away


def test_substeps_validated():
    with pytest.raises(ValueError, match="max_substeps"):
        PhysicsSystem(max_substeps=0)


def test_settings_set_later_are_validated_and_converted_as_in_the_constructor():
    physics = PhysicsSystem()
    physics.relax_tolerance, physics.max_substeps, physics.body_height = 0, 2.0, 3
    assert (physics.relax_tolerance, physics.max_substeps, physics.body_height) == (0.0, 2, 3.0)
    assert type(physics.relax_tolerance) is float and type(physics.max_substeps) is int
    for name, value in (("relax_iterations", -1), ("body_height", 0.0), ("heading_epsilon", float("nan")),
                        ("relax_tolerance", -0.5), ("max_substeps", True)):
        with pytest.raises(ValueError, match=f"PhysicsSystem.{name}: must be"):
            setattr(physics, name, value)
    assert physics.max_substeps == 2  # a refused value leaves the setting as it was


def test_relaxation_never_pushes_an_agent_into_a_wall():
    wall = MapGeometry(BOUNDS, boxes=[Box((0, 0), (0.1, 20), 3.0)])  # x in [-0.05, 0.05]
    world = World(seed=0, dt=1.0 / 60.0)
    world.map = wall
    pressed = spawn_agent(world, -0.55, 0.0, radius=0.5)
    pusher = spawn_agent(world, -2.0, 0.0, radius=0.5)
    # the pusher is driven at full speed into the pressed agent every tick
    world.add_systems(PhysicsSystem(), DriveTo({pusher: (5.0, 0.0)}))
    t = world.table
    for _ in range(120):
        world.step()
        rp, rq = row(world, pressed), row(world, pusher)
        pen = wall.penetration(t.pos[[rp, rq]], 0.5, 0.0, 0.5)
        assert np.all(pen <= 1e-9)
        assert t.pos[rq, 0] < t.pos[rp, 0]  # never passed through
        assert np.linalg.norm(t.pos[rp] - t.pos[rq]) >= 1.0 - 0.05  # a small overlap at most
    assert t.pos[row(world, pressed)] == pytest.approx([-0.55, 0.0], abs=1e-6)


def test_contact_removes_the_velocity_component_into_the_other_agent():
    world = make_world(dt=1.0 / 60.0)
    post = world.spawn(Position(0.0, 0.0), Collider(radius=0.5))
    e = spawn_agent(world, -1.02, 0.0, 3.0, 1.0, radius=0.5)
    world.step()
    t = world.table
    r = row(world, e)
    assert t.pos[row(world, post)] == pytest.approx([0.0, 0.0])
    # the approach along x is stopped by the contact, the tangential motion is kept
    assert t.vel[r, 0] < 3.0 * 0.5 and t.vel[r, 1] == pytest.approx(1.0, rel=0.2)


# --- heading --------------------------------------------------------------------------------------


def test_heading_turns_toward_velocity_at_turn_speed():
    dt = 1.0 / 60.0
    world = make_world(dt=dt)
    e = spawn_agent(world, 0, 0, 0.0, 2.0, turn_speed=10.0)
    r = row(world, e)
    world.step()
    # Unity's Quaternion.Lerp(from yaw 0 to yaw 90 degrees, dt * turn_speed), yaw only
    s = dt * 10.0
    qw = 1.0 + (math.cos(math.pi / 4) - 1.0) * s
    qz = math.sin(math.pi / 4) * s
    yaw = 2 * math.atan2(qz, qw)
    assert world.table.heading[r] == pytest.approx([math.cos(yaw), math.sin(yaw)])
    assert 0 < yaw < math.pi / 2
    world.run(120)
    assert world.table.heading[r] == pytest.approx([0.0, 1.0], abs=1e-6)
    assert np.linalg.norm(world.table.heading[r]) == pytest.approx(1.0)


def test_heading_kept_when_still_and_unit_when_reversing():
    world = make_world(dt=1.0 / 60.0)
    still = spawn_agent(world, 0, 0)
    back = spawn_agent(world, 5, 5, -1.0, 0.0)  # exactly opposite the initial +x heading
    t = world.table
    world.step()
    assert t.heading[row(world, still)] == pytest.approx([1.0, 0.0])
    h = t.heading[row(world, back)]
    assert np.linalg.norm(h) == pytest.approx(1.0) and h[0] < 1.0
    world.run(200)
    assert t.heading[row(world, back)] == pytest.approx([-1.0, 0.0], abs=1e-6)


def test_yaw_lerp_takes_the_shorter_arc():
    h = np.array([[math.cos(3.0), math.sin(3.0)]])
    target = np.array([[math.cos(-3.0), math.sin(-3.0)]])  # 0.28 rad away across +-pi
    out = yaw_lerp(h, target, np.array([0.5]))
    assert math.atan2(out[0, 1], out[0, 0]) == pytest.approx(math.pi, abs=1e-9) or \
        abs(math.atan2(out[0, 1], out[0, 0])) == pytest.approx(math.pi, abs=1e-9)
    assert yaw_lerp(h, target, np.array([1.0])) == pytest.approx(target)


def test_yaw_lerp_is_unitys_quaternion_lerp_about_the_vertical_axis():
    """Against the definition with angles: q(a) = (cos a/2, sin a/2), flip qb for the shorter
    arc, lerp, yaw = 2 atan2(q1, q0)."""
    rng = np.random.default_rng(4)
    a, b = rng.uniform(-math.pi, math.pi, (2, 500))
    t = rng.uniform(0, 1, 500)
    t[:50] = rng.choice([0.0, 1.0], 50)
    qa = np.stack([np.cos(a / 2), np.sin(a / 2)], axis=1)
    qb = np.stack([np.cos(b / 2), np.sin(b / 2)], axis=1)
    qb[np.einsum("ij,ij->i", qa, qb) < 0] *= -1
    q = qa + (qb - qa) * t[:, None]
    yaw = 2 * np.arctan2(q[:, 1], q[:, 0])
    out = yaw_lerp(np.stack([np.cos(a), np.sin(a)], axis=1), np.stack([np.cos(b), np.sin(b)], axis=1), t)
    np.testing.assert_allclose(out, np.stack([np.cos(yaw), np.sin(yaw)], axis=1), atol=1e-12)
    np.testing.assert_allclose(np.hypot(out[:, 0], out[:, 1]), 1.0, atol=1e-15)


# --- determinism and the NaN guard ----------------------------------------------------------------


def _crowd_run(seed):
    geometry = MapGeometry(BOUNDS, boxes=[Box((0, 0), (1, 10), 3.0), Box((5, 5), (3, 1), 0.3)],
                           ramps=[Ramp(start=(-6, -8), end=(-6, -2), width=2, low=0, high=1)])
    world = World(seed=seed, dt=1.0 / 30.0)
    world.map = geometry
    rng = np.random.default_rng(seed)
    targets = {}
    for _ in range(30):
        x, y = rng.uniform(-18, 18, 2)
        e = spawn_agent(world, x, y, radius=rng.uniform(0.2, 0.6))
        targets[e] = tuple(rng.uniform(-18, 18, 2))
    world.add_systems(PhysicsSystem(), DriveTo(targets))
    world.run(60)
    snapshot = world.table.snapshot()
    digest = world.state_digest()
    world.close()
    return snapshot, digest


def test_deterministic():
    (a, da), (b, db) = _crowd_run(7), _crowd_run(7)
    assert da == db
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_nan_velocity_raises_naming_the_entity_and_leaves_the_table_alone():
    world = make_world(dt=0.1)
    good = spawn_agent(world, 0, 0, 1, 0)
    bad = spawn_agent(world, 3, 3, 1, 0)
    world.table.vel[row(world, bad)] = (np.nan, 0.0)  # the view refuses NaN; write the column
    before = world.table.snapshot()
    with pytest.raises(FloatingPointError, match=rf"entity id\(s\) {bad}\b"):
        world.step()
    after = world.table.snapshot()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])
    assert world.table.pos[row(world, good)] == pytest.approx([0, 0])


def test_position_overflow_is_refused():
    world = make_world(dt=1.0)
    e = spawn_agent(world, 0, 0, max_speed=1000.0)
    world.table.max_speed[row(world, e)] = math.inf  # table writes bypass the setters' checks: physics still refuses
    world.table.pos[row(world, e)] = (1.7e308, 0.0)
    world.table.vel[row(world, e)] = (1.7e308, 0.0)
    with pytest.raises(FloatingPointError, match=str(e)):
        world.step()


@pytest.mark.parametrize("seed", range(3))
def test_the_open_cells_shortcut_changes_no_resolved_position(seed):
    """``resolve_map`` with the map's OpenCells equals it without (every disc through
    ``resolve_disc``): discs on free cells move exactly to their target, the rest are swept;
    and the shortcut is taken, and only by discs that touch no shape."""
    import numba

    from ecs_nav.motion.physics import NO_OPEN_CELLS, moves_freely, resolve_map

    rng = np.random.default_rng(seed)
    geometry = MapGeometry(BOUNDS, boxes=[Box((0, 0), (1, 12), 3.0), Box((6, 4), (5, 1), 0.3),
                                          Ramp((-9, -5), (-4, -5), 2.0, 0.0, 1.0)],
                           circles=[Circle((-6, 5), 1.5, 2.0)])
    G = geometry.kernel_data()
    F = open_cells(G)
    k = 4000
    start = rng.uniform(BOUNDS[0], BOUNDS[2], (k, 2))
    start[::7] = np.round(start[::7] * 2) / 2  # some exactly on cell corners
    step = rng.normal(0, 0.3, (k, 2))
    step[::5] *= 10  # some long sweeps
    target = start + step
    radius = rng.uniform(0.0, 0.6, k)
    elev = np.where(rng.random(k) < 0.9, 0.0, 0.3)
    climb = np.full(k, 0.5)
    got = resolve_map(G, F, start, target, radius, elev, climb, 2.0)
    want = resolve_map(G, NO_OPEN_CELLS, start, target, radius, elev, climb, 2.0)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])

    @numba.njit
    def free(meta, F, start, target, radius, elev):
        return np.array([moves_freely(meta, F, start[i, 0], start[i, 1], target[i, 0], target[i, 1], radius[i],
                                      elev[i]) for i in range(start.shape[0])])

    fast = free(G[2], F, start, target, radius, elev)
    assert 0.3 * k < fast.sum() < k
    blocked = geometry.resolve_circles(start, target, radius, elev, climb, 2.0)[0] != target
    assert not np.any(fast & blocked.any(axis=1))
