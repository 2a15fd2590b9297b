"""The env core (openenv_gym.env_core): what an env knows of its server and decides, with no I/O,
written once for the single env and the async env; and the server's ``/schema``, read once per env."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium import spaces

import openenv_gym
from openenv_gym.env_core import EnvCore, ServerInfo
from openenv_gym.errors import EpisodeEndedError, InvalidActionError, SnapshotError, SnapshotUnsupportedError
from openenv_gym.face import PublishedSpaces
from openenv_gym.protocol import ObservationFrame
from openenv_gym.protocol.snapshot import SnapshotFrame
from openenv_gym.snapshot import Snapshot, fork, restore, snapshot
from tests.utils import run_async

HERE = "http://127.0.0.1:8000"
ELSEWHERE = "http://127.0.0.1:9000"
SUPPORTED = {"snapshot": {"supported": True}}


def core(schema: dict | None = None, max_episode_steps: int | None = None) -> EnvCore:
    info = ServerInfo(HERE, "CartPole-v1", SUPPORTED if schema is None else schema)
    return EnvCore(info, PublishedSpaces(spaces.Discrete(2), spaces.Discrete(3)), max_episode_steps=max_episode_steps)


def frame(observation: int = 1, done: bool = False) -> ObservationFrame:
    return ObservationFrame({"observation": observation}, 1.0, done)


def test_the_core_loads_no_client_provider_or_server():
    """Importing the core in a fresh interpreter loads none of the layers that do I/O: no client, no
    provider, no server, no websockets."""
    code = "import sys, openenv_gym.env_core; print(sorted(sys.modules))"
    modules = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    io = ("openenv_gym.client", "openenv_gym.providers", "openenv_gym.server", "openenv_gym.served", "websockets")
    assert [name for name in eval(modules) if name.startswith(io)] == []


def test_env_py_is_a_thin_layer():
    """env.py holds RemoteEnv's calls and no rules of its own: 350 lines at most."""
    source = Path(openenv_gym.__file__).with_name("env.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 350


class _AnsweringFace(PublishedSpaces):
    """A face that answers one action itself and turns another into the step that lists tools."""

    def to_wire(self, action):
        if action == "answer":
            return "an error text", 0.0, False, False, {}
        return {"type": "list_tools"} if action == "tools" else super().to_wire(action)


def test_the_wire_action_checks_the_episode_end_only_where_no_step_frame_will():
    """The session's step frame checks the episode end as it is built; the core runs the check only
    where none will be (an invalid action, a call the face answers, listing tools), so a step walks
    the session's rule once, and after the end each of them is the end's error."""
    checked: list[str] = []
    env = EnvCore(ServerInfo(HERE, "CartPole-v1", {}), _AnsweringFace(spaces.Discrete(2), spaces.Discrete(3)))
    assert env.wire_action(1, lambda: checked.append("valid")) == {"action": 1}
    assert checked == []
    with pytest.raises(InvalidActionError):
        env.wire_action(5, lambda: checked.append("invalid"))
    assert env.wire_action("answer", lambda: checked.append("answered"))[0] == "an error text"
    assert env.wire_action("tools", lambda: checked.append("tools")) == {"type": "list_tools"}
    assert checked == ["invalid", "answered", "tools"]

    def ended() -> None:
        raise EpisodeEndedError("EPISODE_ENDED", "the episode ended")

    for action in (5, "answer", "tools"):
        with pytest.raises(EpisodeEndedError):
            env.wire_action(action, ended)


def test_a_handle_of_this_server_goes_by_id_and_falls_back_to_its_bytes_only_when_the_id_is_forgotten():
    """The restore rules, in one place for both envs: by id on the server that keeps it, else from the
    bytes; a forgotten id falls back to the bytes, any other refusal (and a refusal of the bytes) is
    raised as it is, and a handle without bytes says how to get them."""
    env = core()
    here, portable = Snapshot("s1", "ws://127.0.0.1:8000/ws", 10), Snapshot("s2", "ws://127.0.0.1:8000/ws", 10, b"x")
    elsewhere = Snapshot("s3", "ws://127.0.0.1:9000/ws", 10, b"y")
    assert [env.restore_request(handle) for handle in (here, portable, elsewhere)] == [
        ("s1", None),
        ("s2", None),
        (None, b"y"),
    ]
    forgotten = SnapshotError("SNAPSHOT_UNKNOWN", "no such snapshot")
    assert env.restore_request(portable, forgotten) == (None, b"x")
    refused = SnapshotError("SNAPSHOT_REFUSED", "sealed elsewhere")
    for handle, failed in ((portable, refused), (here, forgotten), (elsewhere, forgotten)):
        with pytest.raises(SnapshotError) as raised:  # not the id forgotten, no bytes to stand in, the bytes refused
            env.restore_request(handle, failed)
        assert raised.value is failed
    with pytest.raises(SnapshotError, match=r"snapshot\(portable=True\)") as unknown:
        env.restore_request(Snapshot("s4", "ws://127.0.0.1:9000/ws", 10))
    assert unknown.value.code == "SNAPSHOT_UNKNOWN"
    assert env.releasable((here, elsewhere, portable)) == ("s1", "s2")


def test_the_time_limit_truncates_counts_on_from_a_restored_snapshot_and_a_fork_copies_the_count():
    """count_step truncates the step that reaches the limit; a snapshot keeps the count, a restore sets
    it back, a fork copies it and another session's core starts at 0."""
    env = core(max_episode_steps=3)
    env.reset_result(frame())
    assert env.count_step(env.face.step_result(frame(2))) == ((2, 1.0, False, False, {}), False)
    handle = env.snapshot(SnapshotFrame(id="s", size=1))
    assert (handle.server, handle.elapsed_steps) == ("ws://127.0.0.1:8000/ws", 1)
    forked, fresh = env.forked(), env.fresh()
    assert (forked.elapsed_steps, fresh.elapsed_steps) == (1, 0)
    assert (forked.info, forked.face) == (env.info, env.face)
    env.count_step(env.face.step_result(frame()))
    assert env.count_step(env.face.step_result(frame(0))) == ((0, 1.0, False, True, {}), True)
    assert env.restored(handle, frame(2)) == (2, {})
    assert env.elapsed_steps == 1 and forked.elapsed_steps == 1


@pytest.mark.parametrize(
    ("served", "counted", "in_force"), [(6, None, 6), (None, 4, 4), (6, 4, 4), (3, 8, 3), (None, None, None)]
)
def test_the_spec_states_the_time_limit_in_force(served, counted, in_force):
    """The sooner of the server's limit (its /schema's max_episode_steps) and this side's; a spec
    that states a limit of its own (a TimeLimit gym.make adds) keeps it."""
    schema = {} if served is None else {"max_episode_steps": served}
    env = core(schema, max_episode_steps=counted)
    assert env.time_limit == in_force
    made = gym.spec("CartPole-v1")
    assert env.spec(gym.envs.registration.EnvSpec("Remote-v0")).max_episode_steps == in_force
    assert env.spec(made).max_episode_steps == made.max_episode_steps
    assert env.spec(None) is None


def test_render_asks_a_frame_only_in_a_render_mode_the_server_publishes():
    env = core()
    assert not env.asks_frame("env")  # no render mode: render() is None, as a local env's
    env.render_mode = "rgb_array"
    with pytest.raises(NotImplementedError, match="env: the server renders nothing"):
        env.asks_frame("env")
    env.render = {"render_modes": ["rgb_array"], "render_fps": 50}
    assert env.asks_frame("env")


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"snapshot": {"supported": False, "reason": "its state holds a socket"}}, "its state holds a socket"),
        ({}, "an OpenEnv server"),
    ],
)
def test_snapshots_are_refused_by_what_the_schema_said(schema, reason):
    """Whether the env snapshots is the schema's word, read when the env was made: no request."""
    with pytest.raises(SnapshotUnsupportedError, match=reason):
        core(schema).check_snapshots("RemoteEnv(CartPole-v1)")
    core().check_snapshots("RemoteEnv(CartPole-v1)")


