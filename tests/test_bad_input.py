"""Bad input never crashes. One test per cause, each with its smallest case.

Every input either loads and runs or ends in a ``SceneError`` (a ``ValueError`` on the Python
API) naming the file, entity and field; none reaches a kernel unchecked.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

from ecs_nav import Agent, Collider, PathRequest, Position, SteeringWeights, Velocity, World
from ecs_nav.core.components import Name, NavMap
from ecs_nav.core.limits import COORDINATE_LIMIT, ENTITY_LIMIT, NAV_NODE_LIMIT
from ecs_nav.motion.neighbours import neighbours_within
from ecs_nav.motion.relax import relax_overlaps
from ecs_nav.motion.spatial import build_grid
from ecs_nav.scene.files import SceneError, load_scene, parse_scene, save_scene, scenes_dir

AGENT = "Velocity = {}\nAgent = {}\nCollider = {}\n"


def write(tmp_path, text, name="scene.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def refused(tmp_path, text) -> list[str]:
    """The problems of a scene that must be refused, without the file's name."""
    path = write(tmp_path, text)
    with pytest.raises(SceneError) as info:
        load_scene(path).close()
    return [line.removeprefix(f"{path}: ") for line in info.value.problems]


def runs(tmp_path, text, ticks=5):
    world = load_scene(write(tmp_path, text))
    try:
        world.run(ticks)
        assert np.all(np.isfinite(world.table.live("pos")))
    finally:
        world.close()


# 1. segmentation faults ------------------------------------------------------------------------


def test_a_circle_far_off_the_map_is_refused_before_any_kernel_sees_it(tmp_path):
    got = refused(tmp_path, f"""
        [map]
        bounds = [-50, -50, 50, 50]
        [[map.circle]]
        center = [1e308, -50]
        radius = 1
        height = 2
        [[map.circle]]
        center = [0, 0]
        radius = 1
        height = 2
        [[entity]]
        Position = {{ x = 10, y = 10 }}
        {AGENT}
        SteeringWeights = {{ weights = {{ obstacle_avoidance = 1, wall_avoidance = 1 }} }}
    """)
    assert got == ["map.circle[0].center[0]: must be at most 1e+06 in magnitude, got 1e+308"]


def test_an_entity_at_two_to_the_64_is_refused(tmp_path):
    got = refused(tmp_path, f"[[entity]]\nPosition = {{ x = 0, y = {2**64} }}\n{AGENT}")
    assert got == [f"entity[0] Position.y: must be at most 1e+06 in magnitude, got {2**64}"]


def test_the_spatial_grid_takes_any_finite_points_however_far_apart():
    for far in (1e10, 1e19, 1e300, 1.7e308):
        pos = np.array([[-far, -far], [0.0, 0.0], [0.1, 0.0], [far, far]])
        grid = build_grid(pos, 1.0)
        assert grid.cols * grid.rows <= 64
        offsets, rows = neighbours_within(pos, 0.5)
        assert rows[offsets[1]:offsets[2]].tolist() == [2]
        assert np.all(np.isfinite(relax_overlaps(pos, 0.3)))


# 2. nesting ------------------------------------------------------------------------------------


def test_deeply_nested_toml_is_one_line_not_a_recursion_error(tmp_path):
    got = refused(tmp_path, "a = " + "[" * 500 + "]" * 500 + "\n")
    assert got == ["tables or arrays nested more than 32 levels deep"]
    got = refused(tmp_path, "a = " + "[" * 40 + "]" * 40 + "\n")
    assert got == ["tables or arrays nested more than 32 levels deep"]


# 3. prefabs ------------------------------------------------------------------------------------


def test_prefabs_are_type_checked(tmp_path):
    assert refused(tmp_path, "prefab = [1]\n") == ["prefab: must be a table of named prefabs, got an array"]
    assert refused(tmp_path, "[prefab]\nnpc = 1\n") == ["prefab.npc: must be a table of components, got an integer"]
    got = refused(tmp_path, "[[entity]]\nprefab = [1]\nPosition = {}\n")
    assert got == ["entity[0] prefab: must name a prefab (a string), got an array [1]"]


