"""OpenEnv 0.10's connection behaviour both ways: a server that drops its socket mid-episode, what
each side's client does then, and that nothing is paid twice; keepalive; seeds honoured or refused.

Both sides serve a ledger env (``tests/ledger_env.py`` on ours, ``tests/openenv010/ledger_server.py``
on 0.10's) whose every step writes what it pays in a file before it answers: the ledger, not the
client, says what was paid. A server is dropped for real: killed in the middle of a step (the
paid reply lost) and started again on the same port, or our idle reaper closing a silent session.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers openenv/Remote-v0)
from openenv_gym._lost_server import EPISODE_LOST
from openenv_gym.client import AsyncEnvClient, http_get_json
from openenv_gym.client._http import http_post_json
from openenv_gym.errors import ConnectionLostError, SeedNotHonouredError, ServerConnectError
from tests.ledger_env import ledger_lines
from tests.openenv010 import HERE, _peer_env, peer_python, run_peer
from tests.utils import REPO_ROOT, UNIT, free_port, run_async, stop_process, wait_until

LEDGER_ENV = "tests.ledger_env:LedgerEnvironment"


@contextlib.contextmanager
def _serving(command: list[str], port: int, env: dict[str, str] | None, cwd: str) -> Iterator[subprocess.Popen[bytes]]:
    """The server ``command`` starts on ``port``, once it answers ``/health``; stopped after."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return http_get_json(url, "/health", timeout=1) == {"status": "healthy"}
        except ServerConnectError:
            return process.poll() is not None

    try:
        assert wait_until(healthy, 120 * UNIT, interval=0.2) and process.poll() is None, f"{command} did not start"
        yield process
    finally:
        stop_process(process)


def ours(port: int, ledger: Path, target: str = LEDGER_ENV, idle_timeout: str = "none") -> Any:
    """Our server of ``target`` on ``port`` (``openenv-gym serve``), writing its ledger to ``ledger``."""
    command = [sys.executable, "-m", "openenv_gym", "serve", target, "--port", str(port)]
    command += ["--idle-timeout", idle_timeout, "--env-kwargs", json.dumps({"ledger": str(ledger)})]
    return _serving(command, port, None, str(REPO_ROOT))


def theirs(port: int, ledger: Path, mode: str = "seeded", *pings: str) -> Any:
    """A stock OpenEnv 0.10 server (``tests/openenv010/ledger_server.py``) on ``port``."""
    command = [peer_python(), str(HERE / "ledger_server.py"), str(port), str(ledger), mode, *pings]
    return _serving(command, port, _peer_env(), tempfile.gettempdir())


def killed(server: subprocess.Popen[bytes]) -> None:
    """A crash: SIGKILL, so the server says nothing to its clients."""
    server.kill()
    server.wait(timeout=30 * UNIT)


def paid(ledger: Path, pay: int) -> list[dict[str, Any]]:
    return [entry for entry in ledger_lines(str(ledger)) if entry["pay"] == pay]


# 0.10's client on our server --------------------------------------------------------------------


