"""A* reproduces the optimal lengths of the Moving AI benchmark scenarios (``../shared/maps``).

Short form by default: every scenario of the small maps, an evenly spaced sample (always
including the longest, last bucket) of the big ones. ``ECS_NAV_SOAK=1`` runs every scenario.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from conftest import maps_dir
from scipy.sparse.csgraph import shortest_path

from ecs_nav.nav.grid import load_movingai, read_movingai_map, read_scenarios
from ecs_nav.nav.search import STATUS_COMPLETE, STATUS_PARTIAL, STATUS_UNREACHABLE, astar

SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
SMALL_MAP_CELLS = 20_000  # maps up to this size run every scenario
SAMPLE = 60  # scenarios per big map in the short form
REL_TOL = 1e-4  # the .scen files round their lengths (some to 5 decimals)

_MAPS = maps_dir()
MAP_NAMES = sorted(p.name for p in _MAPS.glob("*.map")) if _MAPS else []

pytestmark = [pytest.mark.maps]


def sample(scenarios: np.ndarray, cells: int) -> np.ndarray:
    if SOAK or cells <= SMALL_MAP_CELLS or len(scenarios) <= SAMPLE:
        return scenarios
    picks = np.unique(np.linspace(0, len(scenarios) - 1, SAMPLE).round().astype(int))
    return scenarios[picks]


def test_maps_are_present(movingai_dir):
    assert MAP_NAMES, f"no .map files in {movingai_dir}"


@pytest.mark.slow
@pytest.mark.parametrize("name", MAP_NAMES)
def test_astar_reproduces_scenario_lengths(movingai_dir, name):
    graph = load_movingai(movingai_dir / name)
    scenarios = read_scenarios(movingai_dir / f"{name}.scen")
    assert len(scenarios) > 0
    assert np.all(scenarios["width"] == graph.grid.cols) and np.all(scenarios["height"] == graph.grid.rows)
    checked = 0
    for s in sample(scenarios, graph.node_count):
        start = graph.node_at_cell(s["start_x"], s["start_y"])
        goal = graph.node_at_cell(s["goal_x"], s["goal_y"])
        where = f"{name} bucket {s['bucket']}: ({s['start_x']},{s['start_y']}) -> ({s['goal_x']},{s['goal_y']})"
        assert start is not None and goal is not None, f"{where}: start or goal on a blocked cell"
        expected = float(s["optimal_length"])
        result = astar(graph, start, goal)
        if expected == 0.0 and start != goal:  # the file knows no path: there is none
            assert result.status == STATUS_PARTIAL, where
            assert astar(graph, start, goal, allow_partial=False).status == STATUS_UNREACHABLE
            continue
        assert result.status == STATUS_COMPLETE, where
        assert math.isclose(result.cost, expected, rel_tol=REL_TOL, abs_tol=1e-9), (
            f"{where}: cost {result.cost}, file says {expected}"
        )
        checked += 1
    assert checked > 0


def test_no_path_scenarios_are_truly_disconnected(movingai_dir):
    """rmtst01 lists two scenarios with length 0 between different cells: scipy agrees that
    the goal cannot be reached."""
    name = "rmtst01.map"
    if name not in MAP_NAMES:
        pytest.skip(f"{name} not in the maps folder")
    graph = load_movingai(movingai_dir / name)
    scenarios = read_scenarios(movingai_dir / f"{name}.scen")
    none = scenarios[(scenarios["optimal_length"] == 0)]
    none = none[(none["start_x"] != none["goal_x"]) | (none["start_y"] != none["goal_y"])]
    assert len(none) == 2
    for s in none:
        start = graph.node_at_cell(s["start_x"], s["start_y"])
        goal = graph.node_at_cell(s["goal_x"], s["goal_y"])
        assert shortest_path(graph.to_scipy(), indices=start)[goal] == math.inf
        assert astar(graph, start, goal).status == STATUS_PARTIAL


@pytest.mark.parametrize("name", MAP_NAMES)
def test_map_cells_follow_the_text(movingai_dir, name):
    blocked = read_movingai_map(movingai_dir / name)
    graph = load_movingai(movingai_dir / name)
    assert blocked.shape == (graph.grid.rows, graph.grid.cols)
    rng = np.random.default_rng(0)
    for y, x in zip(rng.integers(0, blocked.shape[0], 200), rng.integers(0, blocked.shape[1], 200), strict=True):
        assert (graph.node_at_cell(x, y) is None) == bool(blocked[y, x])
