"""Record episodes, and pay reward functions of the user's: on a single env, a vector env, or the pool's async envs.

::

    env = RecordEpisodes(gym.make("openenv/CartPole-v1"), "runs/episodes.jsonl", rewards=[upright])
    envs = RecordVectorEpisodes(gym.make_vec("openenv/CartPole-v1", num_envs=8), "runs/vec.parquet")
    env = RecordAsyncEpisodes(await pool.acquire(), writer)      # AsyncEnvPool(record=..., rewards=...) does it

Each finished episode becomes one :class:`~openenv_gym.trajectories.Trajectory` in the file
(an episode still running at ``close`` is written too, marked ``unfinished``). An action is
recorded as the env received it: a tool call given as a dict stays that JSON object. With
``rewards``, each :class:`~openenv_gym.rewards.RewardFunction` adds its part to the reward and to
``info["reward_components"]`` (beside the env's own parts), and the record keeps the env's reward
apart from the paid one.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from openenv_gym.rewards import COMPONENTS_KEY, RewardFunction, StepView, reward_functions
from openenv_gym.spaces import encode, jsonable, space_to_json
from openenv_gym.trajectories import Trajectory, TrajectoryWriter

from .vector_items import info_of, item_of

__all__ = ["EpisodeBook", "RecordAsyncEpisodes", "RecordEpisodes", "RecordVectorEpisodes"]

RewardFunctions = Sequence[RewardFunction | Callable[[Any], float]]


class EpisodeBook:
    """One env's episodes, as they happen: records them and pays the reward functions (no I/O).

    Args:
        action_space, observation_space: the env's (its records carry them).
        stream: the name of this env's sequence of episodes.
        rewards: reward functions to pay and record.
        env_id, env_version, metadata: written into each record.
    """

    def __init__(
        self,
        action_space: gym.Space[Any],
        observation_space: gym.Space[Any],
        *,
        stream: str,
        rewards: Sequence[RewardFunction] = (),
        env_id: str | None = None,
        env_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.action_space, self.observation_space = action_space, observation_space
        self.stream = stream
        self.rewards = list(rewards)
        self._new_trajectory = functools.partial(
            Trajectory,
            env_id=env_id,
            env_version=env_version,
            spaces={"action": space_to_json(action_space), "observation": space_to_json(observation_space)},
            metadata=dict(metadata or {}),
        )
        self.current: Trajectory | None = None
        self._episodes = 0

    def start(
        self, seed: int | None, options: Mapping[str, Any] | None, observation: Any, info: Mapping[str, Any]
    ) -> None:
        """A reset: a new episode begins (the one before it, if unfinished, is dropped: see :meth:`pending`)."""
        task_id = info.get("task_id")
        self.current = self._new_trajectory(
            stream=self.stream,
            episode=self._episodes,
            seed=None if seed is None else int(seed),
            options=jsonable(dict(options)) if options else None,
            task_id=task_id if isinstance(task_id, str) else None,
            observations=[jsonable(encode(self.observation_space, observation))],
            infos=[jsonable(dict(info))],
        )
        self._episodes += 1

    def step(
        self, action: Any, observation: Any, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> tuple[float, dict[str, Any], Trajectory | None]:
        """A step: the reward paid (the env's and the functions'), the info with every component,
        and the trajectory when this step ended it.

        Raises:
            RuntimeError: a step before any reset.
        """
        trajectory = self.current
        if trajectory is None:
            raise RuntimeError("a step before the first reset: nothing to record it in")
        env_reward = float(reward)
        components = {name: float(value) for name, value in (info.get(COMPONENTS_KEY) or {}).items()}
        paid = env_reward
        view = StepView(observation, action, env_reward, bool(terminated), bool(truncated), info, trajectory.length)
        for function in self.rewards:
            if function.per == "step":
                value = function.on_step(view)
                components[function.name] = value
                paid += function.weight * value
        trajectory.actions.append(self._recorded_action(action))
        trajectory.observations.append(jsonable(encode(self.observation_space, observation)))
        trajectory.env_rewards.append(env_reward)
        trajectory.rewards.append(paid)
        trajectory.reward_components.append(components)
        trajectory.infos.append(jsonable(dict(info)))
        trajectory.terminated, trajectory.truncated = bool(terminated), bool(truncated)
        if not (terminated or truncated):
            return paid, self._with_components(info, components), None
        for function in self.rewards:
            if function.per == "episode":
                value = function.on_episode(trajectory)
                components[function.name] = value
                paid += function.weight * value
        trajectory.rewards[-1] = paid  # the record's infos stay the env's: its components are there
        self.current = None
        return paid, self._with_components(info, components), trajectory

    def pending(self) -> Trajectory | None:
        """The episode under way, if it took a step (what ``close`` writes unfinished)."""
        return self.current if self.current is not None and self.current.length else None

    def cut_short(self) -> Trajectory | None:
        """The env closes: the episode under way, if it took a step, marked ``unfinished`` and no
        longer under way (what ``close`` writes)."""
        pending = self.pending()
        self.current = None
        if pending is not None:
            pending.unfinished = True
        return pending

    def _recorded_action(self, action: Any) -> Any:
        # A tool env's space is Text, yet its envs take a call as a dict too: keep the object (its
        # text form would be Python's repr, which no env takes back).
        if isinstance(action, Mapping) and isinstance(self.action_space, gym.spaces.Text):
            return jsonable(dict(action))
        return jsonable(encode(self.action_space, action))

    def _with_components(self, info: dict[str, Any], components: dict[str, float]) -> dict[str, Any]:
        if not self.rewards and COMPONENTS_KEY not in info:
            return info
        return {**info, COMPONENTS_KEY: components}


def _writer(path: str | Path | None, writer: TrajectoryWriter | None) -> tuple[TrajectoryWriter | None, bool]:
    """The writer to use, and whether this wrapper owns it (and closes it)."""
    if writer is not None and path is not None:
        raise ValueError("give a path or a writer, not both")
    if writer is not None:
        return writer, False
    return (TrajectoryWriter(path), True) if path is not None else (None, False)


def _env_id(env: Any) -> str | None:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None)


class RecordEpisodes(gym.Wrapper[Any, Any, Any, Any]):
    """Record a single env's episodes (and pay reward functions).

    Args:
        env: the env (``gym.make``'s; any Gymnasium env).
        path: the file (``.jsonl`` or ``.parquet``), or ``None`` with ``writer``, or neither
            (reward functions only; :attr:`episodes` still keeps what ended).
        writer: a :class:`~openenv_gym.trajectories.TrajectoryWriter` shared with other recorders.
        rewards: reward functions (:class:`~openenv_gym.rewards.RewardFunction`, or plain
            functions of the trajectory).
        metadata: written into each record.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        path: str | Path | None = None,
        *,
        writer: TrajectoryWriter | None = None,
        rewards: RewardFunctions = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(env)
        self._writer, self._owns_writer = _writer(path, writer)
        self.book = EpisodeBook(
            env.action_space,
            env.observation_space,
            stream=uuid.uuid4().hex[:12],
            rewards=reward_functions(rewards),
            env_id=_env_id(env),
            metadata=metadata,
        )
        self.episodes: list[Trajectory] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self.book.start(seed, options, observation, info)
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        paid, info, ended = self.book.step(action, observation, float(reward), terminated, truncated, info)
        if ended is not None:
            self._keep(ended)
        return observation, paid, terminated, truncated, info

    def _keep(self, trajectory: Trajectory) -> None:
        self.episodes.append(trajectory)
        if self._writer is not None:
            self._writer.write(trajectory)

    def close(self) -> None:
        pending = self.book.cut_short()
        if pending is not None:
            self._keep(pending)
        if self._owns_writer and self._writer is not None:
            self._writer.close()
        super().close()


class RecordVectorEpisodes(VectorWrapper):
    """Record a vector env's episodes, each sub-env a stream (and pay reward functions per sub-env).

    Takes Gymnasium's ``NEXT_STEP`` autoreset (the default: the step after an episode's last is
    the reset, its action ignored and not recorded) and ``SAME_STEP`` (the last observation is in
    ``info["final_obs"]``). A ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i``, as
    Gymnasium's vector envs do; autoreset episodes record no seed (they continue the stream).

    Args: as :class:`RecordEpisodes`'s.
    """

    def __init__(
        self,
        env: VectorEnv,
        path: str | Path | None = None,
        *,
        writer: TrajectoryWriter | None = None,
        rewards: RewardFunctions = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(env)
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode.value if isinstance(mode, AutoresetMode) else mode)
        if self.autoreset_mode == AutoresetMode.DISABLED:
            raise ValueError("RecordVectorEpisodes takes NEXT_STEP or SAME_STEP autoreset, not DISABLED")
        self._writer, self._owns_writer = _writer(path, writer)
        run = uuid.uuid4().hex[:12]
        functions = reward_functions(rewards)
        self.books = [
            EpisodeBook(
                env.single_action_space,
                env.single_observation_space,
                stream=f"{run}/{index}",
                rewards=functions,
                env_id=_env_id(env),
                metadata=metadata,
            )
            for index in range(env.num_envs)
        ]
        self._restarting = np.zeros(env.num_envs, dtype=bool)
        self.episodes: list[Trajectory] = []

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, infos = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]  # vector envs take a seed per sub-env too
        seeds = _seeds(seed, self.num_envs)
        for index, book in enumerate(self.books):
            book.start(seeds[index], options, item_of(observations, index), info_of(infos, index))
        self._restarting[:] = False
        return observations, infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        rewards = np.array(rewards, dtype=np.float64, copy=True)
        extra: dict[int, dict[str, float]] = {}
        for index, book in enumerate(self.books):
            observation, info = item_of(observations, index), info_of(infos, index)
            if self._restarting[index]:  # NEXT_STEP: this result is the new episode's reset
                book.start(None, None, observation, info)
                continue
            done = bool(terminations[index] or truncations[index])
            if done and self.autoreset_mode == AutoresetMode.SAME_STEP:
                observation, info = (
                    infos["final_obs"][index],
                    infos["final_info"][index] if "final_info" in infos else {},
                )
            paid, info, ended = book.step(
                item_of(actions, index),
                observation,
                float(rewards[index]),
                terminations[index],
                truncations[index],
                info,
            )
            rewards[index] = paid
            if COMPONENTS_KEY in info:
                extra[index] = info[COMPONENTS_KEY]
            if ended is not None:
                self._keep(ended)
                if self.autoreset_mode == AutoresetMode.SAME_STEP:
                    book.start(None, None, item_of(observations, index), info_of(infos, index))
        self._restarting = np.logical_or(terminations, truncations) & (self.autoreset_mode == AutoresetMode.NEXT_STEP)
        if extra:
            infos = {**infos, COMPONENTS_KEY: [extra.get(index, {}) for index in range(self.num_envs)]}
        return observations, rewards, terminations, truncations, infos

    def _keep(self, trajectory: Trajectory) -> None:
        self.episodes.append(trajectory)
        if self._writer is not None:
            self._writer.write(trajectory)

    def close(self, **kwargs: Any) -> None:
        for book in self.books:
            pending = book.cut_short()
            if pending is not None:
                self._keep(pending)
        if self._owns_writer and self._writer is not None:
            self._writer.close()
        super().close(**kwargs)


