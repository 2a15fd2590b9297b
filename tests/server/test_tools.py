"""Tools on our server: schemas from signatures, bad definitions at class creation, calls over /ws
in both forms (step actions and MCP JSON-RPC frames), and every way a call can go wrong."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import pytest
from websockets.sync.client import connect

from openenv_gym.errors import ToolDefinitionError
from openenv_gym.server import Environment, State, tool
from tests.tool_envs import ToolboxEnvironment
from tests.utils import UNIT, running_server, wait_until

# Definitions --------------------------------------------------------------------------------


def test_schemas_come_from_signatures_and_docstrings():
    """Types, defaults and required from the signature; descriptions from the docstring's Args."""
    add = ToolboxEnvironment.tools["add"].describe()
    assert add == {
        "name": "add",
        "description": "Add two integers.",
        "input_schema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "a": {"type": "integer", "description": "the first number."},
                "b": {"type": "integer", "default": 0, "description": "the second number."},
            },
            "required": ["a"],
        },
    }
    distance = ToolboxEnvironment.tools["distance"].input_schema
    assert distance["properties"]["scale"]["exclusiveMinimum"] == 0
    assert distance["properties"]["start"] == {"$ref": "#/$defs/Point"}
    assert set(distance["$defs"]["Point"]["properties"]) == {"x", "y"}
    weather = ToolboxEnvironment.tools["get-weather"].describe()
    assert weather["description"] == "The weather in a city."
    assert weather["input_schema"]["required"] == ["city"]


def test_a_call_is_validated_and_converted():
    add = ToolboxEnvironment.tools["add"]
    assert add.validate({"a": "3"}) == {"a": 3, "b": 0}
    with pytest.raises(ValueError, match=r"a: Field required; c: Extra inputs are not permitted"):
        add.validate({"c": 1})
    with pytest.raises(ValueError, match=r"a: Input should be a valid integer"):
        add.validate({"a": "three"})


class _Base(Environment[Any, Any, State]):
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any: ...

    def step(self, action: Any) -> Any: ...

    @property
    def state(self) -> State:
        return State()


def _define(body: dict[str, Any]) -> type:
    return type("Bad", (_Base,), body)


@pytest.mark.parametrize("name", ["reset", "step", "state", "close"])
def test_reserved_names_are_refused_when_the_class_is_created(name):
    """As a method name or as a tool name, the session's own calls cannot be tools."""

    def method(self, x: int) -> int:
        return x

    with pytest.raises(ToolDefinitionError, match=f"{name!r} is reserved"):
        _define({name: tool(method)})
    with pytest.raises(ToolDefinitionError, match=f"{name!r} is reserved"):
        _define({"fine": tool(name=name)(method)})


def _star_args(self, *values: int) -> int:
    return 0


def _star_kwargs(self, **values: int) -> int:
    return 0


def _no_hint(self, x) -> int:  # type: ignore[no-untyped-def]
    return 0


def _positional(self, x: int, /) -> int:
    return 0


def _no_schema(self, lock: type[Exception]) -> int:
    return 0


def _fine():
    """A fresh method each time: the decorator marks the function it is given."""

    def method(self) -> int:
        return 0

    return method


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"f": tool(_star_args)}, r"\*args and \*\*kwargs have no schema"),
        ({"f": tool(_star_kwargs)}, r"\*args and \*\*kwargs have no schema"),
        ({"f": tool(_no_hint)}, "parameter 'x' has no type hint"),
        ({"f": tool(_positional)}, "positional-only"),
        ({"f": tool(name="has space")(_fine())}, "1 to 64 letters"),
        ({"f": tool(_fine()), "g": tool(name="f")(_fine())}, "two tools named 'f'"),
        ({"schema": tool(_fine())}, "may not replace the environment's own 'schema'"),
    ],
)
def test_tools_that_cannot_be_served_are_refused_at_class_creation(body, message):
    with pytest.raises(ToolDefinitionError, match=message):
        _define(body)


def test_a_non_positive_time_limit_is_refused():
    with pytest.raises(ToolDefinitionError, match="timeout_s must be positive"):
        tool(timeout_s=0)


def test_an_override_without_the_decorator_is_no_tool():
    class Quiet(ToolboxEnvironment):
        def add(self, a: int, b: int = 0) -> int:
            return 0

    assert "add" not in Quiet.tools and "submit" in Quiet.tools


# Calls over /ws -----------------------------------------------------------------------------


