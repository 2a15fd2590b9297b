"""Replies written in each dialect, checked by the APIs' own SDKs: every body and event validates as the
SDK's type, the SDK (non-streamed and through its streaming helpers) sees the reply's text and calls, and
the history an agent sends back next turn reads as the reply it was given."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from openenv_gym import ModelCallError
from openenv_gym.protocol.model_calls import (
    Dialect,
    Stamp,
    answer,
    answer_body,
    answer_events,
    error_body,
    parse_reply,
    read_model_call,
)

from .model_server import ModelServer
from .sdk_replies import ask, tool_results

LS = {"id": "call_ls", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
CAT = {
    "id": "call_cat",
    "type": "function",
    "function": {"name": "bash", "arguments": '{"command": "cat a.py", "n": [1, 2.5]}'},
}
REPLIES = {
    "text": "The tests pass.",
    "calls": {"content": None, "tool_calls": [LS, CAT]},
    "text and calls": {"content": "Let me look.", "tool_calls": [LS, CAT]},
    "unicode": {
        "content": "naïve — 日本\n",
        "tool_calls": [{"id": "c1", "function": {"name": "w", "arguments": {"t": 'é\n"x"'}}}],
    },
}
SEEN = {
    "text": ("The tests pass.", []),
    "calls": (
        "",
        [("call_ls", "bash", {"command": "ls"}), ("call_cat", "bash", {"command": "cat a.py", "n": [1, 2.5]})],
    ),
    "text and calls": (
        "Let me look.",
        [("call_ls", "bash", {"command": "ls"}), ("call_cat", "bash", {"command": "cat a.py", "n": [1, 2.5]})],
    ),
    "unicode": ("naïve — 日本\n", [("c1", "w", {"t": 'é\n"x"'})]),
}
DIALECTS = list(Dialect)
PATHS = {
    Dialect.CHAT_COMPLETIONS: "/v1/chat/completions",
    Dialect.RESPONSES: "/v1/responses",
    Dialect.ANTHROPIC_MESSAGES: "/v1/messages",
}


FIRST_TURN = [{"role": "user", "content": "Fix a.py"}]


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("kind", sorted(REPLIES))
@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.value for d in DIALECTS])
def test_the_agents_sdk_sees_the_reply(dialect, kind, stream):
    """Text, calls, or both, with non-ASCII text and JSON in the arguments: the SDK gives the agent the
    reply's text and each call's id, name and arguments, streamed or not."""
    server = ModelServer([REPLIES[kind]])
    seen, _ = ask(server, dialect, stream, FIRST_TURN)
    assert seen == SEEN[kind]
    assert [call.stream for call in server.calls] == [stream]


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.value for d in DIALECTS])
def test_an_agent_loop_sends_the_reply_back_as_it_was_given(dialect, stream):
    """Two turns of an agent built on the SDK: the reply it got, appended to its history as the SDK gave
    it, and the results of its calls read, in the next call's observation, as the action and as tool
    messages."""
    reply = REPLIES["text and calls"]
    server = ModelServer([reply, "Fixed."])
    _, history = ask(server, dialect, stream, FIRST_TURN)
    history += tool_results(dialect, [("call_ls", "a.py"), ("call_cat", "print(1)")])
    seen, _ = ask(server, dialect, stream, history)
    assert seen == ("Fixed.", [])
    assert server.calls[1].observation["messages"] == [
        {"role": "user", "content": "Fix a.py"},
        parse_reply(reply).message(),
        {"role": "tool", "tool_call_id": "call_ls", "content": "a.py"},
        {"role": "tool", "tool_call_id": "call_cat", "content": "print(1)"},
    ]
    assert server.calls[1].observation["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ]


def data_of(event: bytes) -> tuple[str | None, Any]:
    """An event's ``event:`` name (None when it has none) and its data, read as JSON unless ``[DONE]``."""
    lines = event.decode().split("\n")
    assert lines[-2:] == ["", ""]
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    (data,) = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    return (names[0] if names else None), (data if data == "[DONE]" else json.loads(data))


def call_of(dialect: Dialect, **request: Any) -> Any:
    first = {"messages": [{"role": "user", "content": "hi"}]} if dialect is not Dialect.RESPONSES else {"input": "hi"}
    return read_model_call(PATHS[dialect], {"model": "policy", **first, **request})


@pytest.mark.parametrize("kind", sorted(REPLIES))
@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.value for d in DIALECTS])
def test_every_body_and_event_validates_as_the_sdks_type(dialect, kind):
    """Strict pydantic validation by the SDK's own models (their parsers in the client are lenient):
    the body as ChatCompletion, Response or Message; each event as a chunk or a stream event, its
    ``event:`` name its type; Responses' sequence numbers count from 0; chat's stream ends ``[DONE]``."""
    call, stamp = call_of(dialect), Stamp("resp_1", 1700000000)
    body = answer_body(call, REPLIES[kind], stamp)
    events = [data_of(event) for event in answer_events(call, REPLIES[kind], stamp)]
    if dialect is Dialect.CHAT_COMPLETIONS:
        ChatCompletion.model_validate(body)
        assert events[-1] == (None, "[DONE]")
        for name, data in events[:-1]:
            assert name is None
            ChatCompletionChunk.model_validate(data)
    else:
        model, union = (
            (Response, ResponseStreamEvent) if dialect is Dialect.RESPONSES else (Message, RawMessageStreamEvent)
        )
        model.model_validate(body)
        adapter: TypeAdapter[Any] = TypeAdapter(union)
        for name, data in events:
            assert name == data["type"]
            adapter.validate_python(data)
        if dialect is Dialect.RESPONSES:
            assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
            assert events[-1][1]["response"] == body


