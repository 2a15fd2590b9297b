"""A tiny causal LM and tokenizer built on the spot, to run the TRL hooks on a CPU with nothing downloaded.

The model is Qwen2's architecture at toy size (2 layers, hidden 32, random weights); the tokenizer
a byte-level BPE trained on the texts given, with Qwen3's chat template (TRL's copy) and the
special tokens its tool calls use. Together they make ``GRPOTrainer`` run end to end in seconds
(generation, the env's episodes, rewards, one update): a way to try the plumbing, never a model
that learns anything useful. A random model seldom writes a tool call or a program, so its
episodes mostly earn what the env pays for none. Needs the ``trl`` extra and torch::

    from openenv_gym.integrations.trl.tiny_model import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer(["def f(x):\\n    return x\\n"])
    model = tiny_model(tokenizer)
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
from tokenizers import models as tokenizer_models
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl.chat_template_utils import qwen3_chat_template

__all__ = ["SPECIAL_TOKENS", "tiny_model", "tiny_tokenizer"]

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
    """A byte-level BPE tokenizer trained on ``texts``, with Qwen3's chat template; it pads on the left.

    Any text can be encoded (every byte is a token); the texts given only decide which merges it
    learns, so the prompts and completions it will see are few tokens.
    """
    tokenizer = Tokenizer(tokenizer_models.BPE())
    # No split into words: merges may cross spaces. The special tokens still cut the text, so
    # a conversation's tokens are its turns' tokens, as TRL's tool-response suffix needs.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
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