@pytest.fixture
def schema_reads(monkeypatch):
    """The ``/schema`` requests this process sends, counted where every GET of a server's JSON goes."""
    from openenv_gym.client import _http

    reads: list[str] = []
    http_url = _http.http_url

    def counted(base_url: str, path: str) -> str:
        if path.startswith("/schema"):
            reads.append(base_url)
        return http_url(base_url, path)

    monkeypatch.setattr(_http, "http_url", counted)
    return reads


def test_a_remote_env_reads_its_servers_schema_once(schema_reads):
    """Made with a render mode, snapshotted, restored and forked, a remote env has read its server's
    /schema once: its face, render modes and snapshot support all come from that read."""
    env = gym.make("openenv/CartPole-v1", render_mode="rgb_array")
    try:
        env.reset(seed=0)
        root = snapshot(env)
        env.step(0)
        restore(env, root)
        children = fork(env, 2)
        assert env.render().shape[-1] == 3 and children[0].render().shape[-1] == 3
        for child in children:
            child.close()
    finally:
        env.close()
    assert len(schema_reads) == 1


def test_an_async_env_reads_its_servers_schema_once(schema_reads):
    """make_async, a snapshot, a restore and a fork read the server's /schema once, as the single env does."""

    async def episode() -> None:
        env = await openenv_gym.make_async("openenv/CartPole-v1")
        try:
            await env.reset(seed=0)
            root = await env.snapshot()
            await env.step(0)
            await env.restore(root)
            for child in await env.fork(2):
                await child.step(1)
                await child.aclose()
        finally:
            await env.aclose()

    run_async(episode(), timeout=120)
    assert len(schema_reads) == 1