@pytest.mark.parametrize(
    ("dialect", "text_only", "with_calls"),
    [
        (Dialect.CHAT_COMPLETIONS, "stop", "tool_calls"),
        (Dialect.ANTHROPIC_MESSAGES, "end_turn", "tool_use"),
    ],
)
def test_the_stop_reason_says_whether_the_model_called_tools(dialect, text_only, with_calls):
    """finish_reason and stop_reason, in the body and in the stream's last chunk or message_delta."""
    call = call_of(dialect)

    def reasons(reply: Any) -> list[str]:
        body = answer_body(call, reply)
        found = [body["choices"][0]["finish_reason"]] if dialect is Dialect.CHAT_COMPLETIONS else [body["stop_reason"]]
        for _, data in map(data_of, answer_events(call, reply)):
            if data != "[DONE]" and data.get("choices") and data["choices"][0]["finish_reason"]:
                found.append(data["choices"][0]["finish_reason"])
            if data != "[DONE]" and data.get("type") == "message_delta":
                found.append(data["delta"]["stop_reason"])
        return found

    assert reasons("hi") == [text_only, text_only]
    assert reasons(REPLIES["calls"]) == [with_calls, with_calls]


@pytest.mark.parametrize("kind", ["text", "calls"])
def test_a_reply_cut_at_its_token_limit_says_so_in_each_dialect(kind):
    """``finish_reason: "length"``: chat's finish_reason "length", Anthropic's stop_reason "max_tokens",
    a Responses response "incomplete" (max_output_tokens) whose stream ends with ``response.incomplete``;
    each validated by the SDK's types, and read by its stream."""
    reply = {
        **(REPLIES[kind] if isinstance(REPLIES[kind], dict) else {"content": REPLIES[kind]}),
        "finish_reason": "length",
    }
    chat, messages = call_of(Dialect.CHAT_COMPLETIONS), call_of(Dialect.ANTHROPIC_MESSAGES)
    assert ChatCompletion.model_validate(answer_body(chat, reply)).choices[0].finish_reason == "length"
    assert data_of(answer_events(chat, reply)[-2])[1]["choices"][0]["finish_reason"] == "length"
    assert Message.model_validate(answer_body(messages, reply)).stop_reason == "max_tokens"
    assert data_of(answer_events(messages, reply)[-2])[1]["delta"]["stop_reason"] == "max_tokens"
    response = Response.model_validate(answer_body(call_of(Dialect.RESPONSES), reply))
    assert (response.status, response.incomplete_details and response.incomplete_details.reason) == (
        "incomplete",
        "max_output_tokens",
    )
    assert response.output[-1].status == "incomplete" and all(
        item.status == "completed" for item in response.output[:-1]
    )
    server = ModelServer([reply])
    events = list(server.openai().responses.create(model="policy", input="hi", stream=True))
    assert events[-1].type == "response.incomplete" and events[-1].response.status == "incomplete"
    assert [event.type for event in events].count("response.output_item.done") == len(response.output)


