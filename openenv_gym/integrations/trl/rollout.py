"""`rollout_func`: TRL's ``rollout_func`` for single-turn text envs, each completion one episode's action."""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...async_env import make_async
from ...errors import InvalidActionError
from ...rewards import COMPONENTS_KEY, RewardFunction, reward_functions
from ...task_sampling import TaskSampler
from ...wrappers.recording import EpisodeBook
from .sessions import CALL_ERRORS, START_WAIT, Sessions, run_once, single_env_kwargs

if TYPE_CHECKING:
    import datasets

__all__ = ["EnvRollout", "component_reward", "env_reward", "extract_code", "prompt_text", "rollout_func"]

logger = logging.getLogger(__name__)


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


def component_reward(name: str) -> Callable[..., list[float | None]]:
    """A TRL reward function giving one reward component of each completion's episode: one of the
    env's (``info["reward_components"]``, e.g. ReasoningGym-v0's ``"verifier"``) or of the
    ``rewards=`` functions of :func:`rollout_func`. It bears the component's name, so TRL logs it
    as ``rewards/NAME/mean``; ``GRPOConfig(reward_weights=...)`` composes them.

    ``None`` where the episode has no such component (a lost session): TRL leaves it out.
    """

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        if "env_reward_components" not in kwargs:
            raise KeyError(
                "component_reward reads the 'env_reward_components' field a rollout_func of openenv_gym returns"
            )
        return [None if parts is None else parts.get(name) for parts in kwargs["env_reward_components"]]

    reward.__name__ = reward.__qualname__ = name
    return reward


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


def _with_text(prompt: Any, text: str) -> Any:
    """``prompt`` (text, or chat messages ending with the user's) with the user's text replaced by ``text``."""
    if isinstance(prompt, str):
        return text
    return [*prompt[:-1], {**prompt[-1], "content": text}]


