"""`SB3VecEnv`: a Gymnasium VectorEnv (same-step autoreset) as a Stable-Baselines3 `VecEnv`."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

__all__ = ["SB3VecEnv", "make_sb3_vec_env"]


def _has_text(space: spaces.Space[Any]) -> bool:
    if isinstance(space, spaces.Text):
        return True
    if isinstance(space, spaces.Dict):
        return any(_has_text(sub) for sub in space.spaces.values())
    if isinstance(space, spaces.Tuple):
        return any(_has_text(sub) for sub in space.spaces)
    return False


class SB3VecEnv(VecEnv):
    """Drive a Gymnasium ``VectorEnv`` with Stable-Baselines3.

    SB3 expects a sub-env that ends to be reset in the same step, its last observation in
    ``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]`` set when a time limit
    (not the task) ended it: Gymnasium's ``AutoresetMode.SAME_STEP`` gives exactly that, so the
    vector env must use it (``gym.make_vec(..., autoreset_mode="SameStep")``). Gymnasium's
    vector infos (``{key: array, "_key": mask}``) become SB3's list of per-env dicts.

    SB3 has no ``Text`` space: an env whose observations contain text needs a wrapper that
    encodes it (for example to token ids in a ``Box``) before SB3 can use it.

    A vector env made with ``render_mode="rgb_array"`` gives this ``render_mode``,
    ``metadata["render_fps"]`` and :meth:`get_images`, so SB3's ``render()`` tiles the sub-envs'
    frames and ``VecVideoRecorder`` records them.

    Example:
        >>> import gymnasium as gym, openenv_gym
        >>> from openenv_gym.wrappers import SB3VecEnv
        >>> venv = SB3VecEnv(gym.make_vec("openenv/CartPole-v1", num_envs=2, autoreset_mode="SameStep"))
        >>> venv.seed(0)
        [0, 1]
        >>> venv.reset().shape
        (2, 4)
        >>> venv.close()
    """

    def __init__(self, venv: VectorEnv[Any, Any, Any]) -> None:
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3VecEnv needs autoreset_mode=AutoresetMode.SAME_STEP, the vector env uses {mode}; "
                "make it with gym.make_vec(..., autoreset_mode='SameStep') or openenv_gym.make_sb3_vec_env"
            )
        for name, space in (("observation", venv.single_observation_space), ("action", venv.single_action_space)):
            if _has_text(space):
                raise TypeError(
                    f"Stable-Baselines3 has no Text space, and the {name} space is {space}: wrap the env "
                    "to encode the text (e.g. as token ids in a Box) before handing it to SB3"
                )
        self.venv = venv
        self._actions: np.ndarray | None = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        # VecEnv set render_mode (through get_attr) and render_modes; VecVideoRecorder also reads the fps.
        if venv.metadata.get("render_fps") is not None:
            self.metadata = {**self.metadata, "render_fps": venv.metadata["render_fps"]}

    def reset(self) -> Any:
        seeds = self._seeds if any(seed is not None for seed in self._seeds) else None
        options = self._options[0] or None  # a Gymnasium VectorEnv takes one options dict
        # Gymnasium's own vector envs (and ours) take one seed per sub-env; VectorEnv.reset declares only an int.
        observations, infos = self.venv.reset(seed=seeds, options=options)  # type: ignore[arg-type]
        self.reset_infos = self._split_infos(infos)
        self._reset_seeds()
        self._reset_options()
        return observations

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions
        if hasattr(self.venv, "step_async"):  # RemoteVectorEnv: the step runs while SB3 goes on
            self.venv.step_async(actions)
            self._actions = None

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            assert hasattr(self.venv, "step_wait")  # step_async left no actions: the venv has step_async/step_wait
            observations, rewards, terminations, truncations, infos = self.venv.step_wait()
        else:
            observations, rewards, terminations, truncations, infos = self.venv.step(self._actions)
        dones = np.logical_or(terminations, truncations)
        per_env = self._split_infos(infos)
        time_limits = np.logical_and(truncations, np.logical_not(terminations)).tolist()
        for index, (info, done) in enumerate(zip(per_env, dones.tolist())):
            if done:
                # As DummyVecEnv: the step's own info, the last observation, and the reset's info
                # kept apart in reset_infos.
                final_obs, final_info = info.pop("final_obs", None), info.pop("final_info", {})
                self.reset_infos[index] = info
                info = per_env[index] = {**final_info, "terminal_observation": final_obs}
            info["TimeLimit.truncated"] = time_limits[index]
        return observations, np.asarray(rewards, dtype=np.float32), dones, per_env

    def _split_infos(self, infos: dict[str, Any]) -> list[dict[str, Any]]:
        """Gymnasium's ``{key: array, "_key": mask}`` as one dict per sub-env."""
        per_env: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._split_into(per_env, infos)
        return per_env

    def _split_into(self, per_env: list[dict[str, Any]], infos: dict[str, Any]) -> None:
        # Key by key, only the sub-envs a key's mask selects: most steps most keys are for few.
        for key, values in infos.items():
            if key.startswith("_"):
                continue
            mask = infos.get(f"_{key}")
            indices = range(self.num_envs) if mask is None else np.flatnonzero(mask).tolist()
            if isinstance(values, dict):
                inner: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
                self._split_into(inner, values)
                for index in indices:
                    per_env[index][key] = inner[index]
            else:
                for index in indices:
                    per_env[index][key] = values[index]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Every sub-env's RGB frame, as ``DummyVecEnv`` gives them (``None`` each, with a warning,
        unless the vector env renders ``rgb_array``)."""
        if self.render_mode != "rgb_array":
            warnings.warn(
                f"The render mode is {self.render_mode}, but this method assumes it is `rgb_array` to obtain images.",
                stacklevel=2,
            )
            return [None] * self.num_envs
        frames: Any = self.venv.render()  # in rgb_array mode, one array per sub-env
        return list(frames) if frames is not None else [None] * self.num_envs

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The vector env's attribute, once per selected sub-env (``render_mode`` among them)."""
        return [getattr(self.venv, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"cannot set {attr_name!r} on remote sub-environments")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        raise AttributeError(f"cannot call {method_name!r} on remote sub-environments")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]], indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return list(indices) if isinstance(indices, Iterable) else [indices]


def make_sb3_vec_env(env_id: str, n_envs: int = 1, *, monitor: bool = True, **kwargs: Any) -> VecEnv:
    """``gym.make_vec(env_id, n_envs, autoreset_mode="SameStep")`` ready for Stable-Baselines3.

    Args:
        env_id: a registered id, e.g. ``"openenv/CartPole-v1"``.
        n_envs: the number of sub-environments.
        monitor: wrap in SB3's ``VecMonitor``, so training logs episode returns and lengths.
        **kwargs: passed to ``gym.make_vec`` (``sessions_per_server``, ``base_urls``, ...).

    Example:
        >>> import openenv_gym
        >>> venv = openenv_gym.make_sb3_vec_env("openenv/CartPole-v1", n_envs=2)
        >>> venv.num_envs
        2
        >>> venv.close()
    """
    venv: VecEnv = SB3VecEnv(gym.make_vec(env_id, num_envs=n_envs, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs))
    return VecMonitor(venv) if monitor else venv
