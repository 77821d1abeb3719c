"""The doorway scene, smaller (60 agents through the one 4 m doorway to the point beside the
pillar, each avoiding with ORCA): every agent stands stopped round the goal with one
``TargetReached``, none further out than a disc packing of the crowd (and the pillar) needs,
``Stuck`` at most once each, the doorway clear once the last one is through, nobody in a wall
or overlapping by more than 2% of two radii; with group arrival alone the crowd reaches further
out; and the run is deterministic."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import tomllib

import ecs_nav
from ecs_nav.core.table import FOLLOW_STOPPED
from ecs_nav.motion.goal_slots import SLOT_GAP
from ecs_nav.motion.neighbours import neighbours_within
from ecs_nav.scene.files import build_world, load_scene, scene_from_dict, scenes_dir
from ecs_nav.testing import assert_deterministic

AGENTS = 60
SECONDS = 90.0
DOORWAY = (-1.5, -2.0, 1.5, 2.0)  # the opening and 1.5 m either side of the wall, m
SPREAD = 1.5  # how far out the farthest agent may stand, in radii of the disc the crowd needs


def small_doorway() -> dict:
    """The doorway scene with AGENTS agents, spawned at its density next to the wall."""
    scene = tomllib.loads((scenes_dir() / "doorway.toml").read_text(encoding="utf-8"))
    crowd = scene["entity"][0]
    x0, y0, x1, y1 = crowd["spawn_area"]
    scale = math.sqrt(AGENTS / crowd["count"])
    crowd["count"] = AGENTS
    crowd["spawn_area"] = [x1 - (x1 - x0) * scale, -(y1 - y0) * scale / 2, x1, (y1 - y0) * scale / 2]
    return scene


def needed_radius(scene: dict, agents: int, radius: float) -> float:
    """m: the radius of a disc round the goal holding ``agents`` discs of ``radius`` packed
    hexagonally ``SLOT_GAP`` apart, and the scene's pillars beside it."""
    spacing = 2 * radius + SLOT_GAP
    area = agents * spacing * spacing * math.sqrt(3) / 2
    area += sum(math.pi * c["radius"] ** 2 for c in scene["map"].get("circle", []))
    return math.sqrt(area / math.pi)


def closest_approach(pos: np.ndarray, radius: np.ndarray) -> float:
    """The smallest centre distance minus the sum of the radii over every pair (inf when no two
    are within reach)."""
    offsets, rows = neighbours_within(pos, 2.0 * float(radius.max()) + 0.5, max_neighbours=1)
    has = np.diff(offsets) > 0
    if not has.any():
        return math.inf
    i = np.flatnonzero(has)
    j = rows[offsets[:-1][has]]
    return float((np.hypot(*(pos[i] - pos[j]).T) - radius[i] - radius[j]).min())


def in_doorway(pos: np.ndarray) -> int:
    x0, y0, x1, y1 = DOORWAY
    return int(np.count_nonzero((pos[:, 0] >= x0) & (pos[:, 0] <= x1) & (pos[:, 1] >= y0) & (pos[:, 1] <= y1)))


def run(spreading: bool) -> dict:
    """The small scene until every agent arrived and all stand still (at most SECONDS)."""
    scene = small_doorway()
    world = build_world(scene_from_dict(scene))
    world.system("PathFollowSystem").goal_spreading = spreading
    t = world.table
    n = t.n
    arrivals: Counter = Counter()
    stuck: Counter = Counter()
    world.on(ecs_nav.TargetReached, lambda e: arrivals.update([e.entity]))
    world.on(ecs_nav.Stuck, lambda e: stuck.update([e.entity]))
    wall_face = 0.25 + float(t.radius[:n].max())  # the wall's half thickness and a body
    closest, deepest, through_tick, stopped_in_doorway = math.inf, 0.0, None, 0
    for _ in range(int(SECONDS / world.dt)):
        world.step()
        pos, radius = t.pos[:n], t.radius[:n]
        closest = min(closest, closest_approach(pos, radius))
        if world.tick % 10 == 0:
            depth = world.map.penetration(pos, radius, t.elevation[:n], t.max_climb[:n])
            deepest = max(deepest, float((depth / radius).max()))
        if through_tick is None and np.all(pos[:, 0] > wall_face):
            through_tick = world.tick
        stopped_in_doorway = max(stopped_in_doorway, in_doorway(pos[t.follow_state[:n] == FOLLOW_STOPPED]))
        if len(arrivals) == n and np.all(np.hypot(*t.vel[:n].T) < 0.05):
            break
    goal = np.array(scene["entity"][0]["PathRequest"]["goal"], float)
    out = {"world": world, "scene": scene, "arrivals": arrivals, "stuck": stuck, "closest": closest,
           "deepest": deepest, "through_tick": through_tick, "stopped_in_doorway": stopped_in_doorway,
           "doorway_at_end": in_doorway(t.pos[:n]),
           "farthest": float(np.hypot(*(t.pos[:n] - goal).T).max()), "stopped": t.follow_state[:n] == FOLLOW_STOPPED,
           "needed": needed_radius(scene, n, float(t.radius[0])), "entities": t.entity[:n].copy()}
    world.close()
    return out


@pytest.fixture(scope="module")
def spread():
    return run(spreading=True)


def test_every_agent_stands_stopped_round_the_goal_with_one_target_reached(spread):
    assert sorted(spread["arrivals"]) == sorted(spread["entities"].tolist())
    assert set(spread["arrivals"].values()) == {1}
    assert spread["stopped"].all()


def test_no_agent_stands_further_out_than_a_packing_of_the_crowd_needs(spread):
    assert spread["farthest"] <= SPREAD * spread["needed"], (spread["farthest"], spread["needed"])


def test_group_arrival_alone_reaches_further_out_than_that():
    # (the bar above is no bar if the crowd stands inside it anyway)
    alone = run(spreading=False)
    assert alone["farthest"] > SPREAD * alone["needed"], (alone["farthest"], alone["needed"])


def test_stuck_fires_at_most_once_per_agent(spread):
    assert max(spread["stuck"].values(), default=0) <= 1


def test_the_doorway_is_clear_once_the_last_agent_is_through(spread):
    # nobody ever stops in the doorway (where a stopped agent plugs it), and once the last agent
    # is through, all have walked on
    assert spread["through_tick"] is not None
    assert spread["stopped_in_doorway"] == 0
    assert spread["doorway_at_end"] == 0


def test_nobody_enters_a_wall_or_overlaps_by_more_than_two_percent_of_two_radii(spread):
    radius = 0.3
    assert spread["deepest"] <= 0.01
    assert spread["closest"] >= -0.02 * 2 * radius


def test_the_doorway_scene_runs_the_same_twice():
    assert_deterministic(lambda: load_scene("doorway"), 240, every=60)
