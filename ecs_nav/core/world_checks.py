"""The checks a World operation makes before it changes anything.

Every public ``World`` operation that can fail runs its checks first, here, and only then
touches esper or the agent table: a refused operation leaves the World exactly as it was (the
same ``state_digest()``, the same entities and components, queries and the next tick as in a
World that was never asked). The messages name the operation, the entity and the component.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecs_nav.core.components import Position, TableView


class NoSuchEntity(KeyError):
    """An operation named an entity the World does not hold (never spawned, or despawned).
    A KeyError, as esper's own; its text is the message, without KeyError's quotes."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def entity_id(where: str, entity: Any) -> int:
    """``entity`` as an int when it can be an entity id (an integer, numpy's included; not a
    bool); ValueError naming ``where`` otherwise."""
    if isinstance(entity, (bool, np.bool_)) or not isinstance(entity, (int, np.integer)):
        raise ValueError(f"{where}: an entity is an integer id (as spawn returns it), got "
                         f"{type(entity).__name__} {entity!r:.60}")
    return int(entity)


def entity_ids(where: str, entities: Any) -> list[int]:
    """``entities`` (a sequence or array of ids) as a list of ints; ValueError naming ``where``
    when one is not an integer (floats, bools and text are refused: a float id truncated to an
    integer would name another entity)."""
    try:
        arr = np.asarray(entities)
    except (TypeError, ValueError) as exc:  # (ragged nesting)
        raise ValueError(f"{where}: expected entity ids (integers), got {entities!r:.80} ({exc})") from None
    flat = arr.reshape(-1)
    if flat.size == 0:
        return []
    if arr.dtype.kind == "O":
        return [entity_id(where, e) for e in flat.tolist()]
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{where}: entity ids are integers, got an array of {arr.dtype} ({flat[:3].tolist()!r:.60})")
    return flat.tolist()


def check_component(where: str, component: Any) -> None:
    """Refuse what cannot be a component: None, a class given for an instance, a list or tuple
    of components given as one (ValueError naming ``where``)."""
    if component is None:
        raise ValueError(f"{where}: expected a component, got None")
    if isinstance(component, type):
        raise ValueError(f"{where}: got the class {component.__name__}, not a component: give an instance, "
                         f"{component.__name__}(...)")
    if isinstance(component, (list, tuple, set, dict)):
        raise ValueError(f"{where}: got a {type(component).__name__} where one component goes: give the components "
                         "one by one (spawn(*components))")


def check_spawn(components: list[Any], owner_of=None) -> list[TableView]:
    """Check the components of one ``World.spawn`` (see its docstring) and return its views;
    ``owner_of(component)`` gives the live entity of this World that already holds a sparse
    ``component`` (None when none does). ValueError naming the component."""
    for component in components:
        check_component("spawn", component)
    types = [type(c) for c in components]
    if len(set(types)) != len(types):
        dup = next(t for t in types if types.count(t) > 1)
        raise ValueError(f"spawn: two {dup.__name__} components given for one entity")
    views = [c for c in components if isinstance(c, TableView)]
    for view in views:
        if view.bound:
            raise ValueError(f"spawn: this {type(view).__name__} already belongs to an entity")
    if views and Position not in types:
        raise ValueError(f"spawn: {type(views[0]).__name__} needs a Position (view components live in the agent "
                         "table)")
    if owner_of is not None:
        for component in components:
            check_unowned("spawn", component, owner_of)
    return views


def check_unowned(where: str, component: Any, owner_of, entity: int | None = None) -> None:
    """Refuse a sparse component that already belongs to another live entity of this World
    (one object on two entities: a change to it would be reported for one of them only)."""
    owner = owner_of(component)
    if owner is not None and owner != entity:
        raise ValueError(f"{where}: this {type(component).__name__} already belongs to entity {owner}: give each "
                         "entity its own (a copy)")


def check_tags(tags, count: int, sparse: list[Any]) -> list[list[Any]]:
    """``tags(i)`` for each member ``i`` of a ``World.spawn_many``, as lists, checked: each a
    list of sparse components (a view would not be bound to the member's row), none of a type
    that the shared components already give. ValueError naming the member."""
    if tags is None:
        return [[] for _ in range(count)]
    shared = {type(c) for c in sparse}
    out = []
    for i in range(count):
        given = tags(i)
        if given is None or isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
            raise ValueError(f"World.spawn_many.tags: tags({i}) must return a list of components, got {given!r:.60}")
        own = list(given)
        for component in own:
            check_component(f"World.spawn_many.tags({i})", component)
            if isinstance(component, TableView):
                raise ValueError(f"World.spawn_many.tags({i}): {type(component).__name__} is a view component: give it "
                                 "in components (every member gets its own copy), tags give sparse ones (a Name)")
        types = [type(c) for c in own]
        for t in types:
            if t in shared or types.count(t) > 1:
                raise ValueError(f"World.spawn_many.tags({i}): a second {t.__name__} for one entity")
        out.append(own)
    return out
