"""PettingZoo envs served: PettingZoo's own API, seed and render tests on remote envs, and
trajectories equal to the local env's over seeded random play."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence

from openenv_gym import ClosedEnvError
from openenv_gym.errors import RemoteError
from openenv_gym.pettingzoo import RemoteAECEnv, RemoteParallelEnv, make_aec, make_parallel
from openenv_gym.server.runner import load_factory
from tests.utils import running_server

#: PettingZoo 1.27 deprecates making envs from their modules, and its own test module still imports one.
OLD_API = "The old environment creation API"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", OLD_API, DeprecationWarning)
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

CONNECT_FOUR, TICTACTOE, CHESS = "classic/connect_four-v3", "classic/tictactoe-v3", "classic/chess-v6"
CLASSIC = (CONNECT_FOUR, TICTACTOE, CHESS)
PISTONBALL = "butterfly/pistonball-v6"


def local_aec(env_id: str, **kwargs: Any) -> Any:
    return pettingzoo.make("aec", env_id, **kwargs)


@contextlib.contextmanager
def served(target: str, **env_kwargs: Any) -> Iterator[str]:
    with running_server(load_factory(target, env_kwargs=env_kwargs)) as server:
        yield server.url


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with contextlib.ExitStack() as stack:
        found = {target: stack.enter_context(served(target)) for target in CLASSIC}
        found[PISTONBALL] = stack.enter_context(served(PISTONBALL, n_pistons=6))
        yield found


def advice(test: Any, env: Any, **kwargs: Any) -> set[str]:
    """Run one of PettingZoo's tests on ``env``: what it warns (its advice, not failures) as a set.

    A remote env must draw exactly the local env's advice: the same env, seen through the wire.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        test(env, **kwargs)
    return {str(warning.message) for warning in caught}


def sample(env: Any, agent: str, observation: Any, info: dict[str, Any]) -> Any:
    """A random legal action, as PettingZoo's tests pick one."""
    if isinstance(observation, dict) and "action_mask" in observation:
        return env.action_space(agent).sample(observation["action_mask"])
    if "action_mask" in info:
        return env.action_space(agent).sample(info["action_mask"])
    return env.action_space(agent).sample()


@pytest.mark.parametrize("target", CLASSIC)
def test_pettingzoo_api_test_passes_on_a_remote_aec_env(urls: dict[str, str], target: str) -> None:
    env, local = make_aec(base_url=urls[target]), local_aec(target)
    try:
        assert isinstance(env, RemoteAECEnv)
        assert advice(api_test, env, num_cycles=200) == advice(api_test, local, num_cycles=200)
        assert str(env) == str(local)  # the API test's lists of envs key on it
    finally:
        env.close()
        local.close()


def test_parallel_api_test_passes_on_remote_pistonball(urls: dict[str, str]) -> None:
    env, local = make_parallel(base_url=urls[PISTONBALL]), pettingzoo.make("parallel", PISTONBALL, n_pistons=6)
    try:
        assert isinstance(env, RemoteParallelEnv)
        assert advice(parallel_api_test, env, num_cycles=40) == advice(parallel_api_test, local, num_cycles=40)
        assert env.observation_space("piston_0").shape == (457, 120, 3)
    finally:
        env.close()
        local.close()


def test_pistonball_is_served_in_both_apis(urls: dict[str, str]) -> None:
    """A Parallel env asked for as AEC is converted on the server, as PettingZoo's ``env()`` does."""
    env, local = make_aec(base_url=urls[PISTONBALL]), local_aec(PISTONBALL, n_pistons=6)
    try:
        assert advice(api_test, env, num_cycles=5) == advice(api_test, local, num_cycles=5)
    finally:
        env.close()
        local.close()


