"""The reward-hacking catalogue's task-choice class: who picks the task is the trainer, never the model.

A model that may pick its task resets to one it has memorised, a held-out one included, and is paid
for recall. On every task env (Coding-v0, CodingTools-v0, Git-v0, ReasoningGym-v0), through every
face a model drives (the MCP bridge's ``reset`` tool, a tool call through the Gymnasium tool face,
MCP frames on ``/ws``, ``POST /mcp``), the model's reset to a task of its choosing is refused and
its episode's task stays the one the env drew; an unknown id is refused without naming any other.

The operator's switches: ``openenv-gym mcp --allow-task-choice`` gives the model its choice back,
and a server's ``task_splits`` (``openenv-gym serve --task-splits train``) keeps every client, the
trainer's included, to the splits named, and keeps the others' ids out of ``/schema``.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.client import EnvClient, http_get_json
from openenv_gym.envs.coding import CodingEnvironment, CodingToolsEnvironment
from openenv_gym.envs.coding.tasks import BUILTIN_TASKS, Task
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.envs.git import GitEnvironment
from openenv_gym.envs.reasoning import ReasoningGymEnvironment
from openenv_gym.integrations.mcp import EnvBridge
from openenv_gym.server.options import ServerOptions
from openenv_gym.server.task_sets import TaskSet, load_task_set
from openenv_gym.tool_face import ToolFace
from tests.server.test_http_api import request
from tests.utils import UNIT, run_async, running_server

FACTORIES: dict[str, Callable[[], Any]] = {
    "Coding-v0": CodingEnvironment,
    "CodingTools-v0": CodingToolsEnvironment,
    "Git-v0": GitEnvironment,
    "ReasoningGym-v0": functools.partial(ReasoningGymEnvironment, generators=["gcd", "word_sorting"]),
}
CALL_TIMEOUT = 60 * UNIT


class Served:
    """A task env's server, and what the test knows of its set from an instance of its own."""

    def __init__(self, name: str, factory: Callable[[], Any], url: str) -> None:
        local = factory()
        try:
            self.name, self.url = name, url
            self.ids = list(local.task_set.by_id)
            #: The task a model would most like to pick: a held-out one.
            self.held_out = local.task_set.splits["test"][0].task_id
            self.has_tools = bool(local.tools)
        finally:
            local.close()


@pytest.fixture(scope="module", params=list(FACTORIES))
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    if request.param == "ReasoningGym-v0":
        pytest.importorskip("reasoning_gym")
    factory = FACTORIES[request.param]
    with running_server(factory) as server:
        yield Served(request.param, factory, server.url)


def names_no_id(message: str, ids: list[str], sent: str) -> bool:
    """Whether ``message``, without the id the client sent, names none of ``ids``."""
    rest = message.replace(repr(sent), "")
    return not [task_id for task_id in ids if task_id in rest]


#: A model's tries at its own task: by id, by split and index, from the held-out split, by seed.
def model_resets(held_out: str) -> list[dict[str, Any]]:
    return [
        {"options": {"task_id": held_out}},
        {"options": {"split": "test", "index": 0}},
        {"options": {"split": "test"}},
        {"seed": 3},
        {"seed": 3, "options": {"task_id": held_out}},
    ]


def _bridge_tries(served: Served) -> tuple[dict[str, Any], list[Any], str, str, Any]:
    """The model's resets through the MCP bridge: the reset tool's schema, the results, the task
    before and after them, and a plain reset's result."""

    async def play() -> tuple[dict[str, Any], list[Any], str, str, Any]:
        bridge = await EnvBridge.open(served.url, name=served.name, call_timeout=CALL_TIMEOUT)
        try:
            schema = next(tool for tool in bridge.tools if tool.name == "reset").input_schema
            before = (await bridge.client.state())["task_id"]
            results = [await bridge.call("reset", arguments) for arguments in model_resets(served.held_out)]
            after = (await bridge.client.state())["task_id"]
            return schema, results, before, after, await bridge.call("reset", {})
        finally:
            await bridge.close()

    return run_async(play(), timeout=5 * CALL_TIMEOUT)


def _ws_mcp_tries(served: Served) -> tuple[list[dict[str, Any]], str, str]:
    """A ``tools/call reset`` in MCP frames on ``/ws`` (what OpenEnv's MCP clients send for a model):
    the replies, and the task before and after."""
    with connect(served.url.replace("http", "ws", 1) + "/ws", open_timeout=10 * UNIT) as ws:

        def send(frame: dict[str, Any]) -> dict[str, Any]:
            ws.send(json.dumps(frame))
            return json.loads(ws.recv(timeout=CALL_TIMEOUT))

        send({"type": "reset", "data": {}})  # the trainer's reset
        before = send({"type": "state"})["data"]["task_id"]
        replies = []
        for number, arguments in enumerate(model_resets(served.held_out)):
            call = {"name": "reset", "arguments": arguments}
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call}
            replies.append(send({"type": "mcp", "data": message})["data"])
        return replies, before, send({"type": "state"})["data"]["task_id"]


