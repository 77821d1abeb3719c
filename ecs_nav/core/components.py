"""Components: what an entity carries.

``Position``, ``Velocity``, ``Agent``, ``Collider`` (its radius) and ``SteeringWeights`` are
*views*: once ``World.spawn`` binds them to a row of the AgentTable, reading or writing a field
(``pos.x = 3``) touches the table column that the systems read. Unbound (before spawning, or
after despawning) they hold their own values. The sparse components (``PathRequest``,
``Path``, ``NavFilter``, ``NavMap``: ``ecs_nav.core.nav_components``, importable from here too;
the tags) are plain objects that live in esper only.

Constructors validate: a negative radius, a NaN coordinate or an unknown behaviour name raises
``ValueError`` naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ecs_nav.core.behaviours import BEHAVIOURS
from ecs_nav.core.field_checks import (
    check_coordinate,
    check_length,
    check_length_or_zero,
    check_mass,
    check_positive,
    check_speed,
)
from ecs_nav.core.limits import (
    COORDINATE_LIMIT,
    INTEGER_LIMIT,
    NEIGHBOUR_LIMIT,
    SPEED_LIMIT,
    check_number,
    check_value,
    describe,
)
from ecs_nav.core.nav_components import (  # noqa: F401 (every component is importable from here)
    PATH_METHODS,
    PATH_MODES,
    PATH_STATUSES,
    NavFilter,
    NavMap,
    Path,
    PathRequest,
    nav_node_slots,
)
from ecs_nav.core.table import FOLLOW_NONE, avoidance_columns

COMBINERS = ("weighted_sum", "prioritized", "dithered")
"""Force combiners (Buckland ch. 3), in the order of the table's ``combiner`` codes."""

DECELERATIONS = {"slow": 3.0, "normal": 2.0, "fast": 1.0}
"""Arrive's deceleration names and their seed values."""


class Column:
    """A view field: reads the table when bound, the component's own storage when not."""

    def __init__(self, column: str, index: int | None = None, check=None):
        self.column, self.index, self.check = column, index, check

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        table = obj._table
        if table is None:
            return obj._local[self.name]
        arr = getattr(table, self.column)
        value = arr[obj._row] if self.index is None else arr[obj._row, self.index]
        return value.item() if isinstance(value, np.generic) else value

    def __set__(self, obj, value):
        if self.check is not None:
            value = self.check(type(obj).__name__, self.name, value)
        table = obj._table
        if table is None:
            obj._local[self.name] = value
            return
        arr = getattr(table, self.column)
        if self.index is None:
            arr[obj._row] = value
        else:
            arr[obj._row, self.index] = value


class TableView:
    """Base of the view components: binding, unbinding and a readable repr."""

    _fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values):
        object.__setattr__(self, "_table", None)
        object.__setattr__(self, "_row", -1)
        object.__setattr__(self, "_local", {})
        for name in self._fields:
            setattr(self, name, values[name])

    @property
    def bound(self) -> bool:
        return self._table is not None

    def bind_row(self, table, row: int) -> None:
        """Write the held values into ``row`` and read through the table from now on."""
        values = {name: getattr(self, name) for name in self._fields}
        self._table, self._row = table, row
        for name, value in values.items():
            setattr(self, name, value)
        table.bind(row, self)

    def move_to_row(self, row: int) -> None:
        """Read ``row`` of the same table from now on: the table moved this view's values there
        (a removal fills the gap it leaves with the last row)."""
        self._row = row

    def unbind_row(self) -> None:
        """Copy the row's values back into own storage (called when the row goes away)."""
        values = {name: getattr(self, name) for name in self._fields}
        type(self)._keep_more([self], self._table, np.array([self._row]))
        self._table, self._row = None, -1
        self._local.update(values)

    @staticmethod
    def unbind_all(views: list[TableView]) -> None:
        """``unbind_row`` for many bound views at once (a bulk despawn): each field is read for
        all the views of one class in one column gather, not one descriptor call each."""
        by_class: dict[type, list[TableView]] = {}
        for view in views:
            by_class.setdefault(type(view), []).append(view)
        for cls, group in by_class.items():
            table = group[0]._table
            rows = np.fromiter((v._row for v in group), np.int64, len(group))
            columns = []
            for name in cls._fields:
                column = getattr(cls, name)
                arr = getattr(table, column.column)
                columns.append((arr[rows] if column.index is None else arr[rows, column.index]).tolist())
            cls._keep_more(group, table, rows)
            fields = cls._fields
            for view, values in zip(group, zip(*columns)):
                own = view.__dict__
                own["_table"], own["_row"] = None, -1
                own["_local"].update(zip(fields, values))

    @classmethod
    def _keep_more(cls, views: list[TableView], table, rows: np.ndarray) -> None:
        """What a class keeps beyond its fields when its views unbind (``unbind_row`` and
        ``unbind_all``), read for all ``views`` (bound to ``rows``) at once. Nothing here."""

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = object.__hash__

    def __repr__(self):
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({body})"


