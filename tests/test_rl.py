"""ecs_nav.rl: the environments pass Gymnasium's and PettingZoo's checkers, the same seed gives the
same episode, the copies of a vector env do not meet, autoreset is next-step, and what a learner
senses and earns matches hand-computed values and brute-force references."""

from __future__ import annotations

import math

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import ecs_nav.rl  # noqa: E402  (registers the ids)
from ecs_nav.geometry.map import MapGeometry  # noqa: E402
from ecs_nav.geometry.shapes import Box, Circle, Ramp  # noqa: E402
from ecs_nav.rl import NavEnv, NavSettings, NavVectorEnv  # noqa: E402
from ecs_nav.rl.sensing import nearest_agents_into, ray_distances_into, wall_clearance_into  # noqa: E402

EMPTY_ROOM = """
[world]
dt = 0.1
systems = ["steering", "physics"]
[map]
bounds = [0.0, 0.0, 10.0, 10.0]
"""
WALLED_ROOM = EMPTY_ROOM + """
[[map.box]]
center = [6.0, 5.0]
size = [2.0, 2.0]
height = 2.0
[[map.box]]
center = [2.0, 8.0]
size = [1.0, 1.0]
height = 0.3
"""


def scene_file(tmp_path, text: str) -> str:
    path = tmp_path / "scene.toml"
    path.write_text(text)
    return str(path)


def put(env, pos, heading, goal) -> None:
    """Stand NavEnv's learner at ``pos`` facing ``heading`` with its goal at ``goal``."""
    batch = env.batch
    row = batch.rows[0]
    batch.world.table.pos[row] = pos
    batch.world.table.prev_pos[row] = pos
    batch.world.table.vel[row] = 0.0
    batch.world.table.heading[row] = heading
    batch.goal[0] = goal
    batch.distance[0] = math.dist(pos, goal)


def goal_distance(envs) -> np.ndarray:
    """Each copy's learner's distance to its goal now (m)."""
    batch = envs.batch
    return np.hypot(*(batch.goal - batch.world.table.pos[batch.rows]).T)


def greedy(obs: np.ndarray) -> np.ndarray:
    """Walk straight at the goal (its direction in the learner's frame)."""
    goal = obs[..., :2]
    return (goal / np.maximum(np.linalg.norm(goal, axis=-1, keepdims=True), 1e-9)).astype(np.float32)


# ---- the checkers -------------------------------------------------------------------------------

@pytest.mark.parametrize("action", ["continuous", "discrete"])
def test_nav_env_passes_gymnasiums_env_checker(action):
    from gymnasium.utils.env_checker import check_env

    env = NavEnv(action=action)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", sorted(ecs_nav.rl.ENVIRONMENTS))
def test_every_registered_id_makes_a_checked_env_and_a_vector_env(env_id):
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(env_id)
    assert isinstance(env.unwrapped, NavEnv)
    check_env(env.unwrapped, skip_render_check=True)  # (human rendering needs a display)
    env.close()
    envs = gymnasium.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(envs, NavVectorEnv) and envs.num_envs == 3
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.NEXT_STEP
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, envs.settings.observation_size)
    envs.close()


def test_crowd_env_passes_pettingzoos_parallel_api_test():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from ecs_nav.rl import CrowdEnv

    parallel_api_test(CrowdEnv(), num_cycles=250)
    parallel_api_test(CrowdEnv(n_agents=5, action="discrete", max_steps=20), num_cycles=50)


def test_crowd_env_has_as_many_learners_as_the_scene_has_agents_each_seeing_the_others():
    pytest.importorskip("pettingzoo")
    from ecs_nav.rl import CrowdEnv

    env = CrowdEnv()
    obs, _ = env.reset(seed=2)
    assert env.agents == ["learner_0", "learner_1", "learner_2"]  # (the room's three walkers)
    for one in obs.values():
        masks = one[-5 * env.settings.neighbours:].reshape(-1, 5)[:, 4]
        assert masks.sum() <= 2 and set(masks) <= {0.0, 1.0}
    env.close()