def _http_mcp_tries(served: Served) -> list[dict[str, Any]]:
    """A ``tools/call reset`` in an OpenEnv session of ``POST /mcp``: the answers."""

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        status, _, answer = request(served.url, "POST", "/mcp", body, {"Content-Type": "application/json"})
        assert status == 200, answer
        return answer

    session = rpc("openenv/session/create", {})["result"]["session_id"]  # the harness's, with no options
    try:
        return [
            rpc("tools/call", {"session_id": session, "name": "reset", "arguments": arguments})
            for arguments in model_resets(served.held_out)
        ]
    finally:
        rpc("openenv/session/close", {"session_id": session})


def _refused(answer: dict[str, Any]) -> bool:
    """A JSON-RPC answer that is an error, or a tool result flagged as one."""
    result = answer.get("result") or {}
    return "error" in answer or bool(result.get("isError") or result.get("is_error"))


def test_no_face_a_model_drives_lets_it_pick_its_task(served):
    """The MCP bridge's reset takes no arguments (so no id, split, index or seed), and every other
    way a model's call could reach a reset is refused; the episode's task stays the env's draw."""
    schema, results, before, after, drawn = _bridge_tries(served)
    assert schema["properties"] == {} and schema["additionalProperties"] is False
    for arguments, result in zip(model_resets(served.held_out), results, strict=True):
        assert result.is_error, (served.name, arguments)
        assert result.content[0].text.startswith("reset takes no arguments"), result.content[0].text
    assert after == before  # nothing reached the env
    assert not drawn.is_error  # the model still starts episodes: on a task the env draws

    replies, before, after = _ws_mcp_tries(served)
    assert all(_refused(reply) for reply in replies), replies
    assert after == before
    assert all(_refused(answer) for answer in _http_mcp_tries(served))

    if served.has_tools:  # the Gymnasium tool face: the model's text is a tool call, never a reset
        with EnvClient(served.url, call_timeout=CALL_TIMEOUT) as client:
            client.reset()
            before = client.state()["task_id"]
            face = ToolFace(ToolFace.list_tools(client))
            for arguments in model_resets(served.held_out):
                text, reward, *_, info = face.step(client, json.dumps({"name": "reset", "arguments": arguments}))
                assert info["error"]["error_type"] == "tool_not_found" and reward == 0.0, text
            assert client.state()["task_id"] == before


def test_the_operators_flag_gives_the_model_its_choice_and_an_unknown_id_names_no_other(served):
    """With ``allow_task_choice`` (``openenv-gym mcp --allow-task-choice``) the model's reset takes a
    task id; one the set lacks is refused with no id of the set in the error, not even the nearest."""
    near_miss = served.held_out + "x"  # close enough for a "did you mean"

    async def play() -> tuple[str, Any, Any]:
        bridge = await EnvBridge.open(served.url, name=served.name, call_timeout=CALL_TIMEOUT, allow_task_choice=True)
        try:
            chosen = await bridge.call("reset", {"options": {"task_id": served.held_out}})
            assert not chosen.is_error, chosen.content
            task_id = (await bridge.client.state())["task_id"]
            unknown = await bridge.call("reset", {"options": {"task_id": near_miss}})
            split = await bridge.call("reset", {"options": {"split": "validation"}})
            return task_id, unknown, split
        finally:
            await bridge.close()

    task_id, unknown, split = run_async(play(), timeout=4 * CALL_TIMEOUT)
    assert task_id == served.held_out
    assert unknown.is_error and f"unknown task_id {near_miss!r}" in unknown.content[0].text
    assert names_no_id(unknown.content[0].text, served.ids, near_miss), unknown.content[0].text
    # Split names are no secret: an unknown one is answered with those there are.
    assert split.is_error and "Expected one of: train, test" in split.content[0].text


def test_an_unknown_id_is_refused_without_naming_any_task():
    """Whatever the id sent (a near miss, a prefix, a huge string, not a string), the error names
    no task of the set; it shows the value sent, cut short."""
    task_set = TaskSet(load_task_set(BUILTIN_TASKS, Task))
    ids = list(task_set.by_id)
    for sent in ("digit-square-su", "digit", "a", "", "x" * 100_000):
        with pytest.raises(ValueError, match=r"^unknown task_id ") as refused:
            task_set.pick({"task_id": sent}, random.Random(0))
        message = str(refused.value)
        assert len(message) < 300
        assert not [task_id for task_id in ids if repr(task_id) in message or f" {task_id}" in message], message
    for sent in (["digit-square-sum"], {"id": 1}, 3, None):
        with pytest.raises(ValueError, match=r"^unknown task_id ") as refused:
            task_set.pick({"task_id": sent}, random.Random(0))
        assert "digit-square-sum'" not in str(refused.value).replace(repr(sent), "")


