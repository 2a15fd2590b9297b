"""Task sampling in TRL's GRPOTrainer with a tiny model: the share of GRPO groups with zero reward variance.

The env is ``openenv/ReasoningGym-v0`` on its ``gcd`` generator (25 tasks). A tiny model (made
here, no download) is taught part of the way to the answers of a third of the tasks, so that
sampling at temperature 1 answers those right some of the time and the others almost never:
the U shape of a small model against a task set. Training then runs with a learning rate of 0
(the policy stays as taught, so only the sampler differs) through ``rollout_func(sampler=...)``,
once with ``UniformSampler`` and once with ``PassRateCurriculum``, over the same number of
groups; a group is zero-variance when its completions' env rewards are all equal. It prints each
seed's two shares and their ratio (target, printed and never asserted: the curriculum's share at
most 0.4x uniform's, as benchmarks/curriculum.py measures on a synthetic policy). Run from the
repository root::

    .venv/bin/python benchmarks/curriculum_grpo.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.integrations.tiny_lm

import openenv_gym
from openenv_gym.envs.reasoning import ReasoningGymEnvironment
from openenv_gym.integrations.trl import env_reward, rollout_func
from openenv_gym.task_sampling import PassRateCurriculum, UniformSampler
from tests.integrations.tiny_lm import overfit, tiny_model, tiny_tokenizer

GENERATORS = ["gcd"]


def taught_model(rows: list[dict[str, Any]], answers: dict[str, str], taught: list[str], tokenizer: Any) -> Any:
    """A tiny model that answers the ``taught`` tasks right part of the time (loss about 0.7)."""
    model = tiny_model(tokenizer)
    prompts = {row["task_id"]: row["prompt"] for row in rows}
    for _ in range(3):  # round robin: teaching one task must not undo the others
        for task_id in taught:
            rendered = tokenizer.apply_chat_template(
                prompts[task_id], add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
            completion = tokenizer.encode(f"{answers[task_id]}<|im_end|>", add_special_tokens=False)
            overfit(model, rendered, completion, target_loss=0.7, max_steps=400)
    return model


def zero_variance_share(
    sampler: Any, rows: Any, model: Any, tokenizer: Any, steps: int, seed: int
) -> tuple[float, float]:
    """Train ``steps`` steps (learning rate 0) with ``sampler`` picking the groups' tasks; the share
    of groups whose env rewards are all equal, and TRL's logged mean of frac_reward_zero_std."""
    from trl import GRPOConfig, GRPOTrainer

    groups: list[list[float]] = []

    def record(completions: list[Any], env_reward: list[Any], **_: Any) -> list[None]:
        for start in range(0, len(env_reward), 4):
            groups.append([float(r) for r in env_reward[start : start + 4] if r is not None])
        return [None] * len(completions)

    rollout = rollout_func("openenv/ReasoningGym-v0", generators=GENERATORS, sampler=sampler)
    try:
        with tempfile.TemporaryDirectory() as folder:
            config = GRPOConfig(
                output_dir=folder,
                report_to="none",
                use_cpu=True,
                max_steps=steps,
                per_device_train_batch_size=8,
                num_generations=4,
                max_completion_length=8,
                learning_rate=0.0,
                logging_steps=1,
                save_strategy="no",
                disable_tqdm=True,
                seed=seed,
                activation_checkpointing=False,
            )
            trainer = GRPOTrainer(
                model=model,
                reward_funcs=[env_reward, record],
                args=config,
                train_dataset=rows,
                processing_class=tokenizer,
                rollout_func=rollout,
            )
            with contextlib.redirect_stdout(io.StringIO()):  # the trainer prints each step's logs
                trainer.train()
            logged = [e["frac_reward_zero_std"] for e in trainer.state.log_history if "frac_reward_zero_std" in e]
    finally:
        rollout.close()
    zero = sum(1 for group in groups if group and max(group) == min(group))
    return zero / len(groups), statistics.fmean(float(value) for value in logged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per run (2 groups of 4 each)")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    warnings.filterwarnings("ignore")
    import datasets

    datasets.disable_progress_bars()
    local = ReasoningGymEnvironment(generators=GENERATORS)
    answers = {task.task_id: str(task.answer) for task in local.task_set.tasks}
    ids = openenv_gym.tasks("openenv/ReasoningGym-v0", generators=GENERATORS).ids()
    builder = rollout_func("openenv/ReasoningGym-v0", generators=GENERATORS)
    try:
        rows = builder.dataset([{"options": {"task_id": task_id}} for task_id in ids])
    finally:
        builder.close()
    tokenizer = tiny_tokenizer([str(row["prompt"]) for row in rows] + [f"{a}<|im_end|>" for a in answers.values()])
    ratios = []
    for seed in range(args.seeds):
        taught = ids[seed::3]  # a third of the tasks
        model = taught_model(list(rows), answers, taught, tokenizer)
        uniform, uniform_logged = zero_variance_share(
            UniformSampler(ids, seed=seed), rows, model, tokenizer, args.steps, seed
        )
        curriculum, curriculum_logged = zero_variance_share(
            PassRateCurriculum(ids, seed=seed), rows, model, tokenizer, args.steps, seed
        )
        ratio = curriculum / uniform if uniform else math.nan
        ratios.append(ratio)
        print(
            f"seed {seed}: zero-variance groups uniform {uniform:.3f} (TRL's frac_reward_zero_std {uniform_logged:.3f}), "
            f"curriculum {curriculum:.3f} ({curriculum_logged:.3f}); ratio {ratio:.2f}x"
        )
    print(f"curriculum / uniform: median {statistics.median(ratios):.2f}x (target <= 0.4x)")


if __name__ == "__main__":
    main()
