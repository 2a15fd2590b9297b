"""`environment_factory`: a class for ``GRPOTrainer(environment_factory=...)`` whose methods are an env's tools."""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ...errors import ToolFailedError
from .sessions import CALL_ERRORS, START_WAIT, Sessions, Slot, discover_tools, run_once
from .signatures import tool_method

__all__ = ["ToolCall", "ToolEnvironment", "environment_factory"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an episode, as the env answered it.

    Attributes:
        name, arguments: the call.
        text: the result's text (what the model read), or the error message.
        reward, terminated, truncated: the env's step result.
        error: the env's ``info["error"]`` (``error_type``, ``message``) when it refused the call.
    """

    name: str
    arguments: dict[str, Any]
    text: str
    reward: float
    terminated: bool
    truncated: bool
    error: dict[str, Any] | None = None


def _reset_arguments(
    columns: Mapping[str, Any], option_columns: tuple[str, ...]
) -> tuple[int | None, dict[str, Any] | None]:
    """The ``seed`` and ``options`` of the env's reset, from a dataset row."""
    seed = columns.get("seed")
    given = columns.get("options")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"the 'options' column must hold dicts, got {type(given).__name__}")
    options = dict(given or {})
    for name in option_columns:
        value = columns.get(name)
        if value is not None:
            options[name] = value
    return (None if seed is None else int(seed)), (options or None)


def _after_prompt(prompt: Any, text: str) -> str:
    """``text`` as TRL will append it to the row's last message: after a blank line if that has text."""
    content = (
        prompt[-1].get("content") if isinstance(prompt, list) and prompt and isinstance(prompt[-1], Mapping) else None
    )
    if isinstance(content, str) and content and not content[-1].isspace() and text:
        return "\n\n" + text
    return text


