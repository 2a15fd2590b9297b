"""CartPole vectorized with numpy, each sub-env stepping exactly as ``gym.make("CartPole-v1")`` alone.

Gymnasium's own ``CartPoleVectorEnv`` draws every sub-env's start from one shared generator and
autoresets only in the next step, so it can equal neither ``SyncVectorEnv`` of ``CartPole-v1``
nor Stable-Baselines3's ``DummyVecEnv`` (which needs same-step autoreset). This one keeps a
generator per sub-env, seeded ``seed + k`` as ``SyncVectorEnv`` seeds its envs, and serves every
autoreset mode and ``reset_mask``: for the same seeds and actions its results are
``SyncVectorEnv``'s bit for bit (the physics are the same float64 operations in the same order),
at the speed of a handful of numpy operations per step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.envs.classic_control import utils
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv as _GymnasiumCartPoleVectorEnv
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from openenv_gym.protocol.batch import ended_sub_env_error

__all__ = ["CartPoleVectorEnv"]

_DEFAULT_LOW, _DEFAULT_HIGH = -0.05, 0.05  # CartPoleEnv.reset's bounds when no options give them


class CartPoleVectorEnv(_GymnasiumCartPoleVectorEnv):
    """``num_envs`` CartPoles in numpy arrays, each one ``gym.make("CartPole-v1")`` seeded on its own.

    Args:
        num_envs: the number of sub-envs.
        max_episode_steps: the time limit (``TimeLimit``'s: truncated once a sub-env has taken
            this many steps).
        render_mode: ``"rgb_array"`` (one frame per sub-env) or ``None``.
        sutton_barto_reward: CartPoleEnv's alternative reward (0 each step, -1 on failure).
        autoreset_mode: ``"NextStep"``, ``"SameStep"`` or ``"Disabled"``, as ``SyncVectorEnv``'s.

    ``reset(seed=s)`` seeds sub-env ``k`` with ``s + k`` (a list seeds each); ``options`` takes
    CartPoleEnv's ``low``/``high`` and ``reset_mask`` (reset only those sub-envs; an autoreset
    draws from the default bounds, as ``SyncVectorEnv``'s ``env.reset()`` does). With autoreset
    disabled, stepping while a sub-env that ended awaits its masked reset raises
    :class:`~openenv_gym.errors.EpisodeEndedError` (``SyncVectorEnv`` asserts).

    Example:
        >>> import gymnasium as gym
        >>> from openenv_gym.envs.cartpole_vector import CartPoleVectorEnv
        >>> venv = CartPoleVectorEnv(num_envs=3, autoreset_mode="SameStep")
        >>> sync = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync",
        ...                     vector_kwargs={"autoreset_mode": "SameStep"})
        >>> bool((venv.reset(seed=5)[0] == sync.reset(seed=5)[0]).all())
        True
        >>> venv.close(); sync.close()
    """

    # (4, num_envs): x, x_dot, theta, theta_dot; Gymnasium's class leaves it unannotated (None).
    state: np.ndarray | None  # type: ignore[assignment]

    def __init__(
        self,
        num_envs: int = 1,
        max_episode_steps: int = 500,
        render_mode: str | None = None,
        sutton_barto_reward: bool = False,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    ) -> None:
        super().__init__(num_envs, max_episode_steps, render_mode, sutton_barto_reward)
        self.autoreset_mode = AutoresetMode(getattr(autoreset_mode, "value", autoreset_mode))
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self._generators: list[np.random.Generator | None] = [None] * num_envs

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + k for k in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} sub-envs")
        if mask is None:
            chosen = np.arange(self.num_envs)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"reset_mask must be {self.num_envs} bools, got {mask!r}")
            chosen = np.flatnonzero(mask)
        low, high = utils.maybe_parse_reset_bounds(options, _DEFAULT_LOW, _DEFAULT_HIGH)
        if self.state is None:  # the first reset makes the arrays; a masked one before it leaves zeros
            self.state = np.zeros((4, self.num_envs))
        for k in chosen.tolist():
            if seeds[k] is not None or self._generators[k] is None:
                self._generators[k] = seeding.np_random(seeds[k])[0]
            self._start(k, low, high)
        self.steps_beyond_terminated = None
        return self.state.T.astype(np.float32), {}

    def _start(self, k: int, low: float = _DEFAULT_LOW, high: float = _DEFAULT_HIGH) -> None:
        """Sub-env ``k``'s new episode, drawn from its own generator as ``CartPoleEnv.reset`` draws."""
        generator = self._generators[k]
        assert generator is not None and self.state is not None
        self.state[:, k] = generator.uniform(low=low, high=high, size=(4,))
        self.steps[k] = 0
        self.prev_done[k] = False

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        action = np.asarray(action)
        # MultiDiscrete.contains's test, at a fraction of its cost: one integer per sub-env, each
        # 0 or 1 (no bit but the lowest set; a negative number has the high ones).
        if action.shape != (self.num_envs,) or action.dtype.kind not in "iu" or (action & ~1).any():
            raise ValueError(f"{action!r} ({type(action)}) is not in {self.action_space}")
        if self.state is None:
            raise RuntimeError("reset() the vector env before step()")
        if self.autoreset_mode is AutoresetMode.DISABLED and self.prev_done.any():
            raise ended_sub_env_error(int(np.flatnonzero(self.prev_done)[0]))
        restarting = np.flatnonzero(self.prev_done).tolist() if self.autoreset_mode is AutoresetMode.NEXT_STEP else []

        # CartPoleEnv.step's operations in its order, on every sub-env at once.
        x, x_dot, theta, theta_dot = self.state
        force = np.where(action == 1, self.force_mag, -self.force_mag)
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + self.polemass_length * np.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * np.square(costheta) / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        if self.kinematics_integrator == "euler":
            x = x + self.tau * x_dot
            x_dot = x_dot + self.tau * xacc
            theta = theta + self.tau * theta_dot
            theta_dot = theta_dot + self.tau * thetaacc
        else:  # semi-implicit euler
            x_dot = x_dot + self.tau * xacc
            x = x + self.tau * x_dot
            theta_dot = theta_dot + self.tau * thetaacc
            theta = theta + self.tau * theta_dot
        state = self.state  # x, x_dot... are new arrays now: the rows can take them
        state[0], state[1], state[2], state[3] = x, x_dot, theta, theta_dot

        # CartPoleEnv's x < -limit or x > limit, the same for every float (NaN included).
        terminated = (np.abs(x) > self.x_threshold) | (np.abs(theta) > self.theta_threshold_radians)
        self.steps += 1
        truncated = self.steps >= self.max_episode_steps  # TimeLimit's test, whether or not it also fell
        if self._sutton_barto_reward:
            rewards = np.where(terminated, -1.0, 0.0)
        else:
            rewards = np.ones(self.num_envs)
        # A NextStep autoreset: the sub-envs that ended last step start again instead of stepping.
        for k in restarting:
            self._start(k)
        if restarting:
            rewards[restarting] = 0.0
            terminated[restarting] = False
            truncated[restarting] = False
        observations = self.state.T.astype(np.float32)
        infos: dict[str, Any] = {}
        done = terminated | truncated
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            ended = np.flatnonzero(done).tolist()
            if ended:  # as SyncVectorEnv: the last observation kept, a new episode begun
                final = np.full(self.num_envs, None, dtype=object)
                for k in ended:
                    final[k] = observations[k].copy()
                    self._start(k)
                    observations[k] = state[:, k].astype(np.float32)
                # What SyncVectorEnv's _add_info makes of each ended env's {"final_obs", "final_info": {}}.
                infos = {"final_obs": final, "_final_obs": done.copy(), "final_info": {}, "_final_info": done.copy()}
        else:
            self.prev_done = done
        return observations, rewards, terminated, truncated, infos
