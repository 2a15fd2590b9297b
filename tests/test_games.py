"""Games on a PettingZoo server: one agent's seat per session, opponents the server plays, and
players in separate processes who join one game by id; a player that leaves or stalls loses the
round (a forfeit), and the game ends for the others, never a hang."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym  # noqa: F401  registers the openenv/ ids
from openenv_gym.errors import EnvCreationError, RemoteError
from openenv_gym.server.games import FAILURE_INFO_KEY, FORFEIT_INFO_KEY, OPPONENT_SECRET_ENV_VAR
from openenv_gym.server.runner import load_factory
from tests.utils import UNIT, running_server, wait_until

PLAYER = str(Path(__file__).with_name("game_player.py"))
CONNECT_FOUR = "openenv/ConnectFour-v3"


@contextlib.contextmanager
def served(target: str, **options: Any) -> Iterator[Any]:
    with running_server(load_factory(target), **options) as server:
        yield server


def random_legal(observation: dict[str, Any], rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(observation["action_mask"])))


def play(env: gym.Env[Any, Any], seed: int) -> tuple[float, int, bool, bool, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    observation, info = env.reset(seed=seed)
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        observation, reward, terminated, truncated, info = env.step(random_legal(observation, rng))
        total, steps = total + reward, steps + 1
    return total, steps, terminated, truncated, info


class Player:
    """tests/game_player.py in a process of its own; its JSON lines as they come. A context
    manager: leaving it kills the process if it still runs."""

    def __init__(self, url: str, agent: str, game: str, *args: str, env_id: str = CONNECT_FOUR) -> None:
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, PLAYER, url, env_id, agent, game, *args],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=Path(__file__).parent.parent,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
        )
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> Player:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.kill()
        self._reader.join(10)
        assert self.process.stdout is not None
        self.process.stdout.close()
        self._stderr.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def wait_for(self, key: str, timeout: float) -> dict[str, Any]:
        assert wait_until(lambda: any(key in line for line in self.lines), timeout), (self.lines, self.stderr())
        return next(line for line in self.lines if key in line)

    def results(self, timeout: float) -> list[dict[str, Any]]:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"player did not finish: {self.lines} {self.stderr()}") from None
        self._reader.join(5)
        assert self.process.returncode == 0, self.stderr()
        return [line for line in self.lines if "return" in line]

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


def test_the_single_agent_face_plays_against_the_servers_opponent(monkeypatch: pytest.MonkeyPatch) -> None:
    """gym.make on a PettingZoo id: one agent's seat, the other played by the server; Gymnasium's checker passes."""
    monkeypatch.setenv(OPPONENT_SECRET_ENV_VAR, "fixed by the operator")  # the server process inherits it
    env = gym.make(CONNECT_FOUR)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        assert env.observation_space["action_mask"].shape == (7,)
        total, steps, terminated, truncated, _ = play(env, seed=3)
        assert terminated and not truncated
        assert total in (-1.0, 0.0, 1.0) and steps >= 4
        again = play(env, seed=3)
        assert again[:2] == (total, steps)  # with the operator's secret fixed, a seeded game replays
    finally:
        env.close()


def test_any_agent_seat_gets_its_own_spaces() -> None:
    with served("butterfly/pistonball-v6") as server:
        env = gym.make("openenv/Pistonball-v6", base_url=server.url, agent="piston_3")
        try:
            assert env.action_space.shape == (1,)
            observation, _ = env.reset(seed=0)
            assert observation.shape == (457, 120, 3)
            _, reward, terminated, truncated, _ = env.step(np.ones(1, np.float32))
            assert isinstance(reward, float) and not terminated and not truncated
        finally:
            env.close()
        with pytest.raises(ValueError, match="not one of the env's agents"):
            gym.make("openenv/Pistonball-v6", base_url=server.url, agent="player_0")


def test_two_processes_play_connect_four_against_each_other() -> None:
    with served("classic/connect_four-v3") as server:
        with (
            Player(server.url, "player_0", "g1", "--episodes", "3", "--seed", "1") as first,
            Player(server.url, "player_1", "g1", "--episodes", "3", "--seed", "2") as second,
        ):
            a, b = first.results(120 * UNIT), second.results(120 * UNIT)
        assert len(a) == len(b) == 3
        for mine, theirs in zip(a, b):
            assert mine["terminated"] and theirs["terminated"]
            assert mine["return"] + theirs["return"] == 0  # zero-sum: a win and a loss, or a draw
            assert abs(mine["steps"] - theirs["steps"]) <= 1  # they took turns
        assert len(server.served.games) == 0  # both left: the game is gone


def test_two_processes_play_chess_to_the_end() -> None:
    with served("classic/chess-v6") as server:
        with (
            Player(server.url, "player_0", "c1", "--seed", "5", env_id="openenv/Remote-v0") as white,
            Player(server.url, "player_1", "c1", "--seed", "6", env_id="openenv/Remote-v0") as black,
        ):
            (w,), (b,) = white.results(300 * UNIT), black.results(300 * UNIT)
        assert w["terminated"] and b["terminated"] and not w["truncated"]
        assert w["return"] + b["return"] == 0
        assert w["steps"] > 10


def test_a_killed_player_ends_the_game_for_the_other_and_the_server_goes_on() -> None:
    with served("classic/connect_four-v3") as server:
        rng = np.random.default_rng(0)
        quitter = Player(server.url, "player_1", "k1", "--stall-after", "0")
        env = gym.make(CONNECT_FOUR, base_url=server.url, agent="player_0", game="k1")
        with quitter:
            observation, _ = env.reset(seed=0)
            stepping: dict[str, Any] = {}

            def move() -> None:
                stepping["result"] = env.step(random_legal(observation, rng))

            thread = threading.Thread(target=move)
            thread.start()
            quitter.wait_for("stalled", 60 * UNIT)  # it has its turn, and player_0 waits for it
            quitter.kill()
            thread.join(30 * UNIT)
            assert not thread.is_alive(), "the waiting player hung"
            _, reward, terminated, truncated, info = stepping["result"]
            assert terminated and not truncated and reward == 1.0  # the player that left lost
            assert info[FORFEIT_INFO_KEY] == {"agent": "player_1", "cause": "left"}
            assert info[FAILURE_INFO_KEY] == "player_1 left the game (its session ended)"
            with pytest.raises(RemoteError, match="player_1 left the game"):
                env.reset()
            env.close()
        assert wait_until(lambda: len(server.served.games) == 0, 10 * UNIT)
        fresh = gym.make(CONNECT_FOUR, base_url=server.url)  # a new game on the same server
        try:
            assert play(fresh, seed=1)[2]
        finally:
            fresh.close()


def test_a_player_that_stalls_ends_the_game_after_the_turn_timeout() -> None:
    with served("classic/connect_four-v3") as server:
        with Player(server.url, "player_1", "t1", "--stall-after", "0", "--turn-timeout", "1") as staller:
            env = gym.make(CONNECT_FOUR, base_url=server.url, agent="player_0", game="t1", turn_timeout=1)
            staller.wait_for("joined", 60 * UNIT)
            observation, _ = env.reset(seed=0)
            started = time.monotonic()
            _, reward, terminated, truncated, info = env.step(random_legal(observation, np.random.default_rng(0)))
            assert terminated and not truncated and reward == 1.0  # the player that overran its turn lost
            assert info[FORFEIT_INFO_KEY] == {"agent": "player_1", "cause": "timeout"}
            assert info[FAILURE_INFO_KEY] == "player_1 did not act within the turn timeout (1 s)"
            assert time.monotonic() - started >= 1.0
            env.close()


def test_a_reset_waits_for_every_player_within_the_turn_timeout() -> None:
    with served("classic/connect_four-v3") as server:
        env = gym.make(CONNECT_FOUR, base_url=server.url, agent="player_0", game="alone", turn_timeout=0.5)
        try:
            with pytest.raises(RemoteError, match="player_1 did not ask for a reset within the turn timeout"):
                env.reset(seed=0)
        finally:
            env.close()


def test_seats_are_taken_once_and_a_game_token_is_needed_to_join() -> None:
    with served("classic/connect_four-v3") as server:
        host = gym.make(CONNECT_FOUR, base_url=server.url, agent="player_0", game="locked", game_token="s3cret")
        try:
            with pytest.raises(EnvCreationError, match="needs its token"):
                gym.make(CONNECT_FOUR, base_url=server.url, agent="player_1", game="locked")
            # Another token names another game: its session waits alone, the host's seat stays free.
            stranger = gym.make(CONNECT_FOUR, base_url=server.url, agent="player_1", game="locked", game_token="wrong")
            assert len(server.served.games) == 2
            stranger.close()
            with pytest.raises(EnvCreationError, match="'player_0' of game locked is taken"):
                gym.make(CONNECT_FOUR, base_url=server.url, agent="player_0", game="locked", game_token="s3cret")
            guest = gym.make(CONNECT_FOUR, base_url=server.url, agent="player_1", game="locked", game_token="s3cret")
            guest.close()
        finally:
            host.close()


def test_a_game_with_an_opponent_seat_and_a_named_policy() -> None:
    """A game joined by id whose other seat the server plays, with a policy it was given by name."""
    with served("classic/connect_four-v3", opponents="leftmost=tests.game_policies:leftmost_legal") as server:
        env = gym.make(
            CONNECT_FOUR, base_url=server.url, agent="player_1", game="o1", opponents={"player_0": "leftmost"}
        )
        try:
            observation, _ = env.reset(seed=0)
            # player_0 moved first, leftmost: the bottom-left cell is its (the first plane is ours).
            assert observation["observation"][5, 0, 1] == 1
            assert play(env, seed=0)[2]
        finally:
            env.close()
        with pytest.raises(EnvCreationError, match="no opponent called 'nobody'"):
            gym.make(CONNECT_FOUR, base_url=server.url, agent="player_1", opponents={"player_0": "nobody"})


@pytest.mark.slow
def test_parallel_games_gather_every_players_action() -> None:
    """Pistonball with two players in threads and the third piston the server's: each step waits for both."""
    with served("butterfly/pistonball-v6") as server:
        players = ["piston_0", "piston_1"]
        envs = {
            agent: gym.make(
                "openenv/Pistonball-v6",
                base_url=server.url,
                agent=agent,
                game="p1",
                opponents={f"piston_{i}": "random" for i in range(2, 20)},
            )
            for agent in players
        }
        steps: dict[str, int] = {}

        def run(agent: str) -> None:
            env = envs[agent]
            env.reset(seed=0)
            count, done = 0, False
            while not done and count < 15:
                _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
                done, count = terminated or truncated, count + 1
            steps[agent] = count

        threads = [threading.Thread(target=run, args=(agent,)) for agent in players]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120 * UNIT)
            assert steps == {"piston_0": 15, "piston_1": 15}
        finally:
            for env in envs.values():
                env.close()


