"""Requests read into the observation: each built by its API's own SDK (the body it sends captured by a
mock transport), the dialect told by the path, and a malformed request refused with the field named."""

from __future__ import annotations

import pytest

from openenv_gym import ModelCallError, OpenEnvGymError
from openenv_gym.protocol.model_calls import Dialect, dialect_of, read_model_call

from .model_server import ModelServer

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
BASH_SCHEMA = BASH["function"]["parameters"]
CALL_LS = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
CALL_CAT = {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": '{"command": "cat a.py"}'}}


def test_a_chat_completions_request_made_by_the_openai_sdk():
    """System and developer messages, text parts, an assistant's calls and their results come through in
    chat form; the params are normalised (max_completion_tokens as max_tokens, stop as a list)."""
    server = ModelServer(["done"])
    server.openai().chat.completions.create(
        model="policy",
        messages=[
            {"role": "system", "content": "You are a coder."},
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "text", "text": "Fix a.py"}, {"type": "text", "text": "Please."}]},
            {"role": "assistant", "content": None, "tool_calls": [CALL_LS, CALL_CAT]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "print(1)"}]},
        ],
        tools=[BASH],
        temperature=0.5,
        max_completion_tokens=256,
        stop="END",
        tool_choice="auto",
    )
    (call,) = server.calls
    assert call.observation == {
        "messages": [
            {"role": "system", "content": "You are a coder."},
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Fix a.py\nPlease."},
            {"role": "assistant", "content": None, "tool_calls": [CALL_LS, CALL_CAT]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "call_2", "content": "print(1)"},
        ],
        "tools": [BASH],
        "params": {
            "model": "policy",
            "stream": False,
            "temperature": 0.5,
            "max_tokens": 256,
            "stop": ["END"],
            "tool_choice": "auto",
        },
    }
    assert call.info() == {"dialect": "chat_completions", "request": call.request}
    assert call.request["max_completion_tokens"] == 256


def test_a_responses_request_made_by_the_openai_sdk():
    """instructions, input messages, function_call items (consecutive ones one assistant message) and their
    outputs; a reasoning item and a built-in tool are left out; max_output_tokens is max_tokens."""
    server = ModelServer(["done"])
    server.openai().responses.create(
        model="policy",
        instructions="You are a coder.",
        input=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "Fix a.py"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": '{"command": "ls"}'},
            {"type": "function_call", "call_id": "call_2", "name": "bash", "arguments": '{"command": "cat a.py"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.py"},
            {"type": "function_call_output", "call_id": "call_2", "output": "print(1)"},
            {"type": "function_call", "call_id": "call_3", "name": "bash", "arguments": "{}"},
        ],
        tools=[
            {
                "type": "function",
                "name": "bash",
                "description": "Run a command.",
                "parameters": BASH_SCHEMA,
                "strict": False,
            },
            {"type": "web_search"},
        ],
        max_output_tokens=100,
        tool_choice={"type": "function", "name": "bash"},
        stream=False,
    )
    (call,) = server.calls
    assert call.dialect is Dialect.RESPONSES
    assert call.observation == {
        "messages": [
            {"role": "system", "content": "You are a coder."},
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Fix a.py"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [CALL_LS, CALL_CAT]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "call_2", "content": "print(1)"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_3", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
        ],
        "tools": [BASH],
        "params": {
            "model": "policy",
            "stream": False,
            "max_tokens": 100,
            "tool_choice": {"type": "function", "function": {"name": "bash"}},
        },
    }


def test_a_responses_input_of_plain_text_is_one_user_message():
    call = read_model_call("/v1/responses", {"model": "m", "input": "hi", "stream": True})
    assert call.observation == {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
        "params": {"model": "m", "stream": True},
    }
    assert call.stream


def test_an_anthropic_messages_request_made_by_the_anthropic_sdk():
    """system blocks, an assistant's text, thinking and tool_use blocks, the user's tool_result blocks
    (each a tool message, before the user's own text) and an image; Anthropic's own tools left out;
    tool_choice any is "required", stop_sequences is stop."""
    server = ModelServer(["done"])
    server.anthropic().messages.create(
        model="policy",
        max_tokens=512,
        system=[
            {"type": "text", "text": "You are a coder."},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
        ],
        messages=[
            {"role": "user", "content": "Fix a.py"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": "sig"},
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "call_2", "name": "bash", "input": {"command": "cat a.py"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "a.py"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": [{"type": "text", "text": "print(1)"}],
                        "is_error": False,
                    },
                    {"type": "text", "text": "Go on."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                ],
            },
        ],
        tools=[
            {"name": "bash", "description": "Run a command.", "input_schema": BASH_SCHEMA},
            {"type": "bash_20250124", "name": "computer_bash"},
        ],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
        stop_sequences=["END"],
        extra_body={"temperature": 0.0},  # this SDK has no temperature argument; older agents send one
    )
    (call,) = server.calls
    assert call.dialect is Dialect.ANTHROPIC_MESSAGES
    assert call.observation == {
        "messages": [
            {"role": "system", "content": "You are a coder.\nBe brief."},
            {"role": "user", "content": "Fix a.py"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [CALL_LS, CALL_CAT]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "call_2", "content": "print(1)"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Go on."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ],
            },
        ],
        "tools": [BASH],
        "params": {
            "model": "policy",
            "stream": False,
            "temperature": 0.0,
            "max_tokens": 512,
            "stop": ["END"],
            "tool_choice": "required",
            "parallel_tool_calls": False,
        },
    }


