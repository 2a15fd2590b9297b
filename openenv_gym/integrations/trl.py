"""TRL's ``GRPOTrainer`` on openenv-gym envs: ``environment_factory`` for tool envs, ``rollout_func`` for text envs.

Two builders, each giving what the trainer takes (``pip install 'openenv-gym[trl]'``; TRL >= 1.16)::

    from openenv_gym.integrations.trl import env_reward, environment_factory, extract_code, rollout_func

    # Multi-turn, with tools: the model calls the env's tools, TRL runs the loop.
    CodingTools = environment_factory("openenv/CodingTools-v0")
    trainer = GRPOTrainer(model, args=args, train_dataset=rows, environment_factory=CodingTools, ...)
    trainer.train()
    CodingTools.close()  # every session and server (also done at interpreter exit)

    # Single-turn text envs: the completion is the action (Coding-v0: the program).
    rollout = rollout_func("openenv/Coding-v0", action=extract_code)
    rows = rollout.dataset({"options": {"task_id": t}} for t in task_ids())
    trainer = GRPOTrainer(model, reward_funcs=env_reward, rollout_func=rollout, train_dataset=rows, ...)

**environment_factory**: a class whose instances TRL creates with no arguments, one per rollout
of a generation batch (and keeps, resetting them for the next batches):

* ``reset(**row)`` gets the dataset row. Its ``seed`` column becomes the env's ``reset(seed=)``,
  an ``options`` column (a dict) its ``options``, and each column named in ``option_columns``
  (by default ``task_id``) one option of that name: a ``task_id`` column picks the Coding task.
  Other columns are left for reward functions. It returns the env's reset observation (the task
  prompt), which TRL appends to the row's last user message (after a blank line when that message
  has text of its own), or ``None`` when the env gives no text.
* One method per tool of the env, with the tool's name, a signature and a Google-style docstring
  built from its input schema, so that the schema TRL shows the model is the env's own: names,
  description, parameter types (``Literal`` for an ``enum``), descriptions and which are
  required. JSON-schema keywords a Python signature cannot carry (``maxLength``, ``minimum``,
  ``pattern``, ``additionalProperties``, nested ``properties``) are left out; the server still
  enforces them. A call forwards the arguments as one tool call and returns the result text.
  A call the env refused (``info["error"]``: unknown arguments, a tool that raised, a timeout)
  raises :class:`ToolFailedError` with the env's message: TRL shows the model that message and
  counts the call in ``tools/failure_frequency``. So does a call after the episode ended (the
  env said ``terminated``, or its time limit ``truncated`` it): it is not forwarded.
* ``get_reward()`` is the episode's return: the sum of the rewards of its tool calls
  (``episode_reward="last"``: the last call's), ``0.0`` with no call, and ``None`` (TRL leaves the
  rollout out of the advantage baseline) when the session was lost mid-episode. With the sum, an
  env whose every ``submit`` pays its score pays each: give ``openenv/CodingTools-v0`` its option
  ``reward="improvement"`` and the sum is the episode's best score.
* Each instance keeps ``calls`` (the episode's :class:`ToolCall` records), ``prompt``, ``info``
  (the reset's) and ``done``, for reward functions (TRL passes them the instances as
  ``environments``).

Sessions come from pools (:class:`~openenv_gym.async_pool.AsyncEnvPool`) shared by the class,
driven from a background event-loop thread. The first ``reset`` starts a pool as large as the number of
instances alive then (TRL creates a batch's instances before it resets any, so: the generation
batch), or ``pool_size``; a batch with more instances than sessions (an evaluation batch) starts
another pool for the difference. An instance takes a session at its first ``reset`` and keeps it
for the next episodes (a lost one is replaced); the session goes back to its pool when the
instance is garbage-collected. ``cls.close()`` closes every session and stops the servers; it also
runs at interpreter exit.

**rollout_func**: an :class:`EnvRollout`, TRL's ``rollout_func(prompts, trainer)``. It generates
the completions with the trainer's own generation (transformers, continuous batching or vLLM,
as configured), turns each into an action (``action=``, the text by default), and runs one
episode per completion, all at once on a pool: reset to the row's task, one step, session back
to the pool. It returns ``prompt_ids``, ``completion_ids`` and ``logprobs`` plus, per row,
``env_reward``, ``env_terminated``, ``env_truncated``, ``env_error`` and ``env_observation``,
which TRL passes to reward functions as keyword arguments: :func:`env_reward` gives the env's.
An action the env's action space refuses is not sent (reward ``invalid_action_reward``, 0 by
default); an episode whose session was lost has reward ``None``, which TRL leaves out.
A rollout function sees only the prompts, not the dataset's columns, so :meth:`EnvRollout.dataset`
builds the rows from the env's own prompts and remembers which reset gave each one.
"""