def test_vector_env_spaces_and_steps_follow_the_vector_api():
    envs = NavVectorEnv(4)
    assert envs.observation_space == gymnasium.vector.utils.batch_space(envs.single_observation_space, 4)
    assert envs.action_space == gymnasium.vector.utils.batch_space(envs.single_action_space, 4)
    obs, info = envs.reset(seed=1)
    assert obs in envs.observation_space and obs.dtype == np.float32
    envs.action_space.seed(1)
    for _ in range(50):
        obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert obs in envs.observation_space
        assert rewards.shape == terminated.shape == truncated.shape == (4,)
        assert terminated.dtype == truncated.dtype == np.bool_
        for key in ("progress", "collision", "time", "arrival", "distance", "is_success"):
            assert infos[key].shape == (4,) and infos[f"_{key}"].all()
    envs.close()


def test_gymnasiums_vector_episode_statistics_wrapper_counts_episodes_of_the_vector_env():
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(NavVectorEnv(2, max_steps=5))
    envs.reset(seed=0)
    lengths = []
    for _ in range(12):
        _, _, terminated, truncated, infos = envs.step(np.zeros((2, 2), np.float32))
        if "episode" in infos:
            lengths.extend(infos["episode"]["l"][infos["_episode"]].tolist())
    assert lengths and set(lengths) == {5}  # (standing still: every episode is truncated after 5 steps)


# ---- determinism, layers, autoreset -------------------------------------------------------------

def run_episode(env, seed: int, steps: int = 60) -> list:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
        out.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    return out


def test_the_same_seed_gives_the_same_episode_and_another_seed_another():
    a, b = NavEnv(), NavEnv()
    first, again = run_episode(a, 7), run_episode(b, 7)
    assert len(first) == len(again)
    assert all(np.array_equal(x[0], y[0]) and x[1:] == y[1:] for x, y in zip(first[1:], again[1:]))
    assert np.array_equal(first[0], again[0])
    assert not np.array_equal(run_episode(b, 8, steps=0)[0], first[0])


def test_a_vector_env_of_one_copy_steps_exactly_as_nav_env():
    single, vector = NavEnv(), NavVectorEnv(1)
    o1, _ = single.reset(seed=5)
    o2, _ = vector.reset(seed=5)
    assert np.array_equal(o1, o2[0])
    rng = np.random.default_rng(0)
    for _ in range(80):
        action = rng.uniform(-1, 1, 2).astype(np.float32)
        o1, r1, t1, u1, _ = single.step(action)
        o2, r2, t2, u2, _ = vector.step(action[None])
        assert np.array_equal(o1, o2[0]) and r1 == r2[0] and (t1, u1) == (t2[0], u2[0])
        if t1 or u1:
            break


def test_the_copies_of_a_vector_env_do_not_meet():
    """Copy 1 moves the same whatever copy 0's learner does (layers): its observations, the
    scene's walkers of copy 1 included, are the same bit for bit."""
    seen = []
    for copy0 in (np.array([1.0, 0.0]), np.array([-1.0, 0.5])):
        envs = NavVectorEnv(2)
        envs.reset(seed=3)
        trace = []
        for _ in range(60):
            obs, *_ = envs.step(np.array([copy0, [0.5, 0.5]], np.float32))
            trace.append(obs[1])
        seen.append(np.array(trace))
        envs.close()
    assert np.array_equal(seen[0], seen[1])


def test_a_vector_env_resets_an_ended_copy_on_the_next_step_ignoring_its_action():
    envs = NavVectorEnv(2, max_steps=3)
    envs.reset(seed=4)
    go = np.array([[1.0, 0.0], [1.0, 0.0]], np.float32)
    for _ in range(3):
        _, rewards, terminated, truncated, infos = envs.step(go)
    assert truncated.all() and not terminated.any()
    ended_goal = envs.batch.goal.copy()
    obs, rewards, terminated, truncated, infos = envs.step(go)
    assert not (terminated | truncated).any() and np.all(rewards == 0.0)
    assert not np.array_equal(envs.batch.goal, ended_goal)  # (new goals)
    assert np.allclose(obs[:, 2:4], 0.0, atol=1e-5)  # (the action of the reset step was ignored: standing)
    for _ in range(2):
        *_, truncated, _ = envs.step(go)
        assert not truncated.any()
    *_, truncated, _ = envs.step(go)
    assert truncated.all()  # (3 steps after the reset step)


