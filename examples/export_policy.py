"""Write a stable-baselines3 PPO policy that ``examples/train_ppo.py`` saved as a policy file
(``.npz``, ``ecs_nav.rl.policy``) that loads without torch: ``ecs-nav view SCENE --policy FILE``
and ``ecs_nav.rl.policy.load_policy`` read it.

    python examples/export_policy.py ppo_room ppo_room.npz

Reads ``ppo_room.zip`` and ``ppo_room_vecnormalize.pkl``; writes the actor of its MlpPolicy
(``mlp_extractor.policy_net``'s layers, then ``action_net``), the observation normalisation, the
action space and the NavSettings it was trained with (train_ppo.py's: the defaults). Needs
stable-baselines3 (and torch), as the training does.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from gymnasium import spaces

from ecs_nav.rl import NavSettings
from ecs_nav.rl.policy import NumpyPolicy, save_policy


def export(model, normalize, path: str, settings: NavSettings | None = None) -> NumpyPolicy:
    """Write ``model`` (a stable-baselines3 PPO with an MlpPolicy whose actor has its own layers)
    and ``normalize`` (its VecNormalize, or None for none) to the policy file ``path``."""
    policy = model.policy
    layers = list(policy.mlp_extractor.policy_net) + [policy.action_net]
    linear = [layer for layer in layers if isinstance(layer, torch.nn.Linear)]
    activations = {type(layer).__name__ for layer in layers if not isinstance(layer, torch.nn.Linear)}
    names = {"Tanh": "tanh", "ReLU": "relu"}
    if len(activations) > 1 or not activations <= set(names):
        raise ValueError(f"export: the actor's activations must be one of {sorted(names)}, got {sorted(activations)}")
    if getattr(policy, "squash_output", False):
        raise ValueError("export: a policy with squash_output (gSDE) is not a plain MLP actor")
    weights = [layer.weight.detach().cpu().numpy() for layer in linear]
    biases = [layer.bias.detach().cpu().numpy() for layer in linear]
    size = weights[0].shape[1]
    if normalize is not None and normalize.norm_obs:
        rms = normalize.obs_rms
        mean, var, clip, epsilon = rms.mean, rms.var, normalize.clip_obs, normalize.epsilon
    else:
        mean, var, clip, epsilon = np.zeros(size), np.ones(size), np.inf, 0.0
    space = policy.action_space
    if isinstance(space, spaces.Box):
        kind, low, high = "box", space.low, space.high
    elif isinstance(space, spaces.Discrete):
        kind, low, high = "discrete", None, None
    else:
        raise ValueError(f"export: an action space of Box or Discrete, got {space}")
    return save_policy(path, weights, biases, names[activations.pop()] if activations else "tanh", mean, var,
                       clip, epsilon, kind, low, high, settings or NavSettings())


def main() -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize
    from train_ppo import NavVecEnv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", help="the name train_ppo.py saved under (--out), without .zip")
    parser.add_argument("out", help="the policy file to write (.npz)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = PPO.load(f"{args.policy}.zip", device="cpu")
    normalize = VecNormalize.load(f"{args.policy}_vecnormalize.pkl", NavVecEnv(1))
    export(model, normalize, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
