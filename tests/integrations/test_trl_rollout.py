"""TRL's GRPOTrainer on openenv-gym envs, the rollout_func face: Coding-v0's episodes stepped from the
trainer's completions, and the GRPO example's arguments (the environment_factory face is in test_trl.py).

Real servers (the process provider), the real trainer (TRL 1.x), and a tiny model and tokenizer
made here (no download).
"""

from __future__ import annotations

import subprocess
import sys
from statistics import mean
from typing import Any

import pytest
from trl import GRPOTrainer

from openenv_gym import make_async
from openenv_gym.integrations.trl import env_reward, extract_code, rollout_func
from tests.envs.coding_reference import SOLUTIONS
from tests.integrations.test_trl import (
    OTHER_TASK,
    SOLUTION,
    TASK,
    TRL_DEPRECATION,
    WRONG,
    _quiet_trl,  # noqa: F401  a fixture: TRL's experimental-API warning off
    chat_tokenizer,
    grpo_config,
    no_servers_left,  # noqa: F401  a fixture
)
from tests.integrations.tiny_lm import overfit, tiny_model
from tests.utils import REPO_ROOT, UNIT, run_async

# rollout_func on Coding-v0 --------------------------------------------------------------------------


def test_extract_code_and_env_reward():
    assert extract_code("<think>hmm ```no```</think>Sure:\n```py\nx = 1\n```") == "x = 1\n"
    assert extract_code("x = 2") == "x = 2"
    assert env_reward(["a", "b"], env_reward=[1, None]) == [1.0, None]
    with pytest.raises(KeyError, match="rollout_func"):
        env_reward(["a"])


def test_a_rollout_steps_every_completion_on_its_rows_task(no_servers_left):  # noqa: F811
    rollout = rollout_func("openenv/Coding-v0", action=extract_code, reward="fraction")  # a partial score pays
    try:
        rows = rollout.dataset([{"options": {"task_id": TASK}}, {"options": {"task_id": OTHER_TASK}}, {"seed": 5}])
        assert rows.column_names == ["prompt", "task_id", "seed"]
        assert [row["task_id"] for row in rows] == [TASK, OTHER_TASK, None]
        assert "digit_square_sum" in rows[0]["prompt"][-1]["content"]
        prompts = [row["prompt"] for row in rows]
        texts = [f"Here:\n```python\n{SOLUTION}```", SOLUTIONS[OTHER_TASK], "x" * 70000, WRONG, "def broken("]
        out = rollout.run([*prompts, prompts[0], prompts[0]], texts)
        assert out["env_reward"][:2] == [1.0, 1.0] and out["env_terminated"][:2] == [True, True]
        assert out["env_error"][2].startswith("invalid_action") and out["env_reward"][2] == 0.0  # too long to send
        assert 0.0 < out["env_reward"][3] < 1.0 and not out["env_terminated"][3]  # some hidden tests pass
        assert out["env_reward"][4] == 0.0 and "SyntaxError" in out["env_observation"][4]["stderr"]
        assert out["env_error"][:2] + out["env_error"][3:] == [None] * 4
        assert rollout.sessions_in_use == 0  # every episode's session is back in the pool
        with pytest.raises(KeyError, match="dataset"):
            rollout.run([[{"role": "user", "content": "unknown"}]], ["x"])
    finally:
        rollout.close()


