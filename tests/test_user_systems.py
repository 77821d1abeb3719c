"""Systems of the user's own, placed before or after a named built-in (Bevy style)."""

import pytest

import ecs_nav
from ecs_nav import Position, Velocity, World
from ecs_nav.core.system import SYSTEM_ORDER, FunctionSystem, System, system_place, system_priority


def _logger(name, log, base=System):
    """A system class named ``name`` that appends its name to ``log`` when it runs."""

    class Logged(base):
        def update(self, world):
            log.append(self.name)

    Logged.name = name
    return Logged()


def test_user_systems_run_at_their_place_and_the_built_ins_keep_their_order():
    log = []
    with World() as world:
        # added out of order: user systems first, built-ins after
        world.add_system(_logger("AfterPhysics", log), after="PhysicsSystem")
        world.add_system(_logger("BeforeEverything", log), before="GraphBuildSystem")
        world.add_system(_logger("BetweenFollowAndSteering", log), after="PathFollowSystem")
        world.add_systems(*(_logger(name, log) for name in reversed(SYSTEM_ORDER[:5])))
        world.step()
    assert log == ["BeforeEverything", "GraphBuildSystem", "PathfindSystem", "PathFollowSystem",
                   "BetweenFollowAndSteering", "SteeringSystem", "PhysicsSystem", "AfterPhysics"]
    assert [s.name for s in world.systems] == log


def test_several_user_systems_at_one_place_run_in_the_order_they_were_added():
    log = []
    with World() as world:
        world.add_systems(_logger("PhysicsSystem", log), _logger("SteeringSystem", log))
        world.add_system(_logger("First", log), after="SteeringSystem")
        world.add_system(_logger("Second", log), before="PhysicsSystem")  # the same place
        world.add_system(_logger("Third", log), after="SteeringSystem", before="PhysicsSystem")
        world.run(2)
    assert log == ["SteeringSystem", "First", "Second", "Third", "PhysicsSystem"] * 2


def test_a_plain_function_is_a_system_named_after_it_and_is_timed():
    seen = []

    def count_agents(world):
        seen.append((world.tick, world.table.n))

    with World() as world:
        world.spawn(Position(0, 0), Velocity(1, 0))
        system = world.add_system(count_agents, after="PhysicsSystem")
        world.run(3)
        assert isinstance(system, FunctionSystem) and system.name == "count_agents"
        assert seen == [(0, 1), (1, 1), (2, 1)]
        assert "count_agents" in world.summary()["timings_ms"]
        assert world.system("count_agents") is system


def test_a_place_names_a_built_in_with_a_did_you_mean():
    with World() as world:
        with pytest.raises(ValueError, match=r'add_systems.after: .PhysicSystem. is not a built-in system '
                                             r'\(did you mean "PhysicsSystem"\?\)'):
            world.add_system(lambda w: None, after="PhysicSystem")
        with pytest.raises(ValueError, match="needs a place: before= or after="):
            world.add_system(lambda w: None)
        with pytest.raises(ValueError, match="no place in the tick is after PhysicsSystem and before PathfindSystem"):
            world.add_system(lambda w: None, after="PhysicsSystem", before="PathfindSystem")
        with pytest.raises(ValueError, match="PhysicsSystem is a built-in with a fixed place"):
            world.add_system(_logger("PhysicsSystem", []), before="SteeringSystem")
        world.add_system(_logger("Probe", []), after="PhysicsSystem")
        with pytest.raises(ValueError, match="a Probe is already registered .systems are known by name"):
            world.add_system(_logger("Probe", []), before="PhysicsSystem")
        assert [s.name for s in world.systems] == ["Probe"]
        world.add_system(ecs_nav.FunctionSystem(lambda w: None, name="Probe 2"), before="PhysicsSystem")
        assert [s.name for s in world.systems] == ["Probe 2", "Probe"]
        with pytest.raises(NotImplementedError, match="Bare: a System subclass overrides update"):
            type("Bare", (ecs_nav.System,), {})().update(world)


def test_places_sit_between_the_priorities_of_the_built_ins():
    assert system_place(after="PathFollowSystem") == system_place(before="SteeringSystem") == 3
    assert system_place(before="GraphBuildSystem") == 0
    assert system_place(after="RenderSystem") == len(SYSTEM_ORDER)
    with World() as world:
        spy = world.add_system(_logger("Spy", []), after="PathFollowSystem")
        assert system_priority("SteeringSystem") < spy.priority < system_priority("PathFollowSystem")


def test_a_reads_only_user_system_leaves_the_digest_alone():
    plain, watched = ecs_nav.load_scene("chase", seed=3), ecs_nav.load_scene("chase", seed=3)
    try:
        watched.add_system(FunctionSystem(lambda w: None, name="watcher", reads_only=True), after="PhysicsSystem")
        plain.run(30)
        watched.run(30)
        assert plain.state_digest() == watched.state_digest()
    finally:
        plain.close()
        watched.close()


def test_after_and_before_together_take_the_place_right_after():
    assert system_place(after="SteeringSystem", before="RenderSystem") == system_place(after="SteeringSystem")
