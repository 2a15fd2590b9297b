"""`HarnessRollout`: TRL's ``rollout_func`` over a harness env (``openenv/Harness-v0``), each model call
of the agent one generation of the trainer.

A harness episode is many calls: the agent (mini-swe-agent, the Codex CLI...) sends its messages,
the trainer generates the reply, the agent acts on it and calls again, until it exits or a limit
ends the episode; the task's grader pays the episode once. One GRPO sample is one episode, token in,
token out: its ``prompt_ids`` are the first call's messages through the trainer's chat template, and
its ``completion_ids`` are every reply the trainer generated (``env_mask`` 1, their own logprobs)
with, between two replies, the tokens of the messages the agent added (its tool results, its next
user turn; ``env_mask`` 0, left out of the loss). A call's context is the episode's tokens so far,
so the reply the loss scores is exactly the tokens generated from exactly that context: nothing is
re-tokenised (the agent's copy of the reply in its next call is skipped; an agent whose history is
append-only, as mini-swe-agent's, sends it). Every open episode's call is generated in one batch
of the trainer's generation (transformers or vLLM), then the agents run their actions at once on
sessions of a pool::

    rollout = harness_rollout(agent="mini-swe-agent", max_calls=8)
    rows = rollout.dataset(["clamp-values", "digit-square-sum"])
    trainer = GRPOTrainer(model, reward_funcs=env_reward, rollout_func=rollout, train_dataset=rows, ...)

A row's prompt names the task only (the agent writes the real prompt); besides the trainer's
fields the rollout returns, per episode, ``env_reward`` (``None`` when its session was lost: TRL
leaves it out), ``env_terminated``, ``env_truncated``, ``env_error`` and ``env_calls``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...async_env import AsyncRemoteEnv
from .sessions import CALL_ERRORS, START_WAIT, Sessions

if TYPE_CHECKING:
    import datasets

__all__ = ["HarnessRollout", "harness_rollout"]

logger = logging.getLogger(__name__)


@dataclass
class _Episode:
    """One agent's episode as token ids: the first call's prompt, then replies and the agent's messages."""

    reset: dict[str, Any]
    env: AsyncRemoteEnv | None = None
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    messages_seen: int = 0
    tools: list[Any] | None = None
    calls: int = 0
    reward: float | None = 0.0
    terminated: bool = False
    truncated: bool = False
    error: str | None = None
    pending: dict[str, Any] | None = None  # the call the agent waits on, or None once the episode ended

    @property
    def context(self) -> list[int]:
        return self.prompt_ids + self.completion_ids


