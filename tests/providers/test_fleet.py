"""The `Fleet`: servers laid out, started together, one recovered, all released."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading

import pytest

from openenv_gym.errors import ServerConnectError
from openenv_gym.make_options import MakeOptions
from openenv_gym.providers import ProcessProvider, Provider, URLProvider
from openenv_gym.providers import fleet as fleet_module
from openenv_gym.providers.fleet import Fleet, Served, build_providers
from openenv_gym.providers.layout import Layout, even_layout, plan_layout


class FakeProvider(Provider):
    """A provider that records what is asked of it; ``fails`` starts fail, ``healthy`` says whether it answers."""

    def __init__(self, name: str, fails: int = 0) -> None:
        self.name = name
        self.fails = fails
        self.calls: list[str] = []
        self.running = False
        self.generation = 0
        self.healthy = True

    def start(self) -> str:
        self.calls.append("start")
        if self.fails:
            self.fails -= 1
            raise ServerConnectError(self.name, "cannot start")
        if not self.running:
            self.running, self.generation = True, self.generation + 1
        return f"http://{self.name}:{self.generation}"

    def stop(self) -> None:
        self.calls.append("stop")
        self.running = False

    def kill(self) -> None:
        self.calls.append("kill")
        self.running = False

    def is_alive(self) -> bool:
        return self.running


@pytest.fixture
def health(monkeypatch):
    """``GET /health`` answered by the fake providers: by name, from ``health.providers``."""

    class Health:
        providers: dict[str, FakeProvider] = {}  # noqa: RUF012

    def http_get_json(url, path, timeout, token=None):
        assert path == "/health"
        provider = Health.providers[url.split("//")[1].split(":")[0]]
        if not (provider.running and provider.healthy):
            raise ServerConnectError(url, "does not answer")
        return {"status": "healthy"}

    monkeypatch.setattr(fleet_module, "http_get_json", http_get_json)
    return Health


def fakes(health, *names: str, fails: int = 0) -> list[FakeProvider]:
    providers = [FakeProvider(name, fails=fails) for name in names]
    health.providers.update({provider.name: provider for provider in providers})
    return providers


@pytest.mark.parametrize(
    ("arguments", "layout"),
    [
        ({"sessions": 8, "servers": 2}, Layout(2, 4, ((0, 4), (4, 8)))),
        ({"sessions": 8, "sessions_per_server": 3}, Layout(3, 3, ((0, 3), (3, 5), (5, 8)))),
        ({"sessions": 8, "one_server": True}, Layout(1, 8, ((0, 8),))),
        ({"sessions": 8, "one_server": True, "servers": 4}, Layout(4, 2, ((0, 2), (2, 4), (4, 6), (6, 8)))),
        ({"sessions": 8, "batch_size": 2}, Layout(4, 2, ((0, 2), (2, 4), (4, 6), (6, 8)))),
        ({"sessions": 8, "batch_size": 8, "one_server": True}, Layout(1, 8, ((0, 8),))),  # lockstep
        ({"sessions": 8, "batch_size": 2, "servers": 1}, Layout(1, 8, ((0, 8),))),  # told
    ],
)
def test_plan_layout(arguments, layout):
    """The layout says which sub-envs each server serves, and EnvPool's batches fill whole servers."""
    assert plan_layout(**arguments) == layout


def test_plan_layout_asks_the_provider_only_when_not_told():
    def not_asked():
        raise AssertionError("the provider was asked, though told")

    assert plan_layout(9, preferred_count=lambda: 3, one_server=True) == Layout(3, 3, ((0, 3), (3, 6), (6, 9)))
    assert plan_layout(9, preferred_count=lambda: None, one_server=True) == Layout(1, 9, ((0, 9),))
    assert plan_layout(9, preferred_count=not_asked, servers=1) == Layout(1, 9, ((0, 9),))
    assert plan_layout(9, preferred_count=not_asked, batch_size=3) == Layout(3, 3, ((0, 3), (3, 6), (6, 9)))


def test_make_options_lays_out_the_fleet_once(monkeypatch):
    """MakeOptions.fleet decides the layout (the provider named asked for its count when not told) and
    the fleet holds it: how many servers, and which sub-envs each serves."""
    monkeypatch.setattr(ProcessProvider, "preferred_count", classmethod(lambda cls, **options: 3))
    fleet = MakeOptions.parse(server="CartPole-v1").fleet(9, one_server=True)
    assert fleet.layout == Layout(3, 3, ((0, 3), (3, 6), (6, 9)))
    assert [provider.max_sessions for provider in fleet.providers] == [3, 3, 3]
    told = MakeOptions.parse(server="CartPole-v1").fleet(9, servers=1)
    assert told.layout == Layout(1, 9, ((0, 9),)) and len(told) == 1
    single = MakeOptions.parse(server="CartPole-v1").fleet()  # one env's server, as the provider makes it
    assert single.layout == Layout() and single.providers[0].max_sessions is None


