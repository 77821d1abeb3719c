"""ecs_nav.testing: unit-test scenes and systems headlessly.

- Worlds: ``world_with_systems`` (exactly the systems under test, by scene name or as
  instances), ``ascii_world`` (a tile map drawn as text, its nav graph built; ``spot``
  finds a marked cell), ``entity_named`` (a scene's entity), ``DEFAULT_SYSTEMS``.
- Stand-ins: ``Integrate`` (in place of physics), ``DriveTo`` (in place of steering).
- Assertions whose messages say what happened: ``assert_arrives``,
  ``assert_no_agent_in_walls``, ``assert_no_nan``, ``assert_emitted`` /
  ``assert_not_emitted`` on a ``record_events`` log, ``assert_same_digest``,
  ``assert_deterministic``.
- Crowds: ``run_crowd`` and its ``CrowdOutcome``.
- A pytest plugin (``ecs_nav.testing.plugin``, registered as a ``pytest11`` entry point, so an
  installed ecs-nav brings it): fixtures ``nav_world``, ``make_nav_world`` and ``ascii_map``.

Nothing here imports pyglet or needs a display.
"""

from ecs_nav.testing.assertions import (
    agents_in_walls,
    assert_arrives,
    assert_deterministic,
    assert_no_agent_in_walls,
    assert_no_nan,
    assert_same_digest,
    goal_of,
    state_differences,
)
from ecs_nav.testing.crowds import REST_SPEED, CrowdOutcome, farthest_member, lone_travel_ticks, run_crowd
from ecs_nav.testing.event_log import (
    NAVIGATION_EVENTS,
    EventLog,
    assert_emitted,
    assert_not_emitted,
    record_events,
)
from ecs_nav.testing.stand_ins import DriveTo, Integrate
from ecs_nav.testing.worlds import DEFAULT_SYSTEMS, ascii_world, entity_named, spot, spots, world_with_systems

__all__ = [
    "DEFAULT_SYSTEMS", "NAVIGATION_EVENTS", "REST_SPEED", "CrowdOutcome", "DriveTo", "EventLog", "Integrate",
    "agents_in_walls", "ascii_world", "assert_arrives", "assert_deterministic", "assert_emitted",
    "assert_no_agent_in_walls", "assert_no_nan", "assert_not_emitted", "assert_same_digest", "entity_named",
    "farthest_member",
    "goal_of", "lone_travel_ticks", "record_events", "run_crowd", "spot", "spots", "state_differences",
    "world_with_systems",
]