class RecordAsyncEpisodes:
    """Record the episodes of one async env (an :class:`~openenv_gym.AsyncRemoteEnv`, the pool's),
    and pay reward functions: ``reset`` and ``step`` as the env's, awaited.

    Args:
        env: the async env.
        writer: where its episodes go (shared by the pool's envs), or ``None`` (:attr:`episodes` only).
        rewards: reward functions, as :class:`RecordEpisodes` takes them.
        env_id, metadata: written into each record.
    """

    def __init__(
        self,
        env: Any,
        writer: TrajectoryWriter | None = None,
        *,
        rewards: RewardFunctions = (),
        env_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.env = env
        self._writer = writer
        self.book = EpisodeBook(
            env.action_space,
            env.observation_space,
            stream=uuid.uuid4().hex[:12],
            rewards=reward_functions(rewards),
            env_id=env_id,
            metadata=metadata,
        )
        self.episodes: list[Trajectory] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    async def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = await self.env.reset(seed=seed, options=options)
        self.book.start(seed, options, observation, info)
        return observation, info

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = await self.env.step(action)
        paid, info, ended = self.book.step(action, observation, float(reward), terminated, truncated, info)
        if ended is not None:
            self.episodes.append(ended)
            if self._writer is not None:
                self._writer.write(ended)
        return observation, paid, terminated, truncated, info

    async def aclose(self) -> None:
        pending = self.book.cut_short()
        if pending is not None:
            self.episodes.append(pending)
            if self._writer is not None:
                self._writer.write(pending)
        await self.env.aclose()

    async def __aenter__(self) -> RecordAsyncEpisodes:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _seeds(seed: int | Sequence[int | None] | None, count: int) -> list[int | None]:
    if seed is None:
        return [None] * count
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + index for index in range(count)]
    return [None if item is None else int(item) for item in seed]
