"""TRL's GRPOTrainer over openenv/Harness-v0: each model call of mini-swe-agent is one generation of the
trainer, and one GRPO step trains on the episodes' tokens as the trainer generated them.

Real servers (the process provider), the real agent, the real trainer (TRL 1.x), and a tiny model
and tokenizer made here (no download). A random model never writes a command the agent can run, so
each episode ends at the call limit, unpaid: what is tested is the plumbing (the calls, the tokens,
their logprobs and the grader's reward as the loss sees them).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from trl import GRPOTrainer

from openenv_gym.envs.harness import HarnessEnvironment
from openenv_gym.integrations.trl import env_reward
from openenv_gym.integrations.trl.harness_rollout import harness_rollout
from tests.envs.test_harness_env import TASK
from tests.integrations.test_trl import (
    TRL_DEPRECATION,
    _quiet_trl,  # noqa: F401  a fixture: TRL's experimental-API warning off
    grpo_config,
    no_servers_left,  # noqa: F401  a fixture
)
from tests.integrations.tiny_lm import tiny_model, tiny_tokenizer
from tests.utils import UNIT

pytest.importorskip("minisweagent", reason="mini-swe-agent is the test extra's harness")

pytestmark = pytest.mark.slow

CALLS = 2  # replies per episode: the agent's next call is truncated
LIMITS: dict[str, Any] = {"time_limit_s": 900 * UNIT, "reply_timeout_s": 600 * UNIT}


def first_call() -> dict[str, Any]:
    """The agent's first call on the task (its system prompt, the task, its tools): the tokenizer learns its text."""
    env = HarnessEnvironment(**LIMITS)
    try:
        return json.loads(env.reset(options={"task_id": TASK}).observation)
    finally:
        env.close()


@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_one_grpo_step_trains_on_every_call_the_trainer_generated(tmp_path, no_servers_left):  # noqa: F811
    call = first_call()
    tokenizer = tiny_tokenizer([json.dumps(call), "\n".join(m["content"] for m in call["messages"])] * 4)
    rollout = harness_rollout(max_calls=CALLS, **LIMITS)
    try:
        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            reward_funcs=env_reward,
            args=grpo_config(tmp_path, max_steps=1, max_completion_length=16, num_generations=2),
            train_dataset=rollout.dataset([TASK] * 2),
            processing_class=tokenizer,
            rollout_func=rollout,
        )
        generated: list[tuple[list[int], list[int], list[float]]] = []
        generate = trainer._generate_single_turn

        def generate_with_logprobs(prompt_ids, images, multimodal_fields, num_generations):
            """The trainer's generation, with each token's logprob under the model (as vLLM gives them)."""
            completions, _ = generate(prompt_ids, images, multimodal_fields, num_generations)
            logprobs = []
            with torch.no_grad():
                for context, ids in zip(prompt_ids, completions):
                    logits = trainer.model(input_ids=torch.tensor([context + ids])).logits[0, len(context) - 1 : -1]
                    chosen = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(ids)[:, None])
                    logprobs.append(chosen[:, 0].tolist())
            generated.extend(zip(prompt_ids, completions, logprobs))
            return completions, logprobs

        trainer._generate_single_turn = generate_with_logprobs
        outputs: list[dict[str, Any]] = []
        call_rollout = trainer.rollout_func

        def recorded_rollout(prompts, trainer_):
            outputs.append(call_rollout(prompts, trainer_))
            return outputs[-1]

        trainer.rollout_func = recorded_rollout
        losses: list[dict[str, Any]] = []
        compute_loss = trainer.compute_loss

        def recorded_loss(model, inputs, *args, **kwargs):
            losses.append(inputs)
            return compute_loss(model, inputs, *args, **kwargs)

        trainer.compute_loss = recorded_loss
        trainer.train()
    finally:
        rollout.close()

    (out,) = outputs
    # Each episode: the agent's calls, each one generation, then truncated at the call limit, unpaid.
    assert out["env_calls"] == [CALLS, CALLS] and out["env_truncated"] == [True, True]
    assert out["env_reward"] == [0.0, 0.0] and out["env_error"] == [None, None]
    assert len(generated) == 2 * CALLS
    assert rollout.sessions_in_use == 0
    for prompt_ids, completion_ids, mask, logprobs in zip(
        out["prompt_ids"], out["completion_ids"], out["env_mask"], out["logprobs"], strict=True
    ):
        # The episode's calls: each generated from the episode's tokens so far, its own tokens kept as they are.
        tokens = prompt_ids + completion_ids
        calls = sorted(
            (g for g in generated if tokens[: len(g[0]) + len(g[1])] == g[0] + g[1]), key=lambda g: len(g[0])
        )
        assert len(calls) == CALLS and calls[0][0] == prompt_ids
        assert [t for t, m in zip(completion_ids, mask) if m] == [t for _, ids, _ in calls for t in ids]
        assert [p for p, m in zip(logprobs, mask) if m] == [p for _, _, lps in calls for p in lps]
        assert 0 in mask  # the agent's messages between the calls, out of the loss
        assert "clamp_values" in tokenizer.decode(prompt_ids)
    # What the loss saw: those tokens, their logprobs, the mask, and the grader's reward (0: no advantage).
    (inputs,) = losses
    for i, (completion_ids, mask, logprobs) in enumerate(zip(out["completion_ids"], out["env_mask"], out["logprobs"])):
        n = len(completion_ids)
        assert inputs["completion_ids"][i, :n].tolist() == completion_ids
        assert inputs["tool_mask"][i, :n].tolist() == mask
        assert inputs["sampling_per_token_logps"][i, :n].tolist() == pytest.approx(logprobs)
    assert inputs["advantages"].tolist() == [0.0, 0.0]
    assert trainer.state.log_history[0]["rewards/env_reward/mean"] == 0.0
