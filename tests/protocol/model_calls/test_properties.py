"""Properties of the dialects, over generated replies and requests: a reply written and sent back as the
agent's history reads as the action given; the streamed reply and the body say the same to the SDK; any
JSON at all is a model call or a ModelCallError, nothing else."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym import ModelCallError
from openenv_gym.protocol.model_calls import Dialect, answer_body, parse_reply, read_model_call

from .model_server import ModelServer
from .sdk_replies import ask

# Deterministic and bounded, as the fuzz tests' profile; no deadline on a loaded machine.
CI = settings(derandomize=True, max_examples=100, deadline=None, database=None)

PATHS = {
    Dialect.CHAT_COMPLETIONS: "/v1/chat/completions",
    Dialect.RESPONSES: "/v1/responses",
    Dialect.ANTHROPIC_MESSAGES: "/v1/messages",
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.from_regex(r"call_[A-Za-z0-9]{1,10}", fullmatch=True),
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {
                    "name": st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,20}", fullmatch=True),
                    "arguments": st.dictionaries(st.text(max_size=8), json_values, max_size=4),
                }
            ),
        }
    ),
    max_size=3,
    unique_by=lambda call: call["id"],
)
usages = st.fixed_dictionaries({"prompt_tokens": st.integers(0, 10**6), "completion_tokens": st.integers(0, 10**6)})
replies = st.text() | st.fixed_dictionaries(
    {"content": st.none() | st.text(), "tool_calls": tool_calls}, optional={"usage": usages}
)


def sent_back(dialect: Dialect, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The history entries an agent appends for the answer ``body``, as the dialect's API documents them."""
    if dialect is Dialect.CHAT_COMPLETIONS:
        message = dict(body["choices"][0]["message"])
        del message["refusal"]
        return [message]
    if dialect is Dialect.RESPONSES:
        return list(body["output"])
    return [{"role": "assistant", "content": body["content"]}]


@CI
@given(reply=replies, dialect=st.sampled_from(list(Dialect)))
def test_a_reply_sent_back_reads_as_the_action_given(reply, dialect):
    """Any reply (text of any characters, calls with any JSON arguments) written as the body, then put in
    the next request's history as the API documents, is read as ``parse_reply(reply).message()``."""
    user = {"role": "user", "content": "go"}
    first = read_model_call(
        PATHS[dialect],
        {"model": "m", "messages": [user]} if dialect is not Dialect.RESPONSES else {"model": "m", "input": "go"},
    )
    history = [user, *sent_back(dialect, answer_body(first, reply))]
    key = "input" if dialect is Dialect.RESPONSES else "messages"
    second = read_model_call(PATHS[dialect], {"model": "m", key: history})
    assert second.observation["messages"] == [user, parse_reply(reply).message()]


@settings(derandomize=True, max_examples=30, deadline=None, database=None)
@given(reply=replies, dialect=st.sampled_from(list(Dialect)))
def test_the_stream_and_the_body_say_the_same_to_the_sdk(reply, dialect):
    """The SDK's streaming helper gathers from the events the text and calls it reads from the body."""
    server = ModelServer([reply, reply])
    history = [{"role": "user", "content": "go"}]
    assert ask(server, dialect, True, history)[0] == ask(server, dialect, False, history)[0]


# Words of the dialects, so that generated bodies reach past the first check.
WORDS = [
    "model", "messages", "input", "instructions", "system", "tools", "tool_choice", "stream", "role", "content",
    "type", "text", "tool_calls", "tool_call_id", "function", "name", "arguments", "parameters", "call_id",
    "output", "tool_use_id", "input_schema", "source", "image_url", "url", "id", "max_tokens", "temperature",
    "user", "assistant", "tool", "developer", "function_call", "function_call_output", "message", "tool_use",
    "tool_result", "image", "input_text", "output_text", "base64", "auto", "any",
]  # fmt: skip
words = st.sampled_from(WORDS)
anything = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | words | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(words, inner, max_size=3),
    max_leaves=4,
)
# Objects with the fields of the dialects' messages, items, blocks, parts and tools (each there or not),
# lists of such objects inside.
FIELDS = [
    "role", "type", "content", "text", "tool_calls", "tool_call_id", "function", "name", "arguments", "call_id",
    "output", "tool_use_id", "input", "id", "source", "parameters", "input_schema", "image_url", "refusal",
]  # fmt: skip
inner_entries = st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, words | anything))
entries = st.fixed_dictionaries(
    {}, optional=dict.fromkeys(FIELDS, words | anything | st.lists(inner_entries, max_size=2))
)
# A body with the turns of every dialect, most of its other fields left out, so generated turns are read.
bodies = st.fixed_dictionaries(
    {"messages": st.lists(entries, min_size=1, max_size=3), "input": st.lists(entries, min_size=1, max_size=3)},
    optional={
        "model": anything,
        "stream": anything,
        "tools": st.lists(entries, max_size=2) | anything,
        "tool_choice": entries | anything,
        "system": anything | st.lists(entries, max_size=2),
        "instructions": anything,
    },
)


@settings(derandomize=True, max_examples=150, deadline=None, database=None)
@given(body=bodies, dialect=st.sampled_from(list(Dialect)))
def test_any_request_is_a_model_call_or_a_model_call_error(body, dialect):
    """No request body, however wrong, raises anything but ModelCallError; one that reads gives an
    observation of the documented form."""
    try:
        call = read_model_call(PATHS[dialect], body)
    except ModelCallError as error:
        assert error.dialect == dialect.value
        return
    observation = call.observation
    assert sorted(observation) == ["messages", "params", "tools"]
    assert all(message["role"] in ("system", "user", "assistant", "tool") for message in observation["messages"])
    assert all(tool["type"] == "function" for tool in observation["tools"])
    assert isinstance(observation["params"]["stream"], bool)


@CI
@given(
    action=st.text()
    | entries
    | json_values
    | st.fixed_dictionaries(
        {},
        optional={
            "content": anything,
            "tool_calls": st.lists(entries, max_size=2) | anything,
            "role": anything,
            "usage": entries | anything,
        },
    )
)
def test_any_action_is_a_reply_or_a_model_call_error(action):
    try:
        reply = parse_reply(action)
    except ModelCallError:
        return
    assert reply.message()["role"] == "assistant"