def test_a_prefabs_problem_is_said_once_for_the_prefab_and_again_only_where_an_entity_sets_it(tmp_path):
    scene = ("[prefab.walker]\nAgent = { max_speed = -1 }\nCollider = { radius = 0.5 }\n"
             '[[entity]]\nname = "a"\nprefab = "walker"\nPosition = {}\n'
             '[[entity]]\nname = "b"\nprefab = "walker"\nPosition = {}\nAgent = { max_speed = -1 }\n'
             '[[entity]]\nname = "c"\nprefab = "walker"\nPosition = {}\nCollider = { radius = -2 }\n')
    got = refused(tmp_path, scene)
    assert len(got) == 3, got
    assert got[0].startswith("prefab.walker Agent.max_speed: ")
    assert got[1].startswith('entity[1] "b" Agent.max_speed: ') and got[1].endswith(got[0].split(": ", 1)[1])
    assert got[2].startswith('entity[2] "c" Collider.radius: ')


def test_a_component_the_entity_writes_itself_is_its_own_problem_too(tmp_path):
    scene = ('[prefab.walker]\nAgnet = { max_speed = 3 }\n'
             '[[entity]]\nname = "a"\nprefab = "walker"\nPosition = {}\nAgnet = { max_speed = 2 }\n'
             '[[entity]]\nname = "b"\nprefab = "walker"\nPosition = {}\n')
    got = refused(tmp_path, scene)
    assert [line.split(": ")[0] for line in got] == ["prefab.walker Agnet", 'entity[0] "a" Agnet'], got


def test_an_entity_after_one_that_failed_keeps_its_own_number(tmp_path):
    got = refused(tmp_path, '[[entity]]\nprefab = "nope"\nPosition = {}\n'
                            '[[entity]]\nname = "b"\nPosition = {}\nCollider = { radius = -1 }\n')
    assert [line.split(": ")[0] for line in got] == ["entity[0] prefab", 'entity[1] "b" Collider.radius'], got


def test_a_field_given_to_a_component_without_fields_says_it_has_none(tmp_path):
    got = refused(tmp_path, "[[entity]]\nPosition = {}\nPlayer = { speed = 3 }\n")
    assert got == ["entity[0] Player.speed: unknown field (Player has no fields)"]


# 4. fields defaulting to None --------------------------------------------------------------------


@pytest.mark.parametrize("component, message", [
    ("SteeringWeights = { target = [1] }", "SteeringWeights.target: expected an array of 2 numbers, got an array [1]"),
    ("SteeringWeights = { target = { a = 1 } }",
     "SteeringWeights.target: expected an array of 2 numbers, got a table {'a': 1}"),
    ("PathRequest = { goal = { a = 1 } }", "PathRequest.goal: expected an array of 2 numbers, got a table {'a': 1}"),
    ("PathRequest = { goal = [1, 1], max_expanded = 1180591620717411303424 }",
     "PathRequest.max_expanded: must be at most 2147483647 in magnitude, got 1180591620717411303424"),
    ("PathRequest = { goal = [1, 1], replan_period = inf }",
     "PathRequest.replan_period: expected an integer, got a number inf"),
    # an item of the wrong type is named, not the whole table or array
    ("SteeringWeights = { weights = { seek = '1' } }",
     "SteeringWeights.weights.seek: expected a number, got a string '1'"),
    ("SteeringWeights = { weights = { seek = [1] } }",
     "SteeringWeights.weights.seek: expected a number, got an array [1]"),
    ("SteeringWeights = { target = [1, 'a'] }", "SteeringWeights.target[1]: expected a number, got a string 'a'"),
])
def test_fields_that_default_to_none_are_still_type_checked(tmp_path, component, message):
    assert refused(tmp_path, f"[[entity]]\nPosition = {{}}\n{component}\n") == [f"entity[0] {message}"]