class HarnessRollout:
    """TRL's ``rollout_func`` over a harness env; see the module's doc.

    Args:
        env_id: a harness env's id (``"openenv/Harness-v0"``).
        pool_size: sessions of the pool (default: the first batch's rows).
        **make_kwargs: ``gym.make``'s keyword arguments (the env's: ``agent``, ``max_calls``...).
    """

    def __init__(self, env_id: str = "openenv/Harness-v0", *, pool_size: int | None = None, **make_kwargs: Any) -> None:
        self.env_id = env_id
        self._sessions = Sessions(env_id, pool_size, dict(make_kwargs))
        weakref.finalize(self, self._sessions.close)

    def __repr__(self) -> str:
        return f"HarnessRollout({self.env_id})"

    @property
    def sessions_in_use(self) -> int:
        """Sessions lent to episodes now (0 between batches)."""
        return self._sessions.in_use

    @staticmethod
    def dataset(task_ids: Iterable[str]) -> datasets.Dataset:
        """A TRL dataset of one row per task: its prompt is the task id as a user message (the rollout's key)."""
        import datasets

        return datasets.Dataset.from_list(
            [{"prompt": [{"role": "user", "content": task_id}], "task_id": task_id} for task_id in task_ids]
        )

    @staticmethod
    def reset_of(prompt: Any) -> dict[str, Any]:
        """The reset of a row's prompt: its (last) message's text is the task id."""
        text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
        return {"options": {"task_id": text}}

    async def _start(self, episode: _Episode, wanted: int) -> None:
        try:
            episode.env = await self._sessions.acquire(wanted)
            text, _ = await episode.env.reset(**episode.reset)
            episode.pending = json.loads(text)
        except CALL_ERRORS as exc:
            await self._lost(episode, exc)

    async def _step(self, episode: _Episode, text: str) -> None:
        assert episode.env is not None
        try:
            observation, reward, terminated, truncated, _ = await episode.env.step(text)
        except CALL_ERRORS as exc:
            await self._lost(episode, exc)
            return
        episode.calls += 1
        episode.reward = float(reward)
        episode.terminated, episode.truncated = bool(terminated), bool(truncated)
        episode.pending = None if terminated or truncated else json.loads(observation)
        if episode.pending is None:
            await episode.env.aclose()  # the session goes back to the pool

    async def _lost(self, episode: _Episode, exc: BaseException) -> None:
        if episode.env is not None and episode.env.failed is None:
            raise exc  # the env refused the reset or the step: a bug to see, not to score
        logger.warning("%r: an episode's session was lost: %r", self, exc)
        episode.reward, episode.error, episode.pending = None, f"session_lost: {exc}", None
        if episode.env is not None:
            await episode.env.aclose()

    def _run(self, coroutines: list[Any]) -> None:
        async def together() -> None:
            await asyncio.gather(*coroutines)

        self._sessions.run(together(), START_WAIT + 2 * self._sessions.call_wait)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL's ``rollout_func``: every episode's calls generated by the trainer until each episode ends."""
        episodes = [_Episode(self.reset_of(prompt)) for prompt in prompts]
        self._run([self._start(episode, len(episodes)) for episode in episodes])
        with_logprobs = True
        while open_ := [episode for episode in episodes if episode.pending is not None]:
            for episode in open_:
                self._add_messages(episode, trainer)
            # TRL's own generation step (its configured backend), one completion per context: a
            # private method, stable across the 1.x releases this package supports (trl>=1.16,<2).
            completion_ids, logprobs = trainer._generate_single_turn([e.context for e in open_], None, {}, 1)
            with_logprobs = with_logprobs and logprobs is not None
            for i, (episode, ids) in enumerate(zip(open_, completion_ids)):
                episode.completion_ids += list(ids)
                episode.env_mask += [1] * len(ids)
                episode.logprobs += list(logprobs[i]) if logprobs is not None else [0.0] * len(ids)
            texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
            self._run([self._step(episode, text) for episode, text in zip(open_, texts)])
        return {
            "prompt_ids": [episode.prompt_ids for episode in episodes],
            "completion_ids": [episode.completion_ids for episode in episodes],
            "logprobs": [episode.logprobs for episode in episodes] if with_logprobs else None,
            "env_mask": [episode.env_mask for episode in episodes],
            "env_reward": [episode.reward for episode in episodes],
            "env_terminated": [episode.terminated for episode in episodes],
            "env_truncated": [episode.truncated for episode in episodes],
            "env_error": [episode.error for episode in episodes],
            "env_calls": [episode.calls for episode in episodes],
        }

    def _add_messages(self, episode: _Episode, trainer: Any) -> None:
        """The pending call's new messages as tokens: the whole prompt at the first call, then the
        messages after the agent's copy of the last reply (``env_mask`` 0)."""
        assert episode.pending is not None
        messages = episode.pending["messages"]
        tokenizer = trainer.processing_class
        template = getattr(trainer, "chat_template", None)
        if not episode.prompt_ids:
            episode.tools = episode.pending.get("tools") or None
            episode.prompt_ids = tokenizer.apply_chat_template(
                messages,
                tools=episode.tools,
                chat_template=template,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )["input_ids"]
            episode.messages_seen = len(messages)
            return
        new = messages[episode.messages_seen + 1 :]  # after the agent's copy of our reply
        episode.messages_seen = len(messages)
        ids = _turn_ids(tokenizer, template, new)
        if not episode.completion_ids or episode.completion_ids[-1] != tokenizer.eos_token_id:
            ids = [tokenizer.eos_token_id, *ids]  # a reply cut at the length limit: its turn is closed here
        episode.completion_ids += ids
        episode.env_mask += [0] * len(ids)
        episode.logprobs += [0.0] * len(ids)

    def close(self) -> None:
        """Close every session and stop the servers; idempotent (also done at interpreter exit)."""
        self._sessions.close()


def _turn_ids(tokenizer: Any, template: str | None, messages: list[dict[str, Any]]) -> list[int]:
    """The tokens the chat template writes for ``messages`` after a closed assistant turn, up to the
    next assistant turn's header: rendered after a stand-in conversation, cut after its end tokens."""
    base = [{"role": "user", "content": "."}, {"role": "assistant", "content": "."}]
    before = tokenizer.apply_chat_template(base, chat_template=template, tokenize=False)
    after = tokenizer.apply_chat_template(
        base + messages, chat_template=template, add_generation_prompt=True, tokenize=False
    )
    # The stand-in's turns end where its end tokens do (a template may write a last turn otherwise).
    cut = 0
    for _ in range(before.count(tokenizer.eos_token)):
        cut = after.index(tokenizer.eos_token, cut) + len(tokenizer.eos_token)
    return list(tokenizer.encode(after[cut:], add_special_tokens=False))


def harness_rollout(env_id: str = "openenv/Harness-v0", **options: Any) -> HarnessRollout:
    """A ``rollout_func`` for ``GRPOTrainer`` over the harness env ``env_id`` (:class:`HarnessRollout`'s options)."""
    return HarnessRollout(env_id, **options)
