"""Train a stable-baselines3 PPO policy to cross the room with pillars (ecs_nav.rl's default scene)
on ``NavVectorEnv`` until it reaches the goal in at least ``--target`` of its evaluation episodes.

stable-baselines3 (and torch) are not among ecs-nav's extras: install them beside the rl extra,
``pip install 'ecs-nav[rl]' stable-baselines3``. stable-baselines3's vector environments reset a
copy on the step its episode ends: ``NavVectorEnv(autoreset_mode="SameStep")`` does so, and
``NavVecEnv`` below hands its steps to PPO in stable-baselines3's form.

    python examples/train_ppo.py [--copies 64] [--chunk 200000] [--max-steps 3000000] [--out ppo_room]

Every ``--chunk`` training steps the policy (deterministic actions) is evaluated on ``--episodes``
episodes, one per copy of a separate NavVectorEnv with its own seed; training stops at the target
success rate or after ``--max-steps``. Writes ``OUT.zip`` (the policy) and ``OUT_vecnormalize.pkl``
(the observation normalisation it was trained with) and prints the wall-clock time; with
``--export FILE.npz`` also the policy file that loads without torch (``examples/export_policy.py``),
which ``ecs-nav view SCENE --policy FILE.npz`` drives the learner with.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from ecs_nav.rl import NavVectorEnv


class NavVecEnv(VecEnv):
    """A ``NavVectorEnv`` with same-step autoreset as a stable-baselines3 ``VecEnv``: ``dones``
    are terminated or truncated, each ended copy's last observation is in its info's
    ``terminal_observation``, ``is_success`` says whether it arrived."""

    def __init__(self, num_envs: int, seed: int = 0, **settings):
        self.env = NavVectorEnv(num_envs, autoreset_mode="SameStep", **settings)
        self.seed_value = seed
        super().__init__(num_envs, self.env.single_observation_space, self.env.single_action_space)

    def reset(self):
        obs, _ = self.env.reset(seed=self.seed_value)
        self.seed_value += 1
        return obs

    def step_async(self, actions):
        self.actions = actions

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.env.step(self.actions)
        dones = terminated | truncated
        out = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            out[i] = {"terminal_observation": infos["final_obs"][i], "is_success": bool(terminated[i]),
                      "TimeLimit.truncated": bool(truncated[i])}
        return obs, rewards.astype(np.float32), dones, out

    def close(self):
        self.env.close()

    def seed(self, seed=None):
        self.seed_value = 0 if seed is None else seed
        return [seed] * self.num_envs

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.env, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name, value, indices=None):
        setattr(self.env, attr_name, value)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        raise NotImplementedError("NavVecEnv: the copies share one World")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._get_indices(indices))


def success_rate(model, normalize: VecNormalize, episodes: int, seed: int) -> float:
    """The share of ``episodes`` copies (a fresh NavVectorEnv, one episode each) whose learner
    arrives under the policy's deterministic actions before its episode is truncated."""
    envs = NavVectorEnv(episodes)
    obs, _ = envs.reset(seed=seed)
    outcome = np.full(episodes, -1)
    while (outcome < 0).any():
        actions, _ = model.predict(normalize.normalize_obs(obs), deterministic=True)
        obs, _, terminated, truncated, _ = envs.step(actions)
        first = (outcome < 0) & (terminated | truncated)
        outcome[first] = terminated[first]
    envs.close()
    return float(outcome.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=64, help="copies of the room trained on at once")
    parser.add_argument("--chunk", type=int, default=200_000, help="training steps between evaluations")
    parser.add_argument("--max-steps", type=int, default=3_000_000, help="training steps at most")
    parser.add_argument("--episodes", type=int, default=200, help="evaluation episodes")
    parser.add_argument("--target", type=float, default=0.9, help="success rate to stop at")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="ppo_room", help="policy file name (without .zip)")
    parser.add_argument("--export", metavar="NPZ", help="also write the torch-free policy file (ecs_nav.rl.policy)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's threads (more than one made each small layer 5-10x slower on 2 shared cores)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    venv = VecNormalize(NavVecEnv(args.copies, seed=args.seed), norm_obs=True, norm_reward=True, gamma=0.99)
    model = PPO("MlpPolicy", venv, n_steps=256, batch_size=1024, n_epochs=5, learning_rate=3e-4, gamma=0.99,
                gae_lambda=0.95, ent_coef=0.0, policy_kwargs={"net_arch": [128, 128]}, seed=args.seed, verbose=0)
    trained, rate = 0, 0.0
    while trained < args.max_steps:
        model.learn(total_timesteps=args.chunk, reset_num_timesteps=False)
        trained = model.num_timesteps
        rate = success_rate(model, venv, args.episodes, seed=10_000 + args.seed)
        print(f"{trained:>9,} steps  {time.perf_counter() - start:7.1f} s  success {rate:.1%}", flush=True)
        if rate >= args.target:
            break
    model.save(args.out)
    venv.save(f"{args.out}_vecnormalize.pkl")
    if args.export:
        from export_policy import export

        export(model, venv, args.export)
    print(f"{'reached' if rate >= args.target else 'did not reach'} {args.target:.0%} success: {rate:.1%} of "
          f"{args.episodes} evaluation episodes after {trained:,} steps, {time.perf_counter() - start:.0f} s wall-clock; "
          f"saved {args.out}.zip")


if __name__ == "__main__":
    main()