from __future__ import annotations

import asyncio
import inspect
import keyword
import logging
import re
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, Union

from .._loop_thread import LoopThread
from ..async_env import AsyncRemoteEnv, make_async, spec_options
from ..async_pool import AsyncEnvPool
from ..client import DEFAULT_CALL_TIMEOUT
from ..errors import InvalidActionError, OpenEnvGymError, ToolFailedError

if TYPE_CHECKING:
    import datasets

__all__ = [
    "EnvRollout",
    "ToolCall",
    "ToolEnvironment",
    "ToolFailedError",
    "annotation_of",
    "env_reward",
    "environment_factory",
    "extract_code",
    "prompt_text",
    "rollout_func",
    "tool_method",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds a ``reset`` may wait when it starts a pool (servers started, sessions opened); the
#: providers' own ``startup_timeout`` and ``open_timeout`` fail sooner when something is wrong.
START_WAIT = 600.0
#: Seconds added to the client's call timeout, so that its own ``RequestTimeoutError`` comes first.
CALL_MARGIN = 30.0
#: Arguments of ``AsyncEnvPool`` that ``gym.make`` (and so ``make_async``) does not take.
_POOL_ONLY = ("servers", "sessions_per_server", "acquire_timeout", "base_urls")

#: What a call on a session may raise: the env's error frame, or the session lost (``env.failed`` set).
_CALL_ERRORS = (OpenEnvGymError, TimeoutError)


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


# --- sessions shared by a class (or a rollout function) ------------------------------------------


class _Slot:
    """The session an instance holds; apart from it, so that its finalizer can hand it back."""

    env: AsyncRemoteEnv | None = None


class _Sessions:
    """The pools, event-loop thread and live instances behind one factory class or rollout function."""

    def __init__(self, env_id: str, pool_size: int | None, make_kwargs: dict[str, Any]) -> None:
        if pool_size is not None and pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {pool_size}")
        options, _ = spec_options(env_id, make_kwargs)  # refuses an id that is not a remote env
        self.env_id = env_id
        self.pool_size = pool_size
        self.make_kwargs = make_kwargs
        self.call_wait = float(options.get("call_timeout", DEFAULT_CALL_TIMEOUT)) + CALL_MARGIN
        self.instances: weakref.WeakSet[Any] = weakref.WeakSet()
        self.pools: list[AsyncEnvPool] = []
        self.closed = False
        self._loop: LoopThread | None = None
        self._lock = threading.Lock()
        self._growing: asyncio.Lock | None = None  # made on the loop, which it belongs to

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the shared loop (started on first use)."""
        with self._lock:
            if self.closed:
                coroutine.close()
                raise RuntimeError(f"the sessions of {self.env_id} are closed")
            if self._loop is None:
                self._loop = LoopThread(name=f"openenv-gym-trl {self.env_id}")
            loop = self._loop
        return loop.run(coroutine, timeout)

    @property
    def capacity(self) -> int:
        """Sessions of every pool started so far."""
        return sum(pool.size for pool in self.pools)

    @property
    def in_use(self) -> int:
        """Sessions lent out now (none once closed)."""
        return 0 if self.closed else sum(pool.in_use for pool in self.pools)

    async def ensure(self, wanted: int) -> None:
        """Start a pool for the sessions ``wanted`` beyond the pools' capacity (the first: at least ``pool_size``)."""
        if self._growing is None:
            self._growing = asyncio.Lock()
        async with self._growing:
            await self._grow(wanted)

    async def _grow(self, wanted: int) -> None:
        wanted = max(wanted, self.pool_size or 1) if not self.pools else wanted
        missing = wanted - self.capacity
        if missing > 0:
            pool = AsyncEnvPool(self.env_id, size=missing, **self.make_kwargs)
            self.pools.append(pool)  # before it starts: a close() meanwhile stops what it started
            try:
                await pool.start()
            except BaseException:
                self.pools.remove(pool)  # a failed start stops what it started; the next reset tries again
                raise

    async def acquire(self, wanted: int) -> AsyncRemoteEnv:
        """A session as an episode env, from a pool with one free, after growing to ``wanted`` sessions."""
        if self._growing is None:
            self._growing = asyncio.Lock()
        async with self._growing:  # one at a time: the free session one sees is the one it takes
            await self._grow(wanted)
            for pool in self.pools:
                if pool.idle:
                    return await pool.acquire()
            # Every session is lent: a lost one is being opened again. Do not wait for it.
            await self._grow(self.capacity + 1)
            return await self.pools[-1].acquire()

    def release_soon(self, slot: _Slot) -> None:
        """Hand ``slot``'s session back to its pool without waiting (a finalizer's call: any thread)."""
        env, slot.env = slot.env, None
        loop = self._loop
        if env is not None and loop is not None:
            loop.submit(env.aclose())

    def close(self, timeout: float = 120.0) -> None:
        """Close every session and stop every server; idempotent. Runs at interpreter exit too."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            loop, self._loop = self._loop, None
        if loop is None:
            return
        pools = list(self.pools)

        async def close_all() -> None:
            results = await asyncio.gather(*(pool.aclose() for pool in pools), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    logger.warning("closing a pool of %s failed: %r", self.env_id, result)

        try:
            loop.run(close_all(), timeout)
        except Exception:
            logger.exception("closing the sessions of %s failed", self.env_id)
        finally:
            loop.stop()


def _run_once(coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coroutine`` on a loop thread of its own, stopped afterwards (works inside a running loop too)."""
    loop = LoopThread(name="openenv-gym-trl setup")
    try:
        return loop.run(coroutine, timeout)
    finally:
        loop.stop()


def _single_env_kwargs(make_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``make_kwargs`` for one ``make_async`` env: the pool's own arguments left out."""
    kwargs = {key: value for key, value in make_kwargs.items() if key not in _POOL_ONLY}
    base_urls = make_kwargs.get("base_urls")
    if base_urls:
        kwargs["base_url"] = base_urls[0]
    return kwargs


async def _discover_tools(env_id: str, make_kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    env = await make_async(env_id, **_single_env_kwargs(make_kwargs))
    try:
        return env.tools
    finally:
        await env.aclose()


# --- tool methods from input schemas --------------------------------------------------------------

_JSON_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def annotation_of(schema: Any) -> Any:
    """The Python type whose JSON schema, as transformers' ``get_json_schema`` writes it, is nearest ``schema``.

    Example:
        >>> annotation_of({"type": "array", "items": {"type": "integer"}})
        list[int]
        >>> annotation_of({"type": "string", "enum": ["a", "b"]})
        typing.Literal['a', 'b']
    """
    if not isinstance(schema, Mapping):
        return Any
    values = schema.get("enum")
    if "const" in schema:
        values = [schema["const"]]
    if isinstance(values, list) and values and all(type(v) in (str, int, float, bool, type(None)) for v in values):
        return Literal[tuple(values)]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return Union[tuple(annotation_of(option) for option in options)]  # noqa: UP007 - built from a list
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return Union[tuple(annotation_of({**schema, "type": one}) for one in kind)]  # noqa: UP007
    if kind == "array":
        items = schema.get("items")
        return list[annotation_of(items)] if isinstance(items, Mapping) and items else list  # type: ignore[misc]
    if kind == "object":
        extra = schema.get("additionalProperties")
        return dict[str, annotation_of(extra)] if isinstance(extra, Mapping) and extra else dict  # type: ignore[misc]
    return _JSON_SCALARS.get(kind, Any) if isinstance(kind, str) else Any


def _docstring(description: str, arguments: list[tuple[str, str]]) -> str:
    """A Google-style docstring: ``description``, then ``Args:`` with one line (or more, indented) each."""
    lines = [description.strip() or "Call this tool."]
    if arguments:
        lines += ["", "Args:"]
        for name, text in arguments:
            # Continuation lines deeper than the names, so none reads as the next argument.
            body = "\n        ".join(part.strip() for part in text.strip().splitlines() if part.strip())
            lines.append(f"    {name}: {body}")
    return "\n".join(lines)


def tool_method(tool: Mapping[str, Any], owner: str = "ToolEnvironment") -> Callable[..., str]:
    """A method that calls the env's ``tool``, with the signature and docstring its input schema gives.

    Every parameter is keyword-only (TRL calls tools with keywords), in the schema's order; one
    the schema does not require defaults to its ``default`` (or ``None``), but a call forwards
    only the arguments given: the server applies its own defaults and checks every argument.

    Raises:
        ValueError: a parameter name that cannot be a Python parameter (``"class"``, ``"a-b"``).
    """
    name = str(tool["name"])
    schema = tool.get("input_schema", tool.get("inputSchema")) or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    documented: list[tuple[str, str]] = []
    for parameter, prop in properties.items():
        if not parameter.isidentifier() or keyword.iskeyword(parameter):
            raise ValueError(f"tool {name!r}: its parameter {parameter!r} cannot be the name of a Python parameter")
        prop = prop if isinstance(prop, Mapping) else {}
        annotation = annotation_of(prop)
        default = inspect.Parameter.empty if parameter in required else prop.get("default")
        parameters.append(
            inspect.Parameter(parameter, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
        annotations[parameter] = annotation
        # transformers wants a description for every parameter; the env may give none.
        documented.append((parameter, str(prop.get("description") or prop.get("title") or parameter)))

    def call(self: ToolEnvironment, **arguments: Any) -> str:
        return self._call_tool(name, arguments)

    call.__name__ = name
    call.__qualname__ = f"{owner}.{name}"
    call.__doc__ = _docstring(str(tool.get("description") or ""), documented)
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = {**annotations, "return": str}
    return call


# --- environment_factory --------------------------------------------------------------------------


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
    _sessions: ClassVar[_Sessions]

    def __init__(self) -> None:
        if type(self) is ToolEnvironment or not hasattr(type(self), "_sessions"):
            raise TypeError("ToolEnvironment is a base class: make one with environment_factory(env_id)")
        self.calls: list[ToolCall] = []
        self.prompt: str | None = None
        self.info: dict[str, Any] = {}
        self.done = False
        self.lost = False
        self._slot = _Slot()
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
            except _CALL_ERRORS:
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
        except _CALL_ERRORS as exc:
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
    sessions = _Sessions(env_id, pool_size, dict(make_kwargs))
    tools = _run_once(_discover_tools(env_id, make_kwargs), START_WAIT)
    if not tools:
        raise ValueError(f"{env_id!r} offers no tools; for a text env, use rollout_func({env_id!r})")
    class_name = name or _class_name(env_id)
    namespace: dict[str, Any] = {
        "__doc__": f"TRL environment for {env_id}: one episode per rollout; its tools are methods.",
        "__module__": __name__,
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


# --- rollout_func ---------------------------------------------------------------------------------


def extract_code(text: str) -> str:
    """The program in a model's answer: its first fenced code block, else the whole text.

    A reasoning block (``<think>...</think>``) is dropped first.

    Example:
        >>> extract_code("Here:\\n```python\\nprint(1)\\n```\\nDone.")
        'print(1)\\n'
        >>> extract_code("print(2)")
        'print(2)'
    """
    text = re.sub(r"<think>.*?(</think>|\Z)", "", text, flags=re.DOTALL)
    match = re.search(r"```[\w+-]*[ \t]*\n(.*?)(?:```|\Z)", text, flags=re.DOTALL)
    return match.group(1) if match else text


def env_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """A TRL reward function giving the env's reward of each completion (an :class:`EnvRollout` computed it).

    ``None`` for a completion whose episode could not run (a lost session): TRL leaves it out.
    """
    if "env_reward" not in kwargs:
        raise KeyError("env_reward reads the 'env_reward' field a rollout_func of openenv_gym returns")
    return [None if reward is None else float(reward) for reward in kwargs["env_reward"]]


def prompt_text(observation: Any) -> str:
    """The prompt in a reset's observation: the text itself, or its ``"prompt"`` field."""
    if isinstance(observation, str):
        return observation
    if isinstance(observation, Mapping) and isinstance(observation.get("prompt"), str):
        return str(observation["prompt"])
    raise TypeError(f"the reset observation holds no prompt text: {type(observation).__name__}; pass prompt_of=")


def _prompt_key(prompt: Any) -> str:
    """What identifies a dataset prompt: its text, or its last message's."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], Mapping):
        content = prompt[-1].get("content")
        if isinstance(content, str):
            return content
    raise TypeError(f"a prompt is text or chat messages ending with a text message, got {prompt!r}")


@dataclass(frozen=True)
class _Outcome:
    reward: float | None
    terminated: bool
    truncated: bool
    error: str | None
    observation: Any


class EnvRollout:
    """TRL's ``rollout_func`` for a single-turn text env: each completion is one action, one episode.

    Made by :func:`rollout_func`; see the module's doc for what it returns.

    Args:
        env_id: a registered openenv id (``"openenv/Coding-v0"``).
        pool_size: sessions of the pool (default: the first batch's rows); episodes of a larger
            batch wait for a free session, or a pool is added for the difference.
        action: the action of a completion's text (default: the text; :func:`extract_code` takes
            a program out of a markdown answer).
        reset_kwargs: ``reset`` keyword arguments (``seed``, ``options``) of a prompt that
            :meth:`dataset` did not make.
        invalid_action_reward: the reward of an action the env's action space refuses (it is not
            sent: the model wrote something the env cannot take).
        **make_kwargs: ``gym.make``'s keyword arguments for the id, and the pool's.
    """

    def __init__(
        self,
        env_id: str,
        *,
        pool_size: int | None = None,
        action: Callable[[str], Any] | None = None,
        reset_kwargs: Callable[[Any], Mapping[str, Any]] | None = None,
        invalid_action_reward: float = 0.0,
        **make_kwargs: Any,
    ) -> None:
        self.env_id = env_id
        self.action = action
        self.reset_kwargs = reset_kwargs
        self.invalid_action_reward = float(invalid_action_reward)
        self._make_kwargs = dict(make_kwargs)
        self._sessions = _Sessions(env_id, pool_size, self._make_kwargs)
        self._resets: dict[str, dict[str, Any]] = {}
        weakref.finalize(self, self._sessions.close)

    def __repr__(self) -> str:
        return f"EnvRollout({self.env_id})"

    @property
    def sessions_in_use(self) -> int:
        """Sessions lent to episodes now (0 between batches)."""
        return self._sessions.in_use

    def dataset(
        self,
        resets: Iterable[Mapping[str, Any]],
        *,
        system_prompt: str | None = None,
        conversational: bool = True,
        prompt_of: Callable[[Any], str] = prompt_text,
    ) -> datasets.Dataset:
        """A TRL dataset of the env's prompts, one row per reset, each remembered for the rollouts.

        Resets one session (on a server of its own, stopped afterwards) with each of ``resets``
        (``{"options": {"task_id": ...}}``, ``{"seed": 3}``) and takes the observation's prompt.
        A row's ``prompt`` is that text (``conversational``: as the user message, after
        ``system_prompt``); its ``seed`` and options are columns too.

        Raises:
            ValueError: two resets gave the same prompt (a rollout could not tell them apart).
        """
        import datasets

        wanted = [dict(reset) for reset in resets]

        async def prompts() -> list[str]:
            env = await make_async(self.env_id, **_single_env_kwargs(self._make_kwargs))
            try:
                return [prompt_of((await env.reset(**reset))[0]) for reset in wanted]
            finally:
                await env.aclose()

        texts = _run_once(prompts(), START_WAIT + len(wanted) * self._sessions.call_wait)
        rows = []
        for reset, text in zip(wanted, texts):
            if self._resets.get(text, reset) != reset:
                raise ValueError(f"two resets give the same prompt: {self._resets[text]} and {reset}")
            self._resets[text] = reset
            if conversational:
                messages = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
                prompt: Any = [*messages, {"role": "user", "content": text}]
            else:
                prompt = text if system_prompt is None else f"{system_prompt}\n\n{text}"
            columns = {key: value for key, value in reset.items() if key != "options"}
            rows.append({"prompt": prompt, **(reset.get("options") or {}), **columns})
        # Every row gets every column (None where its reset had none): a dataset's columns are the same for all rows.
        names = list(dict.fromkeys(name for row in rows for name in row))
        return datasets.Dataset.from_list([{name: row.get(name) for name in names} for row in rows])

    def _reset_of(self, prompt: Any) -> dict[str, Any]:
        try:
            reset = self._resets.get(_prompt_key(prompt))
        except TypeError:
            if self.reset_kwargs is None:
                raise
            reset = None
        if reset is not None:
            return reset
        if self.reset_kwargs is not None:
            return dict(self.reset_kwargs(prompt))
        raise KeyError(
            f"{self!r}: a prompt that dataset() did not make, and no reset_kwargs= to say which episode it is: "
            f"{_prompt_key(prompt)[:200]!r}"
        )

    async def _episode(self, reset: dict[str, Any], action: Any, wanted: int) -> _Outcome:
        env = await self._sessions.acquire(wanted)
        try:
            await env.reset(**reset)
            try:
                observation, reward, terminated, truncated, _ = await env.step(action)
            except InvalidActionError as exc:
                return _Outcome(self.invalid_action_reward, False, False, f"invalid_action: {exc}", None)
            return _Outcome(reward, terminated, truncated, None, observation)
        except _CALL_ERRORS as exc:
            if env.failed is None:  # the env refused the reset or the step: a bug to see, not to score
                raise
            # The session was lost (its server died, a call timed out): no reward; TRL leaves the row out.
            logger.warning("%r: an episode's session was lost: %r", self, exc)
            return _Outcome(None, False, False, f"session_lost: {exc}", None)
        finally:
            await env.aclose()

    async def _episodes(self, resets: list[dict[str, Any]], actions: list[Any]) -> list[_Outcome]:
        await self._sessions.ensure(len(resets))
        return list(await asyncio.gather(*(self._episode(r, a, len(resets)) for r, a in zip(resets, actions))))

    def run(self, prompts: list[Any], texts: list[str]) -> dict[str, list[Any]]:
        """The env's outcome of each completion text (an episode each, all at once): the ``env_*`` fields."""
        if len(prompts) != len(texts):
            raise ValueError(f"{len(prompts)} prompts but {len(texts)} completions")
        resets = [self._reset_of(prompt) for prompt in prompts]
        actions = [text if self.action is None else self.action(text) for text in texts]
        # Every episode has a session of its own (the pool grows to the batch): one reset and one step each.
        outcomes = self._sessions.run(self._episodes(resets, actions), START_WAIT + 2 * self._sessions.call_wait)
        return {
            "env_reward": [outcome.reward for outcome in outcomes],
            "env_terminated": [outcome.terminated for outcome in outcomes],
            "env_truncated": [outcome.truncated for outcome in outcomes],
            "env_error": [outcome.error for outcome in outcomes],
            "env_observation": [outcome.observation for outcome in outcomes],
        }

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """TRL's ``rollout_func``: generate with the trainer, step the env with each completion."""
        # The trainer's own steps for its default rollout: the chat template (and tools) as it
        # applies them, and its configured generation backend. They are TRL's private methods,
        # stable across the 1.x releases this module supports (trl>=1.16,<2).
        prompt_ids, images, multimodal_fields = trainer._tokenize_prompts(prompts)
        generations = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        completion_ids, logprobs = trainer._generate_single_turn(prompt_ids, images, multimodal_fields, generations)
        texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logprobs,
            **self.run(prompts, texts),
        }

    def close(self) -> None:
        """Close every session and stop the servers; idempotent (also done at interpreter exit)."""
        self._sessions.close()


def rollout_func(
    env_id: str,
    *,
    pool_size: int | None = None,
    action: Callable[[str], Any] | None = None,
    reset_kwargs: Callable[[Any], Mapping[str, Any]] | None = None,
    invalid_action_reward: float = 0.0,
    **make_kwargs: Any,
) -> EnvRollout:
    """A ``rollout_func`` for ``GRPOTrainer`` on the single-turn text env ``env_id``; see :class:`EnvRollout`."""
    return EnvRollout(
        env_id,
        pool_size=pool_size,
        action=action,
        reset_kwargs=reset_kwargs,
        invalid_action_reward=invalid_action_reward,
        **make_kwargs,
    )
