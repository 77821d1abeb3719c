"""Watch a policy that ``examples/train_ppo.py`` saved cross the room with pillars: in a viewer
window (``NavEnv(render_mode="human")``), or, with ``--record``, written to a GIF offscreen (no
display needed; the GIF writer needs pillow, which the media extra brings). Needs stable-baselines3
beside the rl extra, as the training does.

    python examples/watch_ppo.py ppo_room [--episodes 3] [--seed 0] [--record ppo_room.gif]
"""

from __future__ import annotations

import argparse

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecNormalize
from train_ppo import NavVecEnv

from ecs_nav.render.gif import GifWriter
from ecs_nav.rl import NavEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", help="the name train_ppo.py saved under (--out), without .zip")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="the first episode's seed (then +1 each)")
    parser.add_argument("--record", metavar="GIF", help="write the episodes to this GIF instead of a window")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = PPO.load(f"{args.policy}.zip")
    normalize = VecNormalize.load(f"{args.policy}_vecnormalize.pkl", NavVecEnv(1))
    normalize.training = False
    env = NavEnv(render_mode="rgb_array" if args.record else "human")
    writer = GifWriter(args.record, fps=env.metadata["render_fps"]) if args.record else None
    try:
        for episode in range(args.episodes):
            obs, _ = env.reset(seed=args.seed + episode)
            done = False
            while not done:
                action, _ = model.predict(normalize.normalize_obs(obs[None]), deterministic=True)
                obs, _, terminated, truncated, info = env.step(action[0])
                done = terminated or truncated
                if writer is not None:
                    writer.append(env.render())
            print(f"episode {episode}: {'arrived' if terminated else 'truncated'} after {env.batch.steps[0]} steps")
    finally:
        if writer is not None:
            writer.close()
        env.close()


if __name__ == "__main__":
    main()
