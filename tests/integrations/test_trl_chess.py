"""openenv/Chess-v0 in TRL: ``environment_factory`` plays one side against the server's opponent,
and GRPOTrainer scores its rollouts with the game's result."""

from __future__ import annotations

import json
from statistics import mean
from typing import Any

import pytest
from datasets import Dataset
from trl import GRPOTrainer

from openenv_gym.errors import ToolFailedError
from openenv_gym.integrations.trl import ToolEnvironment, environment_factory
from tests.integrations.test_trl import (
    TRL_DEPRECATION,
    _quiet_trl,  # noqa: F401  a fixture: TRL's experimental-API warning off
    chat_tokenizer,
    grpo_config,
    no_servers_left,  # noqa: F401  a fixture
    teach,
    trl_tools,
)
from tests.integrations.tiny_lm import tiny_model


def test_a_game_through_environment_factory(no_servers_left: None) -> None:  # noqa: F811
    Chess = environment_factory("openenv/Chess-v0")
    try:
        env = Chess()
        prompt = env.reset(prompt=[{"role": "user", "content": "Win this game."}], seed=0)
        assert "You play white" in prompt and "your legal moves" in prompt
        with pytest.raises(ToolFailedError, match="illegal move"):
            env.make_move(move="Ke2")
        assert "your opponent played" in env.make_move(move="e4")
        assert "game over: white resigned" in env.resign()
        assert env.done and env.get_reward() == -1.0
        with pytest.raises(ToolFailedError) as over:
            env.make_move(move="d4")  # not forwarded: it would be a move after the end
        assert over.value.error_type == "episode_over"
    finally:
        Chess.close()


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_grpo_trains_on_chess_against_the_servers_opponent(tmp_path: Any, no_servers_left: None) -> None:  # noqa: F811
    """A tiny model taught to resign plays through the trainer: a rollout that resigns scores -1,
    the reward the game pays, and the trainer logs the games' rewards."""
    Chess = environment_factory("openenv/Chess-v0")
    try:
        row = {"prompt": [{"role": "user", "content": ""}], "seed": 0}
        probe = Chess()
        env_prompt = probe.reset(**row)
        tools = trl_tools(probe)
        completion = f"<tool_call>\n{json.dumps({'name': 'resign', 'arguments': {}})}\n</tool_call><|im_end|>"
        tokenizer = chat_tokenizer([[{"role": "user", "content": env_prompt}]], completion, tools)
        rewards: list[list[float]] = []

        def record(environments: list[ToolEnvironment], **kwargs: Any) -> list[None]:
            rewards.append([env.get_reward() for env in environments])
            return [None] * len(environments)

        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            reward_funcs=record,
            args=grpo_config(tmp_path, max_tool_calling_iterations=2),
            train_dataset=Dataset.from_list([row] * 4),
            processing_class=tokenizer,
            environment_factory=Chess,
        )
        assert teach(trainer, tokenizer, env_prompt, tools, completion) <= 0.01
        trainer.train()
        key = f"rewards/{Chess.__name__}/mean"
        logged = [entry[key] for entry in trainer.state.log_history if key in entry]
        assert len(logged) == len(rewards) == 2
        for entry, step in zip(logged, rewards):
            assert entry == pytest.approx(mean(step))
        assert any(reward == -1.0 for step in rewards for reward in step)  # the taught call: resigning pays -1
        assert all(reward in (-1.0, 0.0) for step in rewards for reward in step)  # no move can win at once
        del trainer, probe, tools
    finally:
        Chess.close()
