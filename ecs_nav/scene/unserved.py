"""Components that no system of a World reads: a scene that lists its own ``[world] systems``
and leaves out the one a component needs runs without error, and the component does nothing.
``unserved_components(world)`` says so, one line per component and missing system:

    entity "npc": a PathRequest, and no PathfindSystem serves it

``ecs-nav validate`` prints these lines as warnings, and ``ecs-nav run`` before its first tick.
"""

from __future__ import annotations

from ecs_nav.core.components import Path, PathRequest, SteeringWeights, entity_label

READERS = (
    (PathRequest, (("PathfindSystem", "serves it"), ("PathFollowSystem", "follows its path"))),
    (Path, (("PathFollowSystem", "follows it"),)),
    (SteeringWeights, (("SteeringSystem", "steers by it"),)),
)
"""Each component, and the systems it needs with what each does with it."""

SHOWN = 3
"""Entity names a line lists before "and N more"."""


def unserved_components(world) -> list[str]:
    """One line per component some entities carry and a system it needs that ``world`` lacks."""
    lines = []
    for component, readers in READERS:
        missing = [(name, does) for name, does in readers if world.system(name) is None]
        carriers = sorted(entity for entity, _ in world.query(component)) if missing else []
        if not carriers:
            continue
        labels = list(dict.fromkeys(entity_label(world, entity) for entity in carriers))
        shown = ", ".join(labels[:SHOWN]) + (f" and {len(labels) - SHOWN} more" if len(labels) > SHOWN else "")
        for name, does in missing:
            lines.append(f"{shown}: a {component.__name__}, and no {name} {does}")
    return lines