@dataclass(frozen=True)
class _Outcome:
    reward: float | None
    terminated: bool
    truncated: bool
    error: str | None
    observation: Any
    components: dict[str, float] | None = None


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
        rewards: reward functions of yours (:class:`~openenv_gym.rewards.RewardFunction`, or
            functions of the episode's :class:`~openenv_gym.trajectories.Trajectory`), computed
            on each episode beside the env's own parts: both are in ``env_reward_components``,
            which :func:`component_reward` hands to TRL one by one.
        sampler: a task sampler (:mod:`openenv_gym.task_sampling`, e.g. ``PassRateCurriculum``)
            that picks each GRPO group's task instead of the dataset: the rows then only set the
            batch's size and the prompt's form (its system message), each group of
            ``num_generations`` completions answers the sampled task's prompt, and the sampler
            hears the group's env rewards. ``env_task_id`` says which task each completion had;
            reward functions should read the ``env_*`` fields, not the rows' columns.
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
        rewards: Sequence[RewardFunction | Callable[[Any], float]] = (),
        sampler: TaskSampler | None = None,
        **make_kwargs: Any,
    ) -> None:
        self.env_id = env_id
        self.action = action
        self.rewards = reward_functions(rewards)
        self.sampler = sampler
        self._task_prompts: dict[str, str] = {}
        self.reset_kwargs = reset_kwargs
        self.invalid_action_reward = float(invalid_action_reward)
        self._make_kwargs = dict(make_kwargs)
        self._sessions = Sessions(env_id, pool_size, self._make_kwargs)
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
            env = await make_async(self.env_id, **single_env_kwargs(self._make_kwargs))
            try:
                return [prompt_of((await env.reset(**reset))[0]) for reset in wanted]
            finally:
                await env.aclose()

        texts = run_once(prompts(), START_WAIT + len(wanted) * self._sessions.call_wait)
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
            book = EpisodeBook(env.action_space, env.observation_space, stream="rollout", rewards=self.rewards)
            book.start(reset.get("seed"), reset.get("options"), *(await env.reset(**reset)))
            try:
                observation, reward, terminated, truncated, info = await env.step(action)
            except InvalidActionError as exc:
                return _Outcome(self.invalid_action_reward, False, False, f"invalid_action: {exc}", None, {})
            # One step is the whole episode: the episode-level functions are paid on it too.
            _, paid_info, _ = book.step(action, observation, reward, True, truncated, info)
            components = dict(paid_info.get(COMPONENTS_KEY) or {})
            return _Outcome(reward, terminated, truncated, None, observation, components)
        except CALL_ERRORS as exc:
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
            "env_reward_components": [outcome.components for outcome in outcomes],
        }

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """TRL's ``rollout_func``: generate with the trainer, step the env with each completion."""
        # The trainer's own steps for its default rollout: the chat template (and tools) as it
        # applies them, and its configured generation backend. They are TRL's private methods,
        # stable across the 1.x releases this module supports (trl>=1.16,<2).
        generations = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        tasks: list[str] = []
        if self.sampler is not None:
            prompts, tasks = self._sampled(prompts, generations)
        prompt_ids, images, multimodal_fields = trainer._tokenize_prompts(prompts)
        completion_ids, logprobs = trainer._generate_single_turn(prompt_ids, images, multimodal_fields, generations)
        texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        outcome = self.run(prompts, texts)
        if self.sampler is not None:
            for start, task_id in zip(range(0, len(prompts), generations), tasks):
                group = [r for r in outcome["env_reward"][start : start + generations] if r is not None]
                if group:  # a group whose every session was lost says nothing of the task
                    self.sampler.update(task_id, group)
            outcome["env_task_id"] = [task for task in tasks for _ in range(generations)]
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs, **outcome}

    def _sampled(self, prompts: list[Any], generations: int) -> tuple[list[Any], list[str]]:
        """``prompts`` with each group's task replaced by one the sampler picks, and those tasks.

        Raises:
            ValueError: the batch is not whole groups of one prompt each (as TRL's sampler makes them).
            RuntimeError: the sampler has no task left (a sequential one, spent).
        """
        assert self.sampler is not None
        if len(prompts) % generations or any(
            prompts[start + i] != prompts[start]
            for start in range(0, len(prompts), generations)
            for i in range(generations)
        ):
            raise ValueError(f"a sampled rollout takes whole groups of {generations} copies of one prompt")
        chosen: list[str] = []
        for _ in range(len(prompts) // generations):
            task_id = self.sampler.sample()
            if task_id is None:
                raise RuntimeError(f"{self!r}: the task sampler has no task left")
            chosen.append(task_id)
        missing = [task_id for task_id in dict.fromkeys(chosen) if task_id not in self._task_prompts]
        if missing:  # every task's prompt once, from resets on one session (a sampler lists its tasks)
            missing = [
                t for t in dict.fromkeys([*getattr(self.sampler, "tasks", ()), *missing]) if t not in self._task_prompts
            ]
            for task_id, row in zip(
                missing, self.dataset([{"options": {"task_id": t}} for t in missing], conversational=False)
            ):
                self._task_prompts[task_id] = row["prompt"]
        swapped = [
            _with_text(prompts[start], self._task_prompts[task])
            for start, task in zip(range(0, len(prompts), generations), chosen)
        ]
        return [prompt for prompt in swapped for _ in range(generations)], chosen

    def close(self) -> None:
        """Close every session and stop the servers; idempotent (also done at interpreter exit)."""
        self._sessions.close()


def rollout_func(env_id: str, **options: Any) -> EnvRollout:
    """A ``rollout_func`` for ``GRPOTrainer`` on the single-turn text env ``env_id``.

    ``options`` are :class:`EnvRollout`'s (``pool_size``, ``action``, ``reset_kwargs``,
    ``invalid_action_reward``, ``rewards``, and ``gym.make``'s keyword arguments).
    """
    return EnvRollout(env_id, **options)
