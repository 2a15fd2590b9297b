"""The model endpoint over a real socket, called by the OpenAI and Anthropic SDKs as an agent calls its
model: each call reaches the env as it was made, the env's reply reaches the SDK (streamed when asked),
a call left unanswered times out with a 504 the SDK reports, and a closed endpoint refuses calls."""

from __future__ import annotations

import concurrent.futures
import json
import logging
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest

from openenv_gym import ModelCallError
from openenv_gym.protocol.model_calls import Dialect
from openenv_gym.server.model_endpoint import ModelEndpoint
from tests.utils import UNIT

WAIT = 30 * UNIT
BASH = {"type": "object", "properties": {"command": {"type": "string"}}}
LS = {"content": None, "tool_calls": [{"id": "call_ls", "function": {"name": "bash", "arguments": {"command": "ls"}}}]}


def _openai(endpoint: ModelEndpoint) -> openai.OpenAI:
    return openai.OpenAI(api_key="any", base_url=endpoint.base_url, max_retries=0, timeout=WAIT)


def _anthropic(endpoint: ModelEndpoint) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="any", base_url=endpoint.root_url, max_retries=0, timeout=WAIT)


def _chat(endpoint: ModelEndpoint, stream: bool) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    client = _openai(endpoint)
    messages: Any = [{"role": "user", "content": "list the files"}]
    tools: Any = [{"type": "function", "function": {"name": "bash", "parameters": BASH}}]
    if stream:
        with client.chat.completions.stream(model="policy", messages=messages, tools=tools) as events:
            message: Any = events.get_final_completion().choices[0].message
    else:
        message = client.chat.completions.create(model="policy", messages=messages, tools=tools).choices[0].message
    return message.content or "", [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []
    ]


def _responses(endpoint: ModelEndpoint, stream: bool) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    client = _openai(endpoint)
    tools: Any = [{"type": "function", "name": "bash", "parameters": BASH, "strict": False}]
    if stream:
        with client.responses.stream(model="policy", input="list the files", tools=tools) as events:
            response: Any = events.get_final_response()
    else:
        response = client.responses.create(model="policy", input="list the files", tools=tools)
    calls = [(i.call_id, i.name, json.loads(i.arguments)) for i in response.output if i.type == "function_call"]
    return response.output_text, calls


def _messages(endpoint: ModelEndpoint, stream: bool) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    client = _anthropic(endpoint)
    messages: Any = [{"role": "user", "content": "list the files"}]
    tools: Any = [{"name": "bash", "input_schema": BASH}]
    if stream:
        with client.messages.stream(model="policy", max_tokens=64, messages=messages, tools=tools) as events:
            message: Any = events.get_final_message()
    else:
        message = client.messages.create(model="policy", max_tokens=64, messages=messages, tools=tools)
    text = "".join(block.text for block in message.content if block.type == "text")
    return text, [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]


AGENTS: dict[Dialect, Callable[[ModelEndpoint, bool], tuple[str, list[tuple[str, str, dict[str, Any]]]]]] = {
    Dialect.CHAT_COMPLETIONS: _chat,
    Dialect.RESPONSES: _responses,
    Dialect.ANTHROPIC_MESSAGES: _messages,
}


@pytest.fixture
def endpoint():
    with ModelEndpoint(reply_timeout=WAIT) as served:
        yield served


@pytest.fixture
def agent_thread():
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        yield pool


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("dialect", list(Dialect), ids=[d.value for d in Dialect])
def test_an_sdk_call_is_the_envs_to_answer(endpoint, agent_thread, dialect, stream):
    """The SDK's call waits at the endpoint; the env sees it as the SDK made it, and the SDK gets the
    env's reply (text and a tool call), as a body or streamed."""
    agent = agent_thread.submit(AGENTS[dialect], endpoint, stream)
    pending = endpoint.next_call(timeout=WAIT)
    assert pending is not None
    assert pending.call.dialect is dialect
    assert pending.call.stream is stream
    assert pending.call.observation["messages"][-1] == {"role": "user", "content": "list the files"}
    assert [tool["function"]["name"] for tool in pending.call.observation["tools"]] == ["bash"]
    assert not agent.done()  # the agent waits for the env
    endpoint.reply(pending, {**LS, "content": "Looking."})
    assert agent.result(WAIT) == ("Looking.", [("call_ls", "bash", {"command": "ls"})])


def test_calls_on_one_connection_follow_each_other(endpoint, agent_thread):
    """An SDK keeps its connection between calls: each call is answered in turn."""
    client = _openai(endpoint)

    def two_calls() -> list[str | None]:
        return [
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(n)}])
            .choices[0]
            .message.content
            for n in range(2)
        ]

    agent = agent_thread.submit(two_calls)
    for n in range(2):
        pending = endpoint.next_call(timeout=WAIT)
        assert pending is not None and pending.call.observation["messages"][0]["content"] == str(n)
        endpoint.reply(pending, f"answer {n}")
    assert agent.result(WAIT) == ["answer 0", "answer 1"]


def test_a_call_left_unanswered_times_out_with_a_504(agent_thread):
    """No reply within reply_timeout: the agent gets a 504 that says why, and a late reply is refused."""
    with ModelEndpoint(reply_timeout=0.2 * UNIT) as endpoint:
        agent = agent_thread.submit(_chat, endpoint, False)
        pending = endpoint.next_call(timeout=WAIT)
        assert pending is not None
        with pytest.raises(openai.APIStatusError) as raised:
            agent.result(WAIT)
        assert raised.value.status_code == 504
        assert "no reply to this call within" in str(raised.value)
        with pytest.raises(ModelCallError, match="answered 504"):
            endpoint.reply(pending, "too late")


def test_a_bad_request_is_the_agents_400_and_never_the_envs(endpoint):
    """A request its dialect cannot read is answered 400 (naming the field); the env sees no call."""
    client = _anthropic(endpoint)
    messages: Any = "hi"
    with pytest.raises(anthropic.BadRequestError, match="messages"):
        client.messages.create(model="m", max_tokens=8, messages=messages)
    assert endpoint.next_call(timeout=0.05) is None


def test_a_reply_that_is_no_reply_leaves_the_call_waiting(endpoint, agent_thread):
    """A malformed action raises at the env, and the agent still waits for a good one."""
    agent = agent_thread.submit(_chat, endpoint, True)
    pending = endpoint.next_call(timeout=WAIT)
    assert pending is not None
    with pytest.raises(ModelCallError):
        endpoint.reply(pending, {"content": 3})
    assert not agent.done()
    endpoint.reply(pending, "done")
    assert agent.result(WAIT) == ("done", [])


def test_a_closed_endpoint_drops_its_agents_calls(agent_thread, caplog):
    """Closing (the episode ends) fails the agent's waiting call, quietly, and refuses new ones."""
    endpoint = ModelEndpoint(reply_timeout=WAIT)
    agent = agent_thread.submit(_chat, endpoint, False)
    assert endpoint.next_call(timeout=WAIT) is not None
    with caplog.at_level(logging.ERROR):
        endpoint.close()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []
    with pytest.raises(openai.APIConnectionError):
        agent.result(WAIT)
    with pytest.raises(openai.APIConnectionError):
        _chat(endpoint, False)