# The server's operator: the splits a client may reset to ------------------------------------------

SNAPSHOT_KEY = "task-choice-test-key"


@pytest.fixture(scope="module")
def coding_split() -> TaskSet[Task]:
    """Coding-v0's set as its servers split it (the default seed)."""
    return TaskSet(load_task_set(BUILTIN_TASKS, Task))


def test_a_server_serves_only_the_splits_its_operator_names(coding_split):
    """``task_splits="train"``: a reset to the test split is refused with the reason, a test id
    as an unknown one (whether it exists is not told), and by index, draw or snapshot no test
    task is reached, through the WebSocket, POST /reset and POST /mcp alike; /schema names the
    test split and its count but none of its ids."""
    test_ids = [task.task_id for task in coding_split.splits["test"]]
    train_ids = {task.task_id for task in coding_split.splits["train"]}
    with (
        running_server(CodingEnvironment, snapshot_key=SNAPSHOT_KEY) as open_server,
        running_server(CodingEnvironment, task_splits="train", snapshot_key=SNAPSHOT_KEY) as server,
    ):
        with EnvClient(open_server.url, call_timeout=CALL_TIMEOUT) as client:  # a test task's snapshot
            client.reset(options={"task_id": test_ids[0]})
            portable = client.snapshot(portable=True).portable
        assert portable is not None
        with EnvClient(server.url, call_timeout=CALL_TIMEOUT) as client:
            with pytest.raises(openenv_gym.RemoteError, match="split 'test' is closed on this server") as closed:
                client.reset(options={"split": "test", "index": 0})
            assert "it serves train alone" in str(closed.value)
            with pytest.raises(openenv_gym.RemoteError, match=f"unknown task_id {test_ids[0]!r}: ") as unknown:
                client.reset(options={"task_id": test_ids[0]})
            assert names_no_id(str(unknown.value), test_ids, test_ids[0])
            drawn = {client.reset(seed=seed).info["task_id"] for seed in range(40)}
            assert drawn <= train_ids and len(drawn) > 10
            by_index = {client.reset(options={"index": index}).info["task_id"] for index in range(len(train_ids))}
            assert by_index == train_ids
            with pytest.raises(openenv_gym.SnapshotError, match="not in this env's task set"):
                client.restore(portable=portable)
        schema = http_get_json(server.url, "/schema")
        tasks = schema["tasks"]
        assert set(tasks["splits"]) == {"train"} and tasks["count"] == len(train_ids)
        assert tasks["closed_splits"] == {
            "test": {"count": len(test_ids), "difficulties": tasks["closed_splits"]["test"]["difficulties"]}
        }
        assert not [task_id for task_id in test_ids if task_id in json.dumps(schema)]
        assert {entry.task_id for entry in openenv_gym.TaskCatalog.from_schema(schema)} == train_ids

        status, _, body = request(server.url, "POST", "/reset", json.dumps({"options": {"split": "test"}}))
        assert status == 400 and "split 'test' is closed" in body["message"], body
        status, _, body = request(server.url, "POST", "/reset", json.dumps({"options": {"task_id": test_ids[1]}}))
        assert status == 400 and "unknown task_id" in body["message"], body
        mcp = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {"options": {"split": "test"}}}
        )
        status, _, body = request(server.url, "POST", "/mcp", mcp, {"Content-Type": "application/json"})
        assert "split 'test' is closed" in body["error"]["message"], body

        async def through_the_bridge() -> Any:  # an operator who lets the model choose: still within train
            bridge = await EnvBridge.open(server.url, call_timeout=CALL_TIMEOUT, allow_task_choice=True)
            try:
                return await bridge.call("reset", {"options": {"split": "test"}})
            finally:
                await bridge.close()

        refused = run_async(through_the_bridge(), timeout=2 * CALL_TIMEOUT)
        assert refused.is_error and "split 'test' is closed on this server" in refused.content[0].text


def test_task_splits_that_cannot_be_served_say_why():
    """An env with no task set, a split the set lacks, a default split left out: the env is not
    made, and the reason reaches the client; the option is a ``serve`` flag, checked there too."""
    cases = [
        (EchoEnvironment, "train", "EchoEnvironment serves no task set"),
        (CodingEnvironment, "train,valid", "unknown split 'valid'. Expected one of: train, test"),
        (functools.partial(CodingEnvironment, split="test"), "train", "draw from split 'test', which the served"),
    ]
    for factory, splits, reason in cases:
        with running_server(factory, task_splits=splits) as server:
            with pytest.raises(openenv_gym.RemoteError, match=reason):
                with EnvClient(server.url, call_timeout=CALL_TIMEOUT) as client:
                    client.reset()
    assert "--task-splits" in dict(ServerOptions.flags())
    assert ServerOptions(task_splits="train, test").served_splits == ("train", "test")
    assert (
        ServerOptions(task_splits="train,").problem() == "task_splits must name splits, comma-separated, got 'train,'"
    )