def test_same_step_autoreset_returns_the_new_episode_and_keeps_the_last_observation_in_final_obs():
    same = NavVectorEnv(2, max_steps=3, autoreset_mode="SameStep")
    nextstep = NavVectorEnv(2, max_steps=3)
    assert same.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    same.reset(seed=4)
    nextstep.reset(seed=4)
    go = np.array([[1.0, 0.0], [0.5, 0.5]], np.float32)
    for _ in range(3):
        obs, rewards, terminated, truncated, infos = same.step(go)
        last, next_rewards, *_ = nextstep.step(go)
    assert truncated.all() and infos["_final_obs"].all() and infos["_final_info"].all()
    assert np.array_equal(np.stack(infos["final_obs"]), last) and np.array_equal(rewards, next_rewards)
    assert np.array_equal(infos["final_info"]["distance"], goal_distance(nextstep))
    assert not np.array_equal(obs, last) and np.allclose(obs[:, 2:4], 0.0)  # (standing at a new start)
    assert infos["distance"] == pytest.approx(goal_distance(same))
    for _ in range(2):
        *_, truncated, infos = same.step(go)
        assert not truncated.any() and "final_obs" not in infos
    *_, truncated, infos = same.step(go)
    assert truncated.all() and infos["_final_obs"].all()


# ---- what the learner senses, does and earns ----------------------------------------------------

def test_rays_meet_a_box_a_bound_and_pass_over_a_step_at_hand_computed_distances(tmp_path):
    env = NavEnv(scene=scene_file(tmp_path, WALLED_ROOM), n_rays=4, ray_range=20.0, neighbours=0)
    env.reset(seed=0)
    put(env, (2.0, 5.0), (1.0, 0.0), (8.0, 8.0))
    obs, _, _ = env.batch.sense()
    # ahead (+x): the box's face at x = 5; left (+y): over the 0.3 m step (x 1.5-2.5, y 7.5-8.5) to
    # the bound at y = 10; behind: the bound at x = 0; right: the bound at y = 0
    assert obs[0, 4:8] == pytest.approx([3.0, 5.0, 2.0, 5.0], abs=1e-6)
    put(env, (6.0, 2.0), (0.0, 1.0), (8.0, 8.0))  # facing +y, below the box
    obs, _, _ = env.batch.sense()
    assert obs[0, 4:8] == pytest.approx([2.0, 6.0, 2.0, 4.0], abs=1e-6)  # box at y 4; x 0; y 0; x 10


def test_rays_match_a_brute_force_march_over_a_map_of_boxes_circles_and_a_ramp():
    gmap = MapGeometry((0, 0, 20, 20), boxes=[Box(center=(5, 5), size=(3, 1), height=2.0)],
                       ramps=[Ramp(start=(12, 4), end=(16, 8), width=2.0, low=0.0, high=1.5)],
                       circles=[Circle(center=(10, 14), radius=1.5, height=2.0)])
    rng = np.random.default_rng(3)
    k, n_rays, reach = 40, 12, 8.0
    pos = rng.uniform(1, 19, (k, 2))
    pos = pos[gmap.penetration(pos, 0.01, 0.0, 0.5) <= 0]
    angle = rng.uniform(-math.pi, math.pi, len(pos))
    hx, hy = np.cos(angle), np.sin(angle)
    zlo, zhi = np.full(len(pos), 0.5), np.full(len(pos), 2.0)
    out = np.empty((len(pos), n_rays))
    ray_distances_into(gmap.kernel_data(), pos[:, 0].copy(), pos[:, 1].copy(), hx, hy, zlo, zhi, reach, out)
    step = 1e-3
    t = np.arange(0.0, reach + step, step)
    for i, p in enumerate(pos):
        for r in range(n_rays):
            a = angle[i] + 2 * math.pi * r / n_rays
            points = p + t[:, None] * [math.cos(a), math.sin(a)]
            inside = (points >= 0).all(axis=1) & (points <= 20).all(axis=1)
            blocked = ~inside
            blocked[inside] |= gmap.penetration(points[inside], 1e-9, 0.0, 0.5) > 0
            first = t[np.argmax(blocked)] if blocked.any() else reach
            assert out[i, r] == pytest.approx(first, abs=2 * step), (p, r)
    assert 0.2 < np.mean(out < reach) < 0.9  # (most rays meet something; not all the same thing)
    assert np.any(out[out < reach] > 0.5)