def bound_copies(views: list[TableView], table, first_row: int, count: int) -> list[list[TableView]]:
    """``count`` sets of new views like ``views``, set k reading row ``first_row + k`` of
    ``table``, which holds (or is about to hold) the values: a crowd's members, whose rows are
    copies of the first member's. Their other attributes are the originals' (shared: never
    changed in place). Register them with ``table.bind_rows`` once the rows exist."""
    protos = [(type(v), v.__dict__) for v in views]
    new = object.__new__
    out = []
    for row in range(first_row, first_row + count):
        mine = []
        for cls, attrs in protos:
            view = new(cls)
            view.__dict__ = {**attrs, "_local": {}, "_table": table, "_row": row}
            mine.append(view)
        out.append(mine)
    return out


class Position(TableView):
    """Ground-plane position (x, y). Elevation is derived from the map by the PhysicsSystem."""

    _fields = ("x", "y")
    x = Column("pos", 0, check_coordinate)
    y = Column("pos", 1, check_coordinate)

    def __init__(self, x: float = 0.0, y: float = 0.0):
        super().__init__(x=x, y=y)

    @property
    def elevation(self) -> float:
        """Height of the surface the entity stands on (0 until spawned on a map)."""
        return float(self._table.elevation[self._row]) if self.bound else 0.0

    def as_array(self) -> np.ndarray:
        return np.array([self.x, self.y])


class Velocity(TableView):
    """Ground-plane velocity (vx, vy), in units per second."""

    _fields = ("vx", "vy")
    vx = Column("vel", 0, check_speed)
    vy = Column("vel", 1, check_speed)

    def __init__(self, vx: float = 0.0, vy: float = 0.0):
        super().__init__(vx=vx, vy=vy)

    def as_array(self) -> np.ndarray:
        return np.array([self.vx, self.vy])


class Agent(TableView):
    """A moving character's limits (seed 000 and 001 defaults)."""

    _fields = ("max_speed", "max_force", "mass", "turn_speed", "stopping_distance", "max_climb")
    max_speed = Column("max_speed", check=lambda o, n, v: check_positive(o, n, v, limit=SPEED_LIMIT))
    max_force = Column("max_force", check=check_positive)
    mass = Column("mass", check=check_mass)
    turn_speed = Column("turn_speed", check=check_positive)
    stopping_distance = Column("stopping_distance", check=check_length_or_zero)
    max_climb = Column("max_climb", check=check_length_or_zero)

    def __init__(
        self,
        max_speed: float = 5.0,
        max_force: float = 10.0,
        mass: float = 1.0,
        turn_speed: float = 10.0,
        stopping_distance: float = 1.5,
        max_climb: float = 0.5,
    ):
        super().__init__(
            max_speed=max_speed, max_force=max_force, mass=mass, turn_speed=turn_speed,
            stopping_distance=stopping_distance, max_climb=max_climb,
        )


COLLIDER_SHAPES = ("circle", "box")


def _layer(owner: str, name: str, value: Any) -> int:
    """A layer: an integer in [0, INTEGER_LIMIT]."""
    v = check_number(owner, name, value, integer=True)
    if v < 0:
        raise ValueError(f"{owner}.{name}: must be >= 0, got {value!r}")
    return v


