"""World operations check before they change anything; the tick's semantics when a system or a
callback raises, or calls step() inside a tick."""

from __future__ import annotations

import numpy as np
import pytest

import ecs_nav
from ecs_nav import Agent, Collider, Name, Path, PathRequest, Position, TargetReached, Velocity, World
from ecs_nav.core.system import FunctionSystem, System
from ecs_nav.core.world_checks import NoSuchEntity
from ecs_nav.scene.files import save_scene


def contents(world: World) -> tuple:
    """What a World holds, as a refused operation must leave it: the digest, every entity with
    the names of its component types, the systems, the table's rows, the tick."""
    held = {e: sorted(type(c).__name__ for c in _components(world, e)) for e in world.entities()}
    return (world.state_digest(), held, [s.name for s in world.systems], world.table.n, world.tick,
            len(world.find(PathRequest)), len(world.query(Path)))


def _components(world, entity):
    import esper

    world._enter()  # (the test reads esper directly: this World's context)
    return esper.components_for_entity(entity)


@pytest.fixture
def world():
    w = World(seed=3)
    w.add_systems(*ecs_nav.systems.make_systems(["physics"], {}))
    w.spawn(Position(0, 0), Velocity(1, 0), Agent(), Collider(radius=0.5), Name("a"))
    w.spawn(Position(3, 0), Velocity(0, 1), Agent(), Path(waypoints=[(5, 5)]), PathRequest(goal=(4, 4)))
    w.spawn(Name("tag only"))
    yield w
    w.close()


def refusals(world: World):
    """(what, call, exception type) for operations a World must refuse without a change."""
    path_of_2 = world.get(2, Path)
    bound = world.get(1, Position)
    shared = PathRequest(goal=(1, 1))
    return [
        ("add_component to a missing entity", lambda: world.add_component(999999, PathRequest(goal=(1, 1))),
         NoSuchEntity),
        ("add_component of a Name to a missing entity", lambda: world.add_component(999999, Name("x")), NoSuchEntity),
        ("add_component to a despawned entity", lambda: world.add_component(3, Name("y")), NoSuchEntity),
        ("add_component of a class", lambda: world.add_component(1, PathRequest), ValueError),
        ("add_component of None", lambda: world.add_component(1, None), ValueError),
        ("add_component of a view", lambda: world.add_component(3, Velocity()), ValueError),
        ("add_component of another entity's Path", lambda: world.add_component(1, path_of_2), ValueError),
        ("add_component to a bool id", lambda: world.add_component(True, Name("z")), ValueError),
        ("remove_component of a missing entity", lambda: world.remove_component(999999, Path), NoSuchEntity),
        ("remove_component of an instance", lambda: world.remove_component(2, path_of_2), ValueError),
        ("remove_component of a view", lambda: world.remove_component(1, Velocity), ValueError),
        ("spawn of two Positions", lambda: world.spawn(Position(), Position()), ValueError),
        ("spawn of a class", lambda: world.spawn(Position(), Agent), ValueError),
        ("spawn of a list", lambda: world.spawn([Position(), Agent()]), ValueError),
        ("spawn of a bound view", lambda: world.spawn(bound), ValueError),
        ("spawn of a view without Position", lambda: world.spawn(Velocity()), ValueError),
        ("spawn of another entity's Path", lambda: world.spawn(Position(), path_of_2), ValueError),
        ("spawn_many whose tags fail at the fourth member",
         lambda: world.spawn_many(6, [Position(), Agent()], tags=lambda i: [Name("n")] if i < 3 else 1 / 0),
         ZeroDivisionError),
        ("spawn_many whose tags give a view", lambda: world.spawn_many(3, [Position()], tags=lambda i: [Velocity()]),
         ValueError),
        ("spawn_many whose tags repeat a shared component",
         lambda: world.spawn_many(3, [Position(), Name("a")], tags=lambda i: [Name("b")]), ValueError),
        ("spawn_many whose tags share one PathRequest",
         lambda: world.spawn_many(3, [Position()], tags=lambda i: [shared]), ValueError),
        ("spawn_many with positions of the wrong shape",
         lambda: world.spawn_many(3, [Position()], positions=np.zeros((2, 2))), ValueError),
        ("spawn_many with a NaN position",
         lambda: world.spawn_many(2, [Position()], positions=[[0, 0], [np.nan, 1]]), ValueError),
        ("spawn_many with text positions", lambda: world.spawn_many(2, [Position()], positions=[["a", "b"]] * 2),
         ValueError),
        ("spawn_many of one component, not a list", lambda: world.spawn_many(2, Position()), ValueError),
        ("despawn of a text id", lambda: world.despawn("1"), ValueError),
        ("despawn of a float id", lambda: world.despawn(1.0), ValueError),
        ("despawn_many with a float id", lambda: world.despawn_many([2, 1.5]), ValueError),
        ("despawn_many of bools", lambda: world.despawn_many(np.array([True, False])), ValueError),
        ("add_systems whose second is a duplicate",
         lambda: world.add_systems(FunctionSystem(lambda w: None, name="mine"),
                                   FunctionSystem(lambda w: None, name="mine"), after="PhysicsSystem"),
         ValueError),
        ("add_systems whose second is a built-in given a place",
         lambda: world.add_systems(FunctionSystem(lambda w: None, name="first"),
                                   FunctionSystem(lambda w: None, name="PathfindSystem"), after="PhysicsSystem"),
         ValueError),
        ("on with a function that is not one", lambda: world.on(TargetReached, "print"), ValueError),
        ("off of a function never subscribed", lambda: world.off(TargetReached, print), ValueError),
    ]