def test_wall_clearance_is_the_distance_to_the_nearest_wall_or_bound():
    gmap = MapGeometry((0, 0, 10, 10), circles=[Circle(center=(5, 5), radius=1.0, height=2.0)])
    px, py = np.array([5.0, 1.0, 5.0]), np.array([7.5, 3.0, 5.5])
    out = np.empty(3)
    wall_clearance_into(gmap.kernel_data(), px, py, np.full(3, 0.5), np.full(3, 2.0), 5.0, out)
    assert out == pytest.approx([1.5, 1.0, 0.0])


def test_goal_and_velocity_are_given_in_the_learners_frame(tmp_path):
    env = NavEnv(scene=scene_file(tmp_path, EMPTY_ROOM), neighbours=0)
    env.reset(seed=0)
    put(env, (5.0, 5.0), (0.0, 1.0), (6.0, 7.0))  # facing +y: forward is +y, left is -x
    env.batch.world.table.vel[env.batch.rows[0]] = (0.3, -0.2)
    obs, _, _ = env.batch.sense()
    assert obs[0, 0:4] == pytest.approx([2.0, -1.0, -0.2, -0.3])
    c, s = math.cos(0.7), math.sin(0.7)
    put(env, (5.0, 5.0), (c, s), (5.0 + 2 * c - 3 * s, 5.0 + 2 * s + 3 * c))  # 2 ahead, 3 to the left
    obs, _, _ = env.batch.sense()
    assert obs[0, 0:2] == pytest.approx([2.0, 3.0], abs=1e-6)


def test_the_nearest_agents_match_a_brute_force_sort_within_range():
    rng = np.random.default_rng(1)
    n, k, reach = 30, 4, 3.0
    pos = rng.uniform(0, 8, (n, 2))
    vel = rng.uniform(-1, 1, (n, 2))
    radius = rng.uniform(0.2, 0.4, n)
    layer = rng.integers(0, 2, n)
    order = np.argsort(layer, kind="stable")
    layer_start = np.searchsorted(layer[order], np.arange(3)).astype(np.int64)
    rows = np.array([0, 5, 11], dtype=np.int64)
    heading = rng.normal(size=(3, 2))
    heading /= np.linalg.norm(heading, axis=1, keepdims=True)
    out, gap = np.empty((3, k, 5)), np.empty(3)
    nearest_agents_into(pos, vel, radius, layer_start, order.astype(np.int64), rows, layer[rows].astype(np.int64),
                        heading[:, 0].copy(), heading[:, 1].copy(), reach, out, gap)
    for i, me in enumerate(rows):
        others = [j for j in range(n) if j != me and layer[j] == layer[me]]
        d = {j: np.linalg.norm(pos[j] - pos[me]) for j in others}
        near = sorted((j for j in others if d[j] <= reach), key=d.get)[:k]
        f, left = heading[i], np.array([-heading[i, 1], heading[i, 0]])
        expect = np.zeros((k, 5))
        for slot, j in enumerate(near):
            rel, rv = pos[j] - pos[me], vel[j] - vel[me]
            expect[slot] = [rel @ f, rel @ left, rv @ f, rv @ left, 1.0]
        assert out[i] == pytest.approx(expect)
        assert gap[i] == pytest.approx(min(d[j] - radius[me] - radius[j] for j in others))