def test_an_openenv_client_plays_one_seat_of_a_served_pettingzoo_env() -> None:
    """What an OpenEnv client sees on /ws: one agent's single-agent env, the other seat the server's."""
    from openenv.core.generic_client import GenericEnvClient  # a test dependency: openenv-gym[test]

    from openenv_gym.providers import ProcessProvider
    from tests.utils import run_async

    async def session(url: str) -> tuple[Any, int]:
        async with GenericEnvClient(base_url=url) as client:
            result = await client.reset(seed=4)
            moves = 0
            while not result.done:
                mask = result.observation["action_mask"]  # a Dict observation travels as its fields
                result = await client.step({"action": mask.index(1)})
                moves += 1
            return result, moves

    with ProcessProvider("classic/connect_four-v3") as url:
        final, moves = run_async(session(url), timeout=60 * UNIT)
    assert final.reward in (-1.0, 0.0, 1.0) and moves >= 4


def test_make_vec_of_a_pettingzoo_id_is_a_vector_of_seats() -> None:
    """gym.make_vec: each sub-env one seat, in a private game of its own against the server's opponent."""
    envs = gym.make_vec(CONNECT_FOUR, num_envs=3)
    try:
        observations, _ = envs.reset(seed=0)
        assert observations["action_mask"].shape == (3, 7)
        ended = np.zeros(3, bool)
        for _ in range(30):  # the leftmost legal column every move: some games end within 30 moves
            actions = np.array([np.flatnonzero(mask)[0] for mask in observations["action_mask"]])
            observations, rewards, terminated, truncated, _ = envs.step(actions)
            assert not truncated.any()
            ended |= terminated
            assert set(rewards.tolist()) <= {-1.0, 0.0, 1.0}
        assert ended.any()
    finally:
        envs.close()
