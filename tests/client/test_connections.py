"""Connections handed their session kind: the kinds' URLs, frames and checks, the opening request,
the shape of the clients (each holds a connection, none extends another, no call a kind never
sends) and the lazy client package."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

import openenv_gym.client
from openenv_gym.client import AsyncEnvClient, BatchClient, EnvClient, VectorClient
from openenv_gym.client.agents_client import AgentsClient, AgentsKind
from openenv_gym.client.async_connection import AsyncConnection
from openenv_gym.client.batch_client import BatchKind, codec_subprotocols
from openenv_gym.client.session_kind import PlainKind, with_query
from openenv_gym.client.sync_connection import SyncConnection
from openenv_gym.client.vector_client import VectorKind
from openenv_gym.errors import ProtocolError, RemoteError
from openenv_gym.protocol import RenderFrame
from openenv_gym.protocol.batch import BINARY_SUBPROTOCOL, AutoresetMode, BatchResultFrame, BatchValuesFrame
from openenv_gym.protocol.vector import VectorStepFrame
from tests.testing_env import CounterEnvironment
from tests.utils import UNIT, run_async, running_server

NEXT_STEP = AutoresetMode.NEXT_STEP


def loaded_by(statement: str) -> set[str]:
    """The ``openenv_gym.client`` modules a fresh interpreter loads to run ``statement``."""
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return {name for name in json.loads(result.stdout) if name.startswith("openenv_gym.client")}


@pytest.mark.parametrize(
    "statement",
    [
        "from openenv_gym.client.sync_client import EnvClient",
        "from openenv_gym.client import EnvClient",
        "import openenv_gym.client",
    ],
)
def test_the_plain_client_loads_no_batch_vector_or_async_client(statement):
    """A plain env's client imports neither the batch, the vector nor the asyncio client."""
    loaded = loaded_by(statement)
    assert {"openenv_gym.client.batch_client", "openenv_gym.client.vector_client"}.isdisjoint(loaded)
    assert {"openenv_gym.client.async_client", "openenv_gym.client.async_connection"}.isdisjoint(loaded)


def test_the_package_resolves_every_public_name_on_first_use():
    for name in openenv_gym.client.__all__:
        assert getattr(openenv_gym.client, name) is not None
        assert name in dir(openenv_gym.client)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = openenv_gym.client.Nothing


def test_no_client_connection_or_kind_extends_another_and_each_client_holds_a_connection():
    """One sync and one async connection, handed a kind; a client holds one and has only its kind's calls."""
    clients = (EnvClient, AsyncEnvClient, BatchClient, VectorClient, AgentsClient)
    for cls in (SyncConnection, AsyncConnection, *clients, PlainKind, BatchKind, VectorKind, AgentsKind):
        assert [base for base in cls.__mro__[1:] if base.__module__.startswith("openenv_gym")] == [], cls
    for client in (EnvClient("http://127.0.0.1:9"), BatchClient("http://127.0.0.1:9", 1, NEXT_STEP)):
        assert isinstance(client.connection, SyncConnection) and client.connection.kind is client.kind
    assert isinstance(AsyncEnvClient("http://127.0.0.1:9").connection, AsyncConnection)
    for name in ("reset", "step", "state", "begin_step", "begin_reset", "ask_render_mode"):
        assert not hasattr(BatchClient, name) and not hasattr(VectorClient, name)
    for name in ("begin_batch_reset", "begin_batch_step", "step_batch", "call_batch"):
        assert hasattr(BatchClient, name) and not hasattr(VectorClient, name) and not hasattr(EnvClient, name)


def test_what_the_clients_do_with_their_connection_is_written_once():
    """connect, the with-block, repr, render and the terms shown are one function or setting each,
    shared by the clients (and the connections' url and repr), not a copy per class; begin and
    complete stay the connection's own bound methods, so a step costs no extra call."""
    sync_clients = (EnvClient, BatchClient, VectorClient, AgentsClient)
    for name in ("connect", "__enter__", "__exit__"):
        assert len({vars(cls)[name] for cls in sync_clients}) == 1, name
    everything = (*sync_clients, AsyncEnvClient, SyncConnection, AsyncConnection)
    assert len({vars(cls)["__repr__"] for cls in everything}) == 1
    assert len({vars(cls)["url"] for cls in (*sync_clients, AsyncEnvClient)}) == 1
    assert len({vars(cls)["token"] for cls in (*sync_clients, AsyncEnvClient)}) == 1
    assert vars(BatchClient)["render"] is vars(VectorClient)["render"]
    assert vars(BatchClient)["_round_trip"] is vars(VectorClient)["_round_trip"]
    assert len({vars(cls)["begin_render"] for cls in (EnvClient, BatchClient, VectorClient)}) == 1
    client = VectorClient("http://127.0.0.1:9", 2, AutoresetMode.NEXT_STEP, "gymnasium")
    assert repr(client) == "VectorClient('ws://127.0.0.1:9/ws/batch?envs=2&autoreset_mode=NextStep&backend=gymnasium')"
    assert repr(client.connection) == repr(client).replace("VectorClient", "SyncConnection")
    for name in ("begin", "complete", "close"):
        assert getattr(client, name).__self__ is client.connection and getattr(client, name).__name__ == name


