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
``env_reward``, ``env_terminated``, ``env_truncated``, ``env_error``, ``env_observation`` and
``env_reward_components`` (the env's parts and those of ``rewards=`` functions of yours),
which TRL passes to reward functions as keyword arguments: :func:`env_reward` gives the env's.
An action the env's action space refuses is not sent (reward ``invalid_action_reward``, 0 by
default); an episode whose session was lost has reward ``None``, which TRL leaves out.
A rollout function sees only the prompts, not the dataset's columns, so :meth:`EnvRollout.dataset`
builds the rows from the env's own prompts and remembers which reset gave each one.
"""

from __future__ import annotations

from ...errors import ToolFailedError
from .environment import ToolCall, ToolEnvironment, environment_factory
from .rollout import EnvRollout, component_reward, env_reward, extract_code, prompt_text, rollout_func
from .signatures import annotation_of, tool_method

__all__ = [
    "EnvRollout",
    "ToolCall",
    "ToolEnvironment",
    "ToolFailedError",
    "annotation_of",
    "component_reward",
    "env_reward",
    "environment_factory",
    "extract_code",
    "prompt_text",
    "rollout_func",
    "tool_method",
]