class Collider(TableView):
    """A solid shape. Agents are circles of ``radius``; a ``box`` (size, height) entity is a
    dynamic obstacle that the GraphBuildSystem cuts out of the nav graph where it stands.

    ``layer``: agents meet only the agents of their own layer -- separation, alignment and
    cohesion count only them as neighbours, the PhysicsSystem pushes apart only their overlaps,
    and group arrival settles only against them. Agents of other layers pass through each other,
    each layer moving as a World of its own on the same map would, apart from what the layers
    share (the user guide's Crowds page, "Many small worlds as one: layers"). An entity without a
    Collider is on layer 0. A box is part of the map, for every layer."""

    _fields = ("radius", "layer")
    radius = Column("radius", check=check_length)
    layer = Column("layer", check=_layer)

    def __init__(
        self,
        radius: float = 0.5,
        shape: str = "circle",
        size: tuple[float, float] = (1.0, 1.0),
        height: float = 2.0,
        layer: int = 0,
    ):
        if not isinstance(shape, str) or shape not in COLLIDER_SHAPES:
            raise ValueError(f"Collider.shape: must be one of {', '.join(COLLIDER_SHAPES)}, got {shape!r}")
        object.__setattr__(self, "shape", shape)
        size = check_value("Collider", "size", tuple[float, float], size)
        size = tuple(check_length("Collider", "size", v) for v in size)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "height", check_length("Collider", "height", height))
        super().__init__(radius=radius, layer=layer)

    def __repr__(self):
        return (f"Collider(radius={self.radius!r}, shape={self.shape!r}, size={self.size!r}, "
                f"height={self.height!r}, layer={self.layer!r})")