@pytest.mark.parametrize("index", range(33))
def test_a_refused_operation_changes_nothing(world, index):
    cases = refusals(world)
    assert len(cases) == 33
    what, call, error = cases[index]
    if what == "add_component to a despawned entity":
        world.despawn(3)
    before = contents(world)
    with pytest.raises(error):
        call()
    assert contents(world) == before, what


def test_adding_to_an_entity_that_is_not_there_names_it_and_the_world_runs_as_a_clean_one():
    """The case of a run that caught the error: the next step, find, query and save_scene work
    and the run matches one that was never asked."""
    damaged, clean = ecs_nav.load_scene("chase"), ecs_nav.load_scene("chase")
    try:
        digest = damaged.state_digest()
        with pytest.raises(KeyError) as caught:
            damaged.add_component(999999, PathRequest(goal=(1, 1)))
        assert str(caught.value) == "add_component: no entity 999999 in this World (its PathRequest was not added)"
        with pytest.raises(KeyError, match="entity 999999.*Name"):
            damaged.add_component(999999, Name("ghost"))
        assert damaged.state_digest() == digest
        assert 999999 not in damaged.find(PathRequest) and 999999 not in {e for e, _ in damaged.query(Name)}
        damaged.run(40)
        clean.run(40)
        assert damaged.tick == 40 and damaged.state_digest() == clean.state_digest()
        assert save_scene(damaged) == save_scene(clean)
    finally:
        damaged.close()
        clean.close()


def test_a_sparse_component_removed_from_its_entity_can_go_to_another(world):
    path = world.remove_component(2, Path)
    assert path is not None and world.remove_component(2, Path) is None
    world.add_component(1, path)
    assert world.get(1, Path) is path


class Boom(System):
    name = "Boom"

    def __init__(self, at_tick: int):
        self.at_tick = at_tick

    def update(self, world):
        if world.tick == self.at_tick:
            world.despawn(1)
            world.emit(TargetReached(2, world.tick))
            raise ArithmeticError("boom")


def test_a_system_that_raises_stops_its_tick_and_the_next_step_runs_a_whole_one(world):
    after = []
    world.add_system(Boom(at_tick=2), after="SteeringSystem")
    world.add_system(lambda w: after.append(w.tick), after="PhysicsSystem")
    heard = []
    world.on(TargetReached, heard.append)
    world.run(2)
    y_before = world.get(2, Position).y
    with pytest.raises(ArithmeticError, match="boom") as caught:
        world.step()
    note = " ".join(caught.value.__notes__)
    assert "tick 2 stopped in Boom" in note and "did not count" in note
    assert world.tick == 2 and world.time == 2 * world.dt and world.stopped_at == (2, "Boom")
    assert after == [0, 1]  # the system after Boom did not run
    assert world.get(2, Position).y == y_before  # nor did the physics, which comes after it
    assert not world.exists(1) and 1 not in world.entities()  # the half tick's despawn is done
    assert [type(e) for e in world.events] == [TargetReached] and heard == []  # kept, not delivered
    world.systems[[s.name for s in world.systems].index("Boom")].at_tick = -1
    world.step()
    assert world.tick == 3 and world.stopped_at is None and after == [0, 1, 2]
    assert world.get(2, Position).y > y_before


def test_step_inside_a_tick_is_refused_from_a_system_and_from_a_callback(world):
    refused = []

    def nested(w):
        if refused:
            return
        with pytest.raises(RuntimeError, match="inside tick 0") as caught:
            w.step()
        refused.append(str(caught.value))

    world.add_system(nested, after="PhysicsSystem")
    world.step()
    assert world.tick == 1 and len(refused) == 1
    # from a callback: the tick has counted, the error propagates with a note
    world.on(TargetReached, lambda e: world.run(3))
    world.add_system(FunctionSystem(lambda w: w.emit(TargetReached(2, w.tick)), name="emitter"), after="PhysicsSystem")
    with pytest.raises(RuntimeError, match="inside tick") as caught:
        world.step()
    assert "TargetReached callback" in " ".join(caught.value.__notes__)
    assert world.tick == 2
    with pytest.raises(RuntimeError, match="inside tick"):
        world.step()  # the callback is still subscribed: every tick refuses its nested run
    assert world.tick == 3


