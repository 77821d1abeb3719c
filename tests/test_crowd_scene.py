"""The crowd stress scene: ten thousand agents on free floor, kept out of walls and apart."""

import numpy as np

import ecs_nav


def test_ten_thousand_agents_stay_out_of_walls_and_mostly_apart():
    world = ecs_nav.load_scene("crowd")
    try:
        t = world.table
        assert t.n == 10_000
        n = t.n
        gmap = world.map
        assert gmap.penetration(t.pos[:n], t.radius[:n], t.elevation[:n], t.max_climb[:n]).max() == 0.0
        world.run(30)
        pos = t.pos[:n]
        assert np.all(np.isfinite(pos)) and np.all(np.isfinite(t.vel[:n]))
        assert gmap.penetration(pos, t.radius[:n], t.elevation[:n], t.max_climb[:n]).max() <= 1e-6
        assert np.all(np.hypot(t.vel[:n, 0], t.vel[:n, 1]) <= t.max_speed[:n] * (1 + 1e-9))
        assert np.ptp(pos[:, 0]) > 150 and np.ptp(pos[:, 1]) > 150  # spread over the hall
        # the agents move: wander keeps them going
        assert np.median(np.linalg.norm(pos - t.prev_pos[:n], axis=1)) > 0
        # pairs closer than their radii sum: few, and none deeply (relaxation each tick)
        from ecs_nav.motion.neighbours import neighbours_within

        offsets, rows = neighbours_within(pos, 0.8)
        me = np.repeat(np.arange(n), np.diff(offsets))
        depth = 0.8 - np.linalg.norm(pos[me] - pos[rows], axis=1)
        assert depth.max(initial=0.0) < 0.15 * 0.8
    finally:
        world.close()


def test_crowd_run_is_deterministic():
    digests = []
    for _ in range(2):
        world = ecs_nav.load_scene("crowd")
        try:
            world.run(5)
            digests.append(world.state_digest())
        finally:
            world.close()
    assert digests[0] == digests[1]
