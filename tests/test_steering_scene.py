"""The steering scene's flock stays a flock (headless): Reynolds' boids as the scene sets them."""

import numpy as np
import pytest

import ecs_nav
from ecs_nav.core.components import Name

scipy_sparse = pytest.importorskip("scipy.sparse.csgraph")


def link_clusters(points: np.ndarray, link: float) -> int:
    """Connected components of the graph joining points closer than ``link`` (scipy)."""
    from scipy.spatial.distance import pdist, squareform

    count, _ = scipy_sparse.connected_components(squareform(pdist(points)) < link, directed=False)
    return int(count)


def test_the_flock_stays_one_cluster_of_4_m_links_for_60_s_and_roams():
    with ecs_nav.load_scene("steering") as world:
        members = np.array([e for e, (name,) in world.query(Name) if name.value == "flock"])
        assert len(members) == 30
        start = None
        for second in range(10, 61, 10):
            world.run(round(10 / world.dt))
            pos = world.table.pos[world.table.rows_of(members)]
            assert link_clusters(pos, 4.0) == 1, f"{second} s"
            assert np.mean(np.hypot(*(pos - pos.mean(axis=0)).T)) < 5.0  # (it was 28 m at 10 s)
            start = pos.mean(axis=0) if start is None else start
        speed = np.hypot(*world.table.vel[world.table.rows_of(members)].T)
        assert speed.mean() > 0.5  # a flock on the move, not a heap
        assert np.hypot(*(pos.mean(axis=0) - start)) > 10.0  # it roams the map
