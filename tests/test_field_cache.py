"""The distance fields of recent goals (``ecs_nav.nav.field_cache``): one search per goal while
the graph is unchanged, the same fields and the same paths as searching every time."""

from __future__ import annotations

import numpy as np

import ecs_nav.nav.field_cache as field_cache_module
from ecs_nav.nav.distance import distance_field
from ecs_nav.nav.field_cache import RecentFields
from ecs_nav.nav.grid import grid_graph


def maze(seed=0, rows=24, cols=30):
    return grid_graph(np.random.default_rng(seed).random((rows, cols)) < 0.25)


def open_node(graph, k=0):
    return int(np.flatnonzero(graph.walkable)[k])


def test_a_goal_is_searched_once_and_its_field_is_the_one_distance_field_gives():
    graph, fields = maze(), RecentFields()
    a = open_node(graph)
    first = fields.field(graph, a)
    assert fields.field(graph, a) is first and fields.computed == 1
    for mine, fresh in zip(first, distance_field(graph, a)):
        np.testing.assert_array_equal(mine, fresh)
    assert fields.field(graph, open_node(graph, -1)) is not first and fields.computed == 2


def test_a_changed_graph_is_searched_again():
    graph, fields = maze(), RecentFields()
    before = fields.field(graph, open_node(graph))
    graph.version += 1  # what a rebuild of a region does
    assert fields.field(graph, open_node(graph)) is not before and fields.computed == 2
    other = maze(seed=1)  # another graph, even one of the same version
    other.version = graph.version
    after = fields.field(other, open_node(other))
    np.testing.assert_array_equal(after[0], distance_field(other, open_node(other))[0])
    assert fields.computed == 3


def test_only_the_most_recent_goals_are_kept_within_the_budget(monkeypatch):
    graph, fields = maze(), RecentFields()
    monkeypatch.setattr(field_cache_module, "FIELD_BUDGET_NODES", 3 * graph.node_count)
    goals = np.flatnonzero(graph.walkable)[:5].tolist()
    for goal in goals[:3]:
        fields.field(graph, goal)
    fields.field(graph, goals[0])  # used again: now the most recent
    fields.field(graph, goals[3])  # a fourth: the least recently used one (goals[1]) goes
    assert fields.computed == 4
    fields.field(graph, goals[0])
    fields.field(graph, goals[2])
    assert fields.computed == 4
    fields.field(graph, goals[1])
    assert fields.computed == 5