def test_chat_streams_the_usage_when_the_request_asks_for_it():
    """``stream_options.include_usage``: a last chunk with no choices and the usage, before ``[DONE]``;
    read by the SDK's own stream (``create(stream=True)``), chunk by chunk."""
    server = ModelServer([{"content": "ok", "usage": {"prompt_tokens": 11, "completion_tokens": 7}}] * 2)
    chunks = list(
        server.openai().chat.completions.create(
            model="policy",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == "ok"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens, chunks[-1].usage.total_tokens) == (
        11,
        7,
        18,
    )
    plain = list(
        server.openai().chat.completions.create(
            model="policy", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert all(chunk.choices for chunk in plain)


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_the_usage_reaches_each_sdk(stream):
    """The reply's token counts, as each API names them."""
    usage = {"prompt_tokens": 11, "completion_tokens": 7}
    server = ModelServer([{"content": "ok", "usage": usage}] * 3)
    history = [{"role": "user", "content": "hi"}]
    client = server.openai()
    if stream:
        with client.responses.stream(model="policy", input=history) as events:
            response = events.get_final_response()
        with server.anthropic().messages.stream(model="policy", max_tokens=9, messages=history) as messages:
            message = messages.get_final_message()
    else:
        response = client.responses.create(model="policy", input=history)
        message = server.anthropic().messages.create(model="policy", max_tokens=9, messages=history)
    completion = client.chat.completions.create(model="policy", messages=history)
    assert completion.usage is not None and response.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (11, 7)
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (11, 7, 18)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.value for d in DIALECTS])
def test_the_answer_is_streamed_when_the_request_asks(dialect):
    """``answer``: the JSON body in one piece, or the events one by one as ``text/event-stream``."""
    stamp = Stamp("resp_1", 1700000000)
    media, (body,) = answer(call_of(dialect), "hi", stamp)
    assert (media, json.loads(body)) == ("application/json", answer_body(call_of(dialect), "hi", stamp))
    streamed = call_of(dialect, stream=True)
    assert answer(streamed, "hi", stamp) == ("text/event-stream", answer_events(streamed, "hi", stamp))


def test_a_stamp_sets_the_answers_id_and_time():
    call = call_of(Dialect.RESPONSES)
    body = answer_body(call, {"content": "x", "tool_calls": [LS]}, Stamp("resp_abc", 1700000000))
    assert (body["id"], body["created_at"]) == ("resp_abc", 1700000000)
    assert [item["id"] for item in body["output"]] == ["msg_abc", "fc_abc_0"]


def test_an_error_body_is_read_by_each_sdk_as_its_error():
    """A refused request answered with :func:`error_body` and 400: each SDK raises its BadRequestError
    with our message."""
    message = "messages[0].role: expected user or assistant"

    def refuse_openai(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json=error_body(Dialect.CHAT_COMPLETIONS, message))

    def refuse_anthropic(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, json=error_body(Dialect.ANTHROPIC_MESSAGES, message))

    client = openai.OpenAI(
        api_key="t", base_url="http://m.test/v1", http_client=httpx.Client(transport=httpx.MockTransport(refuse_openai))
    )
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="m", messages=[])
    assert refused.value.message == f"Error code: 400 - {message}"
    assert refused.value.body == error_body(Dialect.CHAT_COMPLETIONS, message)["error"]
    other = anthropic.Anthropic(
        api_key="t",
        base_url="http://m.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(refuse_anthropic)),
    )
    with pytest.raises(anthropic.BadRequestError) as declined:
        other.messages.create(model="m", max_tokens=1, messages=[])
    assert declined.value.body == error_body(Dialect.ANTHROPIC_MESSAGES, message)
    assert message in str(declined.value)


@pytest.mark.parametrize(
    ("action", "says"),
    [
        (3, "a reply is text or an assistant message"),
        ({"content": "x", "name": "bob"}, "unexpected keys ['name']"),
        ({"role": "user", "content": "x"}, "role is 'assistant'"),
        ({"content": ["x"]}, "content is a string or None"),
        ({"tool_calls": {"a": 1}}, "tool_calls is a list"),
        ({"tool_calls": [{"name": "ls"}]}, "tool_calls[0] is"),
        ({"tool_calls": [{"type": "custom", "function": {"name": "ls"}}]}, "tool_calls[0].type is 'function'"),
        ({"tool_calls": [{"function": {"name": ""}}]}, "tool_calls[0].function.name must be"),
        ({"tool_calls": [{"function": {"name": "ls", "arguments": "{oops"}}]}, "arguments is not valid JSON"),
        ({"tool_calls": [{"function": {"name": "ls", "arguments": "[1]"}}]}, "must be a JSON object, got list"),
        ({"tool_calls": [{"function": {"name": "ls", "arguments": '{"n": NaN}'}}]}, "NaN is not JSON"),
        ({"tool_calls": [{"function": {"name": "ls", "arguments": {"n": float("inf")}}}]}, "is not JSON data"),
        ({"tool_calls": [{"function": {"name": "ls", "arguments": {"n": {1, 2}}}}]}, "is not JSON data"),
        ({"tool_calls": [{"function": {"name": "ls", "arguments": 5}}]}, "must be a JSON object or its text"),
        ({"tool_calls": [{"id": 3, "function": {"name": "ls"}}]}, "tool_calls[0].id must be"),
        ({"tool_calls": [LS, LS]}, "share an id"),
        ({"content": "x", "usage": {"prompt_tokens": -1}}, "non-negative integers"),
        ({"content": "x", "usage": 5}, "a reply's usage is"),
        ({"content": "x", "finish_reason": "content_filter"}, "finish_reason is 'stop', 'tool_calls' or 'length'"),
    ],
)
def test_a_malformed_reply_is_refused(action, says):
    """The action is checked before anything is written: each dialect needs a call's arguments as an object."""
    with pytest.raises(ModelCallError) as caught:
        answer_body(call_of(Dialect.CHAT_COMPLETIONS), action)
    assert says in str(caught.value)


def test_a_reply_has_one_spelling_of_no_text():
    """No text beside calls is None, no text alone is "": what every dialect's history gives back."""
    assert parse_reply({"content": "", "tool_calls": [LS]}).content is None
    assert parse_reply({"content": None}).content == ""
    assert parse_reply({"tool_calls": [{"function": {"name": "ls", "arguments": " "}}]}).tool_calls[0].arguments == "{}"
