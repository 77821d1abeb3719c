"""A trained policy as plain numpy arrays: a policy file (``.npz``) that needs no torch to load.

A policy file holds a multilayer perceptron's actor, the observation normalisation it was trained
with, its action space and the ``NavSettings`` of its learner (so that what it is shown is what it
was trained on). ``examples/export_policy.py`` writes one from a stable-baselines3 PPO policy and
its VecNormalize statistics; ``save_policy`` writes one from any arrays.

The arrays of a file (F = observation size, A = action outputs: 2 for a Box, n for Discrete(n)):

- ``format``: ``FORMAT``;
- ``weight_0 ... weight_{L-1}`` (out, in) float and ``bias_0 ... bias_{L-1}`` (out,): the layers,
  the first's ``in`` is F, the last's ``out`` is A;
- ``activation``: ``"tanh"`` or ``"relu"``, applied after every layer but the last;
- ``obs_mean`` (F,), ``obs_var`` (F,), ``obs_clip`` and ``obs_epsilon`` (scalars): the input is
  ``clip((obs - obs_mean) / sqrt(obs_var + obs_epsilon), -obs_clip, obs_clip)``
  (stable-baselines3's VecNormalize);
- ``action_kind``: ``"box"`` (the last layer's output is the action, clipped to
  ``action_low``/``action_high`` (A,)) or ``"discrete"`` (the action is the output's argmax);
- ``settings``: the learner's ``NavSettings`` as JSON (its scene as ``ROOM_MARK`` for
  ``ecs_nav.rl``'s room with pillars, ``CROWD_MARK`` for its crowded hall, else a path).
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile

import numpy as np

from ecs_nav.rl import CROWD_ROOM, ROOM
from ecs_nav.rl.batch import NavSettings

FORMAT = "ecs_nav.policy/1"
"""The ``format`` array of a policy file this module reads and writes."""
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}
"""The hidden layers' activations a policy file may name."""
ROOM_MARK = "ecs_nav.rl:room.toml"
"""How a policy file names ``ecs_nav.rl.ROOM`` (a path would not survive a move of the package)."""
CROWD_MARK = "ecs_nav.rl:crowd_room.toml"
"""How a policy file names ``ecs_nav.rl.CROWD_ROOM``."""


class PolicyError(ValueError):
    """A policy file that is missing, unreadable or inconsistent; the message names the file."""


def scene_mark(scene: str | os.PathLike) -> str:
    """``scene`` as a policy file stores it: ``ROOM_MARK``/``CROWD_MARK`` for ecs_nav.rl's own
    scenes, else the text as given."""
    for path, mark in ((ROOM, ROOM_MARK), (CROWD_ROOM, CROWD_MARK)):
        if os.path.exists(str(scene)) and os.path.samefile(str(scene), path):
            return mark
    return os.fspath(scene)


def scene_of_mark(text: str) -> str:
    """The scene a policy file's ``settings.scene`` names (the inverse of ``scene_mark``)."""
    return {ROOM_MARK: ROOM, CROWD_MARK: CROWD_ROOM}.get(text, text)