@pytest.mark.parametrize("target", CLASSIC)
def test_seeded_random_play_matches_the_local_env(urls: dict[str, str], target: str) -> None:
    """Three seeded games (chess: their first 600 turns), every turn's last() and dicts equal to
    the local env's, value for value."""
    local, remote = local_aec(target), make_aec(base_url=urls[target])
    try:
        for seed in (0, 1, 2):
            local.reset(seed=seed)
            remote.reset(seed=seed)
            for agent in remote.possible_agents:
                local.action_space(agent).seed(seed)
                remote.action_space(agent).seed(seed)
            turns = 0
            for agent, local_agent in zip(remote.agent_iter(600), local.agent_iter(600)):
                assert agent == local_agent
                got, expected = remote.last(), local.last()
                assert data_equivalence(got, expected), f"turn {turns} of seed {seed}"
                for name in ("rewards", "terminations", "truncations", "infos", "_cumulative_rewards"):
                    assert data_equivalence(getattr(remote, name), getattr(local, name)), name
                assert remote.agents == local.agents
                observation, _, terminated, truncated, info = got
                action = None if terminated or truncated else sample(remote, agent, observation, info)
                remote.step(action)
                local.step(action)
                turns += 1
            assert turns > 4
            if target != CHESS:  # random chess may go on for hundreds of moves
                assert not remote.agents and not local.agents, "the game should have ended"
    finally:
        remote.close()
        local.close()


def test_pistonball_trajectory_matches_the_local_env(urls: dict[str, str]) -> None:
    local, remote = pettingzoo.make("parallel", PISTONBALL, n_pistons=6), make_parallel(base_url=urls[PISTONBALL])
    try:
        assert data_equivalence(remote.reset(seed=7), local.reset(seed=7))
        rng = np.random.default_rng(7)
        for _ in range(30):
            actions = {agent: rng.uniform(-1, 1, (1,)).astype(np.float32) for agent in local.agents}
            got, expected = remote.step(actions), local.step(actions)
            # Pistonball's rewards are a defaultdict: every per-agent dict arrives as a plain dict.
            assert data_equivalence(got, tuple(dict(values) for values in expected))
            assert got[0]["piston_0"].dtype == np.uint8
            assert remote.agents == local.agents
        assert data_equivalence(remote.state(), local.state())
    finally:
        remote.close()
        local.close()


def test_pettingzoo_seed_tests_pass_on_remote_envs(urls: dict[str, str]) -> None:
    seed_test(lambda: make_aec(base_url=urls[CONNECT_FOUR]), num_cycles=50)
    parallel_seed_test(lambda: make_parallel(base_url=urls[PISTONBALL]), num_cycles=10)


def test_rgb_frames_equal_the_local_env_frames() -> None:
    """render(): rgb_array frames of the session's env, as PettingZoo's render test checks them."""
    with served(CONNECT_FOUR) as url:
        remote = make_aec(base_url=url, render_mode="rgb_array")
        local = local_aec(CONNECT_FOUR, render_mode="rgb_array")
        try:
            assert remote.render_mode == "rgb_array"
            for env in (remote, local):
                env.reset(seed=3)
                env.step(3)
            frame = remote.render()
            assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
            assert np.array_equal(frame, local.render())
        finally:
            remote.close()
            local.close()


