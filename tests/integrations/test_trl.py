"""TRL's GRPOTrainer on openenv-gym envs: environment_factory on CodingTools-v0 and rollout_func on Coding-v0.

Real servers (the process provider), the real trainer (TRL 1.x), and a tiny model and tokenizer
made here (no download). A random model neither calls a tool nor writes a program, so the
training tests first teach it one completion; what the trainer then logs is checked against what
the env computes for the same calls on a fresh session.
"""

from __future__ import annotations

import gc
import inspect
import json
import os
import signal
import subprocess
import sys
from statistics import mean
from typing import Any, Literal

import pytest
from datasets import Dataset
from transformers.utils import get_json_schema
from trl import GRPOConfig, GRPOTrainer

from openenv_gym import make_async
from openenv_gym.integrations.trl import (
    ToolCall,
    ToolEnvironment,
    ToolFailedError,
    annotation_of,
    environment_factory,
    tool_method,
)
from openenv_gym.server import Environment, Observation, State, tool
from tests.envs.coding_reference import SOLUTIONS
from tests.integrations.tiny_lm import overfit, tiny_model, tiny_tokenizer
from tests.utils import REPO_ROOT, UNIT, own_server_pids, pid_alive, run_async, running_server, wait_until

TASK = "digit-square-sum"
OTHER_TASK = "alternate-case"
SOLUTION = SOLUTIONS[TASK].lstrip()
WRONG = "def digit_square_sum(n):\n    return n\n"


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch):
    """TRL warns that environment_factory and rollout_func are experimental; the suite turns warnings into errors."""
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture
def no_servers_left():
    """Fails the test if a server it started is still running afterwards."""
    before = own_server_pids()
    yield
    assert wait_until(lambda: not (own_server_pids() - before), 15 * UNIT), own_server_pids() - before


def trl_tools(instance: Any) -> list[Any]:
    """The tool methods TRL takes from an environment instance: every public function of its class."""
    return [
        getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def expressible(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as far as a Python signature and docstring can carry it (what TRL can show)."""
    kept = ("type", "items", "enum", "description", "additionalProperties")
    properties = {
        name: {key: value for key, value in prop.items() if key in kept} for name, prop in schema["properties"].items()
    }
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        out["required"] = schema["required"]
    return out


def chat_tokenizer(conversations: list[list[dict[str, Any]]], completion: str, tools: list[Any] | None = None):
    """A tiny tokenizer trained on these conversations as Qwen3's template renders them, and on ``completion``."""
    draft = tiny_tokenizer([json.dumps(conversations), completion])
    rendered = [
        draft.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        for messages in conversations
    ]
    return tiny_tokenizer([*rendered, completion] * 4)


#: TRL 1.16 reads ``model.is_gradient_checkpointing``, which transformers 5.24 deprecates: its warning, not ours.
TRL_DEPRECATION = "ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"


def teach(trainer: GRPOTrainer, tokenizer: Any, prompt: str, tools: list[Any], completion: str) -> float:
    """Overfit the trainer's model to answer ``prompt`` (rendered exactly as the trainer renders it) with ``completion``; the final loss."""
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}],
        tools=tools,
        chat_template=trainer.chat_template,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )["input_ids"]
    return overfit(trainer.model, rendered, tokenizer.encode(completion, add_special_tokens=False))


def grpo_config(tmp_path, **overrides: Any) -> GRPOConfig:
    """Two tiny steps on the CPU, two generations a prompt, nothing reported or saved."""
    options: dict[str, Any] = {
        "output_dir": str(tmp_path),
        "report_to": "none",
        "use_cpu": True,
        "max_steps": 2,
        "per_device_train_batch_size": 2,
        "num_generations": 2,
        "max_completion_length": 256,
        "logging_steps": 1,
        "save_strategy": "no",
        "disable_tqdm": True,
        "seed": 0,
        # Named so, or transformers warns that the old name (gradient_checkpointing) is deprecated.
        "activation_checkpointing": False,
        **overrides,
    }
    return GRPOConfig(**options)


# Tool methods from input schemas ------------------------------------------------------------------


class PickObservation(Observation):
    prompt: str = ""


