"""World: isolation, deferred despawn, systems order, events, determinism."""

import numpy as np
import pytest

from ecs_nav import Agent, Path, Position, SteeringWeights, TargetReached, Velocity, World
from ecs_nav.core.system import System


class Integrate(System):
    """A minimal physics stand-in: position += velocity * dt on whole columns."""

    name = "PhysicsSystem"

    def update(self, world):
        t = world.table
        moving = t.live("has_velocity")
        t.live("pos")[moving] += t.live("vel")[moving] * world.dt


class Recorder(System):
    name = "SteeringSystem"

    def __init__(self, log):
        self.log = log

    def update(self, world):
        self.log.append("steering")


class Recorder2(System):
    name = "PathfindSystem"

    def __init__(self, log):
        self.log = log

    def update(self, world):
        self.log.append("pathfind")


def test_two_worlds_are_isolated():
    a, b = World(seed=1), World(seed=2)
    try:
        ea = a.spawn(Position(1, 1))
        eb = b.spawn(Position(2, 2), Velocity(1, 0))
        assert a.entities() == [ea] and b.entities() == [eb]
        assert a.get(ea, Position).x == 1 and b.get(eb, Position).x == 2
        with pytest.raises(KeyError, match="has no Velocity"):
            a.get(ea, Velocity)
        b.add_systems(Integrate())
        b.run(3)
        assert a.tick == 0 and b.tick == 3
    finally:
        a.close()
        b.close()


def test_despawn_is_deferred_to_end_of_tick_and_idempotent():
    class Killer(System):
        name = "PathFollowSystem"

        def update(self, world):
            if world.tick == 0:
                world.despawn(victim)
                world.despawn(victim)
                assert world.table.has(victim)  # still there during the tick
                assert not world.exists(victim)

    with World() as world:
        victim = world.spawn(Position(0, 0))
        other = world.spawn(Position(1, 1))
        world.add_systems(Killer())
        world.step()
        assert world.entities() == [other]
        assert not world.table.has(victim)
        world.despawn(victim)  # already gone: nothing happens


def test_systems_run_in_card_order_whatever_the_call_order():
    log = []
    with World() as world:
        world.add_systems(Recorder(log), Recorder2(log))
        world.step()
        assert log == ["pathfind", "steering"]
        assert [s.name for s in world.systems] == ["PathfindSystem", "SteeringSystem"]
        with pytest.raises(ValueError, match="already registered"):
            world.add_systems(Recorder(log))


def test_events_kept_for_the_tick_and_delivered_to_lambdas():
    class Emitter(System):
        name = "PathFollowSystem"

        def update(self, world):
            world.emit(TargetReached(entity=7, tick=world.tick))

    got = []
    with World() as world:
        world.add_systems(Emitter())
        world.on(TargetReached, lambda ev: got.append(ev.tick))  # strong reference
        world.run(3)
        assert got == [0, 1, 2]
        assert world.events == [TargetReached(7, 2)]
        assert world.summary()["events"] == {"TargetReached": 3, "WaypointReached": 0, "PathChanged": 0,
                                             "PathFailed": 0, "Stuck": 0}


def test_spawn_validates():
    with World() as world:
        with pytest.raises(ValueError, match="needs a Position"):
            world.spawn(Velocity(1, 0))
        with pytest.raises(ValueError, match="two Position"):
            world.spawn(Position(), Position())
        pos = Position()
        world.spawn(pos)
        with pytest.raises(ValueError, match="already belongs"):
            world.spawn(pos)


def test_component_constructors_name_the_field():
    from ecs_nav import Collider, PathRequest

    with pytest.raises(ValueError, match=r"Collider.radius: must be > 0, got -1"):
        Collider(radius=-1)
    with pytest.raises(ValueError, match=r"Position.x: must be a finite number"):
        Position(float("nan"), 0)
    with pytest.raises(ValueError, match=r"SteeringWeights.weights: unknown behaviour 'seeek'"):
        SteeringWeights({"seeek": 1.0})
    with pytest.raises(ValueError, match=r"Agent.max_speed"):
        Agent(max_speed=0)
    with pytest.raises(ValueError, match="exactly one of goal"):
        PathRequest()


def _moving_world(seed):
    world = World(seed=seed)
    world.add_systems(Integrate())
    rng = np.random.default_rng(seed)
    for p, v in zip(rng.normal(size=(50, 2)), rng.normal(size=(50, 2))):
        world.spawn(Position(*p), Velocity(*v), Agent())
    return world


def test_state_digest_is_deterministic_and_sensitive():
    a, b, c = _moving_world(3), _moving_world(3), _moving_world(4)
    try:
        for w in (a, b, c):
            w.run(20)
        assert a.state_digest() == b.state_digest()
        assert a.state_digest() != c.state_digest()
        a.table.pos[0, 0] += 1e-12
        assert a.state_digest() != b.state_digest()
    finally:
        for w in (a, b, c):
            w.close()


def test_rewritten_paths_are_recorded_per_entity_once_attached():
    w = World()
    loose = Path(waypoints=[(0, 0), (1, 0)])
    loose.waypoints = np.zeros((2, 3))  # not attached yet: nobody to tell
    a = w.spawn(Position(0, 0), loose)
    b = w.spawn(Position(1, 0))
    other = Path(waypoints=[(0, 0)])
    w.add_component(b, other)
    assert w.take_rewritten_paths().tolist() == []
    other.waypoints = np.ones((1, 3))
    loose.waypoints = np.ones((3, 3))
    other.waypoints = np.ones((2, 3))
    loose.index = 2  # only waypoints count
    assert w.take_rewritten_paths().tolist() == [a, b]
    assert w.take_rewritten_paths().tolist() == []


@pytest.mark.parametrize("kind", [Position, Velocity, Agent, SteeringWeights])
def test_a_view_component_is_not_removed_from_under_its_row(kind):
    """Removing a view component would leave its row saying the entity has it (a removed
    Velocity kept moving the agent): refused, as adding one after spawn is, and nothing changes."""
    world = World()
    e = world.spawn(Position(0, 0), Velocity(1.0, 0.0), Agent(), SteeringWeights({"seek": 1.0}))
    with pytest.raises(ValueError, match=f"remove_component: {kind.__name__} lives in the agent table"):
        world.remove_component(e, kind)
    assert world.try_get(e, kind) is not None
    path = Path(waypoints=[(0, 0), (1, 0)])
    world.add_component(e, path)
    assert world.remove_component(e, Path) is path and world.try_get(e, Path) is None