def test_the_generic_check_follows_the_annotations_of_any_dataclass_field():
    """A field added to a CheckedFields dataclass is checked without listing it anywhere."""
    from dataclasses import dataclass

    from ecs_nav.core.limits import CheckedFields

    @dataclass
    class Order(CheckedFields):
        goals: list[tuple[float, float]] | None = None
        zone: str | None = None
        despawn_on_arrival: bool = False

    assert Order(goals=[[1, 2]]).goals == [(1, 2)]
    for bad, message in ((dict(goals=[[1]]), "Order.goals[0]: expected an array of 2 numbers"),
                         (dict(goals=[1]), "Order.goals[0]: expected an array of 2 numbers, got an integer 1"),
                         (dict(goals=3), "Order.goals: expected"), (dict(zone=3), "Order.zone: expected"),
                         (dict(despawn_on_arrival=1), "Order.despawn_on_arrival: expected")):
        with pytest.raises(ValueError, match=message.replace("[", r"\[")):
            Order(**bad)


# 5. crowd count and bulk spawning ----------------------------------------------------------------


def test_a_crowd_count_is_bounded(tmp_path):
    got = refused(tmp_path, f"[[entity]]\ncount = {2**63}\nspawn_area = [0, 0, 1, 1]\nPosition = {{}}\n")
    assert got == [f"entity[0] count: must be an integer from 1 to {ENTITY_LIMIT}, got {2**63}"]
    got = refused(tmp_path, "[[entity]]\ncount = 150000\nspawn_area = [0, 0, 1, 1]\nPosition = {}\n" * 2)
    assert got == [f"entity: 300000 entities in all (crowds counted member by member): at most {ENTITY_LIMIT}"]


def test_a_hundred_thousand_agents_spawn_in_one_bulk_pass():
    # how long it takes is bench/spawn.py's (bench/RESULTS.md), not a timed unit test
    world = World()
    positions = np.random.default_rng(0).random((100_000, 2)) * 100
    ids = world.spawn_many(100_000, [Position(), Velocity(), Agent(), Collider(), SteeringWeights({"wander": 1})],
                           positions, tags=lambda i: [Name("crowd")])
    assert len(world.table) == 100_000 and ids.size == 100_000
    last = int(ids[-1])
    assert world.get(last, Position).as_array().tolist() == positions[-1].tolist()
    world.despawn(int(ids[0]))  # the moved row's views follow it
    assert world.get(last, Position).as_array().tolist() == positions[-1].tolist()
    world.run(1)
    world.close()


# 6. sizes valid alone, explosive together --------------------------------------------------------


@pytest.mark.parametrize("navmap, message", [
    ("spacing = 0.001", "navmap.spacing: 0.001 over scan_range [40.0, 10.0, 40.0] makes 6.4e+09 node slots"),
    ("spacing = 100\nscan_range = [1, 1, 1]", "navmap.spacing: must be at most the scanned width and depth"),
    ("max_climb = inf", "navmap.max_climb: must be a finite number, got inf"),
])
def test_nav_scan_sizes_are_bounded_before_the_first_tick(tmp_path, navmap, message):
    got = refused(tmp_path, f"[map]\nbounds = [-10, -10, 10, 10]\n[navmap]\n{navmap}\n[[entity]]\nPosition = {{}}\n")
    assert len(got) == 1 and got[0].startswith(message)


def test_huge_bounds_without_a_navmap_are_refused_with_a_hint(tmp_path):
    got = refused(tmp_path, "[map]\nbounds = [-1e6, -1e6, 1e6, 1e6]\n")
    assert len(got) == 1 and got[0].startswith("map.bounds:") and "add a [navmap]" in got[0]
    assert NavMap(scan_range=(1e6, 10, 1e6), spacing=2000).node_slots() <= NAV_NODE_LIMIT


# 7. infinities and 1e308 -----------------------------------------------------------------------


@pytest.mark.parametrize("fields, message", [
    ("Agent = { max_speed = inf }", "Agent.max_speed: must be a finite number, got inf"),
    ("SteeringWeights = { weights = { seek = inf } }",
     "SteeringWeights.weights.seek: must be a finite number, got inf"),
    ("Velocity = { vx = 1e308 }", "Velocity.vx: must be at most 1e+06 in magnitude, got 1e+308"),
    ("Velocity = { vy = 1e4 }", "Velocity.vy: must be at most 1000 in magnitude, got 10000.0"),
])
def test_infinite_and_huge_numbers_are_refused_at_load_not_mid_run(tmp_path, fields, message):
    assert refused(tmp_path, f"[[entity]]\nPosition = {{}}\n{fields}\n") == [f"entity[0] {message}"]


