"""`GymEnvironment`: serve any Gymnasium environment, its spaces, seeds, flags and info intact."""

from __future__ import annotations

import dataclasses
import pickle
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ..protocol import ObservationFrame
from ..spaces import ACTION_FIELD, OBSERVATION_FIELD, from_wire, jsonable, to_wire
from . import gym_snapshots
from .environment import Action, Environment, EnvironmentMetadata, State
from .gym_snapshots import dump_state, load_state, made, probe, release_replaced, snapshot_method

__all__ = ["GymAction", "GymEnvironment", "docstring_summary", "make_gym_env", "session_render_modes"]

# Modules whose environments are cheap enough to step on the event loop.
_MICROSECOND_ENVS = ("gymnasium.envs.classic_control.", "gymnasium.envs.toy_text.", "openenv_gym.envs.cartpole_vector")


class GymAction(Action):
    """The JSON schema of a Gymnasium action on the wire; the exact space is in ``/schema``."""

    action: Any = None


def make_gym_env(env_id: str, max_episode_steps: int | None = -1, **kwargs: Any) -> gym.Env[Any, Any]:
    """``gym.make`` with control over the time limit.

    Args:
        env_id: a registered Gymnasium id (``"CartPole-v1"``, ``"module:Id-v0"``).
        max_episode_steps: ``-1`` keeps the spec's limit, ``None`` removes it (the client applies
            its own, as ``gym.make`` does for a local env), a positive number replaces it.
        **kwargs: passed to ``gym.make``.
    """
    if max_episode_steps == -1:
        return gym.make(env_id, **kwargs)
    spec = gym.spec(env_id)
    return gym.make(dataclasses.replace(spec, max_episode_steps=max_episode_steps), **kwargs)


def session_render_modes(metadata: Mapping[str, Any]) -> list[str]:
    """The render modes in a Gymnasium env's ``metadata`` that a session may ask for: all but
    ``"human"``, which opens a window where the env runs (its frames reach a client as
    ``rgb_array``, and the web page shows them).

    Example:
        >>> session_render_modes({"render_modes": ["human", "rgb_array"]})
        ['rgb_array']
    """
    return [mode for mode in metadata.get("render_modes", []) if mode != "human"]


def docstring_summary(doc: str | None, limit: int = 300) -> str:
    """The first paragraph of a docstring that is prose, as one line: Gymnasium's env docstrings
    open with Markdown headings (``## Description``), which say nothing about the env."""
    paragraphs = [" ".join(part.split()) for part in (doc or "").split("\n\n")]
    prose = next((text for text in paragraphs if text and not text.startswith(("#", "|", "```", "<"))), "")
    return prose if len(prose) <= limit else prose[: limit - 3].rstrip() + "..."


