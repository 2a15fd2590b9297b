"""Two LLM clients play chess against each other on one server (``openenv/Chess-v0`` self-play).

Each side is its own client (here, a thread each; they could be two machines) that joins the same
game by id and sees the game as a chat (``ChatMessages``): the board as the user's message, then
its tool calls and their results, with the tools for the chat template's ``tools=``. A
``Responder`` turns the chat so far into the next tool call:

* ``--model PATH``: a chat model from a local directory (``transformers``), which answers with a
  tool call as JSON; a reply that is no tool call, or an illegal move, is the env's error
  result and the model tries again;
* without it, a stand-in that reads the legal moves from the last message and picks one at
  random, so the example runs anywhere (no weights to download).

Run from the repository root::

    .venv/bin/python examples/chess_self_play.py               # two stand-ins, one game
    .venv/bin/python examples/chess_self_play.py --model ./my-chat-model --games 2
"""

from __future__ import annotations

import argparse
import json
import random
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

import openenv_gym  # noqa: F401  registers openenv/Chess-v0
from openenv_gym.providers import ProcessProvider
from openenv_gym.wrappers import ChatMessages

#: What answers a chat with the next tool call (as JSON text).
Responder = Callable[[Sequence[dict[str, str]], list[dict[str, Any]]], str]


def random_legal_responder(seed: int) -> Responder:
    """A stand-in for a model: a random legal move, read from the chat's last message."""
    rng = random.Random(seed)

    def respond(messages: Sequence[dict[str, str]], tools: list[dict[str, Any]]) -> str:
        found = re.search(r"your legal moves: (.*)", messages[-1]["content"])
        if found is None:
            return json.dumps({"name": "show_board", "arguments": {}})
        return json.dumps({"name": "make_move", "arguments": {"move": rng.choice(found.group(1).split())}})

    return respond


def model_responder(path: str) -> Responder:
    """A local chat model's reply: the chat rendered with the tools, then generated greedily."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)

    def respond(messages: Sequence[dict[str, str]], tools: list[dict[str, Any]]) -> str:
        inputs = tokenizer.apply_chat_template(
            list(messages), tools=tools, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        output = model.generate(**inputs, max_new_tokens=64, do_sample=False)
        reply = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        found = re.search(r"\{.*\}", reply, re.DOTALL)  # the tool call's JSON, wherever the template puts it
        return found.group(0) if found else reply

    return respond


def play(url: str, side: str, game: str, respond: Responder, games: int, results: dict[str, list[float]]) -> None:
    """One client: ``side``'s seat in ``game``, for ``games`` games; its returns go to ``results``."""
    env = ChatMessages(gym.make("openenv/Chess-v0", base_url=url, agent=side, game=game, call_timeout=600))
    try:
        for index in range(games):
            messages, info = env.reset(seed=index)
            done, total = False, 0.0
            while not done:
                messages, reward, terminated, truncated, info = env.step(respond(messages, info.get("tools", [])))
                total += float(reward)
                done = terminated or truncated
            results[side].append(total)
            print(f"{side}: game {index + 1} over, return {total:+g}: {messages[-1]['content'].splitlines()[0]}")
    finally:
        env.close()


def self_play(url: str, responders: dict[str, Responder], games: int = 1) -> dict[str, list[float]]:
    """Both sides' clients, one thread each, in one game by id; their returns per game."""
    results: dict[str, list[float]] = {"white": [], "black": []}
    threads = [
        threading.Thread(target=play, args=(url, side, "self-play", responders[side], games, results))
        for side in ("white", "black")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a local chat model's directory for both sides (default: a random stand-in)")
    parser.add_argument("--games", type=int, default=1)
    args = parser.parse_args()
    if args.model:
        model = model_responder(args.model)
        responders = {"white": model, "black": model}
    else:
        responders = {"white": random_legal_responder(1), "black": random_legal_responder(2)}
    with ProcessProvider("openenv_gym.envs.chess:ChessEnvironment") as url:
        results = self_play(url, responders, args.games)
    print(f"white's returns: {results['white']}, black's: {results['black']}")


if __name__ == "__main__":
    main()
