"""The tiny model and tokenizer of :mod:`openenv_gym.integrations.trl.tiny_model`, and a way to make it say one thing.

A random model never writes a tool call or a program, so :func:`overfit` trains it on one prompt
and completion until it repeats that completion when sampled.
"""

from __future__ import annotations

import torch
from transformers import Qwen2ForCausalLM

from openenv_gym.integrations.trl.tiny_model import SPECIAL_TOKENS, tiny_model, tiny_tokenizer

__all__ = ["SPECIAL_TOKENS", "overfit", "tiny_model", "tiny_tokenizer"]


def overfit(
    model: Qwen2ForCausalLM,
    prompt_ids: list[int],
    completion_ids: list[int],
    *,
    target_loss: float = 0.01,
    max_steps: int = 3000,
    lr: float = 1e-2,
) -> float:
    """Train ``model`` on one prompt and completion (loss on the completion only) until its loss is ``target_loss``.

    Stops after ``max_steps`` whatever the loss, and returns the last loss: the caller checks it,
    so a model that did not learn fails loudly.
    """
    ids = torch.tensor([prompt_ids + completion_ids])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    loss = float("inf")
    for _ in range(max_steps):
        if loss <= target_loss:
            break
        output = model(input_ids=ids, labels=labels)
        optimizer.zero_grad()
        output.loss.backward()
        optimizer.step()
        loss = output.loss.item()
    return loss