class GymEnvironment(Environment[Any, Any, State]):
    """Host a ``gymnasium.Env`` behind the wire protocol.

    Actions arrive as ``{"action": <JSON value>}`` (or the fields of a Dict action space), are
    decoded to the space's dtype and checked with ``action_space.contains``; observations travel
    the same way under ``"observation"``. ``reset`` takes ``seed`` and ``options``; ``info``
    becomes JSON (numpy values as numbers and lists).

    Args:
        env: an environment instance, or a callable that makes one.
        blocking: run ``reset``/``step`` in the session's own thread, so a slow step never
            stalls other sessions. ``None`` decides by the env: Gymnasium's classic-control and
            toy-text envs step in microseconds and run on the event loop (the thread hop would
            cost them a third of their throughput); every other env gets a thread.
    """

    action_type = GymAction
    SUPPORTS_CONCURRENT_SESSIONS = True
    # Always the wrapped env's spaces, never None.
    action_space: gym.spaces.Space[Any]
    observation_space: gym.spaces.Space[Any]

    def __init__(
        self, env: gym.Env[Any, Any] | Callable[[], gym.Env[Any, Any]], *, blocking: bool | None = None
    ) -> None:
        self.env = env if isinstance(env, gym.Env) else env()
        if not isinstance(self.env, gym.Env):
            raise TypeError(f"expected a gymnasium.Env, got {type(self.env).__name__}")
        self.action_space = self.env.action_space
        self.observation_space = self.env.observation_space
        modes = session_render_modes(self.env.metadata)
        # gym.make serves "<mode>_list" for these by wrapping the env in RenderCollection.
        self.render_modes = modes + [f"{mode}_list" for mode in ("rgb_array", "ansi") if mode in modes]
        self.render_fps = self.env.metadata.get("render_fps")
        # gym.make's TimeLimit writes the limit it applies into the spec (None when removed).
        self.max_episode_steps = self.env.spec.max_episode_steps if self.env.spec is not None else None
        # Discrete actions are most of what arrives: (start, stop, dtype) for a fast path that
        # accepts exactly what the general decoder accepts as a plain in-range integer.
        space = self.action_space
        self._discrete = (
            (int(space.start), int(space.start + space.n), space.dtype.type)
            if isinstance(space, gym.spaces.Discrete)
            else None
        )
        if blocking is None:
            blocking = not type(self.env.unwrapped).__module__.startswith(_MICROSECOND_ENVS)
        self.blocking = blocking
        # Plain attributes, not a pydantic State: validating an assignment on every step costs
        # more than CartPole's own step.
        self._episode_id: str | None = None
        self._step_count = 0
        #: The last observation as the env returned it. With ``wire_observations`` off (a batch
        #: session sending raw arrays does that), frames carry an empty observation instead of
        #: its JSON form, which for an image would cost far more than the step itself.
        self.last_observation: Any = None
        self.wire_observations = True
        #: Off (a binary batch session does that): frames carry infos as the env gave them, not as JSON.
        self.wire_infos = True
        # How the env was made, for its snapshots: taken now, before it steps, and kept by restores.
        self._made = made(self.env)
        # The snapshot probe steps self.env in a thread of its own, which may outlive the wait
        # for it (a slow step): close() then leaves the env for that thread to close.
        self._probe_lock = threading.Lock()
        self._probe_running = False
        self._close_after_probe = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> ObservationFrame:
        observation, info = self.env.reset(seed=seed, options=options)
        self._episode_id, self._step_count = episode_id or str(uuid.uuid4()), 0
        self.last_observation = observation
        return ObservationFrame(
            observation=self._wire(observation),
            reward=None,
            info=jsonable(info) if self.wire_infos else info,
        )

    def step(self, action: Any) -> ObservationFrame:
        return self.step_frame(*self.step_gym(action))

    def step_gym(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """The wrapped env's step, counted: what a step through shared memory answers with."""
        result = self.env.step(action)
        self._step_count += 1
        self.last_observation = result[0]
        return result

    def step_frame(
        self, observation: Any, reward: Any, terminated: Any, truncated: Any, info: dict[str, Any]
    ) -> ObservationFrame:
        """The observation frame of a step's results (``reward`` a Python float, ``info`` JSON)."""
        return ObservationFrame(
            observation=self._wire(observation),
            reward=float(reward),
            done=bool(terminated),
            truncated=bool(truncated),
            info=self.info_json(info) if self.wire_infos else info,
        )

    @staticmethod
    def info_json(info: dict[str, Any]) -> dict[str, Any]:
        """A step's ``info`` as the JSON its frame carries."""
        return jsonable(info) if info else {}

    def _wire(self, observation: Any) -> dict[str, Any]:
        return self.wire_form(observation) if self.wire_observations else {}

    def wire_form(self, observation: Any) -> dict[str, Any]:
        """The JSON object that carries ``observation`` on the wire."""
        return to_wire(self.observation_space, observation, OBSERVATION_FIELD)

    def action_wire_form(self, action: Any) -> dict[str, Any]:
        """The JSON object that carries ``action`` on the wire (a step frame's ``data``)."""
        return to_wire(self.action_space, action, ACTION_FIELD)

    @property
    def state(self) -> State:
        return State(episode_id=self._episode_id, step_count=self._step_count)

    def close(self) -> None:
        with self._probe_lock:
            if self._probe_running:
                self._close_after_probe = True
                return
        self.env.close()

    def render(self) -> Any:
        """The wrapped env's ``render()``, in the render mode it was made with."""
        return self.env.render()

    def snapshot(self) -> bytes:
        """The wrapped env's whole state (wrappers, random generators, ALE's emulator) and the
        episode's id, step count and last observation, as bytes (:mod:`.gym_snapshots`)."""
        try:
            extra = (self._episode_id, self._step_count, self.last_observation)
            return dump_state(self.env, extra, self._made)
        except (TypeError, pickle.PicklingError, AttributeError) as exc:
            raise NotImplementedError(f"the env's state cannot be copied now: {type(exc).__name__}: {exc}") from exc

    def restore(self, state: bytes) -> None:
        """Back into ``state``; refused (``ValueError``, nothing changed) when it is of an env made
        with other arguments. The env it replaces is closed."""
        env, (episode_id, step_count, last_observation) = load_state(state, self.env, self._made)
        replaced = self.env
        self.env, self._episode_id, self._step_count, self.last_observation = (
            env,
            episode_id,
            step_count,
            last_observation,
        )
        release_replaced(replaced, env)

    def snapshot_support(self) -> dict[str, Any]:
        """Probed: a few seeded steps replayed from a snapshot must give the same results
        (:func:`.gym_snapshots.probe`), within ``PROBE_TIMEOUT`` seconds so that an env whose
        steps are slow (or hang) cannot hold up the server's start."""
        method = snapshot_method(self.env)
        outcome: list[str | None] = []

        def run() -> None:
            try:
                outcome.append(probe(self.env))
            except BaseException as exc:  # the env's own SystemExit: a thread would drop it without a word
                outcome.append(f"the probe's steps raised {type(exc).__name__}: {exc}")
            finally:
                with self._probe_lock:
                    self._probe_running, close = False, self._close_after_probe
                if close:
                    self.env.close()

        self._probe_running = True
        thread = threading.Thread(target=run, name="snapshot-probe", daemon=True)
        thread.start()
        thread.join(gym_snapshots.PROBE_TIMEOUT)
        if not outcome:
            return {
                "supported": False,
                "reason": f"{method}: the probe's seeded steps took longer than {gym_snapshots.PROBE_TIMEOUT:g} s, so it was not checked",
            }
        reason = outcome[0]
        if reason is not None:
            return {"supported": False, "reason": f"{method}: {reason}"}
        return {"supported": True, "method": method}

    def get_metadata(self) -> EnvironmentMetadata:
        spec = self.env.spec
        name = spec.id if spec is not None else type(self.env.unwrapped).__name__
        summary = docstring_summary(type(self.env.unwrapped).__doc__)
        return EnvironmentMetadata(name=name, description=summary or f"Gymnasium environment {name}")

    def parse_action(self, data: dict[str, Any]) -> Any:
        if self._discrete is not None and type(data) is dict and len(data) == 1:
            value, (start, stop, dtype) = data.get(ACTION_FIELD), self._discrete
            if type(value) is int and start <= value < stop:
                return dtype(value)
        action = from_wire(self.action_space, data, ACTION_FIELD)
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            # decode() already made it an integer of the space's dtype; Discrete.contains would
            # re-check that at a cost comparable to a CartPole step.
            inside = space.start <= action < space.start + space.n
        else:
            inside = space.contains(action)
        if not inside:
            raise ValueError(f"action {data!r:.200} is outside the action space {space}")
        return action

    def action_of_row(self, row: np.ndarray) -> Any:
        """The action one row of a batch of actions holds (shared memory's form: the space's batched
        dtype), checked as :meth:`parse_action` checks a wire action.

        Raises:
            ValueError: it is outside the action space.
        """
        if self._discrete is not None:
            start, stop, dtype = self._discrete
            action = dtype(row)
            inside = start <= action < stop
        else:
            action = row.copy()  # the row is reused by the next step; the env may keep its action
            inside = self.action_space.contains(action)
        if not inside:
            raise ValueError(f"action {action!r:.200} is outside the action space {self.action_space}")
        return action

    def observation_frame(self, observation: ObservationFrame) -> ObservationFrame:
        return observation