def test_pettingzoos_render_test_passes_human_mode_shown_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """render_test asks for every mode, "human" first: the server renders RGB frames and this
    process shows them (in SDL's dummy video driver here, as on a machine without a display)."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    with served(PISTONBALL, n_pistons=4) as url:

        def make(render_mode: str | None = None) -> RemoteAECEnv:
            return make_aec(base_url=url, render_mode=render_mode)

        probe = make()
        try:
            assert probe.metadata["render_modes"] == ["rgb_array", "human"]
        finally:
            probe.close()
        render_test(make)
        human, rgb = make("human"), make("rgb_array")
        try:
            assert human.render_mode == "human"
            human.reset(seed=0)
            rgb.reset(seed=0)
            assert human.render() is None
            import pygame

            height, width, _ = rgb.render().shape
            assert pygame.display.get_surface().get_size() == (width, height)  # the frame, shown here
        finally:
            human.close()
            rgb.close()


def test_observing_another_agent_asks_the_server(urls: dict[str, str]) -> None:
    local, remote = local_aec(TICTACTOE), make_aec(base_url=urls[TICTACTOE])
    try:
        for env in (local, remote):
            env.reset(seed=0)
            env.step(4)
        for agent in local.possible_agents:  # one of them is not the agent whose turn it is
            assert data_equivalence(remote.observe(agent), local.observe(agent))
    finally:
        remote.close()
        local.close()


def test_a_bad_action_is_refused_and_the_session_goes_on(urls: dict[str, str]) -> None:
    env = make_aec(base_url=urls[CONNECT_FOUR])
    try:
        env.reset(seed=0)
        with pytest.raises(RemoteError, match="outside its action space") as refused:
            env.step(9)  # Discrete(7)
        assert refused.value.code == "VALIDATION_ERROR"
        with pytest.raises(RemoteError, match="only for an agent that is done"):
            env.step(None)
        env.step(0)  # the same turn, still the first agent's
        assert env.agent_selection == "player_1"
    finally:
        env.close()
    parallel = make_parallel(base_url=urls[PISTONBALL])
    try:
        parallel.reset(seed=0)
        with pytest.raises(RemoteError, match="not a live agent"):
            parallel.step({"piston_99": np.zeros(1, np.float32)})
        observations, *_ = parallel.step({agent: np.zeros(1, np.float32) for agent in parallel.agents})
        assert set(observations) == set(parallel.possible_agents)
    finally:
        parallel.close()


def test_make_aec_starts_a_server_for_a_registered_id_and_closes_it() -> None:
    from tests.utils import own_server_pids, wait_until

    before = own_server_pids()
    env = make_aec("openenv/TicTacToe-v3")
    try:
        started = own_server_pids() - before
        assert len(started) == 1
        env.reset(seed=1)
        assert env.agents == ["player_1", "player_2"]
    finally:
        env.close()
    assert wait_until(lambda: not (own_server_pids() & started), timeout=10)
    with pytest.raises(ClosedEnvError, match="after close"):
        env.reset()


def test_json_codec_gives_the_same_values(urls: dict[str, str]) -> None:
    """Without the binary codec, values travel as JSON and still keep their dtypes."""
    remote = make_aec(base_url=urls[CHESS], binary=False)
    local = local_aec(CHESS)
    try:
        remote.reset(seed=5)
        local.reset(seed=5)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert data_equivalence(remote.last(), local.last())
    finally:
        remote.close()
        local.close()


def test_a_pettingzoo_module_is_served_as_its_env() -> None:
    """PettingZoo's older way, a module with env() and parallel_env(), serves the same env (the
    module warns that it is deprecated, in whichever process imports it first)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", OLD_API, DeprecationWarning)
        factory = load_factory("pettingzoo.classic.tictactoe_v3")
    assert factory.agents is not None and set(factory.agents.makers) == {"aec"}
    with running_server(factory) as server:
        remote, local = make_aec(base_url=server.url), local_aec(TICTACTOE)
        try:
            remote.reset(seed=0)
            local.reset(seed=0)
            assert data_equivalence(remote.last(), local.last())
        finally:
            remote.close()
            local.close()


def test_make_parallel_of_an_aec_env_says_to_use_make_aec(urls: dict[str, str]) -> None:
    """Connect Four has no Parallel API: make_parallel's error names make_aec, the function to call,
    not the wire's api= parameter the caller never passed."""
    with pytest.raises(RemoteError) as refused:
        make_parallel(base_url=urls[CONNECT_FOUR])
    assert "make_aec" in str(refused.value) and "api=" not in str(refused.value)
    assert "no Parallel API" in str(refused.value)


@pytest.mark.parametrize("make", [make_aec, make_parallel])
def test_a_seat_env_is_not_a_pettingzoo_env_and_the_error_says_to_gym_make_it(make: Any) -> None:
    """Chess-v0 is one seat of a game, served on /ws: make_aec and make_parallel say so, and name
    gym.make, rather than passing on the server's 404 for /ws/agents."""
    with pytest.raises(ValueError, match=r"openenv/Chess-v0 is not a PettingZoo env: .* with gym.make$"):
        make("openenv/Chess-v0")
