"""A stateful fuzz of the World API: random sequences of spawns, despawns, components added and
removed, fields assigned, ticks, saves and loads, and a recording, on random small tile maps,
valid and invalid mixed. After every step the World agrees with a simple model of what it
should hold (the live entity ids, each one's components, the positions of those that do not
move), every refused operation leaves ``state_digest()`` and the contents as they were, and a
save and load gives the same World back.

The short form runs in ``make test`` (a few seconds); the long one under ``ECS_NAV_SOAK=1``
runs ``ECS_NAV_FUZZ_EXAMPLES`` sequences (default 2,000) of up to 40 steps, exploring new ones
(as ``tests/test_scene_fuzz.py``).
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import tempfile
from pathlib import Path as FilePath

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ecs_nav import (
    Agent,
    Collider,
    Name,
    Path,
    PathRequest,
    Player,
    Position,
    SteeringWeights,
    TargetReached,
    Velocity,
)
from ecs_nav.core.behaviours import BEHAVIOURS
from ecs_nav.core.limits import COORDINATE_LIMIT
from ecs_nav.core.system import FunctionSystem
from ecs_nav.results.read import read_recording
from ecs_nav.results.recording import record
from ecs_nav.scene.files import build_world, load_scene, save_scene
from ecs_nav.scene.schema import scene_from_dict

SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
EXAMPLES = int(os.environ.get("ECS_NAV_FUZZ_EXAMPLES", "2000")) if SOAK else 25
STEPS = 40 if SOAK else 12

KNOWN = (Position, Velocity, Agent, Collider, SteeringWeights, PathRequest, Path, Name, Player)
"""Every component type the fuzz gives; what an entity holds is read back through these."""
VIEWS = (Position, Velocity, Agent, Collider, SteeringWeights)
SPARSE = (PathRequest, Path, Name, Player)
MOVERS = {"Velocity"}
"""An entity with one of these may be moved by a tick; one without stays where it was put."""

ids = st.integers(1, 400)


def floats(low: float, high: float):
    return st.floats(low, high, allow_subnormal=False)



fractions = floats(-0.1, 1.1)
bad_numbers = st.sampled_from([math.nan, math.inf, -math.inf, 1e300, "a", None, True])


@st.composite
def pictures(draw):
    """A small tile map: 3-9 columns, 3-7 rows, about a fifth of the cells walls."""
    width, height = draw(st.integers(3, 9)), draw(st.integers(3, 7))
    cells = draw(st.lists(st.sampled_from(".....#"), min_size=width * height, max_size=width * height))
    return "\n".join("".join(cells[r * width:(r + 1) * width]) for r in range(height))


def held(world, entity) -> frozenset[str]:
    return frozenset(t.__name__ for t in KNOWN if world.try_get(entity, t) is not None)


def contents(world) -> tuple:
    """What a refused operation must leave as it was."""
    return (world.state_digest(), tuple((e, held(world, e)) for e in world.entities()), world.table.n,
            tuple(s.name for s in world.systems), world.tick)


class WorldMachine(RuleBasedStateMachine):
    """The World under test, and the model: ``model[entity] = {"types": names, "pos": (x, y)}``."""

    def __init__(self):
        super().__init__()
        self.world = None
        self.model: dict[int, dict] = {}
        self.gone: set[int] = set()
        self.exact = True  # the World still saves and loads to the same digest
        self.recorded = False
        self.tmp = FilePath(tempfile.mkdtemp(prefix="world_fuzz_"))
        self.names = itertools.count()

    # --- set-up and checks -------------------------------------------------------------------------

    @initialize(picture=pictures(), seed=st.integers(0, 2**32))
    def build(self, picture, seed):
        data = {"world": {"seed": seed}, "map": {"grid": picture, "cell_size": 1.0}}
        self.world = build_world(scene_from_dict(data, source="<world fuzz>"))
        xmin, ymin, xmax, ymax = self.world.map.bounds
        self.bounds = (xmin, ymin, xmax, ymax)

    def teardown(self):
        if self.world is not None:
            self.world.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def point(self, fx: float, fy: float) -> tuple[float, float]:
        xmin, ymin, xmax, ymax = self.bounds
        return round(xmin + fx * (xmax - xmin), 6), round(ymin + fy * (ymax - ymin), 6)

    @invariant()
    def agrees_with_the_model(self):
        world = self.world
        if world is None:
            return
        assert world.entities() == sorted(self.model)
        placed = []
        for entity, expected in self.model.items():
            assert held(world, entity) == expected["types"], entity
            if "Position" in expected["types"]:
                placed.append(entity)
                pos = world.get(entity, Position)
                assert (pos.x, pos.y) == expected["pos"], entity
        assert world.table.n == len(placed)
        assert sorted(world.table.live("entity").tolist()) == sorted(placed)
        for column in ("pos", "vel", "heading"):
            assert np.isfinite(world.table.live(column)).all(), column

    def refused(self, call, *errors):
        """``call`` must raise one of ``errors`` and leave the World exactly as it was."""
        before = contents(self.world)
        with pytest.raises(errors or (ValueError, KeyError)):
            call()
        assert contents(self.world) == before

    def entity(self, data, having: str | None = None) -> int | None:
        """A live entity (holding ``having``), or None when there is none."""
        candidates = sorted(e for e, m in self.model.items() if having is None or having in m["types"])
        return data.draw(st.sampled_from(candidates)) if candidates else None

    def missing(self, data) -> int:
        return data.draw(st.one_of(st.sampled_from(sorted(self.gone)) if self.gone else st.nothing(),
                                   st.integers(10_000, 2**40)))

    # --- spawning -------------------------------------------------------------------------------------

    def components(self, data, kind: str, at: tuple[float, float]) -> list:
        out = []
        if kind in ("agent", "static", "box"):
            out.append(Position(*at))
        if kind == "agent":
            out += [Velocity(data.draw(floats(-3, 3)), data.draw(floats(-3, 3))),
                    Agent(max_speed=data.draw(floats(0.5, 8))),
                    Collider(radius=data.draw(floats(0.1, 0.8)), layer=data.draw(st.integers(0, 2)))]
            weights = data.draw(st.dictionaries(st.sampled_from(BEHAVIOURS), floats(0, 3), max_size=4))
            targets = sorted(self.model) + [data.draw(ids)]
            out.append(SteeringWeights(weights=weights, target=self.point(*data.draw(st.tuples(fractions, fractions)))
                                       if data.draw(st.booleans()) else None,
                                       target_entity=data.draw(st.sampled_from(targets))
                                       if data.draw(st.booleans()) else None))
            if data.draw(st.booleans()):
                out.append(self.request(data))
        if kind == "box":
            out.append(Collider(shape="box", size=(data.draw(floats(0.2, 2)), data.draw(floats(0.2, 2)))))
        if kind != "empty" and data.draw(st.booleans()):
            out.append(Name(f"n{next(self.names)}"))
        if kind == "tag":
            out.append(Player())
        return out

    def request(self, data) -> PathRequest:
        how = data.draw(st.sampled_from(["goal", "target", "flow"]))
        if how == "goal":
            return PathRequest(goal=self.point(*data.draw(st.tuples(fractions, fractions))))
        if how == "flow":
            return PathRequest(goal=self.point(*data.draw(st.tuples(fractions, fractions))), method="flow_field")
        return PathRequest(target=data.draw(st.sampled_from(sorted(self.model) + [data.draw(ids)])))

    def note_spawned(self, entity: int, components: list, at) -> None:
        types = frozenset(type(c).__name__ for c in components)
        self.model[int(entity)] = {"types": types, "pos": at if "Position" in types else None}

    @rule(data=st.data(), kind=st.sampled_from(["agent", "agent", "static", "box", "tag", "empty"]),
          at=st.tuples(fractions, fractions))
    def spawn(self, data, kind, at):
        at = self.point(*at)
        components = self.components(data, kind, at)
        entity = self.world.spawn(*components)
        self.note_spawned(entity, components, at)

    @rule(data=st.data(), count=st.integers(0, 6), kind=st.sampled_from(["agent", "static", "tag"]),
          placed=st.booleans(), named=st.booleans())
    def spawn_many(self, data, count, kind, placed, named):
        first = self.point(*data.draw(st.tuples(fractions, fractions)))
        components = [c for c in self.components(data, kind, first) if not isinstance(c, Name)]
        spots = [self.point(*data.draw(st.tuples(fractions, fractions))) for _ in range(count)]
        placed = placed or count > 1  # (a crowd on one point is refused: spawn_many's own test)
        positions = np.array(spots, np.float64).reshape(count, 2) if placed and kind != "tag" else None
        tags = (lambda i: [Name(f"crowd{i}")]) if named else None
        before = contents(self.world)
        try:
            spawned = self.world.spawn_many(count, components, positions=positions, tags=tags)
        except ValueError as exc:  # (a crowd stacked on one point may be refused: the rest may not)
            assert positions is None and count > 1 and kind != "tag" and "one point" in str(exc), exc
            assert contents(self.world) == before
            return
        assert len(spawned) == count and list(spawned) == sorted(spawned)
        for i, entity in enumerate(spawned.tolist()):
            at = spots[i] if positions is not None else first
            self.note_spawned(entity, components + ([Name("x")] if named else []), at)

    @rule(data=st.data())
    def refused_spawns(self, data):
        world = self.world
        bound = [world.get(e, Position) for e in self.model if "Position" in self.model[e]["types"]]
        owned = [world.get(e, Path) for e in self.model if "Path" in self.model[e]["types"]]
        case = data.draw(st.sampled_from(["two", "class", "list", "view alone", "bound", "owned", "tags view",
                                          "tags fail", "positions", "nan positions", "count"]))
        if case == "two":
            self.refused(lambda: world.spawn(Position(), Name("a"), Name("b")))
        elif case == "class":
            self.refused(lambda: world.spawn(Position(), Velocity))
        elif case == "list":
            self.refused(lambda: world.spawn([Position()]))
        elif case == "view alone":
            self.refused(lambda: world.spawn(Velocity(), Agent()))
        elif case == "bound" and bound:
            self.refused(lambda: world.spawn(data.draw(st.sampled_from(bound))))
        elif case == "owned" and owned:
            self.refused(lambda: world.spawn(Position(), data.draw(st.sampled_from(owned))))
        elif case == "tags view":
            self.refused(lambda: world.spawn_many(3, [Position()], tags=lambda i: [Agent()]))
        elif case == "tags fail":
            self.refused(lambda: world.spawn_many(4, [Position(), Velocity()], tags=lambda i: [Name("a")] if i < 2
                                                  else [][1]), IndexError)
        elif case == "positions":
            self.refused(lambda: world.spawn_many(3, [Position()], positions=np.zeros((2, 2))))
        elif case == "nan positions":
            self.refused(lambda: world.spawn_many(2, [Position()], positions=[[0, 0], [math.nan, 0]]))
        elif case == "count":
            self.refused(lambda: world.spawn_many(data.draw(st.sampled_from([-1, 1.5, "3", 2**40])), [Position()]))

    # --- despawning -----------------------------------------------------------------------------------

    def note_despawned(self, entity: int) -> None:
        if self.model.pop(entity, None) is not None:
            self.gone.add(entity)

    @rule(data=st.data())
    def despawn(self, data):
        entity = data.draw(st.one_of(st.sampled_from(sorted(self.model)) if self.model else st.nothing(), ids))
        known = entity in self.model
        before = contents(self.world)
        self.world.despawn(entity)
        self.note_despawned(entity)
        if not known:  # (an id that is not there: nothing happens)
            assert contents(self.world) == before

    @rule(data=st.data())
    def despawn_many(self, data):
        chosen = data.draw(st.lists(st.one_of(st.sampled_from(sorted(self.model)) if self.model else st.nothing(),
                                              ids), max_size=6))
        self.world.despawn_many(np.array(chosen, np.int64))
        for entity in chosen:
            self.note_despawned(entity)

    @rule(data=st.data())
    def refused_despawns(self, data):
        bad = data.draw(st.sampled_from([[1.5], ["2"], [True, False], [[1, 2], [3]], "abc"]))
        self.refused(lambda: self.world.despawn_many(bad))
        self.refused(lambda: self.world.despawn(data.draw(st.sampled_from([1.0, "1", None, True]))))

    # --- components -----------------------------------------------------------------------------------

    @rule(data=st.data(), kind=st.sampled_from(["Name", "Player", "PathRequest", "Path"]))
    def add_component(self, data, kind):
        entity = self.entity(data)
        if entity is None:
            return
        if kind == "Name":
            component = Name(f"n{next(self.names)}")
        elif kind == "Player":
            component = Player()
        elif kind == "PathRequest":
            component = self.request(data)
        else:
            points = data.draw(st.lists(st.tuples(fractions, fractions), min_size=0, max_size=4))
            component = Path(waypoints=[self.point(*p) for p in points] or np.zeros((0, 2)),
                             radius=data.draw(floats(0.1, 2)), mode=data.draw(st.sampled_from(["once", "patrol",
                                                                                                   "loop"])))
        self.world.add_component(entity, component)
        self.model[entity]["types"] = self.model[entity]["types"] | {kind}

    @rule(data=st.data())
    def refused_add_component(self, data):
        world = self.world
        case = data.draw(st.sampled_from(["missing", "view", "class", "none", "owned", "bool"]))
        if case == "missing":
            entity = self.missing(data)
            self.refused(lambda: world.add_component(entity, data.draw(st.sampled_from(
                [Name("ghost"), PathRequest(goal=(1, 1)), Path(), Player()]))), KeyError)
            return
        entity = self.entity(data)
        if entity is None:
            return
        if case == "view":
            self.refused(lambda: world.add_component(entity, data.draw(st.sampled_from(
                [Velocity(), Agent(), Collider(), SteeringWeights(), Position()]))))
        elif case == "class":
            self.refused(lambda: world.add_component(entity, data.draw(st.sampled_from(list(KNOWN)))))
        elif case == "none":
            self.refused(lambda: world.add_component(entity, None))
        elif case == "bool":
            self.refused(lambda: world.add_component(True, Name("b")))
        else:
            owners = [e for e in self.model if "Path" in self.model[e]["types"] and e != entity]
            if not owners:
                return
            path = world.get(data.draw(st.sampled_from(owners)), Path)
            self.refused(lambda: world.add_component(entity, path))

    @rule(data=st.data(), kind=st.sampled_from(SPARSE))
    def remove_component(self, data, kind):
        entity = self.entity(data)
        if entity is None:
            return
        removed = self.world.remove_component(entity, kind)
        assert (removed is not None) == (kind.__name__ in self.model[entity]["types"])
        self.model[entity]["types"] = self.model[entity]["types"] - {kind.__name__}

    @rule(data=st.data())
    def refused_remove_component(self, data):
        case = data.draw(st.sampled_from(["missing", "view", "instance"]))
        entity = self.missing(data) if case == "missing" else self.entity(data)
        if entity is None:
            return
        if case == "missing":
            self.refused(lambda: self.world.remove_component(entity, data.draw(st.sampled_from(SPARSE))), KeyError)
        elif case == "view":
            self.refused(lambda: self.world.remove_component(entity, data.draw(st.sampled_from(VIEWS))))
        else:
            self.refused(lambda: self.world.remove_component(entity, Name("x")))

    # --- fields ---------------------------------------------------------------------------------------

    ASSIGNED = {"pos": "Position", "vel": "Velocity", "max_speed": "Agent", "radius": "Collider",
                "weight": "SteeringWeights", "target": "SteeringWeights", "target_entity": "SteeringWeights",
                "waypoints": "Path", "path_radius": "Path", "goal": "PathRequest", "request_target": "PathRequest",
                "name": "Name"}

    @rule(data=st.data(), field=st.sampled_from(sorted(ASSIGNED)), at=st.tuples(fractions, fractions))
    def assign_fields(self, data, field, at):
        holder = self.ASSIGNED[field]
        entity = self.entity(data, holder)
        if entity is None:
            return
        component = self.world.get(entity, next(t for t in KNOWN if t.__name__ == holder))
        point = self.point(*at)
        if field == "pos":
            component.x, component.y = point
            self.model[entity]["pos"] = (component.x, component.y)
        elif field == "vel":
            component.vx, component.vy = data.draw(floats(-5, 5)), data.draw(floats(-5, 5))
        elif field == "max_speed":
            component.max_speed = data.draw(floats(0.1, 10))
        elif field == "radius":
            component.radius = data.draw(floats(0.1, 1.5))
        elif field == "weight":
            component.set_weight(data.draw(st.sampled_from(BEHAVIOURS)), data.draw(floats(0, 5)))
        elif field == "target":
            component.target = point if data.draw(st.booleans()) else None
        elif field == "target_entity":
            component.target_entity = data.draw(st.sampled_from(sorted(self.model) + [None]))
        elif field == "waypoints":
            component.waypoints = [point, self.point(at[1], at[0])]
        elif field == "path_radius":
            component.radius = data.draw(floats(0.1, 3))
        elif field == "goal" and component.goal is not None:
            component.goal = point
        elif field == "request_target" and component.target is not None:
            component.target = data.draw(st.sampled_from(sorted(self.model)))
        elif field == "name":
            component.value = f"renamed{next(self.names)}"

    REFUSED = {"pos": ("Position", "x"), "vel": ("Velocity", "vy"), "max_speed": ("Agent", "max_speed"),
               "mass": ("Agent", "mass"), "radius": ("Collider", "radius"), "layer": ("Collider", "layer"),
               "weight": ("SteeringWeights", ""), "behaviour": ("SteeringWeights", ""),
               "combiner": ("SteeringWeights", "combiner"), "target": ("SteeringWeights", "target"),
               "waypoints": ("Path", "waypoints"), "path_radius": ("Path", "radius"), "mode": ("Path", "mode"),
               "goal": ("PathRequest", "goal"), "algorithm": ("PathRequest", "algorithm"),
               "period": ("PathRequest", "replan_period"), "no field": ("PathRequest", "gaol"),
               "name": ("Name", "value")}

    @rule(data=st.data(), field=st.sampled_from(sorted(REFUSED)), bad=bad_numbers)
    def refused_fields(self, data, field, bad):
        holder, attribute = self.REFUSED[field]
        entity = self.entity(data, holder)
        if entity is None:
            return
        component = self.world.get(entity, next(t for t in KNOWN if t.__name__ == holder))
        if field == "weight":
            self.refused(lambda: component.set_weight("seek", bad))
            return
        if field == "behaviour":
            self.refused(lambda: component.set_weight("seeek", 1.0))
            return
        value = {"combiner": "average", "target": (bad, 0.0), "waypoints": [[bad, 0.0]], "mode": "zigzag",
                 "goal": (bad, 1.0), "algorithm": "bfs", "period": 0, "no field": (1.0, 1.0)}.get(field, bad)
        if value is None and field in ("max_speed", "mass", "radius", "layer", "path_radius"):
            value = -1  # (None is refused too; a negative number is the other way out of range)
        if field == "name" and (bad is None or isinstance(bad, str)):
            value = 5  # (text is a name)
        self.refused(lambda: setattr(component, attribute, value), ValueError, AttributeError)

    # --- ticks ----------------------------------------------------------------------------------------

    def after_ticks(self) -> None:
        """What a tick may change in the model: movers' positions; a path request's Path."""
        for entity, expected in self.model.items():
            if "Position" in expected["types"] and expected["types"] & MOVERS:
                pos = self.world.get(entity, Position)
                assert math.isfinite(pos.x) and math.isfinite(pos.y)
                assert abs(pos.x) <= COORDINATE_LIMIT and abs(pos.y) <= COORDINATE_LIMIT
                expected["pos"] = (pos.x, pos.y)
            if "PathRequest" in expected["types"] and self.world.try_get(entity, Path) is not None:
                expected["types"] = expected["types"] | {"Path"}
        self.exact = False

    @rule(ticks=st.integers(1, 4))
    def step(self, ticks):
        start = self.world.tick
        self.world.run(ticks)
        assert self.world.tick == start + ticks and self.world.stopped_at is None
        self.after_ticks()

    @rule(place=st.sampled_from(["GraphBuildSystem", "PathfindSystem", "SteeringSystem", "PhysicsSystem"]))
    def a_system_that_raises_stops_its_tick(self, place):
        world = self.world
        failing = {"armed": True}

        def fails_once(w):
            if failing.pop("armed", False):
                raise LookupError("a user system failed")

        system = FunctionSystem(fails_once, name=f"fails{next(self.names)}")
        world.add_system(system, after=place)
        heard = []
        world.on(TargetReached, heard.append)
        tick = world.tick
        with pytest.raises(LookupError) as caught:
            world.step()
        assert f"tick {tick} stopped in {system.name}" in " ".join(caught.value.__notes__)
        assert world.tick == tick and world.stopped_at == (tick, system.name) and heard == []
        world.off(TargetReached, heard.append)
        self.after_ticks()
        world.step()  # a whole tick again
        assert world.tick == tick + 1 and world.stopped_at is None
        self.after_ticks()

    @rule(data=st.data(), place=st.sampled_from(["GraphBuildSystem", "PathFollowSystem", "PhysicsSystem"]),
          what=st.sampled_from(["spawn", "despawn", "tag"]), at=st.tuples(fractions, fractions))
    def a_system_changes_the_world_in_its_tick(self, data, place, what, at):
        """A system of the user's own spawns, despawns (at the end of the tick) or tags once."""
        world = self.world
        target = self.entity(data)
        if what != "spawn" and target is None:
            return
        point = self.point(*at)
        done = []

        def once(w):
            if done:
                return
            if what == "spawn":
                done.append(w.spawn(Position(*point), Name(f"made{next(self.names)}")))
            elif what == "despawn":
                w.despawn(target)
                assert w.exists(target) is False and target in w.entities()  # (gone at the end of the tick)
                done.append(target)
            else:
                w.add_component(target, Player())
                done.append(target)

        world.add_system(FunctionSystem(once, name=f"changes{next(self.names)}"), after=place)
        world.step()
        assert done
        if what == "spawn":
            self.model[done[0]] = {"types": frozenset({"Position", "Name"}), "pos": point}
        elif what == "despawn":
            self.note_despawned(target)
        else:
            self.model[target]["types"] = self.model[target]["types"] | {"Player"}
        self.after_ticks()

    # --- saving, loading, recording -------------------------------------------------------------------

    def unsaveable(self) -> list[int]:
        """Entities whose reference (a request's target, a steering target entity) a scene file
        cannot hold: to itself, to an entity gone, unnamed, or sharing its name."""
        world = self.world
        names = [tag.value for _, (tag,) in world.query(Name)]
        out = []
        for kind, field in ((PathRequest, "target"), (SteeringWeights, "target_entity")):
            for entity, (component,) in world.query(kind):
                target = getattr(component, field)
                if target is not None and (target == entity or target not in self.model
                                           or "Name" not in self.model[target]["types"]
                                           or names.count(world.get(target, Name).value) > 1):
                    out.append(entity)
        return out

    @rule()
    def save_and_load(self):
        world = self.world
        path = self.tmp / "saved.toml"
        if self.unsaveable():
            self.refused(lambda: save_scene(world, path), ValueError)
            assert not path.exists()
            return
        save_scene(world, path)
        again = load_scene(path)
        try:
            if self.exact and world.entities() == list(range(1, len(self.model) + 1)):
                assert again.state_digest() == world.state_digest()
            assert len(again.entities()) == len(world.entities())
            for mine, theirs in zip(world.entities(), again.entities()):
                assert held(again, theirs) == held(world, mine)
                for kind in (Position, Velocity, Agent, Collider, Name):
                    assert again.try_get(theirs, kind) == world.try_get(mine, kind), (mine, kind)
        finally:
            again.close()
            path.unlink()

    @precondition(lambda self: not self.recorded)
    @rule(ticks=st.integers(1, 3), suffix=st.sampled_from([".sqlite", ".csv"]))
    def record_a_few_ticks(self, ticks, suffix):
        world = self.world
        self.recorded = True
        path = self.tmp / f"run{suffix}"
        with record(world, path, every=1, background=False):
            world.run(ticks)
        self.after_ticks()
        run = read_recording(path)
        last = run.trajectories[run.trajectories["tick"] == world.tick]
        placed = {e: m["pos"] for e, m in self.model.items() if "Position" in m["types"]}
        assert sorted(last["entity"].tolist()) == sorted(placed)
        for entity, x, y in zip(last["entity"], last["x"], last["y"]):
            assert (x, y) == pytest.approx(placed[entity], abs=1e-9)
        assert run.run["ticks"] == world.tick and run.run["final_digest"] == world.state_digest()


WorldMachine.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                          derandomize=not SOAK, suppress_health_check=list(HealthCheck))
test_world_api_agrees_with_its_model = WorldMachine.TestCase
