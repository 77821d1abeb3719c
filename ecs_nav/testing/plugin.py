"""The ecs_nav pytest plugin: fixtures that make Worlds for a test and close them after it.

Registered through the ``pytest11`` entry point of the ecs-nav distribution, so installing
ecs-nav is enough; ``pytest -p no:ecs_nav.testing.plugin`` turns it off. Loading it imports
nothing but pytest (ecs_nav is imported when a fixture is first used), and nothing it does
imports pyglet or needs a display.

Fixtures:
    nav_world: a World with the five simulation stages (``DEFAULT_SYSTEMS``), seed 0.
    make_nav_world: ``make_nav_world(*systems, seed=0, dt=1/60, ...)`` -> a World with exactly
        those systems (``ecs_nav.testing.world_with_systems``).
    ascii_map: ``ascii_map(picture, *systems, cell_size=1.0, ...)`` -> a World on the tile map
        drawn, its nav graph built (``ecs_nav.testing.ascii_world``).
"""

from __future__ import annotations

import pytest


class _Worlds:
    """The Worlds a test made through the fixtures, closed at its teardown."""

    def __init__(self):
        self.made = []

    def keep(self, world):
        self.made.append(world)
        return world

    def close(self):
        for world in self.made:
            world.close()


@pytest.fixture
def make_nav_world():
    """Factory: ``make_nav_world(*systems, seed=0, dt=1/60, pathfind_period=30, stuck_ticks=20)``
    returns a new World with exactly ``systems`` (scene names such as ``"pathfind"`` or System
    instances; none: the five simulation stages). Closed after the test."""
    from ecs_nav.testing import world_with_systems

    worlds = _Worlds()
    yield lambda *systems, **options: worlds.keep(world_with_systems(*systems, **options))
    worlds.close()


@pytest.fixture
def nav_world(make_nav_world):
    """A World (seed 0, dt 1/60 s) with the five simulation stages, no map, no entities."""
    return make_nav_world()


@pytest.fixture
def ascii_map():
    """Factory: ``ascii_map(picture, *systems, cell_size=1.0, origin=(0, 0), wall_height=3.0,
    build_graph=True, seed=0, ...)`` returns a World on the tile map drawn in ``picture``, its
    nav graph built (``ecs_nav.testing.ascii_world``; ``spot(world, "A")`` finds marked cells).
    Closed after the test."""
    from ecs_nav.testing import ascii_world

    worlds = _Worlds()
    yield lambda picture, *systems, **options: worlds.keep(ascii_world(picture, *systems, **options))
    worlds.close()