def test_010_client_on_our_server_killed_mid_step_pays_nothing_twice(tmp_path):
    """Our server killed while a paid step's reply is on its way, then started again on the port:
    0.10's client raises ``ConnectionClosedError`` for that step and sends nothing again by itself;
    a step retried by its caller goes, through 0.10's silent reconnect, to a new session, which our
    server refuses (step before reset). The lost step is paid once; a reset starts a new episode."""
    port, ledger, go = free_port(), tmp_path / "ledger", tmp_path / "go"
    url = f"http://127.0.0.1:{port}"
    with ours(port, ledger) as first:
        client = subprocess.Popen(
            [peer_python(), str(HERE / "reconnect_client.py"), "crash", url, str(go)],
            env=_peer_env(),
            cwd=tempfile.gettempdir(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert wait_until(lambda: paid(ledger, 5), 120 * UNIT), "the held step never ran"
            killed(first)
            with ours(port, ledger) as second:
                go.touch()
                out, err = client.communicate(timeout=120 * UNIT)
                assert client.returncode == 0, err.decode()[-4000:]
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    seen = json.loads(out.decode().splitlines()[-1])
    assert seen["first"]["reward"] == pytest.approx(1.0)
    assert seen["dropped"]["error"] == "ConnectionClosedError"
    assert seen["retried"] == {
        "error": "RuntimeError",
        "message": "Server error: step before reset: send a reset frame first (code: SESSION_ERROR)",
    }
    assert seen["reset_again"]["observation"]["paid"] == 0
    assert seen["next"]["reward"] == pytest.approx(1.0) and seen["next"]["observation"]["paid"] == 1
    entries = ledger_lines(str(ledger))
    assert [(e["pid"], e["pay"]) for e in entries] == [(first.pid, 1), (first.pid, 5), (second.pid, 1)]
    assert entries[0]["episode"] == entries[1]["episode"] != entries[2]["episode"]


def test_010_client_keepalive_and_our_idle_reaper(tmp_path):
    """0.10's keepalive (pings every 0.2 s, a 1 s pong timeout) holds on our server, which answers
    pings: a step after 1 s of silence goes on in the same episode. Pings are not frames: past our
    idle timeout the session is reaped (close 1001) all the same; 0.10's next step reconnects by
    itself to a new session, which our server refuses (step before reset): nothing is paid."""
    port, ledger = free_port(), tmp_path / "ledger"
    idle_timeout = 3 * UNIT
    with ours(port, ledger, idle_timeout=f"{idle_timeout:g}"):
        seen = run_peer("reconnect_client.py", "idle", f"http://127.0.0.1:{port}", "1", f"{2.5 * idle_timeout:g}")
    assert seen["after_pings"]["reward"] == pytest.approx(2.0) and seen["after_pings"]["observation"]["paid"] == 3
    assert seen["after_reaped"] == {
        "error": "RuntimeError",
        "message": "Server error: step before reset: send a reset frame first (code: SESSION_ERROR)",
    }
    assert seen["next"]["observation"]["paid"] == 1
    assert [entry["pay"] for entry in ledger_lines(str(ledger))] == [1, 2, 1]


# Our client on 0.10's server --------------------------------------------------------------------


def test_our_client_on_010_server_killed_mid_step_pays_nothing_twice(tmp_path):
    """A stock 0.10 server killed while a paid step's reply is on its way, then started again on
    the port: our env's step raises ``ConnectionLostError`` naming the step, with a note that the episode is lost;
    it never reconnects by itself, so a step retried reaches no server (0.10's new session would
    have paid it: its server steps an env that was never reset); ``reset`` opens a new session."""
    port, ledger = free_port(), tmp_path / "ledger"
    with theirs(port, ledger) as first:
        env = gym.make("openenv/Remote-v0", base_url=f"http://127.0.0.1:{port}")
        try:
            env.reset(seed=1)
            assert env.step({"pay": 1, "hold": 0.0})[1] == pytest.approx(1.0)
            raised: list[BaseException] = []

            def held_step() -> None:
                try:
                    env.step({"pay": 5, "hold": 120.0})
                except BaseException as exc:
                    raised.append(exc)

            stepping = threading.Thread(target=held_step)
            stepping.start()
            assert wait_until(lambda: paid(ledger, 5), 60 * UNIT), "the held step never ran"
            killed(first)
            with theirs(port, ledger):
                stepping.join(60 * UNIT)
                assert not stepping.is_alive() and len(raised) == 1
                (lost,) = raised
                assert isinstance(lost, ConnectionLostError) and lost.call == "step"
                assert "closed without a close frame (did the server process die?)" in str(lost)
                assert getattr(lost, "__notes__", []) == [EPISODE_LOST]
                with pytest.raises(ConnectionLostError, match="the connection was closed earlier") as again:
                    env.step({"pay": 5, "hold": 0.0})
                assert getattr(again.value, "__notes__", []) == [EPISODE_LOST]
                assert paid(ledger, 5) and len(paid(ledger, 5)) == 1
                observation, _ = env.reset(seed=1)
                assert int(observation["paid"]) == 0
                assert env.step({"pay": 1, "hold": 0.0})[1] == pytest.approx(1.0)
        finally:
            env.close()
    assert [entry["pay"] for entry in ledger_lines(str(ledger))] == [1, 5, 1]


def test_our_client_answers_010_server_pings_while_idle(tmp_path):
    """uvicorn (under 0.10's server) pings every 0.5 s here and drops a client whose pong is 8 s late
    (20 s and 20 s by default): our idle env answers from its keepalive thread (every 5 s), so a
    step after 10 s of silence goes on in the same episode."""
    port, ledger = free_port(), tmp_path / "ledger"
    with theirs(port, ledger, "seeded", "0.5", "8"):
        env = gym.make("openenv/Remote-v0", base_url=f"http://127.0.0.1:{port}")
        try:
            env.reset()
            env.step({"pay": 1, "hold": 0.0})
            time.sleep(10)
            observation, reward, *_ = env.step({"pay": 2, "hold": 0.0})
        finally:
            env.close()
    assert reward == pytest.approx(2.0) and int(observation["paid"]) == 3
    assert len({entry["episode"] for entry in ledger_lines(str(ledger))}) == 1


# Seeds: honoured or refused, never dropped (OpenEnv #1102) ---------------------------------------


def test_010_client_seeds_are_honoured_by_our_server(tmp_path):
    """0.10's client's ``reset(seed=)`` on our server: the same seed gives the same first observation,
    another seed another."""
    port = free_port()
    with ours(port, tmp_path / "ledger"):
        seen = run_peer("reconnect_client.py", "seeds", f"http://127.0.0.1:{port}")
    assert seen["seed_3"]["observation"] == seen["seed_3_again"]["observation"]
    assert seen["seed_3"]["observation"]["draw"] != seen["seed_4"]["observation"]["draw"]


def test_010_client_seed_refused_by_our_server_when_the_env_cannot_take_one(tmp_path):
    """An env of ours whose ``reset`` takes no seed: a seeded reset from 0.10's client is refused
    with the reason (0.10's own server drops the seed and the reset looks seeded), on ``/ws`` and on
    the stateless ``POST /reset`` (400); one without a seed goes on."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with ours(port, tmp_path / "ledger", target="tests.ledger_env:UnseededLedgerEnvironment"):
        seen = run_peer("reconnect_client.py", "seeds", url)
        with pytest.raises(ServerConnectError, match=re.escape("HTTP 400: ")) as http:
            http_post_json(url, "/reset", {"seed": 3})
        assert http_post_json(url, "/reset", {})["observation"]["paid"] == 0
    assert "reset refused: UnseededLedgerEnvironment.reset() takes no seed" in str(http.value)
    refusal = (
        "Server error: reset failed: ValueError: UnseededLedgerEnvironment.reset() takes no seed, so a seeded "
        "reset cannot be honoured: reset without a seed (code: EXECUTION_ERROR)"
    )
    for call in ("seed_3", "seed_3_again", "seed_4"):
        assert seen[call] == {"error": "RuntimeError", "message": refusal}
    assert seen["unseeded"]["observation"]["paid"] == 0


def test_our_client_seeds_on_010_servers(tmp_path):
    """Our env's ``reset(seed=)`` on stock 0.10 servers, which cannot say whether a seed is kept: on
    an env that keeps it, the same seed gives the same first observation; on one whose reset takes
    no seed (0.10's server drops it without a word), the seeded reset is refused with
    ``SeedNotHonouredError``, then and at every later seeded reset, and a reset without a seed goes on;
    ``make_vec``'s sub-envs and our async client refuse it alike."""
    seeded_port, unseeded_port = free_port(), free_port()
    with theirs(seeded_port, tmp_path / "seeded"), theirs(unseeded_port, tmp_path / "unseeded", "unseeded"):
        env = gym.make("openenv/Remote-v0", base_url=f"http://127.0.0.1:{seeded_port}")
        try:
            first = int(env.reset(seed=3)[0]["draw"])
            assert int(env.reset(seed=3)[0]["draw"]) == first != int(env.reset(seed=4)[0]["draw"])
        finally:
            env.close()
        env = gym.make("openenv/Remote-v0", base_url=f"http://127.0.0.1:{unseeded_port}")
        try:
            with pytest.raises(SeedNotHonouredError, match=re.escape("reset(seed=3) refused: the env at ws://")):
                env.reset(seed=3)
            assert int(env.reset()[0]["paid"]) == 0
            with pytest.raises(SeedNotHonouredError, match=re.escape("reset(seed=4) refused")):
                env.reset(seed=4)
        finally:
            env.close()
        vector = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=f"http://127.0.0.1:{unseeded_port}")
        try:
            with pytest.raises(SeedNotHonouredError, match=re.escape("reset(seed=5) refused")):
                vector.reset(seed=5)
            assert list(vector.reset()[0]["paid"]) == [0, 0]
        finally:
            vector.close()
        assert run_async(_async_seeded_resets(f"http://127.0.0.1:{unseeded_port}"), 60 * UNIT) == [
            "SeedNotHonouredError",
            "reset",
        ]


async def _async_seeded_resets(url: str) -> list[str]:
    """What our async client's ``reset(seed=3)``, then ``reset()``, give on the server at ``url``."""
    async with AsyncEnvClient(url) as client:
        try:
            await client.reset(seed=3)
            seen = ["reset"]
        except SeedNotHonouredError:
            seen = ["SeedNotHonouredError"]
        await client.reset()
        return [*seen, "reset"]