class PickEnvironment(Environment[Any, PickObservation, State]):
    """A tool with parameters of every JSON type a Python signature carries, to check TRL's view of them."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> PickObservation:
        return PickObservation(prompt="Pick something.")

    def step(self, action: Any) -> PickObservation:
        raise NotImplementedError("driven by its tools")

    @property
    def state(self) -> State:
        return self._state

    @tool
    def pick(
        self,
        color: Literal["red", "green"],
        count: int,
        sizes: list[int],
        weights: dict[str, float],
        ratio: float = 0.5,
        loud: bool = False,
    ) -> str:
        """Pick things of a color.

        The second paragraph says more.

        Args:
            color: the color to pick.
            count: how many to pick.
            sizes: the sizes allowed.
            weights: a weight per name.
            ratio: the share to keep.
            loud: whether to shout.
        """
        return json.dumps(
            {"color": color, "count": count, "sizes": sizes, "weights": weights, "ratio": ratio, "loud": loud}
        )


def test_annotations_follow_the_json_types():
    assert annotation_of({"type": "string"}) is str
    assert annotation_of({"type": "integer", "minimum": 0}) is int
    assert annotation_of({"type": "array", "items": {"type": "number"}}) == list[float]
    assert annotation_of({"type": "object", "additionalProperties": {"type": "boolean"}}) == dict[str, bool]
    assert annotation_of({"type": "string", "enum": ["a", "b"]}) == Literal["a", "b"]
    assert annotation_of({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == int | None
    assert annotation_of({"$ref": "#/$defs/Point"}) is Any


def test_trl_shows_the_model_the_envs_own_tool_schema(tmp_path, no_servers_left):
    """What TRL extracts from the generated methods (through a real GRPOTrainer) is the server's schema."""
    with running_server(PickEnvironment, max_sessions=4) as server:
        Pick = environment_factory("openenv/Remote-v0", base_url=server.url)
        try:
            tokenizer = tiny_tokenizer(["Pick something."])
            trainer = GRPOTrainer(
                model=tiny_model(tokenizer),
                args=grpo_config(tmp_path),
                train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": ""}]}] * 2),
                processing_class=tokenizer,
                environment_factory=Pick,
            )
            extracted = [get_json_schema(method)["function"] for method in trainer.tools]
            (served,) = Pick.tools
            assert [function.pop("return") for function in extracted] == [{"type": "string"}]
            assert extracted == [
                {
                    "name": "pick",
                    "description": served["description"],
                    "parameters": expressible(served["input_schema"]),
                }
            ]
            assert served["input_schema"]["properties"]["color"]["enum"] == ["red", "green"]  # kept, not flattened

            env = Pick()
            assert env.reset(prompt=[{"role": "user", "content": ""}]) == "Pick something."
            answer = json.loads(env.pick(color="red", count=2, sizes=[1, 2], weights={"a": 0.5}))
            assert answer == {
                "color": "red",
                "count": 2,
                "sizes": [1, 2],
                "weights": {"a": 0.5},
                "ratio": 0.5,
                "loud": False,
            }
            with pytest.raises(ToolFailedError) as failed:
                env.pick(color="blue", count=1, sizes=[], weights={})  # the server checks what TRL cannot show
            assert failed.value.error_type == "invalid_args" and "color" in str(failed.value)
        finally:
            Pick.close()


def test_the_coding_tools_schemas_reach_trl_intact(no_servers_left):
    CodingTools = environment_factory("openenv/CodingTools-v0")
    try:
        methods = trl_tools(CodingTools())
        assert [method.__name__ for method in methods] == ["run_python", "run_tests", "submit"]
        by_name = {tool["name"]: tool for tool in CodingTools.tools}
        for method in methods:
            function = get_json_schema(method)["function"]
            served = by_name[function["name"]]
            assert function["description"] == served["description"]
            assert function["parameters"] == expressible(served["input_schema"])
            assert served["input_schema"]["properties"]["code"]["maxLength"] == 65536  # left to the server
        assert CodingTools.sessions_in_use() == 0  # no session before a reset
    finally:
        CodingTools.close()


def test_a_tool_name_that_a_method_cannot_take_is_refused():
    with pytest.raises(ValueError, match="'class'"):
        tool_method({"name": "t", "input_schema": {"type": "object", "properties": {"class": {"type": "string"}}}})
    method = tool_method({"name": "get-weather", "description": "", "input_schema": {}})
    assert method.__name__ == "get-weather" and get_json_schema(method)["function"]["description"] == "Call this tool."


# environment_factory on CodingTools-v0 -----------------------------------------------------------