class Session:
    """Raw frames on one /ws connection."""

    def __init__(self, url: str) -> None:
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(url.replace("http", "ws", 1) + "/ws", open_timeout=10 * UNIT))

    def send(self, frame: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        self.ws.send(json.dumps(frame))
        return json.loads(self.ws.recv(timeout=timeout * UNIT))

    def step(self, data: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        return self.send({"type": "step", "data": data}, timeout)

    def call(self, name: str, timeout: float = 10, **arguments: Any) -> dict[str, Any]:
        reply = self.step({"type": "call_tool", "tool_name": name, "arguments": arguments}, timeout)
        assert reply["type"] == "observation", reply
        return reply["data"]

    def rpc(self, method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "method": method, "id": request_id}
        if params is not None:
            message["params"] = params
        reply = self.send({"type": "mcp", "data": message})
        assert reply["type"] == "mcp", reply
        return reply["data"]

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="module")
def toolbox():
    with running_server(ToolboxEnvironment, max_sessions=8) as server:
        yield server


@pytest.fixture
def session(toolbox):
    session = Session(toolbox.url)
    yield session
    session.close()


def test_tools_are_listed_before_any_reset(session):
    reply = session.step({"type": "list_tools"})
    names = [tool["name"] for tool in reply["data"]["observation"]["tools"]]
    assert names == sorted(ToolboxEnvironment.tools) and "add" in names
    assert reply["data"]["reward"] is None and reply["data"]["done"] is False


def test_a_call_before_reset_is_a_session_error(session):
    reply = session.step({"type": "call_tool", "tool_name": "add", "arguments": {"a": 1}})
    assert reply["data"]["code"] == "SESSION_ERROR"


def test_the_reset_observation_carries_the_prompt_and_its_metadata(session):
    """The prompt is the observation's; metadata reaches the client inside it and beside it, and inside
    it also carries the prompt, where OpenEnv's MCPToolClient keeps a reset's observation."""
    data = session.send({"type": "reset"})["data"]
    prompt = "Add 2 and 3, then submit the sum."
    assert data["observation"] == {"prompt": prompt, "metadata": {"prompt": prompt, "task": "sum"}}
    assert data["metadata"] == {"task": "sum"}


def test_a_call_returns_its_result_and_the_tool_may_score_the_episode(session):
    session.send({"type": "reset"})
    added = session.call("add", a=2, b=3)
    assert added["observation"] == {
        "tool_name": "add",
        "result": {
            "content": [{"type": "text", "text": "5", "annotations": None, "meta": None}],
            "structured_content": {"result": 5},
            "data": 5,
            "is_error": False,
        },
        "error": None,
    }
    assert (added["reward"], added["done"]) == (None, False)
    assert session.send({"type": "state"})["data"]["step_count"] == 1
    submitted = session.call("submit", answer=5)
    assert submitted["observation"]["result"]["data"] == "correct"
    assert (submitted["reward"], submitted["done"]) == (1.0, True)
    assert submitted["observation"]["metadata"] == submitted["metadata"] == {"solved": True}


def test_a_lone_surrogate_in_a_result_travels_as_its_escape(session):
    """Found by the live fuzzer: an argument read from a ``"\\ud800"`` escape and returned by the tool
    failed the result's size count (strict UTF-8), and the server dropped the session (1011)."""
    session.send({"type": "reset"})
    for _ in range(2):  # the session lives on
        reply = session.call("get-weather", city="\ud800")
        assert reply["observation"]["result"]["data"] == {"city": "\ud800", "forecast": "sunny"}
    rpc = session.rpc("tools/call", {"name": "get-weather", "arguments": {"city": "a\ud800"}})
    assert rpc["result"]["data"]["city"] == "a\ud800"


def test_nested_models_are_validated_and_plain_data_comes_back(session):
    session.send({"type": "reset"})
    reply = session.call("distance", start={"x": 0, "y": 0}, end={"x": 3, "y": 4}, scale=2)
    assert reply["observation"]["result"]["data"] == {"distance": 10.0}
    assert session.call("nothing")["observation"]["result"] == {
        "content": [],
        "structured_content": None,
        "data": None,
        "is_error": False,
    }


def _error(reply: dict[str, Any]) -> dict[str, Any]:
    observation = reply["observation"]
    assert observation["result"] is None and reply["done"] is False
    return observation["error"]


@pytest.mark.parametrize(
    ("name", "arguments", "error_type", "message"),
    [
        ("nope", {}, "tool_not_found", "Unknown tool: 'nope' (tools: add, distance,"),
        ("add", {}, "invalid_args", "invalid arguments for tool 'add': a: Field required"),
        ("add", {"a": 1, "c": 2}, "invalid_args", "c: Extra inputs are not permitted"),
        ("add", {"a": [1]}, "invalid_args", "a: Input should be a valid integer"),
        ("distance", {"start": {"x": 0}, "end": {"x": 1, "y": 1}}, "invalid_args", "start.y: Field required"),
        ("fail", {"why": "on purpose"}, "execution_error", "Error calling tool 'fail': on purpose"),
        ("opaque", {}, "execution_error", "returned a object, which has no JSON form"),
        (
            "huge",
            {"megabytes": 10},
            "execution_error",
            "returned 10.0 MiB of text, more than this environment's limit of 1 MiB",
        ),
    ],
)
def test_each_bad_call_is_an_error_observation_and_the_session_lives_on(session, name, arguments, error_type, message):
    session.send({"type": "reset"})
    reply = session.step({"type": "call_tool", "tool_name": name, "arguments": arguments})["data"]
    error = _error(reply)
    assert error["error_type"] == error_type
    assert message in error["message"]
    assert session.call("add", a=1)["observation"]["result"]["data"] == 1


@pytest.mark.parametrize(
    "data",
    [
        {"type": "call_tool", "tool_name": "add", "arguments": {"a": 1}, "extra": True},
        {"type": "call_tool", "tool_name": "add", "arguments": "a=1"},
        {"type": "call_tool"},
    ],
)
def test_a_malformed_tool_action_is_a_validation_error_frame(session, data):
    """As in OpenEnv: the action itself is malformed, so the answer is an error frame, not an observation."""
    session.send({"type": "reset"})
    assert session.step(data)["data"]["code"] == "VALIDATION_ERROR"
    assert session.call("add", a=1)["observation"]["result"]["data"] == 1


def test_a_hanging_tool_times_out_and_the_session_goes_on(toolbox):
    """The env's limit (5 s here) gives a timeout error; the next call runs on a fresh worker.

    The server remembers the thread it gave up on: when the session closes with that thread still
    running, the server reports itself stuck.
    """
    ToolboxEnvironment.unhang.clear()
    session = Session(toolbox.url)
    try:
        session.send({"type": "reset"})
        started = time.monotonic()
        hang = {"type": "call_tool", "tool_name": "hang", "arguments": {"until_closed": False}, "timeout_s": 0.5}
        reply = session.step(hang)["data"]
        assert time.monotonic() - started < 5  # the call's own limit, not the env's 5 s
        assert _error(reply) == {"error_type": "timeout", "message": "tool 'hang' did not return within 0.5 s"}
        assert ToolboxEnvironment.hanging.is_set()  # the tool is still running in its thread
        assert session.call("add", a=4)["observation"]["result"]["data"] == 4
        error = _error(session.call("quick"))  # the tool's own 0.2 s limit
        assert error == {"error_type": "timeout", "message": "tool 'quick' did not return within 0.2 s"}
        error = _error(session.call("later", seconds=30, timeout=10))  # async: cancelled at the env's 5 s
        assert error["error_type"] == "timeout"
    finally:
        session.close()
    assert wait_until(lambda: not toolbox.sessions, 10 * UNIT)
    assert ToolboxEnvironment.hanging.is_set()  # still inside the tool after its session closed
    assert toolbox.stuck  # so the runner will exit at once instead of waiting for that thread
    ToolboxEnvironment.unhang.set()
    assert wait_until(lambda: not ToolboxEnvironment.hanging.is_set(), 10 * UNIT)


# MCP JSON-RPC frames ------------------------------------------------------------------------


def test_jsonrpc_lists_and_calls_tools(session):
    listed = session.rpc("tools/list")
    assert listed["id"] == 1 and "error" not in listed
    add = next(tool for tool in listed["result"]["tools"] if tool["name"] == "add")
    assert add["inputSchema"] == add["input_schema"] == ToolboxEnvironment.tools["add"].input_schema
    session.send({"type": "reset"})
    called = session.rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}, request_id=2)
    assert called["id"] == 2
    assert called["result"]["data"] == 4 and called["result"]["isError"] is False
    assert called["result"]["content"][0]["text"] == "4"