class NumpyPolicy:
    """A deterministic actor: ``act(obs)`` normalises the observation, runs the layers and turns
    the output into an action (the module docstring gives each step; ``NavSettings`` documents the
    observation and the action). ``load_policy`` builds one from a file; the constructor checks the
    arrays as it does (PolicyError naming ``source``).

    Attributes: ``weights`` and ``biases`` (lists, one per layer), ``activation`` (a name of
    ``ACTIVATIONS``), ``obs_mean``, ``obs_var``, ``obs_clip``, ``obs_epsilon``, ``action_kind``,
    ``action_low``/``action_high`` (box; None for discrete), ``settings`` (NavSettings),
    ``source`` (the file)."""

    def __init__(self, weights, biases, activation: str, obs_mean, obs_var, obs_clip: float, obs_epsilon: float,
                 action_kind: str, action_low=None, action_high=None, settings: NavSettings | None = None,
                 source: str = "policy"):
        self.source = str(source)
        self.weights = [np.asarray(w, dtype=np.float64) for w in weights]
        self.biases = [np.asarray(b, dtype=np.float64) for b in biases]
        self.activation = str(activation)
        self.obs_mean = np.asarray(obs_mean, dtype=np.float64)
        self.obs_var = np.asarray(obs_var, dtype=np.float64)
        self.obs_clip, self.obs_epsilon = float(obs_clip), float(obs_epsilon)
        self.action_kind = str(action_kind)
        self.action_low = None if action_low is None else np.asarray(action_low, dtype=np.float64)
        self.action_high = None if action_high is None else np.asarray(action_high, dtype=np.float64)
        self.settings = settings if settings is not None else NavSettings()
        self.check()

    def fail(self, message: str):
        raise PolicyError(f"{self.source}: {message}")

    def check(self) -> None:
        """PolicyError naming the file for layers that do not chain, or sizes that do not match the
        normalisation, the action space or the settings' observation size."""
        if not self.weights or len(self.weights) != len(self.biases):
            self.fail(f"needs as many biases as weights, at least one layer (got {len(self.weights)} weights, "
                      f"{len(self.biases)} biases)")
        if self.activation not in ACTIVATIONS:
            self.fail(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        size = self.settings.observation_size
        inputs = size
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            if w.ndim != 2 or w.shape[1] != inputs or b.shape != (w.shape[0],):
                self.fail(f"layer {k}: weight {w.shape} and bias {b.shape} do not take {inputs} inputs "
                          f"(the observation has {size} elements, NavSettings.observation_size)")
            if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
                self.fail(f"layer {k}: weights and biases must be finite")
            inputs = w.shape[0]
        if self.obs_mean.shape != (size,) or self.obs_var.shape != (size,):
            self.fail(f"obs_mean {self.obs_mean.shape} and obs_var {self.obs_var.shape} must have the observation's "
                      f"{size} elements")
        if not (np.all(np.isfinite(self.obs_mean)) and np.all(self.obs_var >= 0) and np.all(np.isfinite(self.obs_var))
                and self.obs_clip > 0 and self.obs_epsilon >= 0 and self.obs_var.min() + self.obs_epsilon > 0):
            self.fail("obs_mean must be finite, obs_var >= 0 with obs_var + obs_epsilon > 0, obs_clip > 0")
        action = self.settings.action
        if self.action_kind == "box":
            if action != "continuous":
                self.fail(f"a box action, but its settings' action is {action!r}")
            if self.action_low is None or self.action_high is None or self.action_low.shape != (inputs,) \
                    or self.action_high.shape != (inputs,) or np.any(self.action_low > self.action_high):
                self.fail(f"a box action needs action_low <= action_high of the last layer's {inputs} outputs")
            if inputs != 2:
                self.fail(f"a continuous action has 2 elements, the last layer gives {inputs}")
        elif self.action_kind == "discrete":
            if action != "discrete" or inputs != self.settings.headings + 1:
                self.fail(f"a discrete action of {inputs} choices, but its settings' action is {action!r} with "
                          f"{self.settings.headings} headings")
        else:
            self.fail(f"action_kind must be 'box' or 'discrete', got {self.action_kind!r}")

    @property
    def observation_size(self) -> int:
        """Elements of the observation ``act`` takes."""
        return self.weights[0].shape[1]

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        """The network's input for observations (n, F): VecNormalize's formula (module docstring)."""
        scaled = (obs - self.obs_mean) / np.sqrt(self.obs_var + self.obs_epsilon)
        return np.clip(scaled, -self.obs_clip, self.obs_clip)

    def act(self, obs) -> np.ndarray:
        """The deterministic action for ``obs``: one observation (F,) gives one action (a (2,)
        float32 for a box, an int64 scalar array for discrete), a batch (n, F) gives n of them.
        ValueError for an observation of another size or with a NaN."""
        x = np.asarray(obs, dtype=np.float64)
        single = x.ndim == 1
        x = x.reshape(1, -1) if single else x
        if x.ndim != 2 or x.shape[1] != self.observation_size:
            raise ValueError(f"{self.source}: an observation has {self.observation_size} elements "
                             f"(the policy's NavSettings), got shape {np.shape(obs)}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{self.source}: observations must be finite")
        h = self.normalize(x)
        fn = ACTIVATIONS[self.activation]
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w.T + b
            if k < last:
                h = fn(h)
        if self.action_kind == "box":
            out = np.clip(h, self.action_low, self.action_high).astype(np.float32)
        else:
            out = np.argmax(h, axis=1).astype(np.int64)
        return out[0] if single else out


def settings_to_json(settings: NavSettings) -> str:
    """``settings`` as a policy file's JSON (its scene as ``scene_mark`` gives it)."""
    fields = dataclasses.asdict(settings)
    fields["scene"] = scene_mark(settings.scene)
    return json.dumps(fields, sort_keys=True)


def save_policy(path: str | os.PathLike, weights, biases, activation: str, obs_mean, obs_var, obs_clip: float,
                obs_epsilon: float, action_kind: str, action_low=None, action_high=None,
                settings: NavSettings | None = None) -> NumpyPolicy:
    """Write a policy file (the module docstring lists its arrays) after checking it as
    ``NumpyPolicy`` does; returns that policy. ``path`` gets ``.npz`` if it has no suffix."""
    policy = NumpyPolicy(weights, biases, activation, obs_mean, obs_var, obs_clip, obs_epsilon, action_kind,
                         action_low, action_high, settings, source=os.fspath(path))
    arrays = {"format": np.array(FORMAT), "activation": np.array(policy.activation),
              "obs_mean": policy.obs_mean, "obs_var": policy.obs_var, "obs_clip": np.array(policy.obs_clip),
              "obs_epsilon": np.array(policy.obs_epsilon), "action_kind": np.array(policy.action_kind),
              "settings": np.array(settings_to_json(policy.settings))}
    for k, (w, b) in enumerate(zip(policy.weights, policy.biases)):
        arrays[f"weight_{k}"], arrays[f"bias_{k}"] = w.astype(np.float32), b.astype(np.float32)
    if policy.action_kind == "box":
        arrays["action_low"], arrays["action_high"] = policy.action_low, policy.action_high
    np.savez_compressed(path, **arrays)
    return policy


def load_policy(path: str | os.PathLike) -> NumpyPolicy:
    """The policy in the file at ``path`` (written by ``save_policy``). PolicyError (a
    ValueError) naming the file when it is missing, not a policy file, or inconsistent."""
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise PolicyError(f"{name}: no such policy file" if not os.path.isdir(name)
                          else f"{name}: a folder, not a policy file")
    if not zipfile.is_zipfile(name):
        raise PolicyError(f"{name}: not a policy file (a policy file is an .npz, a zip of numpy arrays)")
    try:
        with np.load(name, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise PolicyError(f"{name}: not a policy file (.npz): {type(exc).__name__}: {exc}") from None
    if str(arrays.get("format", "")) != FORMAT:
        raise PolicyError(f"{name}: not a policy file of format {FORMAT!r} (its format: "
                          f"{str(arrays['format']) if 'format' in arrays else 'none'})")
    layers = sum(1 for key in arrays if key.startswith("weight_"))
    needed = ["activation", "obs_mean", "obs_var", "obs_clip", "obs_epsilon", "action_kind", "settings",
              *(f"weight_{k}" for k in range(layers)), *(f"bias_{k}" for k in range(layers))]
    if str(arrays.get("action_kind", "")) == "box":
        needed += ["action_low", "action_high"]
    missing = [key for key in needed if key not in arrays]
    if missing:
        raise PolicyError(f"{name}: a policy file without {', '.join(missing)}")
    try:
        fields = json.loads(str(arrays["settings"]))
        fields["scene"] = scene_of_mark(fields.get("scene", ROOM_MARK))
        settings = NavSettings(**fields)
    except (ValueError, TypeError) as exc:
        raise PolicyError(f"{name}: its settings are not NavSettings: {exc}") from None
    return NumpyPolicy([arrays[f"weight_{k}"] for k in range(layers)], [arrays[f"bias_{k}"] for k in range(layers)],
                       str(arrays["activation"]), arrays["obs_mean"], arrays["obs_var"], float(arrays["obs_clip"]),
                       float(arrays["obs_epsilon"]), str(arrays["action_kind"]), arrays.get("action_low"),
                       arrays.get("action_high"), settings, source=name)
