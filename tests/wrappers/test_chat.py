"""ChatMessages' structured tool calls, rendered by real chat templates of three model families.

The templates are the models' own, as TRL ships them (``trl/chat_templates``, byte-identical to the
model repos'), and the tokenizers are built here: nothing is downloaded.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from trl.chat_template_utils import llama3_1_chat_template, qwen2_5_chat_template, qwen3_chat_template

import openenv_gym  # noqa: F401  registers the openenv/ ids
from openenv_gym.wrappers import ChatMessages
from openenv_gym.wrappers.chat import ChatSpace
from tests.tool_envs import ToolboxEnvironment
from tests.utils import running_server

ADD = {"name": "add", "arguments": {"a": 2, "b": 3}}
SUBMIT = 'Two and three make five. <tool_call>{"name": "submit", "arguments": {"answer": 5}}</tool_call>'


def hermes_call(name: str, arguments: dict) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


def llama_call(name: str, arguments: dict) -> str:
    call = f'{{"name": "{name}", "parameters": {json.dumps(arguments)}}}'
    return f"<|start_header_id|>assistant<|end_header_id|>\n\n{call}<|eot_id|>"


#: Each family's template, its markup of a call and of a result, and what opens its tool list.
FAMILIES = {
    "qwen2.5": (qwen2_5_chat_template, hermes_call, "<tool_response>\n{}\n</tool_response>", "<tools>\n"),
    "qwen3": (qwen3_chat_template, hermes_call, "<tool_response>\n{}\n</tool_response>", "<tools>\n"),
    "llama3.1": (
        llama3_1_chat_template,
        llama_call,
        '<|start_header_id|>ipython<|end_header_id|>\n\n"{}"<|eot_id|>',  # a string result as JSON text
        "Given the following functions",
    ),
}


@pytest.fixture(scope="module")
def toolbox_url():
    with running_server(ToolboxEnvironment, max_sessions=4) as server:
        yield server.url


def tokenizer_with(template: str) -> PreTrainedTokenizerFast:
    """A word-level tokenizer made here, with ``template`` as its chat template."""
    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "<s>": 1}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", bos_token="<s>")
    tokenizer.chat_template = template
    return tokenizer


def played(url: str) -> tuple[ChatMessages, tuple[dict, ...]]:
    """A chat of two calls: one as JSON text, one inside a completion's <tool_call>."""
    env = ChatMessages(gym.make("openenv/Remote-v0", base_url=url))
    env.reset()
    env.step(json.dumps(ADD))
    messages, reward, terminated, *_ = env.step(SUBMIT)
    assert (reward, terminated) == (1.0, True)
    return env, messages


def test_calls_and_results_are_structured_messages_and_the_tools_go_beside(toolbox_url):
    env, messages = played(toolbox_url)
    try:
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool"]
        assert messages[1] == {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "id": "call_0", "function": ADD}],
        }
        assert messages[2] == {"role": "tool", "name": "add", "tool_call_id": "call_0", "content": "5"}
        assert messages[3]["content"] == "Two and three make five."
        assert messages[3]["tool_calls"][0]["function"] == {"name": "submit", "arguments": {"answer": 5}}
        assert messages[4]["tool_call_id"] == "call_1" and messages[4]["content"] == "correct"
        assert {tool["function"]["name"] for tool in env.tools} >= {"add", "submit"}
        assert all(tool["type"] == "function" and "parameters" in tool["function"] for tool in env.tools)
        assert isinstance(env.observation_space, ChatSpace) and env.observation_space.contains(messages)
        assert env.observation_space.contains(env.observation_space.sample())
    finally:
        env.close()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_chat_templates_render_the_calls_and_results_as_tool_calls(toolbox_url, family):
    template, call, result, tool_list = FAMILIES[family]
    env, messages = played(toolbox_url)
    env.close()
    tokenizer = tokenizer_with(template)
    text = tokenizer.apply_chat_template(list(messages), tools=env.tools, tokenize=False, add_generation_prompt=True)
    assert call("add", {"a": 2, "b": 3}) in text and result.format(5) in text
    assert call("submit", {"answer": 5}) in text and result.format("correct") in text
    assert tool_list in text and '"description": "Submit the sum.' in text  # the tool list, from tools=
    ids = tokenizer.apply_chat_template(list(messages), tools=env.tools, return_dict=False)
    assert len(ids) > 0


def test_text_that_is_no_call_stays_the_assistant_s_words(toolbox_url):
    env = ChatMessages(gym.make("openenv/Remote-v0", base_url=toolbox_url))
    try:
        env.reset()
        messages, reward, *_ = env.step("add(2, 3)")
        assert messages[1] == {"role": "assistant", "content": "add(2, 3)"}
        assert messages[2]["role"] == "tool" and messages[2]["content"].startswith("Error:") and reward == 0.0
        for template, *_ in FAMILIES.values():
            text = tokenizer_with(template).apply_chat_template(list(messages), tools=env.tools, tokenize=False)
            assert "add(2, 3)" in text
    finally:
        env.close()


def test_the_text_format_is_the_older_one_and_formats_are_checked(toolbox_url):
    env = ChatMessages(gym.make("openenv/Remote-v0", base_url=toolbox_url), tool_format="text")
    try:
        messages, _ = env.reset()
        assert messages[0]["role"] == "system" and '"name": "submit"' in messages[0]["content"]
        messages, *_ = env.step(ADD)
        assert messages[-2:] == ({"role": "assistant", "content": json.dumps(ADD)}, {"role": "tool", "content": "5"})
        assert env.observation_space.contains(messages)
    finally:
        env.close()
    unknown: dict[str, Any] = {"tool_format": "xml"}
    with pytest.raises(ValueError, match="tool_format='xml'"):
        ChatMessages(gym.make("CartPole-v1"), **unknown)
