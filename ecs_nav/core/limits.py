"""The documented bounds of every input, and the one check of a field's type and size.

Every number that reaches a compiled kernel has passed through here once, at the boundary
where it entered (a component's constructor or setter, a map shape, a scene file), so the
kernels can trust it: finite, and small enough that no product of two of them overflows an
array size or an integer.

``check_value`` is driven by a field's annotation and default, not by a list of fields: a
field added to a component is checked the day it is added. The annotation says the type; the
default says whether infinity means "no limit" (a field whose default is ``inf`` accepts it).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
from typing import Any

import numpy as np

COORDINATE_LIMIT = 1e6
"""m. Every coordinate (positions, map bounds and shape centres, goals, targets, waypoints,
spawn areas, tile map origins) and every length (radii, sizes, heights, distances, scan
ranges) is at most this in magnitude."""

NUMBER_LIMIT = 1e6
"""Any other real field (weights, forces, masses, turn speeds, jitter) is at most this in
magnitude."""

SPEED_LIMIT = 1e3
"""m/s. ``Agent.max_speed`` and each component of a ``Velocity`` are at most this."""

INTEGER_LIMIT = 2**31 - 1
"""Integer fields (tick counts, search budgets, layers) are at most this in magnitude."""

SEED_LIMIT = 2**64 - 1
"""Seeds are integers in ``[0, SEED_LIMIT]``."""

DT_LIMIT = 1.0
"""s. A tick is at most one second long."""

ENTITY_LIMIT = 200_000
"""Entities in one scene file (a crowd counts all its members)."""

NAV_NODE_LIMIT = 2**21
"""Node slots of a scanned nav graph: ``(2 * scan_x / spacing + 1) * (2 * scan_y / spacing + 1)``
(without a ``[navmap]`` the scan covers the map's bounds at the default spacing), on every floor."""

MAX_FLOORS = 8
"""The most walkable surfaces over one grid point a nav graph holds (``NavMap.floors``,
``ecs_nav.nav.build.ScanParams.floors``)."""

TILE_LIMIT = 2**21
"""Tiles (rows x columns) of a tile map (``grid`` or ``movingai``)."""

SHAPE_LIMIT = 100_000
"""Static shapes (boxes, ramps and circles together) of one map."""

WAYPOINT_LIMIT = 100_000
"""Waypoints of one ``Path``."""

NEIGHBOUR_LIMIT = 1024
"""``Avoidance.max_neighbours`` is at most this (each neighbour is a half-plane of the agent's
linear program, every tick)."""

NESTING_LIMIT = 32
"""Tables and arrays nested inside one another in a scene file."""

SCENE_SIZE_LIMIT = 16 * 2**20
"""Bytes of a scene file."""

SWEEP_RUN_LIMIT = 100_000
"""Runs of one sweep: the product of its parameters' value counts (each run is a World of its
own; a hundred thousand is days of runs already)."""

FRAME_SIZE_LIMIT = 8192
"""Pixels on each side of a ``--screenshot`` or ``--record`` frame."""


def describe(value: Any) -> str:
    """A value as messages quote it: short, and on one line."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_number(owner: str, name: str, value: Any, *, limit: float = NUMBER_LIMIT, integer: bool = False,
                 allow_inf: bool = False) -> float | int:
    """``value`` as a float (an int with ``integer``) that is finite (or +-inf with
    ``allow_inf``), at most ``limit`` in magnitude and not subnormal (0, or at least
    ``sys.float_info.min`` in magnitude: a quotient of a subnormal overflows, as a steering
    look-ahead by a max_speed of 1e-310 would); else ValueError naming ``owner.name``."""
    where = f"{owner}.{name}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{where}: expected {kind}, got {type(value).__name__} {describe(value)}")
    if integer:
        if isinstance(value, (float, np.floating)) and not (math.isfinite(value) and float(value).is_integer()):
            raise ValueError(f"{where}: expected an integer, got {describe(value)}")
        value = int(value)
        if abs(value) > INTEGER_LIMIT:
            raise ValueError(f"{where}: must be at most {INTEGER_LIMIT} in magnitude, got {describe(value)}")
        return value
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{where}: must be a finite number, got {describe(value)}")
    if math.isfinite(v) and abs(v) > limit:
        raise ValueError(f"{where}: must be at most {limit:g} in magnitude, got {describe(value)}")
    if v != 0.0 and abs(v) < sys.float_info.min:
        raise ValueError(f"{where}: {describe(value)} is subnormal (nonzero and under {sys.float_info.min:.4g} in "
                         "magnitude): too small to compute with")
    return v


# --- the generic check, driven by annotations ---------------------------------------------------


def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotation of each constructor parameter of ``cls`` (a dataclass's fields,
    else its ``__init__``'s parameters)."""
    target = cls if dataclasses.is_dataclass(cls) else cls.__init__
    module = __import__(cls.__module__, fromlist=["_"])
    hints = typing.get_type_hints(target, globalns=vars(module))
    hints.pop("return", None)
    return hints


def _is_optional(annotation) -> tuple[bool, tuple]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return type(None) in args, tuple(a for a in args if a is not type(None))
    return False, (annotation,)


def type_name(annotation) -> str:
    """What a field of this annotation takes, in a message's words."""
    optional, options = _is_optional(annotation)
    words = [_one_type_name(a) for a in options]
    return " or ".join(dict.fromkeys(words))


def _one_type_name(annotation) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "a string"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return "an array of numbers"
        return f"an array of {len(args)} numbers"
    if origin is list:
        return f"an array of {_one_type_name(args[0]) if args else 'values'}"
    if origin is dict:
        return "a table"
    return "a value"


def check_value(owner: str, name: str, annotation, value: Any, default: Any = None) -> Any:
    """Check ``value`` against the field's ``annotation``: its type, that its numbers are finite
    (or infinite where the default is) and within the bounds above; returns it (tuples for
    arrays). A ``None`` passes where the annotation allows it; the constructor checks ranges
    particular to the field. Raises ValueError naming ``owner.name`` and what was expected."""
    optional, options = _is_optional(annotation)
    if value is None:
        if optional:
            return None
        raise ValueError(f"{owner}.{name}: expected {type_name(annotation)}, got nothing (None)")
    allow_inf = isinstance(default, float) and math.isinf(default)
    out_of_range = None
    for option in options:
        try:
            return _check_one(owner, name, option, value, allow_inf)
        except WrongType:
            continue
        except ValueError as exc:  # the right type, out of range: that message is the precise one
            out_of_range = out_of_range or exc
    if out_of_range is not None:
        raise out_of_range
    raise WrongType(f"{owner}.{name}: expected {type_name(annotation)}, got {_kind(value)} {describe(value)}")


class WrongType(ValueError):
    """A value of the wrong type (as against one of the right type out of its range)."""


def _kind(value) -> str:
    return {dict: "a table", list: "an array", tuple: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def _wrong(owner, name, annotation, value):
    return WrongType(f"{owner}.{name}: expected {type_name(annotation)}, got {_kind(value)} {describe(value)}")


def _check_one(owner: str, name: str, annotation, value: Any, allow_inf: bool) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise _wrong(owner, name, annotation, value)
    if annotation is int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise _wrong(owner, name, annotation, value)
        return check_number(owner, name, value, integer=True)
    if annotation is float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise _wrong(owner, name, annotation, value)
        check_number(owner, name, value, allow_inf=allow_inf)
        return value  # as given (the constructor converts; its messages quote the value as written)
    if annotation is str:
        if not isinstance(value, str):
            raise _wrong(owner, name, annotation, value)
        return value
    if origin is tuple:
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, (list, tuple)):
            raise _wrong(owner, name, annotation, value)
        if len(args) == 2 and args[1] is Ellipsis:
            item_types = (args[0],) * len(value)
        else:
            item_types = args
            if len(value) != len(args):
                raise _wrong(owner, name, annotation, value)
        return tuple(_check_item(owner, f"{name}[{i}]", t, v, allow_inf)
                     for i, (t, v) in enumerate(zip(item_types, value)))
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise _wrong(owner, name, annotation, value)
        item = args[0] if args else Any
        return [v if item is Any else _check_item(owner, f"{name}[{i}]", item, v, allow_inf)
                for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _wrong(owner, name, annotation, value)
        key_type, item_type = args if args else (Any, Any)
        out = {}
        for k, v in value.items():
            if key_type is str and not isinstance(k, str):
                raise _wrong(owner, name, annotation, value)
            out[k] = v if item_type is Any else _check_item(owner, f"{name}.{k}", item_type, v, allow_inf)
        return out
    return value  # arrays, objects: the constructor checks them


def _check_item(owner: str, name: str, annotation, value: Any, allow_inf: bool) -> Any:
    """An item of an array or table the field's type takes: an item of the wrong type is that
    item's error (``SteeringWeights.weights.seek: expected a number, got a string '1'``), not the
    whole value's."""
    try:
        return _check_one(owner, name, annotation, value, allow_inf)
    except WrongType as exc:
        raise ValueError(str(exc)) from None


class CheckedFields:
    """Base of the sparse dataclass components: a field assigned after construction is checked
    as the constructor checks it (its annotation, then the class's ``__post_init__`` run on a
    trial copy), so a bad value fails where it is set, naming the field."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        post = cls.__dict__.get("__post_init__")

        def __post_init__(self):
            types_ = field_types(type(self))
            defaults = {f.name: f.default for f in dataclasses.fields(self)}
            for f in dataclasses.fields(self):
                value = check_value(type(self).__name__, f.name, types_[f.name], self.__dict__[f.name],
                                    defaults[f.name])
                object.__setattr__(self, f.name, value)
            if post is not None:
                post(self)
            object.__setattr__(self, "_checked", True)

        cls.__post_init__ = __post_init__

    def __setattr__(self, name: str, value: Any) -> None:
        if not self.__dict__.get("_checked") or name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        names = [f.name for f in dataclasses.fields(self)]
        if name not in names:
            raise AttributeError(f"{type(self).__name__} has no field {name!r} (fields: {', '.join(names)})")
        trial = object.__new__(type(self))
        trial.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_checked"})
        trial.__dict__[name] = value
        trial.__post_init__()
        for key in names:
            object.__setattr__(self, key, trial.__dict__[key])
