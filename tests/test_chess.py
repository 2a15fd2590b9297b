"""openenv/Chess-v0: chess as tools for an LLM agent, against the server's opponent or another client."""

from __future__ import annotations

import contextlib
import json
import random
import re
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  registers the openenv/ ids
from openenv_gym.envs.chess import ChessEnvironment, TextChessEnv
from openenv_gym.pettingzoo import make_aec
from openenv_gym.server.runner import load_factory
from tests.utils import UNIT, running_server

CHESS = "openenv/Chess-v0"

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "The old environment creation API", DeprecationWarning)
    from pettingzoo.test import api_test


@contextlib.contextmanager
def served() -> Iterator[str]:
    with running_server(ChessEnvironment) as server:
        yield server.url


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def legal_moves(text: str) -> list[str]:
    found = re.search(r"your legal moves: (.*)", text)
    assert found, text
    return found.group(1).split()


def play_randomly(env: gym.Env[Any, Any], seed: int, **reset: Any) -> tuple[float, int, bool, bool, str]:
    rng = random.Random(seed)
    text, _ = env.reset(seed=seed, **reset)
    total, calls, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        text, reward, terminated, truncated, _ = env.step(call("make_move", move=rng.choice(legal_moves(text))))
        total, calls = total + reward, calls + 1
    return total, calls, terminated, truncated, text


def test_a_game_against_the_servers_random_mover_through_the_tool_face() -> None:
    env = gym.make(CHESS)
    try:
        text, info = env.reset(seed=0)
        assert text.startswith("You play white")
        assert sorted(tool["function"]["name"] for tool in info["tools"]) == ["make_move", "resign", "show_board"]
        total, _, terminated, truncated, last = play_randomly(env, seed=1)
        assert terminated or truncated
        assert total in (-1.0, 0.0, 1.0)
        assert "game over" in last or "limit" in last
    finally:
        env.close()


def test_an_illegal_move_is_an_error_result_and_the_same_side_moves_again() -> None:
    env = gym.make(CHESS)
    try:
        env.reset(seed=0)
        # Four in a row at most: the fifth would forfeit the game (tests/reward_hacking/test_chess.py).
        for bads in (("e5", "Ke2", "e4 e5", "resign e4"), ("g1g4", "x" * 32, "é4")):
            for bad in bads:
                text, reward, terminated, truncated, info = env.step(call("make_move", move=bad))
                assert text.startswith("illegal move"), (bad, text)
                assert "error" in info and reward == 0.0 and not terminated and not truncated
            text, *_ = env.step(call("make_move", move="e2e4" if bads[0] == "e5" else "b1c3"))  # UCI works too
            assert "your opponent played" in text and "your legal moves" in text
        board = env.step(call("show_board"))[0]
        assert board.startswith("FEN: ") and " w " in board.splitlines()[0]  # white to move again
    finally:
        env.close()


def test_resigning_pays_minus_one_once_and_nothing_after() -> None:
    env = gym.make(CHESS)
    try:
        env.reset(seed=0)
        text, reward, terminated, truncated, _ = env.step(call("resign"))
        assert (reward, terminated, truncated) == (-1.0, True, False)
        assert "white resigned" in text
        with pytest.raises(Exception, match="ended"):
            env.step(call("make_move", move="e4"))  # the session refuses a step after the end
    finally:
        env.close()


def test_black_against_the_greedy_mover() -> None:
    env = gym.make(CHESS, agent="black", opponents={"white": "greedy"})
    try:
        text, _ = env.reset(seed=3)
        assert text.startswith("You play black") and "your opponent played" in text
        total, *_ = play_randomly(env, seed=4)
        assert total in (-1.0, 0.0, 1.0)
    finally:
        env.close()


def test_a_game_by_id_seats_the_first_agent_when_none_is_named() -> None:
    """As docs/multi-agent.md says: game= without agent= takes the env's first seat (white)."""
    env = gym.make(CHESS, game="c1", opponents={"black": "random"})
    try:
        text, _ = env.reset(seed=0)
        assert text.startswith("You play white")
        text, *_ = env.step(call("make_move", move="e2e4"))
        assert "your opponent played" in text
    finally:
        env.close()


