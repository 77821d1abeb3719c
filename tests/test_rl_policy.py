"""Policy files (ecs_nav.rl.policy) and the policy-driven learner (ecs_nav.rl.watch, ecs-nav
--policy): ``act`` equals a hand-written forward pass, bad files give one clear error, a
policy-driven World's first episode is NavEnv's episode under the same actions, and the trained
example policy brings its learner to its goals."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from ecs_nav.cli import main  # noqa: E402
from ecs_nav.rl import ROOM, NavEnv, NavSettings  # noqa: E402
from ecs_nav.rl.policy import ROOM_MARK, NumpyPolicy, PolicyError, load_policy, save_policy  # noqa: E402
from ecs_nav.rl.watch import DRIVER, policy_world  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "ppo_room.npz")
SMALL = NavSettings(n_rays=6, neighbours=2)  # 4 + 6 + 10 = 20 observation elements


def random_arrays(rng, settings: NavSettings = SMALL, hidden=(16, 8), outputs: int = 2):
    sizes = [settings.observation_size, *hidden, outputs]
    weights = [rng.normal(0, 0.5, (sizes[k + 1], sizes[k])) for k in range(len(sizes) - 1)]
    biases = [rng.normal(0, 0.5, sizes[k + 1]) for k in range(len(sizes) - 1)]
    mean = rng.normal(0, 1, sizes[0])
    var = rng.uniform(0.1, 4.0, sizes[0])
    return weights, biases, mean, var


def hand_forward(obs, weights, biases, mean, var, clip, eps, activation):
    """The forward pass written out element by element (no matrix products)."""
    x = [min(max((float(o) - m) / (v + eps) ** 0.5, -clip), clip) for o, m, v in zip(obs, mean, var)]
    for k, (w, b) in enumerate(zip(weights, biases)):
        y = [sum(w[i][j] * x[j] for j in range(len(x))) + b[i] for i in range(len(b))]
        if k < len(weights) - 1:
            y = [np.tanh(v) if activation == "tanh" else max(v, 0.0) for v in y]
        x = y
    return x


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_box_policy_act_equals_a_hand_written_forward_pass_clipped_to_the_bounds(tmp_path, activation):
    rng = np.random.default_rng(1)
    weights, biases, mean, var = random_arrays(rng)
    low, high = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
    path = tmp_path / "p.npz"
    save_policy(path, weights, biases, activation, mean, var, 3.0, 1e-8, "box", low, high, SMALL)
    policy = load_policy(path)
    obs = rng.normal(0, 3, (50, SMALL.observation_size)).astype(np.float32)
    weights32 = [w.astype(np.float32).astype(np.float64) for w in weights]  # (the file stores float32 layers)
    biases32 = [b.astype(np.float32).astype(np.float64) for b in biases]
    expected = np.array([np.clip(hand_forward(o, weights32, biases32, mean, var, 3.0, 1e-8, activation), low, high)
                         for o in obs])
    got = policy.act(obs)
    assert got.shape == (50, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert (np.abs(expected) == 1.0).any() and (np.abs(expected) < 1.0).any()  # both clipped and free outputs
    np.testing.assert_array_equal(policy.act(obs[7]), got[7])  # one observation, one action


def test_discrete_policy_acts_with_the_argmax_of_its_outputs(tmp_path):
    rng = np.random.default_rng(2)
    settings = dataclasses.replace(SMALL, action="discrete", headings=6)
    weights, biases, mean, var = random_arrays(rng, settings, hidden=(12,), outputs=7)
    save_policy(tmp_path / "d.npz", weights, biases, "tanh", mean, var, 10.0, 0.0, "discrete", settings=settings)
    policy = load_policy(tmp_path / "d.npz")
    obs = rng.normal(0, 1, (40, settings.observation_size))
    w32 = [w.astype(np.float32) for w in weights]
    b32 = [b.astype(np.float32) for b in biases]
    expected = [int(np.argmax(hand_forward(o, w32, b32, mean, var, 10.0, 0.0, "tanh"))) for o in obs]
    assert policy.act(obs).tolist() == expected
    assert len(set(expected)) > 1
    assert policy.settings == settings


def test_a_policy_file_keeps_its_settings_and_names_the_rl_room_by_its_mark(tmp_path):
    settings = dataclasses.replace(SMALL, max_steps=77, arrival_weight=2.5)
    from ecs_nav.rl.policy import settings_to_json

    assert f'"scene": "{ROOM_MARK}"' in settings_to_json(settings)
    weights, biases, mean, var = random_arrays(np.random.default_rng(3), settings)
    save_policy(tmp_path / "s.npz", weights, biases, "tanh", mean, var, 10.0, 1e-8, "box", [-1, -1], [1, 1], settings)
    loaded = load_policy(tmp_path / "s.npz").settings
    assert loaded == settings and loaded.scene == ROOM


def test_a_missing_or_corrupt_policy_file_raises_a_policy_error_naming_it(tmp_path):
    with pytest.raises(PolicyError, match="nothere.npz: no such policy file"):
        load_policy(tmp_path / "nothere.npz")
    with pytest.raises(PolicyError, match="a folder"):
        load_policy(tmp_path)
    text = tmp_path / "text.npz"
    text.write_text("not arrays")
    with pytest.raises(PolicyError, match="text.npz: not a policy file"):
        load_policy(text)
    other = tmp_path / "other.npz"
    np.savez(other, a=np.zeros(3))
    with pytest.raises(PolicyError, match="other.npz: not a policy file of format"):
        load_policy(other)
    weights, biases, mean, var = random_arrays(np.random.default_rng(4))
    good = tmp_path / "good.npz"
    save_policy(good, weights, biases, "tanh", mean, var, 10.0, 1e-8, "box", [-1, -1], [1, 1], SMALL)
    with np.load(good) as data:
        arrays = {k: data[k] for k in data.files}
    cut = tmp_path / "cut.npz"
    np.savez(cut, **{k: v for k, v in arrays.items() if k != "bias_1"})
    with pytest.raises(PolicyError, match="cut.npz: a policy file without bias_1"):
        load_policy(cut)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(PolicyError, match="truncated.npz: not a policy file"):
        load_policy(truncated)


def test_a_policy_whose_layers_do_not_take_its_settings_observation_is_refused(tmp_path):
    weights, biases, mean, var = random_arrays(np.random.default_rng(5))
    bigger = dataclasses.replace(SMALL, n_rays=8)  # 22 elements against the layers' 20
    with pytest.raises(PolicyError, match=r"layer 0: .* do not take 22 inputs"):
        save_policy(tmp_path / "x.npz", weights, biases, "tanh", np.zeros(22), np.ones(22), 10.0, 1e-8, "box",
                    [-1, -1], [1, 1], bigger)
    with pytest.raises(PolicyError, match="obs_mean"):
        NumpyPolicy(weights, biases, "tanh", mean[:5], var, 10.0, 1e-8, "box", [-1, -1], [1, 1], SMALL)
    with pytest.raises(PolicyError, match="discrete action"):
        NumpyPolicy(weights, biases, "tanh", mean, var, 10.0, 1e-8, "discrete", settings=SMALL)
    with pytest.raises(PolicyError, match="activation"):
        NumpyPolicy(weights, biases, "sigmoid", mean, var, 10.0, 1e-8, "box", [-1, -1], [1, 1], SMALL)
    policy = NumpyPolicy(weights, biases, "tanh", mean, var, 10.0, 1e-8, "box", [-1, -1], [1, 1], SMALL)
    with pytest.raises(ValueError, match="an observation has 20 elements"):
        policy.act(np.zeros(21))
    with pytest.raises(ValueError, match="finite"):
        policy.act(np.full(20, np.nan))


@pytest.mark.parametrize("action", ["continuous", "discrete"])
def test_a_policy_driven_worlds_first_episode_is_navenvs_episode_under_the_same_actions(action):
    settings = dataclasses.replace(SMALL, max_steps=40, action=action)
    outputs = 2 if action == "continuous" else settings.headings + 1
    weights, biases, mean, var = random_arrays(np.random.default_rng(6), settings, outputs=outputs)
    kind, low, high = ("box", [-1, -1], [1, 1]) if action == "continuous" else ("discrete", None, None)
    policy = NumpyPolicy(weights, biases, "tanh", mean, var, 10.0, 1e-8, kind, low, high, settings)
    world = policy_world(policy, seed=11)
    driver = world.resources[DRIVER]
    env = NavEnv(policy.settings)
    obs, _ = env.reset(seed=11)
    np.testing.assert_array_equal(driver.batch.goal, env.batch.goal)
    for _ in range(40):
        obs, _, terminated, truncated, _ = env.step(policy.act(obs))
        world.step()
        here = world.table.pos[driver.batch.rows[0]]
        np.testing.assert_array_equal(here, env.world.table.pos[env.batch.rows[0]])
    assert truncated and not terminated
    world.step()  # the 41st tick ends the episode (truncated) and starts the next from a new start
    assert driver.episodes == 1 and driver.arrivals == 0 and driver.batch.steps[0] == 1
    env.close()
    world.close()


NAMED_LEARNER = """
[world]
dt = 0.1
systems = ["steering", "physics"]
[map]
bounds = [0.0, 0.0, 10.0, 6.0]
[[map.circle]]
center = [5.0, 3.0]
radius = 0.6
height = 2.0
[[entity]]
name = "learner"
Position = { x = 1.0, y = 1.0 }
PathRequest = { goal = [9.0, 5.0] }
"""


@pytest.mark.skipif(not os.path.exists(EXAMPLE), reason="no example policy file")
def test_a_scene_names_its_learners_first_start_and_goal_and_the_example_policy_walks_there(tmp_path):
    scene = tmp_path / "named.toml"
    scene.write_text(NAMED_LEARNER)
    world = policy_world(EXAMPLE, scene=scene, seed=0)
    driver = world.resources[DRIVER]
    row = driver.batch.rows[0]
    np.testing.assert_array_equal(world.table.pos[row], [1.0, 1.0])
    np.testing.assert_array_equal(driver.batch.goal[0], [9.0, 5.0])
    assert len(world.table) == 2  # the learner and its goal marker: the scene's own learner entry was taken out
    ticks = 0
    while driver.episodes == 0 and ticks < 200:
        world.step()
        ticks += 1
    assert driver.arrivals == 1
    fastest = (np.hypot(8.0, 4.0) - driver.policy.settings.goal_radius) / driver.policy.settings.max_speed / world.dt
    assert fastest <= ticks <= 2 * fastest
    world.close()


def test_a_scene_with_two_learners_is_refused(tmp_path):
    scene = tmp_path / "two.toml"
    scene.write_text(NAMED_LEARNER + '[[entity]]\nname = "learner"\nPosition = { x = 2.0, y = 1.0 }\n')
    weights, biases, mean, var = random_arrays(np.random.default_rng(8))
    policy = NumpyPolicy(weights, biases, "tanh", mean, var, 10.0, 1e-8, "box", [-1, -1], [1, 1], SMALL)
    with pytest.raises(ValueError, match="a scene names one learner"):
        policy_world(policy, scene=scene)


@pytest.mark.skipif(not os.path.exists(EXAMPLE), reason="no example policy file")
def test_the_example_policy_brings_its_learner_to_nine_goals_in_ten_from_the_cli(capsys):
    assert main(["run", "--headless", "--policy", EXAMPLE, "--ticks", "1500", "--seed", "3", "--json"]) == 0
    import json

    summary = json.loads(capsys.readouterr().out)
    run = summary["policy"]
    assert run["episodes"] >= 8  # (an episode is at most 200 steps; the trained learner needs about 60-130)
    assert run["arrived"] >= 0.9 * run["episodes"]
    assert summary["agents"] == 4  # the room's three walkers and the learner


def test_cli_bad_policy_file_is_one_error_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"\x00" * 64)
    for argv in (["run", "--headless", "--policy", str(bad)], ["view", "--policy", str(bad)],
                 ["run", str(ROOM), "--headless", "--policy", str(tmp_path / "none.npz")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("ecs-nav: error: ") and "policy file" in err[0]


def test_cli_needs_a_scene_without_a_policy(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["view"])
    assert stop.value.code == 2
    assert "the following arguments are required: scene" in capsys.readouterr().err


def test_the_exported_policy_acts_as_stable_baselines3_predicts(tmp_path):
    """Only where stable-baselines3 (and torch) are installed: an untrained PPO's actor and a
    VecNormalize with made-up statistics, exported and reloaded, give sb3's deterministic actions."""
    pytest.importorskip("stable_baselines3")
    import sys

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    sys.path.insert(0, os.path.dirname(EXAMPLE))
    from export_policy import export

    torch.set_num_threads(1)
    for action, arch in (("continuous", [32, 16]), ("discrete", [24])):
        settings = dataclasses.replace(SMALL, action=action)
        venv = VecNormalize(DummyVecEnv([lambda s=settings: NavEnv(s)]))
        rng = np.random.default_rng(7)
        venv.obs_rms.mean = rng.normal(0, 1, settings.observation_size)
        venv.obs_rms.var = rng.uniform(0.1, 4, settings.observation_size)
        venv.training = False
        model = PPO("MlpPolicy", venv, policy_kwargs={"net_arch": arch, "activation_fn": torch.nn.ReLU}, seed=0,
                    device="cpu")
        export(model, venv, str(tmp_path / f"{action}.npz"), settings)
        policy = load_policy(tmp_path / f"{action}.npz")
        obs = rng.normal(0, 3, (64, settings.observation_size)).astype(np.float32)
        expected, _ = model.predict(venv.normalize_obs(obs), deterministic=True)
        if action == "continuous":
            np.testing.assert_allclose(policy.act(obs), expected, atol=1e-5)
        else:
            assert (policy.act(obs) == expected).mean() >= 0.98  # (float32 ties aside)


@pytest.mark.skipif(not os.path.exists(EXAMPLE), reason="no example policy file")
def test_the_viewers_reload_builds_the_policy_driven_world_again():
    import ecs_nav.systems.render as render

    from ecs_nav.cli import build_parser, policy_loader
    from ecs_nav.render.viewer import Viewer

    try:
        window = render.offscreen_window()
    except render.RenderUnavailable as exc:
        pytest.skip(f"no OpenGL context here: {exc}")
    args = build_parser().parse_args(["view", "--policy", EXAMPLE, "--seed", "2"])
    loader = policy_loader(args)
    assert args.scene == ROOM  # (left out: the scene the policy was trained in)
    world = loader(args.scene, seed=args.seed)
    viewer = Viewer(world, window, scene=args.scene, seed=args.seed, loader=loader)
    try:
        viewer.update(0.5)
        first = viewer.world
        assert first.tick > 0 and viewer.reload() and viewer.world is not first
        assert viewer.world.tick == 0 and DRIVER in viewer.world.resources
        np.testing.assert_array_equal(viewer.world.resources[DRIVER].batch.goal, first.resources[DRIVER].batch.goal)
    finally:
        viewer.close()
        viewer.world.close()