# 8. far-away positions ----------------------------------------------------------------------------


def test_agents_far_apart_without_a_map_run(tmp_path):
    far = COORDINATE_LIMIT
    runs(tmp_path, f"""
        [world]
        systems = ["steering", "physics"]
        [[entity]]
        Position = {{ x = {far}, y = {-far} }}
        {AGENT}SteeringWeights = {{ weights = {{ separation = 1, wander = 1 }} }}
        [[entity]]
        Position = {{ x = {-far}, y = {far} }}
        {AGENT}SteeringWeights = {{ weights = {{ separation = 1, wander = 1 }} }}
    """)


# 9. bare ValueErrors -----------------------------------------------------------------------------


def test_inverted_bounds_negative_seed_and_components_without_position_are_scene_errors(tmp_path):
    assert refused(tmp_path, "[map]\nbounds = [10, 10, -10, -10]\n") == [
        "map.bounds: must be [xmin, ymin, xmax, ymax] with xmin < xmax and ymin < ymax, got [10.0, 10.0, -10.0, -10.0]"]
    assert refused(tmp_path, "[world]\nseed = -1\n") == ["world.seed: must be from 0 to 18446744073709551615, got -1"]
    assert refused(tmp_path, "[[entity]]\nVelocity = {}\n") == [
        "entity[0] Velocity: needs a Position (or a spawn_area): Velocity lives in the agent table, "
        "whose rows are placed entities"]


# 10. huge seeds ----------------------------------------------------------------------------------


def test_the_largest_seed_runs_and_a_larger_one_is_refused(tmp_path):
    wander = f"[[entity]]\nPosition = {{}}\n{AGENT}SteeringWeights = {{ weights = {{ wander = 1 }} }}\n"
    runs(tmp_path, f"[world]\nseed = {2**64 - 1}\n{wander}")
    assert refused(tmp_path, f"[world]\nseed = {2**64}\n{wander}") == [
        f"world.seed: must be from 0 to {2**64 - 1}, got {2**64}"]
    with pytest.raises(ValueError, match="World.seed"):
        World(seed=2**64)


# 12. crowd placement -----------------------------------------------------------------------------


def test_crowd_discs_stay_inside_the_bounds(tmp_path):
    world = load_scene(write(tmp_path, """
        [world]
        systems = []
        [map]
        bounds = [0, 0, 10, 10]
        [[entity]]
        count = 100
        spawn_area = [-5, -5, 15, 15]
        Position = {}
        Collider = { radius = 0.5 }
    """))  # (200 would not fit: 100 m² of floor holds at most 115 discs of 0.5 m)
    pos = world.table.live("pos")
    assert pos.shape == (100, 2) and pos.min() >= 0.5 and pos.max() <= 9.5
    world.close()


def test_a_gap_narrower_than_the_agent_holds_no_crowd(tmp_path):
    """Two walls 0.85 m apart; agents of the default radius (0.5 m: 1 m wide) do not fit."""
    got = refused(tmp_path, """
        [map]
        bounds = [-10, -10, 10, 10]
        [[map.box]]
        center = [-5.425, 0]
        size = [10, 20]
        height = 3
        [[map.box]]
        center = [5.425, 0]
        size = [10, 20]
        height = 3
        [[entity]]
        count = 10
        spawn_area = [-0.425, -10, 0.425, 10]
        Position = {}
        Velocity = {}
        Agent = {}
        Collider = {}
    """)
    assert got == ['entity[0] spawn_area: room for only 0 of 10 agents on free floor in [-0.425, -10, 0.425, 10]']


