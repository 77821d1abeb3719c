"""Crowds that cannot stand apart: stacked on one point (refused by the scene check and by
``World.spawn_many``; parted in two dimensions by the physics when placed so anyway), and crowds
packed into less free floor than their discs need (measured on the map)."""

import math
import re

import numpy as np
import pytest
from ecs_nav.systems.physics import PhysicsSystem

from ecs_nav import Agent, Collider, Position, SceneError, Velocity, World
from ecs_nav.scene.crowds import HEXAGONAL_PACKING
from ecs_nav.scene.schema import parse_text


def problems(text: str) -> list[str]:
    with pytest.raises(SceneError) as info:
        parse_text(text)
    return [line.removeprefix("<text>: ") for line in info.value.problems]


STACKED = """
[[entity]]
count = 5000
Position = { x = 0, y = 0 }
Velocity = {}
Agent = {}
Collider = { radius = 0.5 }
"""


def test_a_crowd_on_one_point_is_refused_with_a_spawn_area_that_would_hold_it():
    got = problems(STACKED)
    assert got == ["entity[0] spawn_area: 5000 members with a Position and no spawn_area would all stand on one "
                   "point (0, 0); give a spawn_area to place them in, e.g. spawn_area = [-47, -47, 47, 47] (room "
                   "for 2 times their discs)"]
    # the suggestion: 94 x 94 m, at least twice the 4,330 m² 5,000 discs of 0.5 m need packed
    assert 94**2 >= 2 * 5000 * math.pi * 0.25 / HEXAGONAL_PACKING > 92**2
    scene = parse_text(STACKED.replace("Position = { x = 0, y = 0 }", "spawn_area = [-47, -47, 47, 47]"))
    assert scene.entities[0]["count"] == 5000
    shifted = problems(STACKED.replace("count = 5000", "count = 3").replace("x = 0, y = 0", "x = 10, y = -4"))
    assert "on one point (10, -4)" in shifted[0] and "spawn_area = [8, -6, 12, -2]" in shifted[0]


def test_a_crowd_without_a_position_or_spawn_area_is_told_to_give_a_spawn_area():
    assert problems("[[entity]]\ncount = 3\nAgent = {}\n") == [
        "entity[0] spawn_area: a crowd (count > 1) needs a spawn_area ([xmin, ymin, xmax, ymax]) to place its "
        "members in"]


def test_spawn_many_refuses_a_crowd_on_one_point_and_changes_nothing():
    with World() as world:
        world.spawn(Position(1, 1), Agent())
        before, rows = world.state_digest(), world.table.n
        with pytest.raises(ValueError, match=r"^spawn_many: positions=None would put all 4 members on one point "
                                             r"\(2, 3\): give positions, a \(4, 2\) array, one point a member$"):
            world.spawn_many(4, [Position(2, 3), Velocity(), Agent(), Collider()])
        assert world.state_digest() == before and world.table.n == rows
        assert world.spawn_many(1, [Position(2, 3), Agent()]).size == 1  # one member: nothing stacked
        assert world.spawn_many(3, [Position(2, 3), Agent()], positions=np.zeros((3, 2))).size == 3  # as asked


def test_agents_placed_on_one_point_part_in_two_dimensions():
    """Placed on one point anyway (positions given): the physics parts every pair along a
    direction of its own, so the stack spreads as a disc (it spread along x alone before)."""
    with World(seed=1) as world:
        world.add_systems(PhysicsSystem())
        world.spawn_many(1500, [Position(), Velocity(), Agent(), Collider(0.5)], positions=np.full((1500, 2), 5.0))
        world.run(4)
        pos = world.table.live("pos")
        spread = pos.max(axis=0) - pos.min(axis=0)
        assert np.all(np.isfinite(pos)) and spread.min() > 4.0 and spread.max() < 1.3 * spread.min()


RING = """
[map]
bounds = [-10, -10, 10, 10]
[[map.box]]
center = [0, 0]
size = [16, 16]
height = 2.0
[[entity]]
name = "crowd"
count = {count}
spawn_area = [-10, -10, 10, 10]
Velocity = {{}}
Agent = {{}}
Collider = {{ radius = 0.5 }}
"""


def _floor_and_fits(message: str) -> tuple[float, int]:
    found = re.search(r"free floor their spawn_area offers, about ([0-9.e+]+) m² .*: at most (\d+) fit$", message)
    assert found, message
    return float(found.group(1)), int(found.group(2))


def test_a_crowd_packed_round_a_box_is_measured_on_the_floor_the_box_leaves():
    """200 discs of 0.5 m in the 2 m ring round a 16 x 16 m box (144 m² of floor): they need
    173 m² packed as densely as discs can be, so they could never stand apart (the box's
    footprint counted as floor before, and they stayed overlapped by up to 64%)."""
    (got,) = problems(RING.format(count=200))
    assert got.startswith('entity[0] "crowd" count: 200 discs of radius 0.5 m need at least 173.2 m²')
    floor, fits = _floor_and_fits(got)
    assert floor == pytest.approx(144.0, rel=0.02)  # 20 x 20 m less 16 x 16 m, sampled
    assert fits == int(floor * HEXAGONAL_PACKING / (math.pi * 0.25))
    assert parse_text(RING.format(count=150)).entities[0]["count"] == 150  # 150 fit (the ring holds about 144 in rows)


def test_free_floor_leaves_out_pillars_and_tall_boxes_but_keeps_low_steps():
    """Against the areas written out: the spawn_area widened by the radius (12 x 12 m), less
    two pillars (circles of 1.5 m) and a 2 x 3 m crate, all inside it; a 0.3 m step (under
    max_climb) is floor."""
    text = """
        [map]
        bounds = [-50, -50, 50, 50]
        [[map.circle]]
        center = [2, 2]
        radius = 1.5
        height = 3.0
        [[map.circle]]
        center = [7, 7]
        radius = 1.5
        height = 3.0
        [[map.box]]
        center = [7, 2]
        size = [2, 3]
        height = 1.0
        [[map.box]]
        center = [2, 8]
        size = [3, 3]
        height = 0.3
        [[entity]]
        name = "packed"
        count = 400
        spawn_area = [-1, -1, 11, 11]
        Agent = {}
        Collider = { radius = 0.25 }
    """
    area = 12.5**2 - 2 * math.pi * 1.5**2 - 2 * 3
    need = 400 * math.pi * 0.25**2 / HEXAGONAL_PACKING
    count = int(1.2 * area / need * 400)  # 20% more than the floor holds
    (got,) = problems(text.replace("count = 400", f"count = {count}"))
    floor, fits = _floor_and_fits(got)
    assert got.startswith(f'entity[0] "packed" count: {count} discs') and floor == pytest.approx(area, rel=0.01)
    assert fits == int(floor * HEXAGONAL_PACKING / (math.pi * 0.25**2)) < count
    assert parse_text(text.replace("count = 400", f"count = {int(0.95 * fits)}")).entities[0]["count"] > 0


def test_a_crowd_without_colliders_has_no_packing_limit():
    text = RING.format(count=5000).replace("Collider = { radius = 0.5 }", "")
    assert parse_text(text).entities[0]["count"] == 5000
