"""Scene files: every error class with its exact message shape, crowds, round-trip."""

import textwrap

import numpy as np
import pytest

from ecs_nav import Agent, Collider, Path, PathRequest, Position, SteeringWeights, Velocity
from ecs_nav.core.components import Name
from ecs_nav.scene.files import SceneError, load_scene, parse_scene, save_scene

GOOD = """
# a small scene used by the tests
[world]
seed = 5
systems = []

[map]
bounds = [-10, -10, 10, 10]
[[map.box]]
center = [0, 0]
size = [2, 4]
height = 3

[navmap]
spacing = 1.0

[prefab.npc]
Agent = { max_speed = 3.0 }
Collider = { radius = 0.4 }
Velocity = {}
SteeringWeights = { weights = { seek = 1.0, separation = 2.0 }, combiner = "prioritized" }

[[entity]]
name = "player"
Position = { x = -5, y = 0 }
Player = {}

[[entity]]
name = "hunter"
prefab = "npc"
Position = { x = 5, y = 5 }
PathRequest = { target = "player", replan_period = 10 }

[[entity]]
name = "crowd"
prefab = "npc"
count = 20
spawn_area = [-9, -9, -3, -3]
Agent = { max_speed = 2.0 }

[[entity]]
name = "guard"
prefab = "npc"
Position = { x = 0, y = 8 }
Path = { waypoints = [[0, 8], [5, 8], [5, -8]], radius = 1.5, mode = "patrol" }
"""