def test_a_crowd_that_cannot_fit_its_spawn_area_is_refused(tmp_path):
    """The fuzz's worst input: 200,000 discs of 0.4 m in 198 x 198 m cover 2.8 times the floor,
    so they could only start overlapped (and each tick would spend seconds pushing them apart).
    At the densest packing, 2 * sqrt(3) * r^2 of floor per disc: 0.5543 m²; the floor their
    discs can cover is the spawn_area widened by the radius, 198.8 x 198.8 m: 71,305 discs."""
    crowd = """
        [map]
        bounds = [-100, -100, 100, 100]
        [[entity]]
        name = "crowd"
        count = {count}
        spawn_area = [-99, -99, 99, 99]
        Collider = {{ radius = 0.4 }}
    """
    got = refused(tmp_path, crowd.format(count=200000))
    assert got == ['entity[0] "crowd" count: 200000 discs of radius 0.4 m need at least 1.109e+05 m² (packed as '
                   "densely as discs can be), more than the free floor their spawn_area offers, about 3.952e+04 m² "
                   "(the spawn_area widened by the radius, within the map's bounds, less the solids they cannot "
                   "stand on): at most 71305 fit"]
    assert refused(tmp_path, crowd.format(count=71306))[0].endswith("at most 71305 fit")
    assert parse_scene(write(tmp_path, crowd.format(count=71305))).entities[0]["count"] == 71305
    # members without a Collider never touch: no limit from their size
    no_collider = crowd.format(count=200000).replace("Collider = { radius = 0.4 }", "")
    assert parse_scene(write(tmp_path, no_collider)).entities[0]["count"] == 200000


# 13. the Python API --------------------------------------------------------------------------------


def test_setters_and_run_refuse_bad_values_where_they_are_set():
    request = PathRequest(goal=(1, 2))
    with pytest.raises(ValueError, match=r"PathRequest.goal\[0\]: must be a finite number, got nan"):
        request.goal = (math.nan, math.nan)
    assert request.goal == (1.0, 2.0)
    request.goal = (3, 4)
    assert request.goal == (3.0, 4.0)
    with pytest.raises(ValueError, match="Agent.max_speed: must be a finite number, got inf"):
        Agent().max_speed = math.inf
    world = World()
    npc = world.spawn(Position(), Velocity(), Agent())
    with pytest.raises(ValueError, match="Position.x: must be at most 1e\\+06"):
        world.get(npc, Position).x = 1e308
    with pytest.raises(ValueError, match="World.run.ticks: must be >= 0, got -5"):
        world.run(-5)
    with pytest.raises(ValueError, match="World.run.ticks: expected an integer"):
        world.run("5")
    world.close()


# 14. saving --------------------------------------------------------------------------------------


def test_save_writes_valid_toml_for_any_name(tmp_path):
    world = World()
    for name in ("🐍 snake", 'quote " and \\ back', "line\nbreak", "sep\u2028arator", "tab\there"):
        world.spawn(Position(1, 2), Name(name))
    text = save_scene(world, tmp_path / "saved.toml")
    again = load_scene(tmp_path / "saved.toml")
    assert sorted(n.value for _, (n,) in again.query(Name)) == sorted(n.value for _, (n,) in world.query(Name))
    assert "🐍 snake" in text


def test_a_scene_without_a_map_has_no_map_and_a_map_needs_its_bounds(tmp_path):
    world = load_scene(write(tmp_path, "[[entity]]\nPosition = {}\n"))
    assert world.map is None
    world.close()
    assert refused(tmp_path, "[map]\nfloor = 1\n") == [
        "map: bounds = [xmin, ymin, xmax, ymax] is missing (a map of pieces needs its floor's extent; "
        "leave [map] out for none)"]


def test_a_scene_saved_mid_run_keeps_what_the_docs_say_it_keeps(tmp_path):
    """Positions, velocities and every component field round-trip exactly; the scene-file guide lists
    what a scene file does not hold (tick, heading, path progress, RNG and system state)."""
    world = load_scene("chase")
    world.run(45)
    again = load_scene(write(tmp_path, save_scene(world)))
    for entity in world.entities():
        assert again.get(entity, Position) == world.get(entity, Position)
        assert again.get(entity, Velocity) == world.get(entity, Velocity)
        assert again.get(entity, Agent) == world.get(entity, Agent)
    world.close()
    again.close()


# 15. line separators in messages ---------------------------------------------------------------


def test_a_line_separator_in_an_unknown_key_is_escaped(tmp_path):
    got = refused(tmp_path, '[world]\n"a\u2028b\\nc" = 1\n')
    assert len(got) == 1 and got[0].startswith("world.a\\u2028b\\nc: unknown key")
    assert parse_scene  # the same SceneError from validation alone


