"""ecs_nav.testing: worlds with exactly the systems asked for, ASCII maps, and assertions whose
failure messages say what happened; the pytest plugin's fixtures, without a display."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from readme_blocks import passed_count, run_pytest

from ecs_nav import Agent, Collider, PathChanged, PathFailed, PathRequest, Position, SteeringWeights, Stuck, Velocity
from ecs_nav.core.system import System
from ecs_nav.testing import (
    DEFAULT_SYSTEMS,
    DriveTo,
    Integrate,
    ascii_world,
    assert_arrives,
    assert_deterministic,
    assert_emitted,
    assert_no_agent_in_walls,
    assert_no_nan,
    assert_not_emitted,
    assert_same_digest,
    entity_named,
    record_events,
    spot,
    spots,
    world_with_systems,
)

CORRIDOR = """
    #########
    #A.....B#
    #########
"""


def walker(world, at, goal=None, **agent):
    components = [Position(*at), Velocity(), Agent(**agent), Collider(radius=0.4),
                  SteeringWeights({"follow_path": 1.0})]
    return world.spawn(*components, *([PathRequest(goal=goal)] if goal is not None else []))


# --- worlds -------------------------------------------------------------------------------------


def test_world_with_systems_runs_exactly_the_named_ones_in_tick_order():
    with world_with_systems("physics", "pathfind", pathfind_period=7) as world:
        assert [s.name for s in world.systems] == ["PathfindSystem", "PhysicsSystem"]
        assert world.system("PathfindSystem").period == 7
    with world_with_systems() as world:
        assert len(world.systems) == len(DEFAULT_SYSTEMS) == 5
    with world_with_systems("steering", Integrate()) as world:
        assert isinstance(world.system("PhysicsSystem"), Integrate)
    with pytest.raises(ValueError, match="unknown system 'render'"):
        world_with_systems("render")
    with pytest.raises(ValueError, match="already registered"):
        world_with_systems("physics", Integrate())


def test_ascii_world_puts_cells_walls_and_spots_where_the_picture_does():
    world = ascii_world("""
        ######
        #A.#B#
        #..#.#
        #A...#
        ######
    """, "pathfind", cell_size=2.0, origin=(10.0, -4.0))
    assert spot(world, "B") == (10.0 + 4.5 * 2, -4.0 + 3.5 * 2)
    np.testing.assert_array_equal(spots(world, "A"), [[13.0, 3.0], [13.0, -1.0]])  # reading order
    graph = world.nav_graph
    assert graph is not None and graph.node_at_cell(3, 1) is None and graph.node_at_cell(4, 1) is not None
    assert world.map.surface_height(np.array([[17.0, 3.0]]))[0] == 3.0  # the wall between A and B
    with pytest.raises(ValueError, match="2 cells are marked 'A'"):
        spot(world, "A")
    with pytest.raises(KeyError, match="marks in the picture: 'A', 'B'"):
        spot(world, "C")
    world.close()
    with ascii_world(CORRIDOR, "graph_build", build_graph=False) as world:
        assert world.nav_graph is None
        world.step()
        assert world.nav_graph.node_count == 27
    with pytest.raises(ValueError, match="line 2, column 3"):
        ascii_world("####\n#. #\n####")


def test_entity_named_finds_a_scene_entity_or_lists_the_names():
    from ecs_nav import load_scene

    world = load_scene("chase")
    assert world.get(entity_named(world, "npc"), PathRequest).target == entity_named(world, "player")
    with pytest.raises(KeyError, match="no entity is named 'NPC' \\(names: 'npc', 'player'\\)"):
        entity_named(world, "NPC")
    world.close()


# --- assertions ---------------------------------------------------------------------------------


def test_assert_arrives_returns_the_ticks_taken():
    with ascii_world(CORRIDOR) as world:
        e = walker(world, spot(world, "A"), spot(world, "B"), max_speed=4.0)
        ticks = assert_arrives(world, e, within=600)
        assert world.tick == ticks and 6 / 4.0 * 60 < ticks < 600


def test_assert_arrives_says_where_an_agent_that_did_not_arrive_is():
    with ascii_world(CORRIDOR) as world:
        e = walker(world, spot(world, "A"), goal=(40.0, 1.5))  # beyond the map
        with pytest.raises(AssertionError) as failure:
            assert_arrives(world, e, within=30)
    message = str(failure.value)
    assert message.startswith(f"entity {e} did not arrive within 30 ticks (0.5 s, ticks 0..29): it is at (")
    assert "m from its goal (40.00, 1.50)" in message and "closest" in message
    assert "Path status 'unreachable'" in message and "PathFailed x" in message


def test_assert_arrives_says_that_an_agent_steering_to_a_target_never_sends_target_reached():
    from ecs_nav.systems.physics import PhysicsSystem
    from ecs_nav.systems.steering import SteeringSystem

    from ecs_nav import Agent, Position, SteeringWeights, Velocity, World

    world = World(seed=7)
    world.add_systems(SteeringSystem(), PhysicsSystem())
    e = world.spawn(Position(0, 0), Velocity(), Agent(max_speed=4), SteeringWeights({"arrive": 1.0}, target=(10, 0)))
    with pytest.raises(AssertionError) as failure:
        assert_arrives(world, e, within=60)
    message = str(failure.value)
    assert "no Path or PathRequest: TargetReached comes from following one" in message
    assert "no PathFollowSystem in this World" in message


def test_assert_no_agent_in_walls_names_the_agent_the_depth_and_the_tick():
    targets = {}
    with ascii_world(CORRIDOR, DriveTo(targets), Integrate()) as world:  # no physics: nothing stops it
        e = walker(world, spot(world, "B"), max_speed=6.0)
        targets[e] = (20.0, 1.5)
        with pytest.raises(AssertionError) as failure:
            assert_no_agent_in_walls(world, ticks=60)
    message = str(failure.value)
    # B (x = 7.5) is 0.5 m from the east wall: a 0.4 m disc at 0.1 m per tick is 0.1 m in after ticks 0 and 1
    assert message.startswith(f"1 agent(s) inside a wall after tick 1: entity {e} at (7.700, 1.500), radius 0.4 m")
    assert "0.100 m into a wall" in message


def test_physics_keeps_the_same_agent_out_of_the_wall():
    targets = {}
    with ascii_world(CORRIDOR, "physics", DriveTo(targets)) as world:
        e = walker(world, spot(world, "B"), max_speed=6.0)
        targets[e] = (20.0, 1.5)
        assert_no_agent_in_walls(world, ticks=60)


def test_assert_no_nan_names_the_column_and_the_entities():
    with world_with_systems("steering") as world:
        world.spawn(Position(0, 0), Velocity(), Agent())
        b = world.spawn(Position(1, 0), Velocity(), Agent())
        assert_no_nan(world)  # inf is allowed: panic_distance defaults to it
        world.table.vel[world.table.row_of(b), 1] = np.nan
        with pytest.raises(AssertionError, match=rf"tick 0: column 'vel' of entity {b} \(entity {b}: \[ 0\. nan\]\)"):
            assert_no_nan(world)


def test_event_assertions_say_what_was_recorded_instead():
    with ascii_world(CORRIDOR) as world:
        e = walker(world, spot(world, "A"), spot(world, "B"))
        log = record_events(world, PathChanged, Stuck)
        world.run(3)
        assert [ev.entity for ev in assert_emitted(log, PathChanged, entity=e)] == [e]
        assert_not_emitted(log, Stuck)
        with pytest.raises(AssertionError, match=rf"^no Stuck for entity {e} \(expected at least 1\); recorded: "
                                                 r"PathChanged x1 over ticks 0\.\.2$"):
            assert_emitted(log, Stuck, entity=e)
        with pytest.raises(AssertionError, match=rf"^1 PathChanged emitted, expected none: PathChanged\(entity={e}, "):
            assert_not_emitted(log, PathChanged)
        with pytest.raises(ValueError, match="does not record PathFailed"):
            assert_not_emitted(log, PathFailed)  # would pass whatever happened


class NudgeOnce(System):
    """Integrate, plus a push of 1 mm at tick 10: a run that parts from its twin."""

    name = "PhysicsSystem"

    def update(self, world):
        Integrate().update(world)
        if world.tick == 10:
            world.table.pos[0, 0] += 1e-3


def test_assert_deterministic_names_the_tick_where_two_runs_part():
    def chase():
        world = ascii_world(CORRIDOR)
        walker(world, spot(world, "A"), spot(world, "B"))
        return world

    assert len(assert_deterministic(chase, ticks=30)) == 32
    made = []

    def one_nudged():
        world = ascii_world(CORRIDOR, "steering", *([NudgeOnce()] if made else [Integrate()]))
        made.append(world)
        world.spawn(Position(*spot(world, "A")), Velocity(1, 0), Agent())
        return world

    with pytest.raises(AssertionError, match=r"two runs of one World part after tick 10: state digests differ .*"
                                             r"column 'pos': entity 1 has \[1\.683\d*, 1\.5\] vs \[1\.68\d*, 1\.5\]"):
        assert_deterministic(one_nudged, ticks=30)
    with ascii_world(CORRIDOR) as a, ascii_world(CORRIDOR, seed=1) as b:
        with pytest.raises(AssertionError, match="the RNG state differs"):
            assert_same_digest(a, b)


# --- the plugin ---------------------------------------------------------------------------------

PLUGIN_USER = '''
import sys

from ecs_nav import Agent, Position, SteeringWeights, Velocity

made = []


def test_nav_world_runs_the_five_stages(nav_world):
    assert [s.name for s in nav_world.systems] == ["GraphBuildSystem", "PathfindSystem", "PathFollowSystem",
                                                   "SteeringSystem", "PhysicsSystem"]
    nav_world.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"wander": 1.0}))
    nav_world.run(5)
    made.append(nav_world)


def test_make_nav_world_and_ascii_map(make_nav_world, ascii_map):
    made.append(make_nav_world("steering", seed=4))
    made.append(ascii_map("###\\n#A#\\n###", "pathfind"))
    assert made[-1].nav_graph.node_count == 9 and made[-2].seed == 4


def test_the_fixtures_closed_their_worlds_and_pyglet_was_never_imported():
    assert len(made) == 3
    for world in made:
        try:
            world.step()
        except RuntimeError as closed:
            assert "closed" in str(closed)
        else:
            raise AssertionError("a fixture's World is still open after its test")
    assert not [m for m in sys.modules if m == "pyglet" or m.startswith("pyglet.")]
'''


def test_the_plugin_fixtures_close_their_worlds_need_no_display_and_never_import_pyglet(tmp_path):
    (tmp_path / "test_user.py").write_text(PLUGIN_USER)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    proc = run_pytest(tmp_path, python=sys.executable, cwd=tmp_path, env=env)
    assert proc.returncode == 0 and passed_count(proc.stdout) == 3, proc.stdout[-3000:] + proc.stderr[-2000:]