@pytest.mark.parametrize(
    ("method", "params", "code", "message"),
    [
        ("tools/call", {"name": "nope"}, -32603, "Unknown tool: 'nope'"),
        ("tools/call", {"name": "add", "arguments": {}}, -32602, "a: Field required"),
        ("tools/call", {"arguments": {}}, -32602, "tools/call needs a name"),
        ("nope/x", None, -32601, "Method not found: nope/x"),
    ],
)
def test_jsonrpc_errors_carry_jsonrpc_codes(session, method, params, code, message):
    session.send({"type": "reset"})
    reply = session.rpc(method, params, request_id=9)
    assert reply["id"] == 9 and "result" not in reply
    assert reply["error"]["code"] == code and message in reply["error"]["message"]


def test_jsonrpc_tool_failures_are_results_with_is_error(session):
    """MCP reports a tool that ran and failed in its result, for the model to read."""
    session.send({"type": "reset"})
    reply = session.rpc("tools/call", {"name": "fail", "arguments": {"why": "no"}})
    assert reply["result"]["isError"] is True
    assert reply["result"]["content"][0]["text"] == "Error calling tool 'fail': no"


def test_jsonrpc_calls_need_a_reset_too(session):
    reply = session.rpc("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert reply["error"]["code"] == -32600 and "before reset" in reply["error"]["message"]