def test_running_servers_and_a_given_provider_are_laid_out_as_they_are():
    urls = ("http://127.0.0.1:1", "http://127.0.0.1:2")
    attached = MakeOptions.parse(base_urls=urls).fleet(5)
    assert attached.layout == even_layout(5, 2) == Layout(2, None, ((0, 2), (2, 5)))
    given = FakeProvider("given")
    assert MakeOptions.parse(provider=given).fleet(4).layout == Layout(1, None, ((0, 4),))
    with pytest.raises(ValueError, match="servers= is the number of servers to start"):
        MakeOptions.parse(base_urls=urls).fleet(4, servers=2)
    with pytest.raises(ValueError, match="servers must be at least 1"):
        MakeOptions.parse(provider=given).fleet(4, servers=0)


def test_build_providers():
    attached = build_providers(None, urls=["http://127.0.0.1:1", "http://127.0.0.1:2"], token="t")
    assert [type(p) for p in attached] == [URLProvider, URLProvider] and {p.token for p in attached} == {"t"}
    given = FakeProvider("given")
    assert build_providers(None, provider=given) == [given]
    one = build_providers("CartPole-v1", env_kwargs={"sutton_barto_reward": True})
    assert isinstance(one[0], ProcessProvider) and one[0].max_sessions is None
    assert one[0].env_kwargs == {"sutton_barto_reward": True}
    three = build_providers("CartPole-v1", layout=Layout(3, 2))
    assert [p.max_sessions for p in three] == [2, 2, 2]
    with pytest.raises(ValueError, match="provider='url' needs base_url="):
        build_providers("CartPole-v1", provider="url")
    with pytest.raises(ValueError, match="server="):
        build_providers(None)


def test_start_returns_urls_in_order_and_is_idempotent(health):
    providers = fakes(health, "a", "b", "c")
    fleet = Fleet(providers, name="test")
    assert fleet.start() == ["http://a:1", "http://b:1", "http://c:1"]
    assert fleet.start() == fleet.urls == ["http://a:1", "http://b:1", "http://c:1"]
    assert [p.calls for p in providers] == [["start"]] * 3
    fleet.close()


def test_a_failed_start_stops_every_server(health):
    good, bad = fakes(health, "good", "bad")
    bad.fails = 1
    fleet = Fleet([good, bad])
    with pytest.raises(ServerConnectError, match="bad: cannot start"):
        fleet.start()
    assert not good.running and "stop" in good.calls


def test_recover_restarts_a_dead_server_in_place(health):
    a, b = fakes(health, "a", "b")
    fleet = Fleet([a, b])
    fleet.start()
    a.running = False  # died
    assert fleet.recover(0) == Served("http://a:2", 0)
    assert fleet.urls[0] == "http://a:2"
    assert b.calls == ["start"]  # the other server was left alone
    fleet.close()


def test_recover_kills_a_hung_server_first(health):
    (a,) = fakes(health, "a")
    fleet = Fleet([a])
    fleet.start()
    assert fleet.recover(0, hung=True) == Served("http://a:2", 0)
    assert a.calls == ["start", "kill", "start"]
    fleet.close()


def test_recover_moves_to_another_server_when_its_own_cannot_come_back(health):
    a, b = fakes(health, "a", "b")
    fleet = Fleet([a, b])
    fleet.start()
    a.healthy = False  # starts, never answers
    url, index = fleet.recover(0)
    assert (url, index) == ("http://b:1", 1)
    assert a.calls.count("kill") == 2 and not a.running


def test_recover_raises_its_own_failure_when_no_server_is_left(health):
    a, b = fakes(health, "a", "b")
    fleet = Fleet([a, b])
    fleet.start()
    a.healthy, b.running = False, False
    with pytest.raises(ServerConnectError, match="does not answer"):
        fleet.recover(0)


def test_is_healthy(health):
    (a,) = fakes(health, "a")
    fleet = Fleet([a])
    fleet.start()
    assert fleet.is_healthy(0)
    a.healthy = False
    assert not fleet.is_healthy(0)


def test_close_is_idempotent_and_runs_when_collected(health):
    a, b = fakes(health, "a", "b")
    fleet = Fleet([a, b])
    fleet.start()
    fleet.close()
    fleet.close()
    assert fleet.closed and a.calls.count("stop") == 1 and not b.running
    with pytest.raises(RuntimeError, match="closed"):
        fleet.start()
    (c,) = fakes(health, "c")
    Fleet([c]).start()
    gc.collect()
    assert c.calls == ["start", "stop"]


_COLLECTED_INSIDE_THREADINGS_LOCK = """
import threading
from openenv_gym.providers import Provider
from openenv_gym.providers.fleet import Fleet

class Stopped(Provider):
    stopped = 0
    def start(self):
        return "http://127.0.0.1:1"
    def stop(self):
        Stopped.stopped += 1

fleet = Fleet([Stopped(), Stopped()])
fleet.urls = fleet.start()
with threading._shutdown_locks_lock:  # what a thread starting up holds (CPython 3.11-3.12)
    del fleet  # its finalizer runs here
print(Stopped.stopped)
"""