def write(tmp_path, text, name="scene.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(SceneError) as info:
        parse_scene(path)
    return [line.removeprefix(f"{path}: ") for line in info.value.problems]


def test_good_scene_builds_world_with_crowd_and_references(tmp_path):
    world = load_scene(write(tmp_path, GOOD))
    try:
        assert world.seed == 5
        assert len(world.entities()) == 23
        names = world.resources["scene"].entities
        assert [e.get("name") for e in names] == ["player", "hunter", "crowd", "guard"]
        player = world.entities()[0]
        hunter = world.entities()[1]
        assert world.get(hunter, PathRequest).target == player
        assert world.get(hunter, PathRequest).replan_period == 10
        assert world.get(hunter, Agent).max_speed == 3.0  # from the prefab
        crowd = world.entities()[2:22]
        assert all(world.get(e, Agent).max_speed == 2.0 for e in crowd)  # entity overrides prefab
        xs = [world.get(e, Position).x for e in crowd]
        assert all(-9 <= x <= -3 for x in xs) and len(set(xs)) == 20
        assert world.get(world.entities()[-1], Path).mode == "patrol"
        assert world.get(hunter, SteeringWeights).combiner == "prioritized"
        assert world.map.boxes[0].height == 3
    finally:
        world.close()


def test_crowd_placement_is_seeded(tmp_path):
    path = write(tmp_path, GOOD)
    a, b, c = load_scene(path), load_scene(path), load_scene(path, seed=6)
    try:
        assert a.state_digest() == b.state_digest() != c.state_digest()
    finally:
        for w in (a, b, c):
            w.close()


def test_missing_file_is_one_clear_line(tmp_path):
    with pytest.raises(SceneError) as info:
        parse_scene(tmp_path / "nope.toml")
    assert len(info.value.problems) == 1
    assert "no such scene file or built-in scene" in info.value.problems[0]


def test_syntax_error_names_line_and_column(tmp_path):
    (line,) = problems(tmp_path, "[world]\nseed = = 3\n")
    assert line.startswith("TOML syntax error:")
    assert "line 2" in line and "column" in line


def test_bad_value_names_entity_component_and_field(tmp_path):
    got = problems(tmp_path, GOOD.replace('Position = { x = 5, y = 5 }',
                                          'Position = { x = 5, y = 5 }\nCollider = { radius = -1 }'))
    assert got == ['entity[1] "hunter" Collider.radius: must be > 0, got -1']


def test_unknown_component_key_and_field_with_suggestions(tmp_path):
    got = problems(tmp_path, """
        [world]
        sed = 1
        [[entity]]
        name = "npc"
        Postion = { x = 1, y = 2 }
        Agent = { max_sped = 3 }
        colour = "red"
    """)
    assert got[0] == ('world.sed: unknown key (did you mean "seed"?) '
                      '(allowed: seed, dt, pathfind_period, stuck_ticks, path_budget_per_tick, systems)')
    assert got[1] == 'entity[0] "npc" colour: unknown key'
    assert got[2].startswith('entity[0] "npc" Postion: unknown component (did you mean "Position"?)')
    assert got[3].startswith('entity[0] "npc" Agent.max_sped: unknown field (did you mean "max_speed"?)')


def test_every_problem_reported_at_once(tmp_path):
    got = problems(tmp_path, """
        [world]
        dt = -1
        [map]
        bounds = [0, 0, 1]
        [[map.box]]
        center = [0, 0]
        size = [1, 1]
        height = "tall"
        [[entity]]
        Position = { x = "a", y = 0 }
        SteeringWeights = { weights = { seeek = 1 } }
        PathRequest = { target = "ghost" }
        [[entity]]
        prefab = "missing"
        [[entity]]
        Agent = {}
        count = 0
    """)
    assert got == [
        "world.dt: must be > 0, got -1",
        "map.bounds: expected an array of 4 finite numbers at most 1e+06 in magnitude, got [0, 0, 1]",
        "map.box[0].height: expected a number, got a string 'tall'",
        "entity[1] prefab: unknown prefab 'missing'",
        "entity[0] Position.x: expected a number, got a string 'a'",
        "entity[0] SteeringWeights.weights: unknown behaviour 'seeek' (known: "
        + ", ".join(__import__("ecs_nav.motion.steering", fromlist=["BEHAVIOURS"]).BEHAVIOURS) + ")",
        "entity[0] PathRequest.target: no entity named 'ghost'",
        "entity[2] count: must be an integer from 1 to 200000, got 0",  # (its own number, after entity[1] failed)
    ]


def test_round_trip_is_equivalent(tmp_path):
    original = load_scene(write(tmp_path, GOOD))
    text = save_scene(original)
    again = load_scene(write(tmp_path, text, "saved.toml"))
    try:
        assert again.state_digest() == original.state_digest()
        assert save_scene(again) == text
        for e1, e2 in zip(original.entities(), again.entities()):
            for cls in (Position, Velocity, Agent, Collider, SteeringWeights, PathRequest, Path):
                assert original.try_get(e1, cls) == again.try_get(e2, cls)
    finally:
        original.close()
        again.close()


@pytest.mark.parametrize("name", ["chase", "steering", "patrol"])
def test_builtin_scenes_validate(name):
    scene = parse_scene(name)
    assert scene.entities


CROWD_BY_A_WALL = """
[world]
systems = []
[map]
bounds = [-10, -10, 10, 10]
[[map.box]]
center = [0, 0]
size = [2, 4]
height = 3
[[entity]]
name = "crowd"
count = 40
spawn_area = {area}
Agent = {{}}
Collider = {{ radius = 0.4 }}
"""


def test_crowd_is_placed_on_free_floor_not_in_or_on_walls(tmp_path):
    world = load_scene(write(tmp_path, CROWD_BY_A_WALL.format(area="[-2, -3, 2, 3]")))
    try:
        t = world.table
        assert t.n == 40
        pos, radius = t.pos[:40], t.radius[:40]
        assert world.map.penetration(pos, radius, 0.0, 0.5).max() == 0.0
        assert np.all(t.elevation[:40] == 0.0)
        assert np.all((pos >= [-2, -3]) & (pos <= [2, 3]))
    finally:
        world.close()


def test_crowd_without_room_names_the_entity(tmp_path):
    # four discs fit the area's 11.25 m², but it is the wall plus a 0.25 m rim: no free floor
    few = CROWD_BY_A_WALL.replace("count = 40", "count = 4")
    with pytest.raises(SceneError) as info:
        load_scene(write(tmp_path, few.format(area="[-1.25, -2.25, 1.25, 2.25]")))
    assert info.value.problems[0].endswith(
        'entity[0] "crowd" spawn_area: room for only 0 of 4 agents on free floor in [-1.25, -2.25, 1.25, 2.25]')


def test_bad_grid_is_reported_by_validation_with_its_line_and_column(tmp_path):
    got = problems(tmp_path, """
        [world]
        systems = []
        [map]
        grid = '''
        ....
        ..x.
        '''
    """)
    assert got == ["map.grid: line 2, column 3: unknown terrain character 'x' (passable: '.GS', blocked: '@OTW#')"]
    (ragged,) = problems(tmp_path, "[map]\ngrid = '''\n....\n...\n'''\n")
    assert ragged.startswith("map.grid: line 2: 3 characters, expected 4")


def test_bad_movingai_file_is_reported_by_validation_with_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.map"
    bad.write_text("type octile\nheight -3\nwidth 4\nmap\n....\n")
    (line,) = problems(tmp_path, '[world]\nsystems = []\n[map]\nmovingai = "bad.map"\n')
    assert line == f"map.movingai: {bad.resolve()}: line 2: height must be a positive integer, got '-3'"
    short = tmp_path / "short.map"
    short.write_text("type octile\nheight 3\nwidth 4\nmap\n....\n")
    (line,) = problems(tmp_path, '[map]\nmovingai = "short.map"\n')
    assert line.startswith(f"map.movingai: {short.resolve()}: line ") and "expected 3 map lines" in line


def test_non_string_names_and_references_to_a_shared_name_are_reported(tmp_path):
    got = problems(tmp_path, """
        [world]
        systems = []
        [[entity]]
        name = "npc"
        Position = { x = 0, y = 0 }
        [[entity]]
        name = 7
        Position = { x = 1, y = 0 }
        [[entity]]
        name = "npc"
        Position = { x = 2, y = 0 }
        [[entity]]
        Position = { x = 3, y = 0 }
        PathRequest = { target = "npc" }
    """)
    assert got == [
        "entity[1] name: must be a string, got an integer 7",
        "entity[3] PathRequest.target: 'npc' names several entities (entity[0], entity[2]): "
        "a reference must name one",
    ]


def test_a_named_crowd_keeps_every_members_name_through_save_and_load(tmp_path):
    world = load_scene(write(tmp_path, CROWD_BY_A_WALL.format(area="[-9, -9, -3, -3]")))
    try:
        text = save_scene(world)
        assert text.count('name = "crowd"') == 40
        again = load_scene(write(tmp_path, text, "saved.toml"))
        assert again.state_digest() == world.state_digest()
        assert len(again.find(Name)) == 40
        again.close()
    finally:
        world.close()


def test_non_utf8_scene_file_names_the_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('# caf\xe9\n[world]\nseed = 1\n'.encode("latin-1"))
    with pytest.raises(SceneError) as info:
        parse_scene(path)
    assert info.value.problems == [
        f"{path}: not UTF-8 text: byte 0xe9 at offset 5 (scene files are TOML, which is UTF-8)"]


def test_render_is_not_a_scene_system(tmp_path):
    (line,) = problems(tmp_path, '[world]\nsystems = ["physics", "render"]\n')
    assert line.startswith("world.systems: unknown system 'render'")


def test_a_system_listed_twice_is_a_scene_error_naming_the_key(tmp_path):
    (line,) = problems(tmp_path, '[world]\nsystems = ["physics", "steering", "physics"]\n')
    assert line == "world.systems: 'physics' is listed twice: each system runs once a tick"


def test_a_byte_order_mark_is_read_past_and_a_folder_is_named_as_one(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'[world]\nseed = 5\n[[entity]]\nname = "a"\nPosition = {}\n')
    assert parse_scene(path).seed == 5
    with pytest.raises(SceneError) as info:
        parse_scene(tmp_path)
    assert info.value.problems == [f"{tmp_path}: a folder, not a scene file"]


@pytest.mark.parametrize("component", ['PathRequest = { target = "a" }', 'SteeringWeights = { target_entity = "a" }'])
def test_an_entity_that_targets_itself_is_a_scene_error(tmp_path, component):
    (line,) = problems(tmp_path, f'[[entity]]\nname = "a"\nPosition = {{}}\nAgent = {{}}\n{component}\n')
    key = component.split(" = ")[0] + "." + component.split("{ ")[1].split(" =")[0]
    assert line == f"entity[0] \"a\" {key}: 'a' is this entity itself: name another one"


def test_a_crowd_may_follow_its_own_first_member(tmp_path):
    scene = ('[[entity]]\nname = "flock"\ncount = 5\nspawn_area = [0, 0, 10, 10]\nAgent = {}\nVelocity = {}\n'
             'SteeringWeights = { weights = { seek = 1.0 }, target_entity = "flock" }\n')
    world = load_scene(write(tmp_path, scene))
    assert len(world.table.live("entity")) == 5