def test_reset_takes_the_rows_task_and_the_calls_reach_the_env(no_servers_left):
    CodingTools = environment_factory("openenv/CodingTools-v0", reward="fraction")  # a partial score pays
    try:
        env = CodingTools()
        with pytest.raises(RuntimeError, match="before reset"):
            env.submit(code=SOLUTION)
        prompt = env.reset(prompt=[{"role": "user", "content": "Solve it."}], task_id=TASK, difficulty="easy")
        assert prompt.startswith("\n\n") and "digit_square_sum" in prompt  # a blank line after the row's text
        assert env.info["task_id"] == TASK and env.prompt == prompt[2:]
        assert env.get_reward() == 0.0

        report = json.loads(env.run_tests(code=WRONG))
        assert report["total"] >= 1 and report["passed"] < report["total"]
        partial = json.loads(env.submit(code=WRONG))
        assert 0 < partial["tests_passed"] < partial["tests_total"] and not env.done
        with pytest.raises(ToolFailedError) as refused:
            env.submit(source=SOLUTION)
        assert refused.value.error_type == "invalid_args" and refused.value.tool_name == "submit"
        solved = json.loads(env.submit(code=SOLUTION))
        assert solved["solved"] and env.done
        with pytest.raises(ToolFailedError) as over:
            env.submit(code=SOLUTION)  # not forwarded: it would pay again
        assert over.value.error_type == "episode_over"

        assert [call.name for call in env.calls] == ["run_tests", "submit", "submit", "submit"]
        assert env.calls[2].error is not None and env.calls[2].error["error_type"] == "invalid_args"
        fraction = partial["tests_passed"] / partial["tests_total"]
        # reward="fraction" pays each submission the rise since the last: the return is the last one's fraction
        assert [call.reward for call in env.calls] == pytest.approx([0.0, fraction, 0.0, 1.0 - fraction])
        assert env.get_reward() == pytest.approx(1.0)  # the episode's return

        # The next episode, on the same session: a seed picks the task, options= too.
        assert env.reset(seed=3) == CodingTools().reset(seed=3)
        assert env.calls == [] and not env.done
        env.reset(options={"task_id": OTHER_TASK})
        assert env.info["task_id"] == OTHER_TASK
    finally:
        CodingTools.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(task_id=TASK)


def test_the_last_reward_and_improvement_rewards(no_servers_left):
    Last = environment_factory("openenv/CodingTools-v0", episode_reward="last", name="Last", reward="fraction")
    Improving = environment_factory("openenv/CodingTools-v0", reward="improvement")  # the env's own option
    try:
        assert (Last.__name__, Improving.__name__) == ("Last", "CodingTools_v0")  # what TRL logs rewards under
        last = Last()
        last.reset(task_id=TASK)
        last.submit(code=WRONG)
        last.submit(code=WRONG)
        fraction = last.calls[0].reward
        assert 0.0 < fraction < 1.0 and last.calls[1].reward == 0.0  # no rise since the first
        assert last.get_reward() == 0.0  # the last call's, not their sum

        improving = Improving()
        improving.reset(task_id=TASK)
        for code in (WRONG, WRONG, SOLUTION):
            improving.submit(code=code)
        assert [call.reward for call in improving.calls] == pytest.approx([fraction, 0.0, 1.0 - fraction])
        assert improving.get_reward() == pytest.approx(1.0)  # improvements sum to the best score
    finally:
        Last.close()
        Improving.close()


def test_sessions_are_pooled_per_class_handed_back_and_closed(no_servers_left):
    CodingTools = environment_factory("openenv/CodingTools-v0")
    try:
        envs = [CodingTools() for _ in range(3)]
        for env in envs:
            env.reset(task_id=TASK)
        assert CodingTools.sessions_in_use() == 3
        assert CodingTools._sessions.capacity == 3  # one pool, as large as the instances alive
        envs[0].reset(task_id=TASK)  # the next episode keeps the session
        assert CodingTools.sessions_in_use() == 3

        del envs[0]
        gc.collect()
        assert wait_until(lambda: CodingTools.sessions_in_use() == 2, 10 * UNIT)

        envs += [CodingTools(), CodingTools()]  # four alive: one more session than the pool has
        for env in envs:
            env.reset(task_id=TASK)
        assert CodingTools.sessions_in_use() == 4 and CodingTools._sessions.capacity == 4
        assert [len(pool._lent) for pool in CodingTools._sessions.pools] == [3, 1]
        assert json.loads(envs[-1].submit(code=SOLUTION))["solved"]
    finally:
        CodingTools.close()
    assert CodingTools.sessions_in_use() == 0


def test_a_lost_session_gives_no_reward_and_the_next_episode_a_new_one(no_servers_left):
    CodingTools = environment_factory("openenv/CodingTools-v0")
    try:
        before = own_server_pids()
        env = CodingTools()
        env.reset(task_id=TASK)
        (server,) = own_server_pids() - before  # the pool's one server
        os.kill(server, signal.SIGKILL)
        assert wait_until(lambda: not pid_alive(server), 10 * UNIT)
        with pytest.raises(ToolFailedError) as lost:
            env.submit(code=SOLUTION)
        assert lost.value.error_type == "session_lost"
        assert env.lost and env.done and env.get_reward() is None  # TRL leaves the rollout out
        with pytest.raises(ToolFailedError, match="over"):
            env.submit(code=SOLUTION)

        env.reset(task_id=TASK)  # on a session of the restarted server
        assert not env.lost and json.loads(env.submit(code=SOLUTION))["solved"] and env.get_reward() == 1.0
    finally:
        CodingTools.close()