def _flag(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{owner}.{name}: expected true or false, got {describe(value)}")
    return bool(value)


def _neighbour_count(owner: str, name: str, value: Any) -> int:
    v = check_number(owner, name, value, integer=True)
    if not 0 <= v <= NEIGHBOUR_LIMIT:
        raise ValueError(f"{owner}.{name}: must be from 0 to {NEIGHBOUR_LIMIT}, got {value!r}")
    return v


def _bit_set(owner: str, name: str, value: Any) -> int:
    v = check_number(owner, name, value, integer=True)
    if v < 0:
        raise ValueError(f"{owner}.{name}: must be a bit set from 0 to {INTEGER_LIMIT} (bits 0 to 30), got {value!r}")
    return v


def _priority(owner: str, name: str, value: Any) -> float:
    v = check_number(owner, name, value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{owner}.{name}: must be from 0 to 1, got {value!r}")
    return v


PASS_SIDES = {1.0: "right", -1.0: "left", 0.0: "none"}
"""``Avoidance.side``'s names by the code the table's ``avoid_side`` column holds."""


def _side_value(name: Any) -> float:
    """The table's code of an ``Avoidance.side`` name."""
    for code, known in PASS_SIDES.items():
        if name == known and isinstance(name, str):
            return code
    raise ValueError(f"Avoidance.side: must be one of {', '.join(repr(v) for v in PASS_SIDES.values())}, "
                     f"got {describe(name) if not isinstance(name, str) else repr(name)}")


def _side_code(owner: str, name: str, value: Any) -> float:
    v = check_number(owner, name, value)
    if v not in PASS_SIDES:
        raise ValueError(f"{owner}.{name}: must be 1 (right), -1 (left) or 0 (none), got {value!r}")
    return float(v)


class Avoidance(TableView):
    """Reciprocal velocity avoidance: ORCA as RVO2 computes it (``ecs_nav.motion.orca``).

    Every tick, once steering has set the agent's velocity (its *preferred* velocity: the path,
    the flow field, the behaviours), the SteeringSystem replaces it by the velocity within
    ``Agent.max_speed`` closest to it that keeps the agent from touching, within
    ``time_horizon``, the agents near it (when both avoid, each takes half of the avoiding;
    RVO2's reciprocity) and, within ``time_horizon_obst``, the map's walls (its bounds, boxes
    more than 0.5 m tall and circles; ``ecs_nav.motion.orca_obstacles``), then the PhysicsSystem
    moves it. Agents without Avoidance are avoided too (their velocity taken as it is, the
    avoiding agent taking all of it), when they have a Collider. Agents on other
    ``Collider.layer`` s, or more than the body height (2 m) apart in elevation, do not meet.

    Fields, with their units, ranges and defaults:
        enabled: whether the agent avoids (true or false; true).
        neighbour_dist: m, > 0 (5.0): other agents further than this, centre to centre, are not
            considered. RVO2's ``neighborDist``.
        max_neighbours: 0 to ``NEIGHBOUR_LIMIT`` (10): at most this many of them, the nearest
            (0: walls only). RVO2's ``maxNeighbors``.
        time_horizon: s, > 0 (2.0): how far ahead collisions with agents are avoided; longer is
            safer and more timid. RVO2's ``timeHorizon``.
        time_horizon_obst: s, > 0 (1.0): the same for walls. RVO2's ``timeHorizonObst``.
        layers: a bit set, 0 to 2**31 - 1 (1): the avoidance layers the agent is on. Godot's
            ``avoidance_layers``. An agent without Avoidance is on layer 1.
        mask: a bit set, 0 to 2**31 - 1 (1): the agent avoids another only when ``mask & other
            .layers`` is not 0. Godot's ``avoidance_mask``.
        priority: 0 to 1 (1.0): the agent ignores agents of lower priority, which take all of the
            avoiding between the two. Godot's ``avoidance_priority``.
        side: "right", "left" or "none" ("none"): the side on which it passes agents walking
            against it, as pedestrians keep to one side: while agents come against it within
            15 m ahead and 3 m of its line it drifts to that side, turned by up to 45 degrees,
            and it passes an oncoming neighbour on that side, so that opposing streams form
            lanes (``ecs_nav.motion.orca_lanes``). "none" is RVO2's agent. Give a crowd one
            side (its prefab): agents of opposite sides meeting head on part toward the same wall.
    """

    _fields = ("enabled", "neighbour_dist", "max_neighbours", "time_horizon", "time_horizon_obst", "layers", "mask",
               "priority", "side_code")
    enabled = Column("avoids", check=_flag)
    neighbour_dist = Column("avoid_neighbour_dist", check=check_length)
    max_neighbours = Column("avoid_max_neighbours", check=_neighbour_count)
    time_horizon = Column("avoid_time_horizon", check=check_positive)
    time_horizon_obst = Column("avoid_time_horizon_obst", check=check_positive)
    layers = Column("avoid_layers", check=_bit_set)
    mask = Column("avoid_mask", check=_bit_set)
    priority = Column("avoid_priority", check=_priority)
    side_code = Column("avoid_side", check=_side_code)

    def __init__(
        self,
        enabled: bool = True,
        neighbour_dist: float = 5.0,
        max_neighbours: int = 10,
        time_horizon: float = 2.0,
        time_horizon_obst: float = 1.0,
        layers: int = 1,
        mask: int = 1,
        priority: float = 1.0,
        side: str = "none",
    ):
        super().__init__(enabled=enabled, neighbour_dist=neighbour_dist, max_neighbours=max_neighbours,
                         time_horizon=time_horizon, time_horizon_obst=time_horizon_obst, layers=layers, mask=mask,
                         priority=priority, side_code=_side_value(side))

    @property
    def side(self) -> str:
        """"right", "left" or "none" (see the class docstring); the table holds +1, -1 or 0."""
        return PASS_SIDES[self.side_code]

    @side.setter
    def side(self, name: str) -> None:
        self.side_code = _side_value(name)

    def bind_row(self, table, row: int) -> None:
        table.add_columns(avoidance_columns())  # (once per table: a World without Avoidance never has them)
        super().bind_row(table, row)

    def __repr__(self):
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields if f != "side_code")
        return f"Avoidance({body}, side={self.side!r})"


STEERING_PARAMS = (
    "deceleration", "panic_distance", "threat_range", "wander_radius", "wander_distance",
    "wander_jitter", "detection_box_length", "feeler_length", "neighbour_radius",
)


def _weight_check(behaviour: str):
    return lambda owner, name, v: check_positive(owner, f"weights.{behaviour}", v, allow_zero=True)


def _steering_target(point):
    """SteeringWeights.target checked: a finite (x, y) within the coordinate bound, or None."""
    point = check_value("SteeringWeights", "target", tuple[float, float] | None, point)
    if point is not None and max(abs(point[0]), abs(point[1])) > COORDINATE_LIMIT:
        raise ValueError(f"SteeringWeights.target: must be at most {COORDINATE_LIMIT:g} in magnitude, got {point!r}")
    return point


def _steering_target_entity(entity):
    """SteeringWeights.target_entity checked: an entity id >= 0, or None."""
    entity = check_value("SteeringWeights", "target_entity", int | None, entity)
    if entity is not None and entity < 0:
        raise ValueError(f"SteeringWeights.target_entity: must be an entity id >= 0, got {entity!r}")
    return None if entity is None else int(entity)


class SteeringWeights(TableView):
    """Which steering behaviours an agent uses, how strongly, and how forces combine.

    ``weights`` maps behaviour names (``ecs_nav.core.behaviours.BEHAVIOURS``) to weights; unnamed
    behaviours are off (weight 0). ``combiner`` is one of ``COMBINERS``. The remaining fields
    are the behaviours' parameters (seed 001 names and defaults); ``target`` is the point that
    seek/flee/arrive aim at when no path drives the agent, ``target_entity`` the one that
    pursuit/evade watch.
    """

    _fields = ("combiner_code", *STEERING_PARAMS)
    combiner_code = Column("combiner")
    deceleration = Column("deceleration", check=check_positive)
    panic_distance = Column("panic_distance", check=lambda o, n, v: check_positive(o, n, v, limit=COORDINATE_LIMIT,
                                                                                allow_inf=True))
    threat_range = Column("threat_range", check=check_length)
    wander_radius = Column("wander_radius", check=check_length)
    wander_distance = Column("wander_distance", check=check_length_or_zero)
    wander_jitter = Column("wander_jitter", check=lambda o, n, v: check_positive(o, n, v, True))
    detection_box_length = Column("detection_box_length", check=check_length)
    feeler_length = Column("feeler_length", check=check_length)
    neighbour_radius = Column("neighbour_radius", check=check_length)

    def __init__(
        self,
        weights: dict[str, float] | None = None,
        combiner: str = "weighted_sum",
        deceleration: str | float = "normal",
        panic_distance: float = math.inf,
        threat_range: float = 100.0,
        wander_radius: float = 1.2,
        wander_distance: float = 2.0,
        wander_jitter: float = 80.0,
        detection_box_length: float = 4.0,
        feeler_length: float = 3.0,
        neighbour_radius: float = 3.0,
        target: tuple[float, float] | None = None,
        target_entity: int | None = None,
    ):
        weights = check_value("SteeringWeights", "weights", dict[str, float] | None, weights) or {}
        unknown = sorted(set(weights) - set(BEHAVIOURS))
        if unknown:
            raise ValueError(
                f"SteeringWeights.weights: unknown behaviour {unknown[0]!r}"
                f" (known: {', '.join(BEHAVIOURS)})"
            )
        if not isinstance(combiner, str) or combiner not in COMBINERS:
            raise ValueError(f"SteeringWeights.combiner: must be one of {', '.join(COMBINERS)}, got {combiner!r}")
        if isinstance(deceleration, str):
            if deceleration not in DECELERATIONS:
                raise ValueError(
                    f"SteeringWeights.deceleration: must be one of {', '.join(DECELERATIONS)} or a number,"
                    f" got {deceleration!r}"
                )
            deceleration = DECELERATIONS[deceleration]
        for behaviour, weight in weights.items():
            _weight_check(behaviour)("SteeringWeights", "weights", weight)
        object.__setattr__(self, "_weights_local", np.array([float(weights.get(b, 0.0)) for b in BEHAVIOURS]))
        object.__setattr__(self, "_target", _steering_target(target))
        object.__setattr__(self, "_target_entity", _steering_target_entity(target_entity))
        super().__init__(
            combiner_code=COMBINERS.index(combiner), deceleration=deceleration,
            panic_distance=panic_distance, threat_range=threat_range, wander_radius=wander_radius,
            wander_distance=wander_distance, wander_jitter=wander_jitter,
            detection_box_length=detection_box_length, feeler_length=feeler_length,
            neighbour_radius=neighbour_radius,
        )

    @property
    def combiner(self) -> str:
        return COMBINERS[int(self.combiner_code)]

    @property
    def target(self) -> tuple[float, float] | None:
        """The point seek/flee/arrive aim at when no path drives the agent (None: none)."""
        return self._target

    @target.setter
    def target(self, point: tuple[float, float] | None) -> None:
        point = _steering_target(point)
        object.__setattr__(self, "_target", point)
        table, row = self._table, self._row
        if table is not None and table.follow_state[row] == FOLLOW_NONE:  # (a followed path aims it itself)
            table.has_steer_target[row] = point is not None
            if point is not None:
                table.steer_target[row] = point

    @property
    def target_entity(self) -> int | None:
        """The entity pursuit/evade (and offset pursuit) watch (None: none)."""
        return self._target_entity

    @target_entity.setter
    def target_entity(self, entity: int | None) -> None:
        entity = _steering_target_entity(entity)
        object.__setattr__(self, "_target_entity", entity)
        if self.bound:
            self._table.target_entity[self._row] = -1 if entity is None else entity

    @combiner.setter
    def combiner(self, name: str) -> None:
        if not isinstance(name, str) or name not in COMBINERS:
            raise ValueError(f"SteeringWeights.combiner: must be one of {', '.join(COMBINERS)}, got {name!r}")
        self.combiner_code = COMBINERS.index(name)

    @property
    def weights(self) -> dict[str, float]:
        """Non-zero weights by behaviour name (a copy; use ``set_weight`` to change one)."""
        row = self._table.weights[self._row] if self.bound else self._weights_local
        return {b: float(w) for b, w in zip(BEHAVIOURS, row) if w != 0.0}

    def set_weight(self, behaviour: str, weight: float) -> None:
        if behaviour not in BEHAVIOURS:
            raise ValueError(
                f"SteeringWeights.weights: unknown behaviour {behaviour!r} (known: {', '.join(BEHAVIOURS)})"
            )
        w = _weight_check(behaviour)("SteeringWeights", "weights", weight)
        row = self._table.weights[self._row] if self.bound else self._weights_local
        row[BEHAVIOURS.index(behaviour)] = w

    def bind_row(self, table, row: int) -> None:
        local = self._weights_local.copy()
        super().bind_row(table, row)
        table.weights[row] = local
        table.has_steering[row] = True
        if self.target is not None:
            table.steer_target[row] = self.target
            table.has_steer_target[row] = True
        table.target_entity[row] = -1 if self.target_entity is None else self.target_entity

    @classmethod
    def _keep_more(cls, views: list[TableView], table, rows: np.ndarray) -> None:
        for view, weights in zip(views, table.weights[rows]):  # one gather: a copy, a row each
            object.__setattr__(view, "_weights_local", weights)

    def __eq__(self, other):
        if not isinstance(other, SteeringWeights):
            return NotImplemented
        return (super().__eq__(other) and self.weights == other.weights
                and self.target == other.target and self.target_entity == other.target_entity)

    __hash__ = object.__hash__

    def __repr__(self):
        return (f"SteeringWeights(weights={self.weights!r}, combiner={self.combiner!r}, "
                + ", ".join(f"{p}={getattr(self, p)!r}" for p in STEERING_PARAMS)
                + f", target={self.target!r}, target_entity={self.target_entity!r})")


# --- sparse components (esper only): the navigation ones live in core/nav_components.py -----

@dataclass
class Player:
    """Tag: the entity a human drives (WASD in the viewer) and NPCs chase."""


@dataclass
class Name:
    """A human-readable name (scene files' ``name``), for messages and lookups: a string (set
    or assigned; anything else raises ValueError, as a scene file's ``name`` does)."""

    value: str

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "value" and not isinstance(value, str):  # (one isinstance: a crowd's 100,000 names)
            raise ValueError(f"Name.value: expected a string, got {type(value).__name__} {value!r:.60}")
        object.__setattr__(self, name, value)


def entity_label(world, entity: int) -> str:
    """An entity as messages name it: ``entity "npc"`` by its Name, else ``entity 7``."""
    name = world.try_get(entity, Name)
    return f'entity "{name.value}"' if name else f"entity {entity}"


VIEW_COMPONENTS = (Position, Velocity, Agent, Collider, SteeringWeights, Avoidance)