@pytest.mark.slow
def test_an_episode_whose_session_is_lost_gets_no_reward(no_servers_left):  # noqa: F811
    """A step that outlives the client's call timeout loses the session: no reward (TRL leaves the row out)."""
    # Room for a second session on the server: the lost one stays open there until its call ends
    # (the sandbox's 10 s), and a server at max_sessions refuses the pool's replacement meanwhile.
    rollout = rollout_func("openenv/Coding-v0", call_timeout=5.0, sessions_per_server=2)
    try:
        (row,) = rollout.dataset([{"options": {"task_id": TASK}}])
        out = rollout.run([row["prompt"]], ["import time\ntime.sleep(60)\n"])  # the sandbox stops it at 10 s
        assert out["env_reward"] == [None] and out["env_error"][0].startswith("session_lost")
        assert env_reward([None], **out) == [None]
        assert rollout.sessions_in_use == 0
        assert rollout.run([row["prompt"]], [SOLUTION])["env_reward"] == [1.0]  # on a new session
    finally:
        rollout.close()


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_grpo_with_rollout_func_scores_completions_with_the_env(tmp_path, no_servers_left):  # noqa: F811
    """GRPOTrainer with our rollout_func: the completions are stepped in the env, its rewards are logged."""
    rollout = rollout_func("openenv/Coding-v0", action=extract_code)
    try:
        rows = rollout.dataset([{"options": {"task_id": TASK}}, {"options": {"task_id": OTHER_TASK}}])
        completion = f"```python\n{SOLUTION}```<|im_end|>"
        tokenizer = chat_tokenizer([row["prompt"] for row in rows], completion)

        seen: list[list[tuple[str, str, float | None, str | None]]] = []

        def record(completions: list[Any], task_id: list[str], env_reward: list[Any], env_error: list[Any], **_: Any):
            """The env's fields (and the dataset's columns) reach reward functions as keyword arguments."""
            texts = [completion[0]["content"] for completion in completions]
            seen.append(list(zip(task_id, texts, env_reward, env_error, strict=True)))
            return [None] * len(completions)

        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            reward_funcs=[env_reward, record],
            args=grpo_config(tmp_path, per_device_train_batch_size=4),
            train_dataset=rows,
            processing_class=tokenizer,
            rollout_func=rollout,
        )
        # Teach the model the solution of the first task only: the second task's tests fail it.
        rendered = tokenizer.apply_chat_template(
            rows[0]["prompt"], add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
        assert overfit(trainer.model, rendered, tokenizer.encode(completion, add_special_tokens=False)) <= 0.01
        trainer.train()

        logged = [entry for entry in trainer.state.log_history if "rewards/env_reward/mean" in entry]
        assert len(logged) == len(seen) == 2
        for entry, step in zip(logged, seen):
            assert sorted(task for task, *_ in step) == [OTHER_TASK, OTHER_TASK, TASK, TASK]
            assert entry["rewards/env_reward/mean"] == pytest.approx(mean(reward for _, _, reward, _ in step))
        rewards = [reward for step in seen for _, _, reward, _ in step]
        assert 1.0 in rewards  # the env scored the taught solution
        assert rollout.sessions_in_use == 0

        # Each completion on a fresh session: the env gives the reward the trainer logged.
        async def replay() -> list[float]:
            env = await make_async("openenv/Coding-v0")
            try:
                replayed = []
                for step in seen:
                    for task, text, _, error in step:
                        action = extract_code(text)
                        if error is not None:  # not sent: the env's action space refuses it
                            assert error.startswith("invalid_action") and not env.action_space.contains(action)
                            replayed.append(0.0)
                            continue
                        await env.reset(options={"task_id": task})
                        replayed.append((await env.step(action))[1])
                return replayed
            finally:
                await env.aclose()

        assert run_async(replay(), 120 * UNIT) == pytest.approx(rewards)
    finally:
        rollout.close()


# The example ----------------------------------------------------------------------------------------


def test_the_grpo_example_parses_its_arguments():
    sys.path.insert(0, str(REPO_ROOT / "examples"))
    try:
        import grpo_coding
    finally:
        sys.path.remove(str(REPO_ROOT / "examples"))
    args = grpo_coding.parse_args(["--model", "some/model", "--tasks", "easy", "--max-steps", "3"])
    assert (args.model, args.max_steps) == ("some/model", 3)
    assert grpo_coding.parse_args([]).model == "Qwen/Qwen3-0.6B"
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "grpo_coding.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "--model" in result.stdout and "CodingTools" in result.stdout