@pytest.mark.parametrize("module", sorted(pkgutil.iter_modules(openenv_gym.client.__path__)), ids=lambda m: m.name)
def test_no_class_of_the_client_package_extends_one_of_ours(module):
    """Composition only: a class in openenv_gym.client (errors aside) has no base class of the project's."""
    loaded = importlib.import_module(f"openenv_gym.client.{module.name}")
    for cls in vars(loaded).values():
        if isinstance(cls, type) and cls.__module__ == loaded.__name__ and not issubclass(cls, Exception):
            assert [base for base in cls.__mro__[1:] if base.__module__.startswith("openenv_gym")] == [], cls


def test_the_kinds_give_their_urls():
    client = EnvClient("http://127.0.0.1:9/")
    assert client.url == "ws://127.0.0.1:9/ws"
    client.ask_render_mode("rgb_array")
    assert client.url == "ws://127.0.0.1:9/ws?render_mode=rgb_array"
    assert client.kind.subprotocols == [BINARY_SUBPROTOCOL]
    batch = BatchClient("http://127.0.0.1:9", 3, NEXT_STEP, "binary")
    assert batch.url == "ws://127.0.0.1:9/ws/batch?envs=3&autoreset_mode=NextStep"
    assert (batch.envs, batch.autoreset_mode, batch.kind.subprotocols) == (3, NEXT_STEP, [BINARY_SUBPROTOCOL])
    vector = VectorClient("http://127.0.0.1:9", 2, NEXT_STEP, "gymnasium")
    assert vector.url.startswith("ws://127.0.0.1:9/ws/batch?envs=2&") and "backend=gymnasium" in vector.url
    assert (vector.envs, vector.backend, vector.kind.subprotocols) == (2, "gymnasium", None)
    assert with_query("ws://h/ws?a=1", b="2") == "ws://h/ws?a=1&b=2"


def test_a_codec_is_json_or_binary():
    assert codec_subprotocols("json") is None
    with pytest.raises(ValueError, match="codec must be 'json' or 'binary'"):
        BatchClient("http://127.0.0.1:9", 1, NEXT_STEP, "pickle")


def test_a_batch_kind_checks_each_reply_holds_one_entry_per_sub_env():
    kind = BatchKind(2, NEXT_STEP, "envs=2", None)
    assert kind.check(BatchValuesFrame([1, 2])).values == [1, 2]
    with pytest.raises(ValueError, match="batch_values has 1 values for 2 sub-envs"):
        kind.check(BatchValuesFrame([1]))
    with pytest.raises(ProtocolError):
        kind.check(RenderFrame([None]))
    with pytest.raises(ProtocolError):
        kind.check(BatchResultFrame([0], [{}], [0.0], [False], [False]))


def test_a_vector_kind_packs_its_actions_once_the_binary_codec_is_agreed():
    kind = VectorKind(2, NEXT_STEP, "gymnasium", "envs=2", codec_subprotocols("binary"))
    assert isinstance(kind.step(VectorStepFrame(np.array([0, 1]))), str)  # not connected: nothing agreed
    kind.restart(BINARY_SUBPROTOCOL)
    assert isinstance(kind.step(VectorStepFrame(np.array([0, 1]))), bytes)
    kind.restart(None)  # dropped: a fresh session, nothing in flight
    assert kind.session.pending is None


class _OpensWithAStep(PlainKind):
    """A plain session whose opening request is a step: refused, since no episode was reset."""

    def opening(self):
        return "step", lambda: self.session.send_step({"amount": 1})

    def opened(self, reply):  # pragma: no cover - the server refuses the opening
        raise AssertionError("a step before reset was answered")


def test_a_kind_s_refused_opening_fails_connect_and_closes_the_sync_connection():
    with running_server(CounterEnvironment) as server:
        connection = SyncConnection(_OpensWithAStep(), server.url, open_timeout=5 * UNIT)
        with pytest.raises(RemoteError, match="step before reset"):
            connection.connect()
        assert connection._ws is None  # closed again: the next connect starts over


def test_a_kind_s_refused_opening_fails_connect_and_closes_the_async_connection():
    async def scenario() -> AsyncConnection:
        connection = AsyncConnection(_OpensWithAStep(), server.url, open_timeout=5 * UNIT)
        with pytest.raises(RemoteError, match="step before reset"):
            await connection.connect()
        return connection

    with running_server(CounterEnvironment) as server:
        assert not run_async(scenario()).is_open


class _OpensWithAReset(PlainKind):
    """A plain session that resets as it opens, and keeps the reply."""

    first = None

    def opening(self):
        return "reset", lambda: self.session.send_reset({})

    def opened(self, reply):
        self.first = reply


def test_a_kind_s_opening_runs_before_the_first_call():
    with running_server(CounterEnvironment) as server:
        kind = _OpensWithAReset()
        with SyncConnection(kind, server.url, open_timeout=5 * UNIT) as connection:
            assert kind.first.observation["count"] == 0
            connection.begin("step", kind.step, {"amount": 2})  # no reset needed: the opening did it
            assert connection.complete().observation["count"] == 2
