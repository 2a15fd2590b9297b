"""Train an LLM with TRL's GRPO on openenv/CodingTools-v0: it calls run_python, run_tests and submit.

``.venv/bin/python examples/grpo_coding.py --model Qwen/Qwen3-0.6B`` (``pip install
'openenv-gym[trl]'``; the model is downloaded from the Hub). Each rollout is one episode of the
Coding tools env: the task prompt is appended to the dataset's user message, the model calls
tools (TRL parses the calls and runs them on the env's servers, one session per rollout from a
shared pool), and the episode's reward is the env's: with ``reward="improvement"`` the sum over
the episode's submissions is the best fraction of hidden tests passed. The defaults fit one
24 GB GPU with a 0.6B model (bf16, activation checkpointing); ``--vllm`` generates with vLLM on
the same GPU.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

SYSTEM_PROMPT = (
    "You are a careful Python programmer. Solve the task with the tools: try your code with "
    "run_tests, then submit the whole program. Answer only with tool calls."
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The example's options (``argv`` defaults to the command line)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default="Qwen/Qwen3-0.6B", help="a causal LM on the Hub with a tool-calling chat template"
    )
    parser.add_argument(
        "--tasks", nargs="+", default=["easy", "medium"], choices=["easy", "medium", "hard"], help="task difficulties"
    )
    parser.add_argument("--max-steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=8, help="rollouts per device and step")
    parser.add_argument("--num-generations", type=int, default=8, help="rollouts per task in a GRPO group")
    parser.add_argument(
        "--max-completion-length", type=int, default=2048, help="tokens of a rollout, tool results included"
    )
    parser.add_argument("--max-tool-calls", type=int, default=6, help="tool-calling turns of a rollout")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--vllm", action="store_true", help="generate with vLLM, colocated on the training GPU")
    parser.add_argument("--output-dir", default="grpo-coding-tools")
    parser.add_argument("--report-to", default="none", help="trackio, wandb, tensorboard... or none")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    # Imported here, so that --help (and this module's import) needs neither torch nor TRL.
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv_gym.envs.coding import task_ids
    from openenv_gym.integrations.trl import environment_factory

    # One row per task: TRL's reset(**row) passes task_id to the env, whose prompt is appended
    # to the (empty) user message.
    rows = [
        {"prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ""}], "task_id": task}
        for task in task_ids(difficulties=args.tasks)
    ]
    CodingTools = environment_factory("openenv/CodingTools-v0", reward="improvement", difficulties=args.tasks)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        bf16=True,
        activation_checkpointing=True,
        use_vllm=args.vllm,
        vllm_mode="colocate",
        # Qwen3 thinks at length before each call unless told not to; the completion budget is
        # better spent on tool calls and their results.
        chat_template_kwargs={"enable_thinking": False},
        logging_steps=1,
        log_completions=True,
        report_to=args.report_to,
        seed=args.seed,
    )
    try:
        trainer = GRPOTrainer(
            model=args.model,
            args=config,
            train_dataset=Dataset.from_list(rows),
            environment_factory=CodingTools,  # its get_reward() is the reward
        )
        trainer.train()
        trainer.save_model(args.output_dir)
    finally:
        CodingTools.close()


if __name__ == "__main__":
    main()