def test_a_platformer_body_a_sliver_wide_still_takes_a_whole_tile():
    # found by the long fuzz: width 1e-300 rounded to 0 tiles and the level check raised a bare ValueError
    import ecs_nav
    from ecs_nav.scene.files import build_world, scene_from_dict, scene_to_dict

    data = scene_to_dict(ecs_nav.load_scene("platformer"))
    for entry in data["entity"]:
        if entry.get("name") == "bot-left":
            entry["PlatformerBody"]["width"] = 1e-300
    world = build_world(scene_from_dict(data))
    world.run(3)
    assert world.tick == 3


def test_a_jump_that_would_rise_for_ever_is_refused(tmp_path):
    """The long fuzz's hang: gravity -1e-300 tiles/s² and the planner stepped a jump that never
    came down. A jump rises for jump_speed / (-gravity * dt) ticks: at most JUMP_TICK_LIMIT."""
    from ecs_nav.platformer.bots import PlatformerBots
    from ecs_nav.platformer.level import TileLevel
    from ecs_nav.platformer.physics import JUMP_TICK_LIMIT, SERIES

    text = (scenes_dir() / "platformer.toml").read_text()
    body = "PlatformerBody = { width = 0.75, height = 0.75 }"
    assert body in text  # the bots' prefab
    got = refused(tmp_path, text.replace(body, body[:-2] + ", gravity = -1e-300 }"))
    assert len(got) == 3 and all("PlatformerBody.jump_speed: a jump at" in line and "rises for" in line
                                 for line in got), got
    assert got[0].endswith(f"at most {JUMP_TICK_LIMIT} (raise gravity or lower jump_speed)")
    # the same through the Python API, named where it is added
    bots = PlatformerBots(TileLevel(np.zeros((4, 4), np.uint8)), dt=1 / 60)
    with pytest.raises(ValueError, match="PlatformerBots.add constants.jump_speed: a jump at"):
        bots.add(1.0, 1.0, constants=SERIES._replace(gravity=-1e-3))
    assert SERIES.check_jump(1 / 60) is SERIES  # the series' jump: 24 ticks up


# 15. found by a new user's probe ---------------------------------------------------------------------

PROBE_LEVEL = """
[level]
tiles = '''
..........
..........
.@...===..
##########
'''
[[entity]]
name = "player"
Player = {}
PlatformerBody = { spawn = 0 }
[[entity]]
name = "bot"
Bot = {}
"""


def test_a_side_view_bot_with_a_top_down_goal_is_refused_and_on_the_api_fails_its_path(tmp_path):
    from ecs_nav.core.events import PathFailed
    from ecs_nav.platformer.world import Bot, PlatformerBody
    from ecs_nav.scene.files import build_world, scene_from_dict, scene_to_dict

    for key, value in (("zone", "[5, 1, 8, 2]"), ("goals", "[[8, 1], [2, 1]]")):
        got = refused(tmp_path, PROBE_LEVEL + f"PlatformerBody = {{ x = 7.0, y = 1.0 }}\n"
                                              f'PathRequest = {{ {key} = {value}, method = "flow_field" }}\n')
        assert got == [f'entity[1] "bot" PathRequest.{key}: a side-view character\'s PathRequest takes a goal '
                       f"(a point) or a target (an entity); {key} is for top-down agents"], got
    # built through the Python API (no scene check): the request fails as a path, not the tick
    world = build_world(scene_from_dict(scene_to_dict(load_scene(write(tmp_path, PROBE_LEVEL + (
        "PlatformerBody = { x = 7.0, y = 1.0 }\nPathRequest = { goal = [2, 1] }\n"))))))
    bot = world.spawn(PlatformerBody(x=8.0, y=1.0), Bot(), PathRequest(zone=(5, 1, 8, 2), method="flow_field"))
    failed = []
    world.on(PathFailed, failed.append)
    world.run(3)
    assert [(e.entity, e.status) for e in failed] == [(bot, "unreachable")]
    world.close()