class ToolEnvironment:
    """Base of the classes :func:`environment_factory` makes: one instance per TRL rollout.

    Its only public functions are ``reset`` and ``get_reward`` (TRL takes every other public
    function as a tool); the tools are added by the factory. ``close`` and ``sessions_in_use``
    are class methods, not tools.

    Attributes:
        calls: the episode's tool calls (:class:`ToolCall`), in order.
        prompt: the reset's observation text.
        info: the reset's info.
        done: the episode ended (terminated or truncated) or its session was lost; later calls
            are refused.
        lost: the session broke mid-episode: ``get_reward()`` is ``None``.
    """

    env_id: ClassVar[str]
    #: The env's tools as its server lists them (``name``, ``description``, ``input_schema``).
    tools: ClassVar[list[dict[str, Any]]]
    #: ``"sum"`` or ``"last"``: what ``get_reward`` returns.
    episode_reward: ClassVar[Literal["sum", "last"]]
    #: Dataset columns passed to the env's reset as options of the same name.
    option_columns: ClassVar[tuple[str, ...]]
    _sessions: ClassVar[Sessions]

    def __init__(self) -> None:
        if type(self) is ToolEnvironment or not hasattr(type(self), "_sessions"):
            raise TypeError("ToolEnvironment is a base class: make one with environment_factory(env_id)")
        self.calls: list[ToolCall] = []
        self.prompt: str | None = None
        self.info: dict[str, Any] = {}
        self.done = False
        self.lost = False
        self._slot = Slot()
        sessions = type(self)._sessions
        sessions.instances.add(self)
        # TRL keeps its instances as long as the trainer lives; when it drops one, the session goes back.
        weakref.finalize(self, sessions.release_soon, self._slot)

    def reset(self, **columns: Any) -> str | None:
        """Start an episode for a dataset row; returns the env's prompt, for TRL to append to the row's.

        ``seed`` and ``options`` columns, and those named in ``option_columns`` (``task_id``),
        become the env's reset arguments; other columns are ignored.
        """
        sessions = type(self)._sessions
        seed, options = _reset_arguments(columns, type(self).option_columns)
        wanted = len(sessions.instances)
        observation, info = sessions.run(self._reset(seed, options, wanted), START_WAIT + sessions.call_wait)
        self.calls = []
        self.done = False
        self.lost = False
        self.info = info
        self.prompt = observation if isinstance(observation, str) else str(observation)
        return _after_prompt(columns.get("prompt"), self.prompt) or None

    async def _reset(self, seed: int | None, options: dict[str, Any] | None, wanted: int) -> tuple[Any, dict[str, Any]]:
        sessions = type(self)._sessions
        for attempt in range(2):
            env = self._slot.env
            if env is not None and env.failed is not None:  # lost: its pool opens another in its place
                self._slot.env = None
                await env.aclose()
                env = None
            if env is None:
                env = self._slot.env = await sessions.acquire(wanted)
            try:
                return await env.reset(seed=seed, options=options)
            except CALL_ERRORS:
                if env.failed is None or attempt:  # the env's own error, or lost twice: the caller's
                    raise
                logger.warning("%s: a session was lost at reset; resetting on another", sessions.env_id)
        raise AssertionError("unreachable")

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Forward one tool call; its result text, or :class:`ToolFailedError`."""
        env = self._slot.env
        if env is None or self.prompt is None:
            raise RuntimeError(f"{type(self).__name__}.{name} called before reset()")
        if self.done:
            message = "The episode is over: no more tool calls are taken."
            raise ToolFailedError(name, "episode_over", message)
        sessions = type(self)._sessions
        try:
            text, reward, terminated, truncated, info = sessions.run(
                env.step({"name": name, "arguments": arguments}), sessions.call_wait
            )
        except CALL_ERRORS as exc:
            if isinstance(exc, TimeoutError) and env.failed is None:
                env.failed = exc  # cut off mid-call: the session cannot be trusted with the next one
            if env.failed is None:  # not lost: an error frame of the env's
                raise ToolFailedError(name, "execution_error", str(exc)) from exc
            self.done = self.lost = True
            lost = {"error_type": "session_lost", "message": str(exc)}
            self.calls.append(ToolCall(name, dict(arguments), str(exc), 0.0, False, False, lost))
            raise ToolFailedError(name, "session_lost", f"The environment's session was lost: {exc}") from exc
        error = info.get("error")
        self.calls.append(ToolCall(name, dict(arguments), text, reward, terminated, truncated, error))
        self.done = terminated or truncated
        if isinstance(error, Mapping):
            message = str(error.get("message") or text)
            raise ToolFailedError(name, str(error.get("error_type", "execution_error")), message)
        return text

    def get_reward(self) -> float | None:
        """The episode's return: the sum of its calls' rewards (or the last, per ``episode_reward``); ``None`` if lost."""
        if self.lost:
            return None
        if type(self).episode_reward == "last":
            return self.calls[-1].reward if self.calls else 0.0
        return float(sum(call.reward for call in self.calls))

    @classmethod
    def sessions_in_use(cls) -> int:
        """Sessions held by instances now (each instance holds one from its first reset)."""
        return cls._sessions.in_use

    @classmethod
    def close(cls) -> None:
        """Close every session of the class and stop its servers; idempotent. Later resets raise ``RuntimeError``."""
        cls._sessions.close()


#: Names a tool cannot take: the trainer's hooks, and the class's own attributes.
_RESERVED = frozenset(name for name in dir(ToolEnvironment) if not name.startswith("__")) | {
    *ToolEnvironment.__annotations__,
    "calls",
    "prompt",
    "info",
    "done",
    "lost",
}


def _class_name(env_id: str) -> str:
    name = re.sub(r"\W", "_", env_id.rsplit("/", 1)[-1])
    return name if name.isidentifier() else f"Env_{name}"


def environment_factory(
    env_id: str,
    *,
    pool_size: int | None = None,
    option_columns: Iterable[str] = ("task_id",),
    episode_reward: Literal["sum", "last"] = "sum",
    name: str | None = None,
    **make_kwargs: Any,
) -> type[ToolEnvironment]:
    """A class for ``GRPOTrainer(environment_factory=...)`` that plays ``env_id``'s tools (see the module's doc).

    Starts the env once to read its tool list (then stops it); the sessions for training are
    opened at the first ``reset``.

    Args:
        env_id: a registered openenv id with tools (``"openenv/CodingTools-v0"``).
        pool_size: sessions of the first pool (default: the instances alive at the first reset,
            TRL's generation batch); more are opened when more instances are alive.
        option_columns: dataset columns passed to the env's reset as options of the same name.
        episode_reward: ``"sum"`` (the episode's return) or ``"last"`` (the last call's reward).
        name: the class's name, which TRL logs the reward under (default from the id:
            ``CodingTools_v0``).
        **make_kwargs: ``gym.make``'s keyword arguments for the id (the env's own, such as
            ``reward="improvement"``; ``provider=``, ``base_url=``...) and the pool's
            (``servers=``, ``sessions_per_server=``, ``base_urls=``).

    Raises:
        ValueError: the env offers no tools, or a tool's name or parameter cannot be a method's.
    """
    if episode_reward not in ("sum", "last"):
        raise ValueError(f"episode_reward must be 'sum' or 'last', got {episode_reward!r}")
    sessions = Sessions(env_id, pool_size, dict(make_kwargs))
    tools = run_once(discover_tools(env_id, make_kwargs), START_WAIT)
    if not tools:
        raise ValueError(f"{env_id!r} offers no tools; for a text env, use rollout_func({env_id!r})")
    class_name = name or _class_name(env_id)
    namespace: dict[str, Any] = {
        "__doc__": f"TRL environment for {env_id}: one episode per rollout; its tools are methods.",
        "__module__": __package__,  # the name users import it from
        "env_id": env_id,
        "tools": tools,
        "episode_reward": episode_reward,
        "option_columns": tuple(option_columns),
        "_sessions": sessions,
    }
    for tool in tools:
        tool_name = str(tool["name"])
        if tool_name in _RESERVED or tool_name.startswith("_"):
            raise ValueError(f"{env_id!r} has a tool named {tool_name!r}, which a TRL environment cannot offer")
        namespace[tool_name] = tool_method(tool, class_name)
    cls = type(class_name, (ToolEnvironment,), namespace)
    # When the class goes, or at interpreter exit, whatever it opened is closed.
    weakref.finalize(cls, sessions.close)
    return cls