@pytest.mark.skipif(
    not hasattr(threading, "_shutdown_locks_lock"),
    reason="this Python starts threads without threading's _shutdown_locks_lock (CPython 3.13+), the lock the deadlock needs",
)
def test_a_collected_fleet_stops_its_servers_without_starting_a_thread():
    """A collection can finalize a fleet inside ``threading``'s own locks (a worker thread starting up
    held ``_shutdown_locks_lock`` when a suite's collection ran a fleet's finalizer): stopping its
    servers there in a thread pool deadlocks, so the finalizer stops them one after another."""
    try:
        result = subprocess.run(
            [sys.executable, "-c", _COLLECTED_INSIDE_THREADINGS_LOCK],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the fleet's finalizer deadlocked")
    assert result.stdout.split() == ["2"]


def test_an_explicit_close_stops_the_servers_in_parallel(health, monkeypatch):
    a, b = fakes(health, "a", "b")
    fleet = Fleet([a, b])
    fleet.start()
    threads: set[str] = set()
    for provider in (a, b):
        monkeypatch.setattr(provider, "stop", lambda: threads.add(threading.current_thread().name))
    fleet.close()
    assert threads and threading.current_thread().name not in threads and fleet.closed


def test_a_fleet_needs_a_server():
    with pytest.raises(ValueError, match="at least one server"):
        Fleet([])


# --- every entry point starts its servers through Fleet.start -------------------------------------


class FleetStarted(Exception):
    """Raised by the spy instead of starting anything: the entry point reached ``Fleet.start``."""


@pytest.fixture
def fleet_starts(monkeypatch):
    """The fleets started (``(name, servers)``); no server really starts, and a provider started
    outside a fleet fails the test."""
    starts: list[tuple[str, int]] = []

    def start(self):
        starts.append((self.name, len(self.providers)))
        raise FleetStarted(self.name)

    def bypass(self):
        raise AssertionError(f"{self!r} was started outside a Fleet")

    monkeypatch.setattr(Fleet, "start", start)
    monkeypatch.setattr(ProcessProvider, "start", bypass)
    return starts


def _make(kind: str) -> None:
    import asyncio

    import gymnasium as gym

    import openenv_gym

    if kind == "gym.make":
        gym.make("openenv/CartPole-v1")
    elif kind == "gym.make_vec":
        gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=2)
    elif kind == "from_env_fns":
        from openenv_gym.vector import RemoteVectorEnv

        RemoteVectorEnv.from_env_fns([lambda: gym.make("CartPole-v1")] * 2, servers=2)
    elif kind == "make_async":
        asyncio.run(openenv_gym.make_async("openenv/CartPole-v1"))
    elif kind == "AsyncEnvPool":
        asyncio.run(openenv_gym.AsyncEnvPool("openenv/CartPole-v1", size=4, servers=2).start())
    elif kind == "trl.environment_factory":
        pytest.importorskip("trl")
        from openenv_gym.integrations.trl import environment_factory

        environment_factory("openenv/Echo-v0")  # reads the tool list from a server of its own
    elif kind == "trl.rollout_func":
        pytest.importorskip("trl")
        from openenv_gym.integrations.trl import rollout_func

        rollout = rollout_func("openenv/Coding-v0", pool_size=2, servers=2, reset_kwargs=lambda prompt: {})
        try:
            rollout.run(["a prompt"], ["print(1)"])  # its pool starts with the first batch
        finally:
            rollout.close()
    elif kind == "mcp":
        pytest.importorskip("mcp")
        from openenv_gym.integrations.mcp import serve

        serve("openenv/CartPole-v1")


@pytest.mark.parametrize(
    ("kind", "fleet"),
    [
        ("gym.make", ("CartPole-v1", 1)),
        ("gym.make_vec", ("CartPole-v1", 2)),
        ("from_env_fns", (None, 2)),
        ("make_async", ("CartPole-v1", 1)),
        ("AsyncEnvPool", ("CartPole-v1", 2)),
        ("trl.environment_factory", ("echo", 1)),
        ("trl.rollout_func", ("coding", 2)),
        ("mcp", ("CartPole-v1", 1)),
    ],
)
def test_every_entry_point_starts_its_servers_through_a_fleet(fleet_starts, kind, fleet):
    """gym.make, make_vec (and from_env_fns), make_async, AsyncEnvPool, TRL and the MCP bridge:
    one code path starts servers, Fleet.start."""
    with pytest.raises(FleetStarted):
        _make(kind)
    name, servers = fleet_starts[0]
    assert servers == fleet[1]
    if fleet[0] is not None:
        assert fleet[0] in name


def test_the_fleet_imports_no_gymnasium_face():
    """The fleet is the providers layer: importing it loads neither Gymnasium nor the env modules."""
    import json
    import subprocess
    import sys

    code = "import json, sys, openenv_gym.providers.fleet; print(json.dumps(sorted(sys.modules)))"
    modules = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout)
    face = ("gymnasium", "openenv_gym.env", "openenv_gym.async_env", "openenv_gym.vector", "openenv_gym.tool_face")
    assert [m for m in modules if m.startswith(face)] == []
