"""Value checks shared by the scene schema's rooms: numbers, vectors, unknown keys and a
component built from a table of fields, each turning bad input into report lines
(``report(where, message)``) instead of exceptions."""

from __future__ import annotations

import difflib
import inspect
import math
from typing import Any

from ecs_nav.core.limits import COORDINATE_LIMIT, check_value, describe, field_types


def construct(cls, fields, where, report, prefix: str | None = None):
    """``cls(**fields)`` after each field's generic check (``ecs_nav.core.limits.check_value``, from
    the class's annotations), turning bad keys, bad types and ValueErrors into report lines:
    the fields the constructor refuses, one after another (the one it names left out, the rest
    tried again, while it names a field that was given)."""
    label = f"{where} {prefix}" if prefix else where
    if not isinstance(fields, dict):
        report(label, f"must be a table of fields, got {kind_of(fields)}")
        return None
    params = {k: p for k, p in inspect.signature(cls).parameters.items() if k != "self"}
    types = field_types(cls)
    ok = True
    checked = {}
    for key, value in fields.items():
        if key not in params:
            report(f"{label}.{key}", f"unknown field{did_you_mean(key, list(params))}"
                   f" (fields: {', '.join(params)})" if params else f"unknown field ({cls.__name__} has no fields)")
            ok = False
            continue
        default = params[key].default
        try:
            checked[key] = check_value(cls.__name__, key, types.get(key, Any), value,
                                       None if default is inspect.Parameter.empty else default)
        except ValueError as exc:
            report_error(cls, params, label, exc, report)
            ok = False
    if not ok:
        return None
    first = True
    while True:
        try:
            built = cls(**checked)
            return built if first else None
        except (ValueError, TypeError) as exc:
            named = str(exc).partition(": ")[0].removeprefix(f"{cls.__name__}.").split("[")[0]
            if first or named in checked:  # (after the first, only a field given: leaving one out may
                report_error(cls, params, label, exc, report)  # break a rule between fields)
            if named not in checked:
                return None
            del checked[named]
            first = False


def report_error(cls, params, label: str, exc: Exception, report) -> None:
    message = str(exc)
    head, sep, rest = message.partition(": ")
    word, _, tail = message.partition(" ")
    if sep and head.startswith(f"{cls.__name__}."):  # "Collider.radius: must be > 0, got -1"
        report(f"{label}.{head[len(cls.__name__) + 1:]}", rest)
    elif word.split("[")[0] in params:  # "height must be a number" (the geometry's shapes)
        report(f"{label}.{word}", tail)
    else:
        report(label, message)


def number(section, key, where, report, default, integer=False, positive=False, low=None,
            high=COORDINATE_LIMIT):
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        report(f"{where}.{key}", f"expected {'an integer' if integer else 'a number'}, got {kind_of(value)} "
               f"{describe(value)}")
        return default
    if not math.isfinite(value) or (positive and value <= 0):
        report(f"{where}.{key}", f"must be {'> 0' if positive else 'finite'}, got {describe(value)}")
        return default
    if (low is not None and value < low) or abs(value) > high:
        span = f"from {low} to {high}" if low is not None else f"at most {high:g} in magnitude"
        report(f"{where}.{key}", f"must be {span}, got {describe(value)}")
        return default
    return value


def vector(value, length, where, report):
    if (not isinstance(value, list) or len(value) != length
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                       and abs(v) <= COORDINATE_LIMIT for v in value)):
        report(where, f"expected an array of {length} finite numbers at most {COORDINATE_LIMIT:g} in magnitude, "
               f"got {describe(value)}")
        return None
    return [float(v) for v in value]


def unknown_keys(section: dict, allowed, where: str, report) -> None:
    for key in section:
        if key not in allowed:
            report(f"{where}.{key}" if where else key,
                   f"unknown key{did_you_mean(key, list(allowed))} (allowed: {', '.join(allowed)})")


def did_you_mean(word: str, choices) -> str:
    """' (did you mean "x"?)' for the closest of ``choices``, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def kind_of(value: Any) -> str:
    """A TOML value's kind in a message's words ("a table", "an array", ...)."""
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)