@pytest.mark.parametrize("action, expected", [
    (np.array([1.0, 0.0], np.float32), (1.0, 0.0)), (np.array([0.0, -0.5], np.float32), (0.0, -0.5)),
    (np.array([1.0, 1.0], np.float32), (math.sqrt(0.5), math.sqrt(0.5))),  # (clipped to length 1)
])
def test_a_continuous_action_is_the_preferred_velocity_the_learner_then_walks_at(tmp_path, action, expected):
    env = NavEnv(scene=scene_file(tmp_path, EMPTY_ROOM), max_speed=1.5, neighbours=0)
    env.reset(seed=0)
    put(env, (5.0, 5.0), (0.0, 1.0), (9.0, 9.0))
    env.step(action)
    vel = env.batch.world.table.vel[env.batch.rows[0]]
    forward, left = 1.5 * np.array(expected)
    assert vel == pytest.approx(forward * np.array([0.0, 1.0]) + left * np.array([-1.0, 0.0]), abs=1e-9)


def test_a_discrete_action_walks_at_its_heading_or_stands(tmp_path):
    env = NavEnv(scene=scene_file(tmp_path, EMPTY_ROOM), action="discrete", headings=8, neighbours=0)
    env.reset(seed=0)
    put(env, (5.0, 5.0), (1.0, 0.0), (9.0, 9.0))
    env.step(3)  # (3 - 1) * 45 degrees: to the left
    assert env.batch.world.table.vel[env.batch.rows[0]] == pytest.approx([0.0, 1.0], abs=1e-9)
    env.step(0)
    assert env.batch.world.table.vel[env.batch.rows[0]] == pytest.approx([0.0, 0.0], abs=1e-5)


def test_the_reward_is_the_sum_of_its_terms_and_each_term_follows_its_formula():
    env = NavEnv(progress_weight=2.0, collision_weight=0.5, time_weight=0.03, arrival_weight=7.0)
    rng = np.random.default_rng(2)
    env.reset(seed=2)
    for _ in range(100):
        before = env.batch.distance[0]
        _, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
        assert reward == pytest.approx(info["progress"] + info["collision"] + info["time"] + info["arrival"])
        assert info["progress"] == pytest.approx(2.0 * (before - info["distance"]))
        assert info["time"] == -0.03 and info["collision"] in (0.0, -0.5)
        assert info["arrival"] == (7.0 if terminated else 0.0)
        if terminated or truncated:
            break


def test_walking_into_a_wall_costs_the_collision_penalty_and_open_floor_does_not(tmp_path):
    env = NavEnv(scene=scene_file(tmp_path, EMPTY_ROOM), neighbours=0, collision_weight=0.25)
    env.reset(seed=0)
    put(env, (5.0, 1.0), (0.0, -1.0), (5.0, 9.0))  # 0.7 m from the bound at y = 0, facing it
    penalties = [env.step(np.array([1.0, 0.0], np.float32))[4]["collision"] for _ in range(12)]
    assert penalties[:3] == [0.0, 0.0, 0.0] and penalties[-1] == -0.25
    assert env.batch.world.table.pos[env.batch.rows[0], 1] == pytest.approx(0.3, abs=1e-6)  # (against it)


def test_walking_straight_at_the_goal_arrives_and_ends_the_episode_with_the_arrival_bonus(tmp_path):
    env = NavEnv(scene=scene_file(tmp_path, EMPTY_ROOM), max_steps=300)
    obs, _ = env.reset(seed=11)
    for _ in range(300):
        obs, reward, terminated, truncated, info = env.step(greedy(obs))
        if terminated or truncated:
            break
    assert terminated and not truncated and info["is_success"]
    assert info["arrival"] == NavSettings().arrival_weight and info["distance"] <= NavSettings().goal_radius


@pytest.mark.render
def test_rgb_array_rendering_returns_the_viewers_frame():
    import ecs_nav.systems.render as render

    env = NavEnv(render_mode="rgb_array")
    env.reset(seed=0)
    try:
        frame = env.render()
    except render.RenderUnavailable as exc:
        pytest.skip(f"no OpenGL context here: {exc}")
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 0
    env.close()


def test_bad_settings_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="NavSettings.n_rays"):
        NavEnv(n_rays=-1)
    with pytest.raises(ValueError, match="NavSettings.action"):
        NavEnv(action="jump")
    with pytest.raises(TypeError, match="unknown setting 'rays'"):
        NavEnv(rays=8)
    env = NavEnv(action="discrete")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"discrete action is in \[0, 8\]"):
        env.step(9)