def test_close_inside_a_tick_is_refused(world):
    world.add_system(lambda w: w.close(), after="PhysicsSystem")
    with pytest.raises(RuntimeError, match="close the World after step"):
        world.step()
    assert world.entities()  # still open


def test_a_system_added_by_a_system_runs_from_the_next_tick(world):
    ran = []

    def adder(w):
        if w.tick == 0:
            w.add_system(FunctionSystem(lambda w2: ran.append(w2.tick), name="late"), before="GraphBuildSystem")

    world.add_system(adder, after="PhysicsSystem")
    world.run(3)
    assert ran == [1, 2]


# --- found by the World's stateful fuzz (tests/test_world_fuzz.py) ------------------------------


def grid_world():
    from ecs_nav.scene.files import build_world
    from ecs_nav.scene.schema import scene_from_dict

    return build_world(scene_from_dict({"map": {"grid": "....\n.#..\n....", "cell_size": 1.0}}, source="<grid>"))


def test_a_world_on_a_tile_map_saves_to_a_scene_that_loads_equal(tmp_path):
    world = grid_world()
    try:
        world.spawn(Position(0.5, 0.5), Velocity(1, 0), Agent(), Name("a"))
        text = save_scene(world, tmp_path / "grid.toml")
        assert "box" not in text and "grid" in text  # (no empty piece lists beside the grid)
        again = ecs_nav.load_scene(tmp_path / "grid.toml")
        assert again.state_digest() == world.state_digest()
        again.close()
    finally:
        world.close()


@pytest.mark.parametrize("case, words", [
    ("itself", 'entity 1 SteeringWeights.target_entity: a reference to the entity itself'),
    ("unnamed", 'entity 1 SteeringWeights.target_entity: a reference to entity 2, which has no Name (give it one)'),
    ("gone", 'entity 1 SteeringWeights.target_entity: a reference to entity 2, which is gone'),
    ("shared", "entity 1 PathRequest.target: a reference to entity 2 by its name 'twin', which 2 entities share"),
])
def test_a_reference_a_scene_file_cannot_hold_is_refused_naming_it_and_nothing_is_written(tmp_path, case, words):
    with World() as world:
        chaser = world.spawn(Position(0, 0), Velocity(), Agent(), ecs_nav.SteeringWeights())
        other = world.spawn(Position(5, 5), *([Name("twin")] if case == "shared" else []))
        if case == "shared":
            world.spawn(Position(6, 6), Name("twin"))
            world.add_component(chaser, PathRequest(target=other))
        else:
            world.get(chaser, ecs_nav.SteeringWeights).target_entity = chaser if case == "itself" else other
        if case == "gone":
            world.despawn(other)
        digest = world.state_digest()
        with pytest.raises(ValueError) as caught:
            save_scene(world, tmp_path / "refused.toml")
        assert str(caught.value) == ("save_scene: a scene file names the entities it refers to, and cannot hold "
                                     + words)
        assert not (tmp_path / "refused.toml").exists() and world.state_digest() == digest


def test_a_name_is_a_string_when_made_and_when_assigned():
    with pytest.raises(ValueError, match="Name.value: expected a string, got float nan"):
        Name(float("nan"))
    tag = Name("a")
    with pytest.raises(ValueError, match="Name.value: expected a string, got int 5"):
        tag.value = 5
    assert tag.value == "a"


@pytest.mark.parametrize("field, value", [
    ("waypoints", [[True, 0.0]]), ("waypoints", [["1", 0.0]]), ("waypoints", np.array([[True, False]])),
    ("nodes", [1.5]), ("nodes", [True]), ("nodes", np.array([[0.0, 5.0]])),
])
def test_a_path_takes_numbers_not_booleans_or_text_nor_fractional_node_ids(field, value):
    """numpy alone would read True as 1, "1" as 1.0 and truncate the node id 1.5 to 1."""
    with pytest.raises(ValueError, match=f"Path.{field}: expected an array of"):
        Path(**{field: value})
    path = Path(waypoints=[(1, 2)], nodes=[4])
    with pytest.raises(ValueError, match=f"Path.{field}"):
        setattr(path, field, value)
    assert path.waypoints.tolist() == [[1.0, 2.0, 0.0]] and path.nodes.tolist() == [4]


def test_a_path_replaced_or_removed_no_longer_reports_its_edits(world):
    old = world.get(2, Path)
    world.add_component(2, Path(waypoints=[(1, 1)]))
    world.take_rewritten_paths()
    old.waypoints = [(9, 9)]
    removed = world.remove_component(2, Path)
    removed.radius = 2.0
    assert world.take_rewritten_paths().tolist() == []
    world.add_component(1, removed)  # (free to go to another entity, which it reports to now)
    removed.radius = 3.0
    assert world.take_rewritten_paths().tolist() == [1]
