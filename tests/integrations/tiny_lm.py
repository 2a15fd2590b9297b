"""A tiny causal LM and tokenizer made on the spot (no download), and a way to make it say one thing.

The model is Qwen2's architecture at toy size (2 layers, hidden 32); the tokenizer a byte-level
BPE trained on the texts the test will show it, with Qwen3's chat template (TRL's copy) and the
special tokens that template's tool calls use. Its tokens may span words (no pre-splitting), so a
prompt it was trained on is a few dozen tokens, and the model learns its completion in seconds. A random model never writes a tool call or a
program, so :func:`overfit` trains it on one prompt and completion until it repeats that
completion when sampled.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl.chat_template_utils import qwen3_chat_template

#: Qwen3's special tokens: the end of text, the turn markers, and the markers of tool calls,
#: tool responses and reasoning that its chat template writes.
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<tool_response>",
    "</tool_response>",
]


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 2000) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``texts``, with Qwen3's chat template; it pads on the left."""
    tokenizer = Tokenizer(models.BPE())
    # No split into words: merges may cross spaces. The special tokens still cut the text, so
    # a conversation's tokens are its turns' tokens, as TRL's tool-response suffix needs.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte: any text can be encoded
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    fast.chat_template = qwen3_chat_template
    return fast


def tiny_model(tokenizer: PreTrainedTokenizerFast, seed: int = 0) -> Qwen2ForCausalLM:
    """A randomly initialised 2-layer, 32-wide Qwen2 model for ``tokenizer``'s vocabulary."""
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(config)


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
