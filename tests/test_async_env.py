"""Asynchronous episodes: make_async gives gym.make's results on asyncio; AsyncEnvPool runs hundreds of
episodes over a few servers, and a server that dies fails only its own episodes."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym import AsyncEnvPool, AsyncRemoteEnv, ClosedEnvError, make_async
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.errors import ConnectionLostError, EpisodeEndedError, InvalidActionError, ServerConnectError
from tests.utils import UNIT, own_server_pids, run_async, running_server, wait_until


def call(message: str) -> str:
    return json.dumps({"name": "echo_message", "arguments": {"message": message}})


# make_async -----------------------------------------------------------------------------------


def test_make_async_gives_the_same_episode_as_gym_make():
    """CartPole with one seed and one action sequence: the same observations, rewards and flags."""
    actions = [0, 1, 1, 0, 1, 0, 0, 1] * 4

    def sync_episode():
        env = gym.make("openenv/CartPole-v1")
        try:
            obs, _ = env.reset(seed=3)
            return [obs, *(env.step(action)[:4] for action in actions)]
        finally:
            env.close()

    async def async_episode():
        env = await make_async("openenv/CartPole-v1")
        try:
            assert env.action_space == gym.spaces.Discrete(2)
            obs, _ = await env.reset(seed=3)
            return [obs, *[(await env.step(action))[:4] for action in actions]]
        finally:
            await env.aclose()

    ours, theirs = run_async(async_episode(), 60 * UNIT), sync_episode()
    np.testing.assert_array_equal(ours[0], theirs[0])
    for (obs, reward, terminated, truncated), expected in zip(ours[1:], theirs[1:]):
        np.testing.assert_array_equal(obs, expected[0])
        assert (reward, terminated, truncated) == expected[1:]
        assert type(reward) is float and type(terminated) is bool


def test_the_time_limit_truncates_and_aclose_stops_the_server():
    async def episode():
        env = await make_async("openenv/CartPole-v1", max_episode_steps=3)
        started = own_server_pids()
        await env.reset(seed=0)
        flags = [(await env.step(0))[3] for _ in range(3)]
        with pytest.raises(EpisodeEndedError):  # truncated: no step until a reset
            await env.step(0)
        await env.reset(seed=0)
        with pytest.raises(InvalidActionError, match="Discrete"):
            await env.step(7)
        await env.aclose()
        await env.aclose()  # idempotent
        with pytest.raises(ClosedEnvError):
            await env.step(0)
        return flags, started

    before = own_server_pids()
    flags, started = run_async(episode(), 60 * UNIT)
    assert flags == [False, False, True]
    assert len(started - before) == 1
    assert wait_until(lambda: not (own_server_pids() - before), 10 * UNIT)


def test_make_async_renders_and_has_gym_makes_spec():
    """render_mode as gym.make's: the env's frames; the spec names the id and the time limit in force."""

    async def frames():
        env = await make_async("openenv/CartPole-v1", render_mode="rgb_array", max_episode_steps=7)
        plain = await make_async("openenv/CartPole-v1")
        try:
            await env.reset(seed=2)
            await env.step(1)
            (fork,) = await env.fork(1)
            try:
                seen = env.render_mode, env.metadata["render_modes"], env.spec, plain.spec
                return seen, await env.render(), await fork.render(), await plain.render()
            finally:
                await fork.aclose()
        finally:
            await env.aclose()
            await plain.aclose()

    (mode, modes, spec, plain_spec), frame, forked, nothing = run_async(frames(), 60 * UNIT)
    local = gym.make("CartPole-v1", render_mode="rgb_array")
    local.reset(seed=2)
    local.step(1)
    expected = local.render()
    local.close()
    assert mode == "rgb_array" and "rgb_array" in modes
    assert frame.dtype == expected.dtype and frame.flags.writeable
    np.testing.assert_array_equal(frame, expected)
    np.testing.assert_array_equal(forked, expected)
    assert nothing is None  # no render mode: None, as a local env's
    assert spec.id == "openenv/CartPole-v1" and spec.max_episode_steps == 7
    assert spec.kwargs["render_mode"] == "rgb_array"
    assert plain_spec.max_episode_steps == gym.spec("openenv/CartPole-v1").max_episode_steps


def test_make_async_has_the_tool_face():
    async def episode():
        async with await make_async("openenv/Echo-v0", tool_calls=True) as env:
            prompt, info = await env.reset()
            text, reward, terminated, _, _ = await env.step(call("héllo"))
            error = (await env.step("not a call"))[4]["error"]
            return prompt, info, text, reward, terminated, error

    prompt, info, text, reward, terminated, error = run_async(episode(), 60 * UNIT)
    assert prompt == "" and info["tools"][0]["function"]["name"] == "echo_message"
    assert (text, reward, terminated) == ("héllo", 0.0, False)
    assert error["error_type"] == "invalid_tool_call"


def test_make_async_refuses_ids_that_are_not_remote_envs():
    with pytest.raises(ValueError, match="not a remote env"):
        run_async(make_async("CartPole-v1"))


# AsyncEnvPool -------------------------------------------------------------------------------


async def _echo_episode(pool: AsyncEnvPool, index: int, calls: int = 3) -> list[str]:
    env = await pool.acquire()
    try:
        await env.reset(seed=index)
        texts = []
        for turn in range(calls):
            text, _, terminated, truncated, info = await env.step(call(f"{index}.{turn}"))
            assert "error" not in info and not terminated and not truncated
            texts.append(text)
            await asyncio.sleep(0)  # each episode at its own pace
        return texts
    finally:
        await env.aclose()


@pytest.mark.slow
def test_256_concurrent_episodes_on_a_server_per_cpu_at_most():
    before = own_server_pids()

    async def run():
        async with AsyncEnvPool("openenv/Echo-v0", size=256, tool_calls=True) as pool:
            servers = own_server_pids() - before
            assert pool.idle == 256
            results = await asyncio.gather(*(_echo_episode(pool, i) for i in range(512)))
            assert pool.idle == 256 and pool.in_use == 0
            return servers, results

    servers, results = run_async(run(), 240 * UNIT)
    assert 1 <= len(servers) <= (os.cpu_count() or 1)
    assert results == [[f"{i}.{turn}" for turn in range(3)] for i in range(512)]
    assert wait_until(lambda: not (own_server_pids() - before), 20 * UNIT)  # every server stopped


@pytest.mark.slow
def test_no_session_is_left_on_the_server_after_the_pool_closes():
    with running_server(EchoEnvironment, max_sessions=256) as server:

        async def run():
            async with AsyncEnvPool("openenv/Echo-v0", size=256, base_url=server.url, tool_calls=True) as pool:
                # A handshake returns before the server's handler counts its session: wait for all.
                for _ in range(200):
                    if server.active_sessions == 256:
                        break
                    await asyncio.sleep(0.05)
                assert server.active_sessions == 256
                await asyncio.gather(*(_echo_episode(pool, i, calls=2) for i in range(256)))

        run_async(run(), 240 * UNIT)
        assert wait_until(lambda: server.active_sessions == 0, 20 * UNIT), server.active_sessions


def test_acquire_waits_for_a_free_session_and_times_out_clearly():
    async def run():
        async with AsyncEnvPool("openenv/Echo-v0", size=1, tool_calls=True) as pool:
            env = await pool.acquire()
            with pytest.raises(TimeoutError, match=r"no session came free within 0\.2 s"):
                await pool.acquire(timeout=0.2)
            waiting = asyncio.ensure_future(pool.acquire())
            await asyncio.sleep(0.1)
            assert not waiting.done()
            await env.aclose()
            second = await asyncio.wait_for(waiting, 10)
            assert second.client is env.client  # the same session, reused
            await second.aclose()
            with pytest.raises(ClosedEnvError):
                await env.reset()

    run_async(run(), 60 * UNIT)


@pytest.mark.slow
def test_a_dead_server_fails_only_its_episodes_and_is_replaced():
    """Two servers, four sessions each; one is killed mid-episode."""

    async def run():
        async with AsyncEnvPool("openenv/Echo-v0", size=8, servers=2, tool_calls=True) as pool:
            envs: list[AsyncRemoteEnv] = [await pool.acquire() for _ in range(8)]
            for env in envs:
                await env.reset()
                assert (await env.step(call("before")))[0] == "before"
            victim = pool._servers[0]
            hosted = [env for env in envs if env.client.url == client_url(victim.url)]
            assert len(hosted) == 4
            os.kill(victim.provider.pid, signal.SIGKILL)
            assert wait_until(lambda: not victim.provider.is_alive(), 10 * UNIT)
            outcomes = await asyncio.gather(*(env.step(call("after")) for env in envs), return_exceptions=True)
            for env, outcome in zip(envs, outcomes):
                if env in hosted:
                    assert isinstance(outcome, (ConnectionLostError, ServerConnectError)), outcome
                    assert env.failed is outcome
                else:
                    assert outcome[0] == "after"
            for env in envs:
                await env.aclose()
            assert pool.idle == 8  # the lost sessions were opened again, on a restarted server
            assert victim.provider.is_alive()
            return await asyncio.gather(*(_echo_episode(pool, i) for i in range(16)))

    results = run_async(run(), 120 * UNIT)
    assert results == [[f"{i}.{turn}" for turn in range(3)] for i in range(16)]


def client_url(base_url: str) -> str:
    """The ws:// URL a client of ``base_url`` connects to."""
    from openenv_gym.urls import ws_url

    return ws_url(base_url)


def test_async_names_are_public():
    assert openenv_gym.AsyncEnvPool is AsyncEnvPool and openenv_gym.make_async is make_async