def test_a_bots_jump_is_planned_up_to_the_planners_highest_and_a_jump_under_a_tile_is_refused(tmp_path):
    from ecs_nav.platformer.bot import max_jump_height
    from ecs_nav.platformer.physics import CharacterConstants
    from ecs_nav.platformer.planner import MAX_JUMP_HEIGHT
    from ecs_nav.platformer.world import PlatformerBody

    strong = "PlatformerBody = { x = 7.0, y = 1.0, jump_speed = 500, release_speed = 10, gravity = -50 }\n"
    assert max_jump_height(CharacterConstants(-50.0, -56.25, 10.0, 500.0, 10.0), 1 / 60) > MAX_JUMP_HEIGHT
    runs(tmp_path, PROBE_LEVEL + strong + 'PathRequest = { target = "player" }\n', ticks=30)  # planned at 64
    weak = "PlatformerBody = { x = 7.0, y = 1.0, jump_speed = 1, release_speed = 0.5 }\n"
    got = refused(tmp_path, PROBE_LEVEL + weak)
    assert len(got) == 1 and got[0].startswith('entity[1] "bot" PlatformerBody.jump_speed: a full jump of its '
                                               "constants climbs less than one tile"), got
    runs(tmp_path, PROBE_LEVEL + weak.replace("0.5 }", "0.5, max_jump = 1 }"))  # given: it runs
    with pytest.raises(ValueError, match=f"PlatformerBody.max_jump: must be an integer from 1 to {MAX_JUMP_HEIGHT}"):
        PlatformerBody(x=1.0, y=1.0, max_jump=MAX_JUMP_HEIGHT + 1)


def test_a_subnormal_number_is_refused_where_it_enters(tmp_path):
    text = ('[[entity]]\nname = "prey"\nPosition = { x = 1, y = 1 }\nVelocity = {}\nAgent = { max_speed = 1e-310 }\n'
            'SteeringWeights = { weights = { wander = 1.0 } }\n')
    assert refused(tmp_path, text) == ['entity[0] "prey" Agent.max_speed: 1e-310 is subnormal (nonzero and under '
                                       "2.225e-308 in magnitude): too small to compute with"]
    runs(tmp_path, text.replace("1e-310", "1e-300"))
    with pytest.raises(ValueError, match="Collider.radius: 5e-324 is subnormal"):
        Collider(5e-324)
    assert Position(0.0, -0.0).x == 0.0  # (zero is not subnormal)


def test_path_fields_set_after_construction_are_checked_and_reach_the_follower():
    from ecs_nav.systems.path_follow import PathFollowSystem
    from ecs_nav.systems.physics import PhysicsSystem
    from ecs_nav.systems.steering import SteeringSystem

    from ecs_nav.core.components import Path

    world = World()
    world.add_systems(PathFollowSystem(), SteeringSystem(), PhysicsSystem())
    walker = world.spawn(Position(0.0, 0.0), Velocity(), Agent(max_speed=2.0), SteeringWeights({"follow_path": 1.0}),
                         Path(waypoints=[(0.0, 0.0), (10.0, 0.0)]))
    world.run(2)
    path = world.get(walker, Path)
    for name, value, message in (("waypoints", [(1.0, 1.0), (math.nan, 0.0)], "Path.waypoints: must be finite"),
                                 ("radius", math.nan, "Path.radius: must be a finite number"),
                                 ("radius", -1.0, "Path.radius: must be > 0"),
                                 ("mode", "circle", "Path.mode: must be one of once, patrol, loop"),
                                 ("index", 1.5, "Path.index: expected an integer")):
        with pytest.raises(ValueError, match=message):
            setattr(path, name, value)
    path.waypoints = [(0.0, 0.0), (0.0, 10.0)]  # a list of points, as the constructor takes
    assert path.waypoints.shape == (2, 3)
    path.radius = 4.0  # reaches the follower's column (a waypoint counts as reached within it)
    world.run(1)
    assert world.table.path_radius[world.table.row_of(walker)] == 4.0
    assert np.all(np.isfinite(world.table.live("pos")))
    world.close()


