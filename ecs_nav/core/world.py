"""World: one esper world context + the agent table + resources + fixed-step clock + RNG + events.

esper 3 keeps its state in module globals and switches between named contexts; every public
method here switches to this World's own context first, so several Worlds (tests, parameter
sweeps) coexist in one process without seeing each other's entities.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import itertools
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import esper
import numpy as np

from ecs_nav.compile.watch import totals as warmup_totals
from ecs_nav.compile.watch import warmup_seconds
from ecs_nav.compile.watch import watch as watch_compilation
from ecs_nav.core.behaviours import BEHAVIOURS
from ecs_nav.core.components import Agent, Collider, Path, PathRequest, Position, TableView, Velocity, bound_copies
from ecs_nav.core.events import event_count_table

# (re-exported: the previous release's ecs_nav.world held these; ecs_nav.moved maps it here)
from ecs_nav.core.finite import refuse_non_finite  # noqa: F401
from ecs_nav.core.limits import COORDINATE_LIMIT, SEED_LIMIT, check_number
from ecs_nav.core.resource_names import PLATFORMER
from ecs_nav.core.system import (  # noqa: F401
    SYSTEM_GAP,
    SYSTEM_ORDER,
    FunctionSystem,
    System,
    place_priority,
    system_place,
    system_priority,
)
from ecs_nav.core.table import AgentTable, default_columns
from ecs_nav.core.world_checks import (
    NoSuchEntity,
    check_component,
    check_spawn,
    check_tags,
    check_unowned,
    entity_id,
    entity_ids,
)

C = TypeVar("C")

_world_ids = itertools.count(1)

_NONE = np.zeros(0, np.int64)
_NONE.flags.writeable = False  # handed out for "no entities" by every take_* call: nobody may fill it


class World:
    """A simulation: entities, their components, the systems and the fixed-step clock.

    Args:
        seed: seeds the World's ``numpy.random.Generator`` (``world.rng``) and the per-entity
            noise of wander; the same scene and seed give the same trajectory.
        dt: the fixed tick length in seconds (default 1/60).

    Every operation checks its arguments before it changes anything: a refused call (an
    unknown entity, a component of the wrong kind, a bad id) raises naming the entity and the
    component and leaves the World as it was. ``step`` says what happens when a system raises.
    """

    def __init__(self, seed: int = 0, dt: float = 1.0 / 60.0):
        if isinstance(dt, bool) or not isinstance(dt, (int, float, np.number)) or not (0 < dt <= 1.0):
            raise ValueError(f"World.dt: must be a number of seconds in (0, 1], got {dt!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= SEED_LIMIT:
            raise ValueError(f"World.seed: must be an integer from 0 to {SEED_LIMIT}, got {seed!r}")
        self.seed = int(seed)
        self.dt = float(dt)
        self.rng = np.random.default_rng(self.seed)
        self.tick = 0
        self.table = AgentTable(default_columns(len(BEHAVIOURS)))
        self.events: list[Any] = []
        self.timings_ms: dict[str, float] = defaultdict(float)
        self.warmup_ms: dict[str, float] = defaultdict(float)
        """Per system: ms its kernels spent compiling or loading from numba's cache (not in timings_ms)."""
        self.event_counts: dict[str, int] = defaultdict(int)
        # resources
        self.map = None  # ecs_nav.geometry.map.MapGeometry
        self.navmap = None  # ecs_nav.core.components.NavMap (scan parameters)
        self.nav_graph = None  # ecs_nav.nav.NavGraph
        self.nav_links = None  # ecs_nav.nav.links.NavLinks: the map's off-mesh links (GraphBuildSystem adds them)
        self.nav_areas = None  # ecs_nav.nav.areas.NavAreas: area costs (the PathfindSystem's searches use them)
        self.resources: dict[str, Any] = {}
        self._name = f"ecs_nav-{next(_world_ids)}"
        self._subscribers: dict[type, list[Callable[[Any], None]]] = defaultdict(list)
        self._pending_despawn: dict[int, None] = {}
        self._rewritten_paths: set[int] = set()
        self._stale_paths: set[int] = set()
        self._changed_requests: set[int] = set()
        self._structure: dict[type, int] = defaultdict(int)  # component type -> additions and removals
        self._despawned: list[int] = []  # every entity despawned, in order (despawned_since)
        self._stepping = False  # systems are running: despawns wait for the end of the tick
        self._in_tick = False  # a step() is running (its systems or its event delivery)
        self._failed_system = ""
        self.stopped_at: tuple[int, str] | None = None
        """(tick, system name) where the last tick stopped when a system raised; None once a
        tick completes (see ``step``)."""
        self._closed = False
        self._systems: list[System] = []
        self._user_places: dict[str, int] = {}  # user system name -> its place (see system_place)
        self._enter()

    # --- context ------------------------------------------------------------------------------

    def _enter(self) -> None:
        if self._closed:
            raise RuntimeError("this World is closed")
        if esper.current_world != self._name:
            esper.switch_world(self._name)

    @property
    def time(self) -> float:
        """Simulated seconds: ticks × dt."""
        return self.tick * self.dt

    # --- entities -----------------------------------------------------------------------------

    def spawn(self, *components: Any) -> int:
        """Create an entity with ``components``; returns its id.

        An entity with a ``Position`` gets a row in the agent table and its view components
        (Position, Velocity, Agent, Collider, SteeringWeights) are bound to that row."""
        self._enter()
        views = check_spawn(list(components), self._owner_of)
        return self._spawn_checked(components, views)

    def _spawn_checked(self, components, views: list[TableView]) -> int:
        """``spawn`` of components that ``check_spawn`` passed: nothing here can fail."""
        types = [type(c) for c in components]
        entity = esper.create_entity(*components)
        for t in types:
            self._structure[t] += 1
        for component in components:
            if isinstance(component, Path):
                component.report_to(self._rewritten_paths, self._stale_paths, entity)
            elif isinstance(component, PathRequest):
                component.report_to(self._changed_requests, entity)
        if views:
            table = self.table
            row = table.add_row(entity)
            for view in views:
                view.bind_row(table, row)
            present = set(types)
            table.has_velocity[row] = Velocity in present
            table.has_collider[row] = Collider in present
            table.is_agent[row] = Agent in present
            if self.map is not None:
                table.elevation[row] = self._surface_at(table.pos[row])
        return entity

    def spawn_many(self, count: int, components: list[Any], positions=None, tags=None) -> np.ndarray:
        """Spawn ``count`` entities like ``spawn(*components)``, the first at its Position and
        the others at ``positions[1:]`` ((count, 2); None only for one member or none placed: a
        crowd on one point is refused), in one pass
        over the table (a crowd of 100,000 in well under 2 s). Each entity gets its own view
        components bound to its row and a shallow copy of each sparse one (``Path`` with its
        own arrays); ``tags`` (callable: index -> list of extra components) adds per-entity
        ones such as a ``Name``. Returns the ids, ascending (int64; none for ``count`` 0)."""
        self._enter()
        count = check_number("World.spawn_many", "count", count, integer=True)
        if count < 0:
            raise ValueError(f"World.spawn_many.count: must be >= 0, got {count}")
        if tags is not None and not callable(tags):
            raise ValueError("World.spawn_many.tags: expected a function of the index returning a list of "
                             f"components (e.g. lambda i: [Name(f'npc-{{i}}')]), got {type(tags).__name__}")
        if count == 0:
            return np.zeros(0, np.int64)
        # hundreds of thousands of new objects would run the cyclic garbage collector over a
        # growing heap again and again (4x the time); none of them form cycles to collect
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._spawn_many(count, components, positions, tags)
        finally:
            if collecting:
                gc.enable()

    def _spawn_many(self, count: int, components: list[Any], positions, tags) -> np.ndarray:
        # every check first (the components, each member's tags, the positions), then the work
        if not isinstance(components, (list, tuple)):
            raise ValueError("World.spawn_many.components: expected a list of components, got "
                             f"{type(components).__name__}")
        try:
            pts = None if positions is None else np.ascontiguousarray(positions, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"spawn_many: positions must be a ({count}, 2) array of numbers ({exc})") from None
        if pts is not None and pts.shape != (count, 2):
            raise ValueError(f"spawn_many: positions must have shape ({count}, 2), got {pts.shape}")
        if pts is not None and (not np.all(np.isfinite(pts)) or np.any(np.abs(pts) > COORDINATE_LIMIT)):
            raise ValueError(f"spawn_many: positions must be finite and at most {COORDINATE_LIMIT:g} in magnitude")
        sparse = [c for c in components if not isinstance(c, TableView)]
        member_tags = check_tags(tags, count, sparse)
        first = list(components) + member_tags[0]
        views = check_spawn(first, self._owner_of)
        position = next((c for c in first if isinstance(c, Position)), None)
        if pts is not None and position is None:
            raise ValueError("spawn_many: positions given, but no Position among the components")
        if pts is None and position is not None and count > 1:  # (the scene check's rule: ecs_nav.scene.crowds)
            raise ValueError(f"spawn_many: positions=None would put all {count} members on one point "
                             f"({position.x:g}, {position.y:g}): give positions, a ({count}, 2) array, one point a "
                             "member")
        reported = [c for own in member_tags[1:] for c in own if isinstance(c, (Path, PathRequest))]
        for c in reported:
            check_unowned("World.spawn_many.tags", c, self._owner_of)
        if len({id(c) for c in reported} | {id(c) for c in first}) != len(reported) + len(first):
            raise ValueError("World.spawn_many.tags: one Path or PathRequest object given to several members: give "
                             "each its own (a new one from each call of tags)")
        others = [[c.detached_copy() if isinstance(c, Path) else copy.copy(c) for c in sparse] + member_tags[i]
                  for i in range(1, count)]
        if pts is not None:
            position.x, position.y = float(pts[0, 0]), float(pts[0, 1])
        head = self._spawn_checked(first, views)
        ids = np.empty(count, np.int64)
        ids[0] = head
        table = self.table
        template_row = table.row_of(head) if views else -1
        start = table.n  # the members' rows will be start, start + 1, ... (appended in order)
        member_views = bound_copies(views, table, start, count - 1) if views else [[] for _ in range(count - 1)]
        create = esper.create_entity
        for c in sparse:
            self._structure[type(c)] += 1
        for i, own in enumerate(others, start=1):
            ids[i] = create(*own, *member_views[i - 1])
        if views:
            rows = table.add_rows_like(ids[1:], template_row)
            table.bind_rows(rows.tolist(), member_views)
            if pts is not None:
                table.pos[rows] = pts[1:]
                if self.map is not None:
                    heights = self.map.surface_height(pts[1:])
                    table.elevation[rows] = np.where(np.isfinite(heights), heights, 0.0)
        for i, own in enumerate(others, start=1):
            for c in own:
                if isinstance(c, Path):
                    c.report_to(self._rewritten_paths, self._stale_paths, int(ids[i]))
                elif isinstance(c, PathRequest):
                    c.report_to(self._changed_requests, int(ids[i]))
        return ids

    def _surface_at(self, point: np.ndarray) -> float:
        height = self.map.surface_height(np.asarray(point, np.float64).reshape(1, 2))[0]
        return float(height) if np.isfinite(height) else 0.0

    def despawn(self, entity: int) -> None:
        """Remove ``entity`` at the end of the current tick (at once between ticks).
        Despawning an entity that is already gone, or already queued, does nothing; an
        ``entity`` that is not an integer id raises ValueError."""
        self._enter()
        entity = entity_id("despawn", entity)
        if not esper.entity_exists(entity) or entity in self._pending_despawn:
            return
        self._pending_despawn[entity] = None
        if not self._stepping:
            self._apply_despawns()

    def despawn_many(self, entities) -> None:
        """``despawn`` for many entities at once (a crowd leaving): the same end state as
        despawning them one by one in the order given, with the table's columns moved once.
        ValueError, before any is despawned, when one is not an integer id."""
        self._enter()
        for entity in entity_ids("despawn_many", entities):
            if esper.entity_exists(entity):
                self._pending_despawn[entity] = None
        if not self._stepping:
            self._apply_despawns()

    def _apply_despawns(self) -> None:
        if not self._pending_despawn:  # most ticks: nobody left
            return
        pending = list(self._pending_despawn)
        self._despawned.extend(pending)
        table = self.table
        ids = np.fromiter(pending, np.int64, len(pending))
        with_rows = ids[table.rows_of(ids) >= 0]
        if with_rows.size:
            table.remove_rows(with_rows, TableView.unbind_all)
        delete = esper.delete_entity
        for entity in pending:
            delete(entity, immediate=True)
        self._pending_despawn.clear()

    def set_link_enabled(self, index: int, enabled: bool) -> None:
        """Enable or disable the map's off-mesh link ``index`` (``[[map.link]]`` in file order; a
        door opened or closed). On the next tick the GraphBuildSystem adds or removes its edges,
        and the paths through a disabled link go stale and are re-planned. IndexError when the
        map has no such link."""
        if self.nav_links is None:
            raise IndexError(f"set_link_enabled: no link {index!r} (the map has no off-mesh links)")
        self.nav_links.set_enabled(index, enabled)

    def exists(self, entity: int) -> bool:
        self._enter()
        return esper.entity_exists(entity) and entity not in self._pending_despawn

    def get(self, entity: int, component_type: type[C]) -> C:
        """The ``component_type`` component of ``entity``; KeyError naming both when absent."""
        self._enter()
        component = esper.try_component(entity, component_type) if esper.entity_exists(entity) else None
        if component is None:
            raise KeyError(f"entity {entity} has no {component_type.__name__}")
        return component

    def try_get(self, entity: int, component_type: type[C]) -> C | None:
        self._enter()
        return esper.try_component(entity, component_type) if esper.entity_exists(entity) else None

    def add_component(self, entity: int, component: Any) -> None:
        """Attach a sparse component (PathRequest, Path, tags) to an existing entity (one it
        already has of that type is replaced). Checked first, so a refused call changes nothing:
        NoSuchEntity (a KeyError) naming the entity and the component when there is no such
        entity; ValueError for a view component (they go to ``spawn``), a class given for an
        instance, or a Path or PathRequest that another entity holds."""
        self._enter()
        entity = entity_id("add_component", entity)
        check_component(f"add_component to entity {entity}", component)
        if isinstance(component, TableView):
            raise ValueError(f"add_component: give {type(component).__name__} to spawn(), not afterwards")
        if not esper.entity_exists(entity):
            raise NoSuchEntity(f"add_component: no entity {entity} in this World (its {type(component).__name__} "
                               "was not added)")
        check_unowned(f"add_component to entity {entity}", component, self._owner_of, entity)
        replaced = esper.try_component(entity, type(component))
        if replaced is not component and isinstance(replaced, (Path, PathRequest)):
            replaced.__dict__.pop("_owner", None)  # (its edits concern this World no more)
        esper.add_component(entity, component)
        self._structure[type(component)] += 1
        if isinstance(component, Path):
            component.report_to(self._rewritten_paths, self._stale_paths, entity)
        elif isinstance(component, PathRequest):
            component.report_to(self._changed_requests, entity)

    def take_rewritten_paths(self) -> np.ndarray:
        """Entities whose ``Path.waypoints``, ``radius`` or ``mode`` was assigned since the last
        call, ascending (int64); the record is cleared. The PathFollowSystem calls this once per
        tick."""
        if not self._rewritten_paths:
            return _NONE
        taken = np.fromiter(sorted(self._rewritten_paths), np.int64, len(self._rewritten_paths))
        self._rewritten_paths.clear()
        return taken

    def take_stale_paths(self) -> np.ndarray:
        """Entities whose ``Path.status`` was set to ``"stale"`` since the last call, ascending
        (int64); the record is cleared. The PathfindSystem calls this once per tick."""
        if not self._stale_paths:
            return _NONE
        taken = np.fromiter(sorted(self._stale_paths), np.int64, len(self._stale_paths))
        self._stale_paths.clear()
        return taken

    def take_changed_requests(self) -> np.ndarray:
        """Entities whose ``PathRequest`` had a field assigned since the last call, ascending
        (int64); the record is cleared. The PathfindSystem calls this once per tick."""
        if not self._changed_requests:
            return _NONE
        taken = np.fromiter(sorted(self._changed_requests), np.int64, len(self._changed_requests))
        self._changed_requests.clear()
        return taken

    def remove_component(self, entity: int, component_type: type) -> Any:
        """Detach a sparse component (PathRequest, Path, tags) from ``entity``; returns it, or
        None when it had none. The view components live in the agent table for the entity's
        life: removing one is refused (despawn the entity and spawn it again without it).
        NoSuchEntity (a KeyError) when there is no such entity; nothing changes then."""
        if not isinstance(component_type, type):
            raise ValueError(f"remove_component: expected a component class (e.g. PathRequest), got "
                             f"{type(component_type).__name__} {component_type!r:.60}")
        if issubclass(component_type, TableView):
            raise ValueError(f"remove_component: {component_type.__name__} lives in the agent table with the "
                             "entity's row; despawn the entity and spawn it again without it")
        self._enter()
        entity = entity_id("remove_component", entity)
        if not esper.entity_exists(entity):
            raise NoSuchEntity(f"remove_component: no entity {entity} in this World (no {component_type.__name__} "
                               "to remove)")
        removed = esper.try_remove_component(entity, component_type)
        if removed is not None:
            self._structure[component_type] += 1
            if isinstance(removed, (Path, PathRequest)):
                removed.__dict__.pop("_owner", None)  # (its edits concern this World no more)
        return removed

    def _owner_of(self, component: Any) -> int | None:
        """The live entity of this World that holds ``component`` (a Path or PathRequest, which
        report their changes to it), else None."""
        owner = component.__dict__.get("_owner") if isinstance(component, (Path, PathRequest)) else None
        if owner is None or owner[0] is not (self._rewritten_paths if isinstance(component, Path)
                                             else self._changed_requests):
            return None
        entity = owner[-1]
        return entity if esper.try_component(entity, type(component)) is component else None

    def structure_version(self, component_type: type) -> int:
        """A counter bumped whenever a ``component_type`` component is given to or taken from
        an entity (spawn, add_component, remove_component; not despawns: see
        ``despawned_since``). A system that caches a query checks it instead of re-querying
        esper, whose every query is rebuilt in O(entities) after any change."""
        return self._structure[component_type]

    def despawned_since(self, cursor: int) -> tuple[np.ndarray, int]:
        """(entities despawned since ``cursor``, the new cursor); start from cursor 0. The World
        keeps every despawned id (8 bytes each) so any number of systems can follow."""
        if cursor == len(self._despawned):
            return _NONE, cursor
        gone = self._despawned[cursor:]
        return np.fromiter(gone, np.int64, len(gone)), len(self._despawned)

    def query(self, *component_types: type) -> list[tuple[int, tuple]]:
        """esper's ``get_components`` in this World: for sparse components, not per-agent loops."""
        self._enter()
        return esper.get_components(*component_types)

    def entities(self) -> list[int]:
        self._enter()
        return sorted(esper.get_entities())

    def find(self, component_type: type) -> list[int]:
        """Entities carrying ``component_type``, in id order."""
        self._enter()
        return sorted(e for e, _ in esper.get_component(component_type))

    # --- systems and the tick -----------------------------------------------------------------

    def add_systems(self, *systems: System | Callable[[World], None], before: str | None = None,
                    after: str | None = None) -> None:
        """Register systems. The six built-ins (``name`` in SYSTEM_ORDER) run in that fixed order
        whatever the call order, and take no ``before``/``after``. Any other system, or a plain
        function ``fn(world)``, is one of the user's own: it needs ``before=`` and/or ``after=``
        naming a built-in (registered or not: the places are fixed), and several at one place
        run in the order they were added. ValueError names what is wrong: an unknown anchor
        (with a did-you-mean), a missing place, a name registered twice; then none of the systems
        is registered. Added during a tick (by a system), a system runs from the next tick on."""
        self._enter()
        planned = self._plan(systems, before, after)
        for system, priority, place in planned:
            self._install(system, priority, place)

    def add_system(self, system: System | Callable[[World], None], *, before: str | None = None,
                   after: str | None = None) -> System:
        """Register one system (see ``add_systems``) and return it (a function comes back
        wrapped in a FunctionSystem): ``world.add_system(Counter(), after="PathFollowSystem")``."""
        self._enter()
        return self._install(*self._plan((system,), before, after)[0])

    def _plan(self, items, before: str | None, after: str | None) -> list[tuple[System, int, int | None]]:
        """Each of ``items`` as a System with its esper priority and its place (None for a
        built-in; see ``system_place``), every check made (against
        the registered systems and the ones before it in ``items``) and nothing registered."""
        names = {s.name for s in self._systems}
        places = list(self._user_places.values())
        planned = []
        for item in items:
            system = item if isinstance(item, System) else FunctionSystem(item)
            name = system.name or type(system).__name__
            if name in names:
                raise ValueError(f"add_systems: a {name} is already registered (systems are known by name: "
                                 "give the second one its own, as the `name` attribute of a System or "
                                 "ecs_nav.FunctionSystem(fn, name=...))")
            if name in SYSTEM_ORDER:
                if before is not None or after is not None:
                    raise ValueError(f"add_systems: {name} is a built-in with a fixed place in the tick "
                                     f"({', '.join(SYSTEM_ORDER)}); before=/after= place systems of your own")
                priority, place = system_priority(name), None
            else:
                place = system_place(before, after)
                priority = place_priority(place, places.count(place))
                places.append(place)
            names.add(name)
            planned.append((system, priority, place))
        return planned

    def _install(self, system: System, priority: int, place: int | None) -> System:
        if not system.name:
            system.name = type(system).__name__
        if place is not None:
            self._user_places[system.name] = place
        esper.add_processor(system, priority=priority)
        # a new list, not the old one sorted in place: a tick that is running one (a system that
        # adds a system) goes on over the systems it started with
        self._systems = sorted([*self._systems, system], key=lambda s: -s.priority)
        self.timings_ms.setdefault(system.name, 0.0)
        self.warmup_ms.setdefault(system.name, 0.0)
        watch_compilation()
        return system

    @property
    def systems(self) -> tuple[System, ...]:
        return tuple(self._systems)

    def system(self, name: str) -> System | None:
        return next((s for s in self._systems if s.name == name), None)

    def step(self) -> None:
        """Advance one fixed tick: every system of ``add_systems`` in order (``run_timed``), then
        despawns, then ``tick`` + 1, then event delivery (each event to its ``on`` callbacks).

        A tick is one at a time: ``step`` (or ``run``) called inside a tick, by a system or an
        event callback, raises RuntimeError and changes nothing.

        When a system raises, the tick stops there and the exception propagates, with a note
        naming the system and the tick (``stopped_at`` holds them too, until a tick completes):
        the systems before it have run and their changes stay, the ones after it have not run;
        entities despawned during the half tick are removed; the events it emitted stay in
        ``events`` and are not delivered; the tick does not count (``tick`` and ``time`` are
        unchanged). The World is consistent: the next ``step`` runs a whole tick, from the first
        system. When an event callback raises, the tick has counted; the exception propagates
        with a note naming the event, and the callbacks after it in that tick are not called."""
        self._enter()
        if self._in_tick:
            raise RuntimeError(f"World.step: called inside tick {self.tick} (by a system or an event callback): a "
                               "tick cannot run inside another; step again after this step() returns")
        self._in_tick = True
        try:
            self._tick()
        finally:
            self._in_tick = False

    def _tick(self) -> None:
        self.events = []
        self._stepping = True
        try:
            esper.clear_dead_entities()  # (as esper.process does first)
            self.run_timed(self._systems)
        except BaseException as exc:
            self._stepping = False
            self._apply_despawns()
            self.stopped_at = (self.tick, self._failed_system)
            exc.add_note(f"ecs_nav: tick {self.tick} stopped in {self._failed_system}: the systems before it ran, "
                         f"the ones after it did not; the tick did not count (world.tick is still {self.tick}), "
                         "its events were not delivered (see World.step)")
            raise
        self._stepping = False
        self._apply_despawns()
        self.stopped_at = None
        events, self.tick = self.events, self.tick + 1
        for event in events:
            for fn in self._subscribers.get(type(event), ()):
                try:
                    fn(event)
                except BaseException as exc:
                    exc.add_note(f"ecs_nav: in a {type(event).__name__} callback ({getattr(fn, '__name__', fn)!r}) "
                                 f"after tick {self.tick - 1}: the tick counted; the callbacks after this one in "
                                 "that tick were not called (see World.step)")
                    raise

    def run_timed(self, systems: Iterable[System]) -> None:
        """Run each system's ``update`` in turn, adding its time to ``timings_ms`` and the time
        its kernels spent compiling or loading from numba's cache to ``warmup_ms`` instead (so a
        system's time is the time its work takes). One clock reading ends a system's time and
        starts the next one's: a system whose ``update`` returns at once adds about 0.5 µs to a tick,
        against 1.2 with two readings around each and esper's ``process`` loop (measured 2026-11-27
        on a 2-core AMD EPYC VM). The warm-up total is read as an attribute while no compile is
        under way (``warmup_seconds()`` is called only then): 0.03 µs less a system."""
        timings, warmups, clock, totals = self.timings_ms, self.warmup_ms, time.perf_counter, warmup_totals
        warmup, start = warmup_seconds(), clock()
        system = None
        try:
            for system in systems:
                system.update(self)
                now = clock()
                if not totals.lock_depth and totals.seconds == warmup:  # (warmup_seconds() == warmup)
                    timings[system.name] += (now - start) * 1000.0
                else:
                    warmup_now = warmup_seconds()
                    warmed, warmup = warmup_now - warmup, warmup_now
                    timings[system.name] += (now - start - warmed) * 1000.0
                    warmups[system.name] += warmed * 1000.0
                start = now
        except BaseException:
            self._failed_system = getattr(system, "name", "") or type(system).__name__
            raise

    def run(self, ticks: int) -> None:
        """Advance ``ticks`` fixed ticks (an integer >= 0)."""
        if isinstance(ticks, float) and ticks.is_integer():
            ticks = int(ticks)
        ticks = check_number("World.run", "ticks", ticks, integer=True)
        if ticks < 0:
            raise ValueError(f"World.run.ticks: must be >= 0, got {ticks}")
        for _ in range(ticks):
            self.step()

    def close(self) -> None:
        """Drop this World's esper context. The World cannot be used afterwards. Refused
        (RuntimeError) inside a tick: close it after ``step`` returns."""
        if self._closed:
            return
        if self._in_tick:
            raise RuntimeError(f"World.close: called inside tick {self.tick} (by a system or an event callback); "
                               "close the World after step() returns")
        if esper.current_world == self._name:
            esper.switch_world("default")
        esper.delete_world(self._name)
        self._closed = True

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- events -------------------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """Queue ``event`` for this tick (systems call this)."""
        self.events.append(event)
        self.event_counts[type(event).__name__] += 1

    def on(self, event_type: type, fn: Callable[[Any], None]) -> None:
        """Call ``fn(event)`` for each ``event_type`` event, at the end of the tick that emits it.
        Subscribers are held strongly (a lambda stays subscribed). ValueError when
        ``event_type`` is not a class or ``fn`` not callable."""
        if not isinstance(event_type, type):
            raise ValueError(f"World.on: expected an event class (e.g. TargetReached), got {event_type!r:.60}")
        if not callable(fn):
            raise ValueError(f"World.on: expected a function of the event, got {type(fn).__name__} {fn!r:.60}")
        self._subscribers[event_type].append(fn)

    def off(self, event_type: type, fn: Callable[[Any], None]) -> None:
        """Stop calling ``fn`` for ``event_type`` events; ValueError when it was not subscribed."""
        subscribed = self._subscribers.get(event_type, [])
        if fn not in subscribed:
            raise ValueError(f"World.off: {getattr(fn, '__name__', fn)!r} is not subscribed to "
                             f"{getattr(event_type, '__name__', event_type)} events")
        subscribed.remove(fn)

    # --- determinism --------------------------------------------------------------------------

    def state_digest(self) -> str:
        """A hash of all simulation state: tick, every table column (rows in entity order), the
        sparse path state, the RNG, the nav graph version, the systems' own state and the
        ``digest_bytes()`` of every resource that has one (the side view's level and characters)."""
        self._enter()
        h = hashlib.blake2b(digest_size=16)
        h.update(np.int64(self.tick).tobytes())
        for name, column in self.table.snapshot().items():
            h.update(name.encode())
            h.update(np.ascontiguousarray(column).tobytes())
        for entity, path in sorted(esper.get_component(Path), key=lambda item: item[0]):
            h.update(np.int64(entity).tobytes())
            h.update(path.nodes.tobytes())
            h.update(path.waypoints.tobytes())
            h.update(f"{path.index}|{path.status}|{path.direction}|{path.mode}".encode())
        h.update(repr(self.rng.bit_generator.state).encode())
        h.update(str(getattr(self.nav_graph, "version", -1)).encode())
        for system in self._systems:
            if not system.reads_only:
                h.update(system.state())
        for name in sorted(self.resources):  # resources that hold simulation state (a side-view level)
            digest_bytes = getattr(self.resources[name], "digest_bytes", None)
            if digest_bytes is not None:
                h.update(name.encode())
                h.update(digest_bytes())
        return h.hexdigest()

    def summary(self) -> dict[str, Any]:
        """Counts and timings for reports: ticks, agents (side-view characters too, when there
        is a level), events by type (``event_count_table``: the five built-in ones always, zeros
        included), ms per system (``timings_ms``, the work) and ms its kernels
        took to compile or load from numba's cache on their first calls (``warmup_ms``)."""
        return {
            "ticks": self.tick,
            "agents": int(np.count_nonzero(self.table.live("is_agent"))),
            "entities": len(self.entities()),
            **({"characters": self.resources[PLATFORMER].count} if PLATFORMER in self.resources else {}),
            "events": event_count_table(self.event_counts),
            "timings_ms": {s.name: round(self.timings_ms[s.name], 3) for s in self._systems},
            "warmup_ms": {s.name: round(self.warmup_ms[s.name], 3) for s in self._systems},
        }