_EXIT_SCRIPT = """
import json
from openenv_gym.integrations.trl import environment_factory, rollout_func
from tests.utils import own_server_pids
CodingTools = environment_factory("openenv/CodingTools-v0")
CodingTools().reset(task_id="digit-square-sum")
rollout = rollout_func("openenv/Coding-v0")
rows = rollout.dataset([{"options": {"task_id": "digit-square-sum"}}])
rollout.run([rows[0]["prompt"]], ["print(1)"])  # its pool's servers run too
print(json.dumps(sorted(own_server_pids())))
"""


def test_the_servers_stop_at_interpreter_exit_without_close():
    """A script that never calls close(): the finalizer closes the sessions and stops the servers at exit."""
    result = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120 * UNIT
    )
    assert result.returncode == 0, result.stderr
    servers = json.loads(result.stdout)
    assert servers  # the pool's, running when the script ended
    assert wait_until(lambda: not any(pid_alive(pid) for pid in servers), 15 * UNIT)
    assert "failed" not in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_grpo_with_environment_factory_scores_rollouts_with_the_env(tmp_path, no_servers_left):
    """GRPOTrainer calls the env's tools; the reward it logs is the one the env computes for those calls."""
    CodingTools = environment_factory("openenv/CodingTools-v0")
    try:
        row = {"prompt": [{"role": "user", "content": ""}], "task_id": TASK}
        probe = CodingTools()
        env_prompt = probe.reset(**row)
        tools = trl_tools(probe)  # bound to probe: it keeps its session while they live
        call = {"name": "submit", "arguments": {"code": SOLUTION}}
        completion = f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
        tokenizer = chat_tokenizer([[{"role": "user", "content": env_prompt}]], completion, tools)

        episodes: list[list[tuple[str, list[ToolCall], float | None]]] = []

        def record(environments: list[ToolEnvironment], **kwargs: Any) -> list[None]:
            """TRL hands reward functions the rollouts' environments: keep what each episode did."""
            episodes.append([(env.info["task_id"], list(env.calls), env.get_reward()) for env in environments])
            return [None] * len(environments)  # no reward of its own: the env's get_reward gives it

        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            reward_funcs=record,
            args=grpo_config(tmp_path, max_tool_calling_iterations=2),
            train_dataset=Dataset.from_list([row] * 4),
            processing_class=tokenizer,
            environment_factory=CodingTools,
        )
        assert (
            teach(trainer, tokenizer, env_prompt, tools, completion) <= 0.01
        )  # the call, as the trainer renders the prompt
        trainer.train()

        key = f"rewards/{CodingTools.__name__}/mean"
        logged = [entry for entry in trainer.state.log_history if key in entry]
        assert len(logged) == len(episodes) == 2
        for entry, step in zip(logged, episodes):
            assert len(step) == 2 and all(task == TASK for task, _, _ in step)
            assert entry[key] == pytest.approx(mean(reward for _, _, reward in step))
            assert entry["tools/call_frequency"] > 0
        calls = [call for step in episodes for _, episode, _ in step for call in episode]
        assert any(call.name == "submit" and call.reward == 1.0 for call in calls)  # the server graded a solution

        # The same calls on a fresh session: the env gives the same results and rewards.
        async def replay() -> list[list[tuple[str, float]]]:
            env = await make_async("openenv/CodingTools-v0")
            try:
                results = []
                for step in episodes:
                    for _, episode, _ in step:
                        await env.reset(options={"task_id": TASK})
                        results.append(
                            [(await env.step({"name": c.name, "arguments": c.arguments}))[:2] for c in episode]
                        )
                return results
            finally:
                await env.aclose()

        replayed = run_async(replay(), 120 * UNIT)
        recorded = [(episode, reward) for step in episodes for _, episode, reward in step]
        for (episode, reward), results in zip(recorded, replayed, strict=True):
            assert [(call.text, call.reward) for call in episode] == results
            assert reward == pytest.approx(sum(result_reward for _, result_reward in results))

        del trainer, record, probe, tools
        gc.collect()
        assert wait_until(lambda: CodingTools.sessions_in_use() == 0, 10 * UNIT)  # handed back with the instances
    finally:
        CodingTools.close()
