"""`SB3VecEnv`: a Gymnasium VectorEnv (same-step autoreset) as a Stable-Baselines3 `VecEnv`."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

__all__ = ["SB3VecEnv", "make_sb3_vec_env"]


#: The dtypes Gymnasium's vector infos batch a Python ``bool``, ``int`` and ``float`` into.
_PYTHON_NUMBER_DTYPES = (np.dtype(np.bool_), np.dtype(np.int64), np.dtype(np.float64))


def _of_python_numbers(values: Any) -> bool:
    """Whether ``values`` is a vector info's batch of Python numbers: a sub-env's value is then
    handed on as the Python number DummyVecEnv hands on (JSON carries no ``float64`` of its own)."""
    return isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype in _PYTHON_NUMBER_DTYPES


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

    ``get_attr``, ``set_attr``, ``env_method`` and ``env_is_wrapped`` reach the sub-envs SB3's
    ``indices`` choose, and no others (a RemoteVectorEnv asks only their servers); ``set_options``
    gives each sub-env its own options at its next reset; Dict and Tuple actions are taken one
    per sub-env, as ``DummyVecEnv`` takes them.

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
        self._actions: Any = None
        # SB3 hands a Dict or Tuple action per sub-env: they are joined into this batch (Gymnasium's form).
        composite = isinstance(venv.single_action_space, (spaces.Dict, spaces.Tuple))
        self._action_batch = create_empty_array(venv.single_action_space, venv.num_envs) if composite else None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        # VecEnv set render_mode (through get_attr) and render_modes; VecVideoRecorder also reads the fps.
        if venv.metadata.get("render_fps") is not None:
            self.metadata = {**self.metadata, "render_fps": venv.metadata["render_fps"]}

    def reset(self) -> Any:
        # Sub-envs with the same options are reset together: a Gymnasium VectorEnv takes one options
        # dict, so other options are another reset of only their sub-envs (options["reset_mask"]).
        groups: dict[str, tuple[dict[str, Any] | None, list[int]]] = {}
        for index, own in enumerate(self._options):
            groups.setdefault(repr(own), (own or None, []))[1].append(index)
        observations: Any = None
        for options, members in groups.values():
            if len(groups) > 1:
                mask = np.zeros(self.num_envs, dtype=np.bool_)
                mask[members] = True
                options = {**(options or {}), "reset_mask": mask}
            observations, infos = self.venv.reset(seed=self._seed(), options=options)
            per_env = self._split_infos(infos)
            for index in members:
                self.reset_infos[index] = per_env[index]
        self._reset_seeds()
        self._reset_options()
        return observations

    def _seed(self) -> int | None:
        """The seed of the next reset: SB3's ``seed(s)`` gives sub-env ``i`` the seed ``s + i``, as
        Gymnasium's vector envs read ``reset(seed=s)``."""
        first = self._seeds[0]
        if first is None and all(seed is None for seed in self._seeds):
            return None
        if first is None or self._seeds != [first + index for index in range(self.num_envs)]:
            raise ValueError(f"seeds {self._seeds}: a vector env seeds its sub-envs s, s + 1, ... (use seed(s))")
        return first

    def step_async(self, actions: np.ndarray) -> None:
        batch: Any = actions
        if self._action_batch is not None:  # DummyVecEnv indexes SB3's actions: one per sub-env
            items = [actions[index] for index in range(self.num_envs)]
            batch = concatenate(self.venv.single_action_space, items, self._action_batch)
        self._actions = batch
        if hasattr(self.venv, "step_async"):  # RemoteVectorEnv: the step runs while SB3 goes on
            self.venv.step_async(batch)
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
                items = values.tolist() if _of_python_numbers(values) else values
                for index in indices:
                    per_env[index][key] = items[index]

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
        """Each selected sub-env's attribute (``get_wrapper_attr``, as ``DummyVecEnv``), as JSON values
        from remote sub-envs; ``render_mode`` is the vector env's.

        Raises:
            AttributeError: a sub-env has no such attribute (so ``has_attr`` is false).
        """
        chosen = self._indices(indices)
        if attr_name == "render_mode":  # every sub-env's is the vector env's (also a server-side vector env's)
            return [self.venv.render_mode] * len(chosen)
        return self._sub_envs("get", attr_name, chosen)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set the attribute of each selected sub-env to ``value`` (``set_wrapper_attr``, as Gymnasium's vector envs)."""
        chosen = self._indices(indices)
        self._sub_envs("set", attr_name, chosen, values=[value] * len(chosen))

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        """Call a method of each selected sub-env; remote sub-envs' results arrive as JSON values (arrays as lists)."""
        return self._sub_envs("call", method_name, self._indices(indices), args=method_args, kwargs=method_kwargs)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]], indices: Any = None) -> list[bool]:
        """Whether a ``wrapper_class`` (or a subclass) wraps each selected sub-env, as SB3's ``is_wrapped``
        checks it; remote sub-envs' servers compare the classes by module and qualified name."""
        from stable_baselines3.common.env_util import is_wrapped

        from openenv_gym.vector import RemoteVectorEnv

        chosen = self._indices(indices)
        if isinstance(self.venv, RemoteVectorEnv):
            identity = [wrapper_class.__module__, wrapper_class.__qualname__]
            return self._sub_envs("wrapped", wrapper_class.__name__, chosen, args=identity)
        envs = getattr(self.venv, "envs", None)  # SyncVectorEnv's; AsyncVectorEnv's are in its workers
        return [envs is not None and is_wrapped(envs[index], wrapper_class) for index in chosen]

    def _sub_envs(
        self,
        op: str,
        name: str,
        chosen: list[int],
        *,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        values: list[Any] | None = None,
    ) -> list[Any]:
        """Get, set or call an attribute of sub-envs ``chosen``: a RemoteVectorEnv asks only their
        servers; another vector env, Gymnasium's ``get_attr``/``set_attr``/``call`` on every sub-env."""
        from openenv_gym.vector import RemoteVectorEnv
        from openenv_gym.vector.sub_env_calls import call_sub_envs

        if isinstance(self.venv, RemoteVectorEnv):
            return call_sub_envs(self.venv, chosen, op, name, args=args, kwargs=kwargs, values=values)
        # SyncVectorEnv and AsyncVectorEnv have Gymnasium's call/get_attr/set_attr; VectorEnv declares none.
        venv: Any = self.venv
        if op == "get":
            found = venv.get_attr(name)
            return [found[index] for index in chosen]
        if chosen != list(range(self.num_envs)):
            raise NotImplementedError(f"{type(venv).__name__} {op}s {name!r} on every sub-env, not on {chosen}")
        if op == "set":
            venv.set_attr(name, values)
            return [None] * self.num_envs
        return list(venv.call(name, *args, **(kwargs or {})))

    def _indices(self, indices: Any) -> list[int]:
        """SB3's ``indices`` (``None``: all; an int; an iterable; negative from the end) as sub-env indices."""
        if indices is None:
            return list(range(self.num_envs))
        every = range(self.num_envs)
        return [every[index] for index in ([indices] if isinstance(indices, int) else indices)]


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
