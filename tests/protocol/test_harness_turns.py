"""OpenEnv 0.10's ``/harness`` frames (pure): a client's turn read or refused with 0.10's codes, the
events of a turn, and the tool results a request's history holds; and the chat completions a server
asks a model with, and reads its answer from."""

from __future__ import annotations

import pytest

from openenv_gym.errors import ModelCallError, ProtocolError
from openenv_gym.protocol.harness_turns import protocol_error, read_turn, tool_results, turn_event
from openenv_gym.protocol.model_calls.chat_completions import completion_reply, completion_request


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{", "INVALID_JSON"),
        ("[]", "VALIDATION_ERROR"),
        ('{"type": "message"}', "VALIDATION_ERROR"),
        ('{"type": "message", "content": 3}', "VALIDATION_ERROR"),
        ('{"type": "reset", "content": "x"}', "VALIDATION_ERROR"),
        ('{"type": "message", "content": "x", "extra": 1}', "VALIDATION_ERROR"),
    ],
)
def test_a_frame_that_is_no_turn_is_refused_with_openenvs_code(frame, code):
    with pytest.raises(ProtocolError) as refused:
        read_turn(frame)
    assert refused.value.code == code
    assert protocol_error(refused.value) == {
        "type": "protocol_error",
        "data": {"message": refused.value.message, "code": code},
    }


def test_an_event_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="no harness event"):
        turn_event("llm_reply")


def test_tool_results_are_those_after_the_last_reply_each_named_by_its_call():
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a", "content": "old"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b"}, {"id": "c"}]},
        {"role": "tool", "tool_call_id": "b", "content": "one"},
        {
            "role": "tool",
            "tool_call_id": "c",
            "content": [{"type": "text", "text": "t"}, {"type": "text", "text": "wo"}],
        },
        {"role": "user", "content": "and?"},
    ]
    events = tool_results(messages, {"b": "bash", "c": "read"})
    assert [event["data"] for event in events] == [
        {"tool_name": "bash", "result": "one", "error": None},
        {"tool_name": "read", "result": "two", "error": None},
    ]
    assert tool_results(messages[:1], {}) == []


def test_the_request_asks_for_the_call_as_the_agent_did_but_not_streamed():
    observation = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "params": {"model": "agents", "stream": True, "max_tokens": 64, "stop": ["x"]},
    }
    body = completion_request(observation)
    assert body == {
        "model": "agents",
        "messages": observation["messages"],
        "stream": False,
        "tools": observation["tools"],
        "max_tokens": 64,
        "stop": ["x"],
    }


def test_a_completion_is_read_as_the_reply_and_anything_else_is_refused():
    call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    completion = {
        "choices": [
            {
                "message": {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
    reply = completion_reply(completion)
    assert (reply.tool_calls[0].name, reply.usage.completion_tokens, reply.truncated) == ("bash", 2, False)
    cut = {"choices": [{"message": {"content": "par"}, "finish_reason": "length"}]}
    assert completion_reply(cut).truncated is True
    for bad in ({}, {"choices": []}, {"choices": [{"message": "x"}]}, ["x"]):
        with pytest.raises(ModelCallError):
            completion_reply(bad)