def test_a_steering_target_set_after_spawning_is_checked_and_steers():
    from ecs_nav.systems.physics import PhysicsSystem
    from ecs_nav.systems.steering import SteeringSystem

    world = World()
    world.add_systems(SteeringSystem(), PhysicsSystem())
    seeker = world.spawn(Position(0.0, 0.0), Velocity(), Agent(max_speed=2.0),
                         SteeringWeights({"seek": 1.0}, target=(10.0, 0.0)))
    weights = world.get(seeker, SteeringWeights)
    with pytest.raises(ValueError, match=r"SteeringWeights.target\[0\]: must be a finite number, got nan"):
        weights.target = (math.nan, 1e308)
    with pytest.raises(ValueError, match="SteeringWeights.target_entity: must be an entity id >= 0"):
        weights.target_entity = -3
    assert weights.target == (10.0, 0.0)
    weights.target = (0.0, -10.0)  # now it seeks the other way (straight down, never along x)
    world.run(30)
    x, y = world.get(seeker, Position).x, world.get(seeker, Position).y
    assert y < -0.1 and abs(x) < 1e-9, (x, y)
    weights.target_entity = seeker
    assert world.table.target_entity[world.table.row_of(seeker)] == seeker
    weights.target = None  # nothing to seek: it stops pushing
    assert not world.table.has_steer_target[world.table.row_of(seeker)]
    world.close()


def test_a_steering_target_set_while_a_path_is_followed_leaves_the_path_in_charge():
    from ecs_nav.systems.path_follow import PathFollowSystem
    from ecs_nav.systems.physics import PhysicsSystem
    from ecs_nav.systems.steering import SteeringSystem

    from ecs_nav.core.components import Path

    world = World()
    world.add_systems(PathFollowSystem(), SteeringSystem(), PhysicsSystem())
    walker = world.spawn(Position(0.0, 0.0), Velocity(), Agent(max_speed=2.0), SteeringWeights({"follow_path": 1.0}),
                         Path(waypoints=[(0.0, 0.0), (10.0, 0.0), (20.0, 0.0)]))
    world.run(3)
    row = world.table.row_of(walker)
    aim = world.table.steer_target[row].copy()
    weights = world.get(walker, SteeringWeights)
    weights.target = (0.0, -50.0)
    assert weights.target == (0.0, -50.0) and np.array_equal(world.table.steer_target[row], aim)
    weights.target = None
    assert world.table.has_steer_target[row]
    world.run(20)
    assert world.get(walker, Position).x > 0.1 and world.get(walker, Position).y == 0.0  # along the path
    world.close()


def test_a_scene_component_reports_each_field_it_refuses_and_no_line_it_caused(tmp_path):
    got = refused(tmp_path, '[[entity]]\nname = "a"\nPosition = {}\nAgent = { max_speed = -1, mass = 0 }\n'
                            'PathRequest = { zone = [5, 1, 2, 2], method = "flow_field" }\n')
    assert got == ['entity[0] "a" Agent.max_speed: must be > 0, got -1', 'entity[0] "a" Agent.mass: must be > 0, got 0',
                   'entity[0] "a" PathRequest.zone: must be [xmin, ymin, xmax, ymax] with min <= max, got '
                   "[5.0, 1.0, 2.0, 2.0]"], got  # (and not that it then has no goal at all)


def test_spawn_many_and_a_search_refuse_what_they_cannot_mean():
    from ecs_nav import SceneError as exported
    from ecs_nav.nav.graph import check_node
    from ecs_nav.nav.grid import grid_graph
    from ecs_nav.nav.search import astar
    from ecs_nav.scene.schema import SceneError as defined

    assert exported is defined
    with World() as world:
        with pytest.raises(ValueError, match="World.spawn_many.count: must be >= 0, got -1"):
            world.spawn_many(-1, [Position(), Agent()])
        with pytest.raises(ValueError, match="World.spawn_many.tags: expected a function of the index"):
            world.spawn_many(2, [Position(), Agent()], tags=[Name("a"), Name("b")])
        assert world.spawn_many(0, [Position(), Agent()]).size == 0
    graph = grid_graph(np.zeros((3, 3), bool))
    assert check_node(graph, 4, "start") == 4 and check_node(graph, np.int64(4), "start") == 4
    for bad in (1.5, True, "4"):
        with pytest.raises(ValueError, match=r"start must be a node id"):
            check_node(graph, bad, "start")
    with pytest.raises(ValueError, match=r"goal must be a node id \(an integer\), got 1.5"):
        astar(graph, 0, 1.5)