def test_two_clients_play_each_other() -> None:
    """Self-play: two clients, one per side, in one game by id; each move waits for the other side's."""
    with served() as url:
        results: dict[str, tuple[float, int, bool, bool, str]] = {}

        def player(side: str, seed: int) -> None:
            env = gym.make(CHESS, base_url=url, agent=side, game="self-play", call_timeout=120)
            try:
                results[side] = play_randomly(env, seed)
            finally:
                env.close()

        threads = [threading.Thread(target=player, args=(side, i)) for i, side in enumerate(("white", "black"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(240 * UNIT)
        assert set(results) == {"white", "black"}
        white, black = results["white"], results["black"]
        assert white[0] + black[0] == 0  # one wins what the other loses, or both draw
        assert abs(white[1] - black[1]) <= 1  # they took turns
        assert (white[2], white[3]) == (black[2], black[3])


def test_a_game_cut_at_its_turn_limit_is_a_draw_for_both() -> None:
    env = TextChessEnv(max_turns=6)
    env.reset()
    for move in ("Nf3", "Nf6", "junk", "Ng1", "junk", "junk", "Ng8", "junk", "Nf3"):
        env.step(move)
    assert not any(env.truncations.values())  # five moves: illegal ones do not count
    env.step("Nf6")
    assert all(env.truncations.values()) and env._cumulative_rewards == {"white": 0.0, "black": 0.0}


def test_the_text_game_passes_pettingzoos_api_test_locally_and_remotely() -> None:
    """TextChessEnv is a PettingZoo AEC env, served like any: make_aec of its module:fn."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        api_test(TextChessEnv(), num_cycles=50)
    with running_server(load_factory("openenv_gym.envs.chess:TextChessEnv")) as server:
        env = make_aec(base_url=server.url)
        try:
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                api_test(env, num_cycles=50)
            env.reset()
            env.step("e4")
            assert env.infos["black"] == {"opponent_move": "e4"}
        finally:
            env.close()


@pytest.mark.slow
def test_a_game_through_the_mcp_bridge_illegal_moves_included() -> None:
    """``openenv-gym mcp openenv/Chess-v0``: reset, moves (an illegal one an error result), resign."""
    from openenv_gym.integrations.mcp import DONE_KEY, REWARD_KEY
    from tests.test_mcp_bridge import SESSION_TIMEOUT, bridge, text
    from tests.test_mcp_bridge import call as mcp_call
    from tests.utils import run_async

    async def session() -> tuple[list[str], Any, Any, Any, Any]:
        async with bridge(CHESS) as client:
            listed = sorted(tool.name for tool in (await client.list_tools()).tools)
            started = await mcp_call(client, "reset", {})  # the bridge offers reset without options
            illegal = await mcp_call(client, "make_move", {"move": "Qh5"})
            moved = await mcp_call(client, "make_move", {"move": "e4"})
            resigned = await mcp_call(client, "resign", {})
            return listed, started, illegal, moved, resigned

    listed, started, illegal, moved, resigned = run_async(session(), timeout=2 * SESSION_TIMEOUT)
    assert listed == ["make_move", "reset", "resign", "show_board"]
    assert "You play white" in text(started)
    assert illegal.is_error and text(illegal).startswith("illegal move")
    assert not moved.is_error and "your opponent played" in text(moved)
    assert resigned.meta[REWARD_KEY] == -1.0 and resigned.meta[DONE_KEY] is True


def test_the_self_play_example_plays_a_game_between_two_chat_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """``examples/chess_self_play.py`` with its stand-in responders: two clients, one game, through ChatMessages."""
    import importlib

    from tests.utils import REPO_ROOT

    monkeypatch.syspath_prepend(str(REPO_ROOT / "examples"))
    example = importlib.import_module("chess_self_play")
    with served() as url:
        responders = {"white": example.random_legal_responder(1), "black": example.random_legal_responder(2)}
        results = example.self_play(url, responders, games=1)
    assert len(results["white"]) == len(results["black"]) == 1
    assert results["white"][0] + results["black"][0] == 0