@pytest.mark.parametrize(
    ("path", "dialect"),
    [
        ("/v1/chat/completions", Dialect.CHAT_COMPLETIONS),
        ("/chat/completions", Dialect.CHAT_COMPLETIONS),
        ("/openai/v1/chat/completions/", Dialect.CHAT_COMPLETIONS),
        ("/v1/responses", Dialect.RESPONSES),
        ("/v1/messages", Dialect.ANTHROPIC_MESSAGES),
        ("/v1/messages?beta=true", Dialect.ANTHROPIC_MESSAGES),
    ],
)
def test_the_path_tells_the_dialect(path, dialect):
    assert dialect_of(path) is dialect


@pytest.mark.parametrize("path", ["/v1/messages/count_tokens", "/v1/models", "/v1/completions", "/"])
def test_a_path_of_no_dialect_is_refused(path):
    with pytest.raises(ModelCallError, match="no model call is posted to"):
        dialect_of(path)


CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        (CHAT, b"{not json", "is not JSON"),
        (CHAT, b"[1, 2]", "is a JSON object"),
        (CHAT, {"model": "m"}, "messages: expected a list, got null"),
        (CHAT, {"model": 7, "messages": USER}, "model: expected a string, got int"),
        (CHAT, {"model": "m", "messages": USER, "stream": "yes"}, "stream: expected true or false"),
        (CHAT, {"model": "m", "messages": USER, "temperature": "hot"}, "temperature: expected a number"),
        (CHAT, {"model": "m", "messages": USER, "max_tokens": 0}, "max_tokens: expected a positive integer"),
        (CHAT, {"model": "m", "messages": USER, "stop": [1]}, "stop: expected a string or a list of strings"),
        (CHAT, {"model": "m", "messages": USER, "tool_choice": "sometimes"}, "tool_choice: expected 'auto'"),
        (CHAT, {"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role: expected system"),
        (
            CHAT,
            {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id: expected a non-empty",
        ),
        (
            CHAT,
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "audio"}]}]},
            "messages[0].content[0].type",
        ),
        (
            CHAT,
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]},
            "tool_calls[0].function",
        ),
        (
            CHAT,
            {"model": "m", "messages": USER, "tools": [{"type": "function", "function": {"name": ""}}]},
            "tools[0].function.name",
        ),
        (RESPONSES, {"model": "m"}, "input: expected a list, got null"),
        (
            RESPONSES,
            {"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0].call_id",
        ),
        (
            RESPONSES,
            {"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": 3}]},
            "input[0].output: expected a list",
        ),
        (
            RESPONSES,
            {"model": "m", "input": [{"type": "item_reference", "id": "x"}]},
            "input[0].type: expected message",
        ),
        (RESPONSES, {"model": "m", "input": "hi", "instructions": ["x"]}, "instructions: expected a string"),
        (
            MESSAGES,
            {"model": "m", "max_tokens": 5, "messages": [{"role": "robot", "content": "x"}]},
            "messages[0].role",
        ),
        (MESSAGES, {"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, "tool_use_id"),
        (
            MESSAGES,
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_use"}]}]},
            "expected text, image or tool_result",
        ),
        (MESSAGES, {"model": "m", "messages": USER, "tool_choice": {"type": "maybe"}}, "tool_choice.type"),
        (MESSAGES, {"model": "m", "messages": USER, "tool_choice": {"type": ["any"]}}, "tool_choice.type"),
        (
            MESSAGES,
            {"model": "m", "messages": [{"role": "user", "content": [{"type": {}}]}]},
            "messages[0].content[0].type",
        ),
        (RESPONSES, {"model": "m", "input": [{"type": ["message"]}]}, "input[0].type: expected message"),
        (
            MESSAGES,
            {"model": "m", "messages": USER, "tools": [{"name": "t", "input_schema": "object"}]},
            "tools[0].parameters",
        ),
    ],
)
def test_a_malformed_request_is_refused_naming_its_field(path, body, says):
    """Each refusal is a ModelCallError (an OpenEnvGymError and a ValueError) naming the field and the dialect."""
    with pytest.raises(ModelCallError) as caught:
        read_model_call(path, body)
    assert says in str(caught.value)
    assert isinstance(caught.value, OpenEnvGymError) and isinstance(caught.value, ValueError)
    assert caught.value.dialect == dialect_of(path).value
