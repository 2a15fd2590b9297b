"""Interoperability with OpenEnv itself (PyPI openenv-core): its client on our servers, our clients on its server."""

from __future__ import annotations

import asyncio

import pytest
from openenv.core.generic_client import GenericEnvClient  # a test dependency: openenv-gym[test]

from openenv_gym.client import AsyncEnvClient, http_get_json
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.errors import RemoteError
from openenv_gym.providers import ProcessProvider
from tests.utils import openenv_core_servers, run_async


@pytest.fixture(scope="module")
def echo_url():
    with ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as url:
        yield url


def test_openenv_async_client_on_our_echo_server(echo_url):
    """GenericEnvClient runs reset/step/state on our Echo server and reads message/echoed_message."""

    async def session():
        async with GenericEnvClient(base_url=echo_url) as client:
            first = await client.reset()
            result = await client.step({"message": "hello"})
            state = await client.state()
            return first, result, state

    first, result, state = run_async(session())
    # Echo has tools, so its reset's fields are also in the metadata inside the observation, where
    # OpenEnv's MCPToolClient keeps them; GenericEnvClient keeps the whole observation.
    reset_fields = {"echoed_message": "", "message_length": 0}
    assert first.observation == {**reset_fields, "metadata": reset_fields}
    assert first.done is False
    assert result.observation == {"echoed_message": "hello", "message_length": 5}
    assert result.reward == pytest.approx(0.5)
    assert result.done is False
    assert state["step_count"] == 1 and state["episode_id"]


def test_openenv_sync_client_on_our_echo_server(echo_url):
    """OpenEnv's sync facade (.sync()) works too, over a ws:// base URL."""
    with GenericEnvClient(base_url=echo_url.replace("http", "ws")).sync() as client:
        client.reset()
        result = client.step({"message": "abc"})
        assert result.observation["echoed_message"] == "abc"
        assert client.state()["step_count"] == 1


def test_openenv_client_sees_our_errors_as_its_own(echo_url):
    """Our error frames use OpenEnv's codes, so its client reports them in its usual form."""

    async def session():
        async with GenericEnvClient(base_url=echo_url) as client:
            await client.reset()
            with pytest.raises(RuntimeError, match=r"\(code: VALIDATION_ERROR\)"):
                await client.step({"msg": "wrong field"})
            # The session lives on after the error.
            return await client.step({"message": "ok"})

    assert run_async(session()).observation["echoed_message"] == "ok"


def test_openenv_client_on_our_gymnasium_server():
    """A served Gymnasium env is usable from OpenEnv's client: actions and observations as fields."""

    async def session(url):
        async with GenericEnvClient(base_url=url) as client:
            first = await client.reset(seed=0)
            result = await client.step({"action": 1})
            return first, result

    with ProcessProvider("CartPole-v1") as url:
        first, result = run_async(session(url))
    assert len(first.observation["observation"]) == 4
    assert result.reward == 1.0 and result.done is False


def test_many_openenv_sessions_at_once(echo_url):
    """Several OpenEnv clients share one of our servers concurrently, one env each."""

    async def one(i):
        async with GenericEnvClient(base_url=echo_url) as client:
            await client.reset()
            return (await client.step({"message": "x" * i})).observation["message_length"]

    async def many():
        return await asyncio.gather(*(one(i) for i in range(8)))

    assert run_async(many()) == list(range(8))


@pytest.fixture(scope="module")
def openenv_server_url():
    """openenv-core's own server (FastAPI under uvicorn) with an echo env, in a child process."""
    with openenv_core_servers(("echo",)) as urls:
        yield urls["echo"]


@pytest.mark.slow
def test_our_sync_client_on_openenv_server(openenv_server_url):
    """EnvClient drives openenv-core's server: null rewards, done, state and its error frames."""
    with EnvClient(openenv_server_url, env_id="echo") as client:
        first = client.reset(seed=1)
        assert (first.observation, first.reward, first.done) == (
            {"echoed_message": "", "message_length": 0},
            None,
            False,
        )
        assert (first.truncated, first.info) == (False, {})  # our extensions default when absent
        result = client.step({"message": "hello"})
        assert result.observation == {"echoed_message": "hello", "message_length": 5}
        assert result.reward == pytest.approx(0.5)
        with pytest.raises(RemoteError) as caught:
            client.step({"msg": "wrong field"})
        assert caught.value.code == "VALIDATION_ERROR" and caught.value.env_id == "echo"
        assert client.step({"message": "bye"}).done is True
        assert client.state()["step_count"] == 2


@pytest.mark.slow
def test_our_async_client_on_openenv_server(openenv_server_url):
    """AsyncEnvClient drives openenv-core's server too, several sessions at once."""

    async def one(text: str) -> str:
        async with AsyncEnvClient(openenv_server_url) as client:
            await client.reset()
            return (await client.step({"message": text})).observation["echoed_message"]

    async def many() -> list[str]:
        return await asyncio.gather(*(one(f"m{i}") for i in range(3)))

    assert run_async(many()) == ["m0", "m1", "m2"]


@pytest.mark.slow
def test_openenv_schema_has_no_spaces(openenv_server_url):
    """openenv-core's /schema carries JSON schemas only: RemoteEnv needs our spaces and says so."""
    from openenv_gym import RemoteEnv

    schema = http_get_json(openenv_server_url, "/schema")
    assert {"action", "observation", "state"} <= set(schema) and "spaces" not in schema
    with pytest.raises(ValueError, match="publishes no Gymnasium spaces in /schema"):
        RemoteEnv(base_url=openenv_server_url)
