"""OpenEnv 0.10's Task API on our task envs' servers: 0.10's own calls (``tests/openenv010``) on Coding,
CodingTools, Git and ReasoningGym, and the routes' bodies and status codes on a user's task set."""

from __future__ import annotations

import functools
import json
import random
import uuid
from typing import Any

import pytest
from openapi_spec_validator import validate
from pydantic import computed_field

from openenv_gym.client import http_get_json
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.manifest import load_manifest
from openenv_gym.providers import ProcessProvider
from openenv_gym.scaffold import init_env
from openenv_gym.server import Action, BaseTask, Environment, Observation, State, TaskSet
from openenv_gym.task_catalog import TaskCatalog
from tests.openenv010 import run_peer
from tests.server.test_http_api import request
from tests.utils import running_server

REASONING = {"generators": ["gcd", "word_sorting", "dice"], "data_seed": 11}
TASK_SERVERS = [
    ("openenv/Coding-v0", {"split_seed": 11}),
    ("openenv/CodingTools-v0", {}),
    ("openenv/Git-v0", {}),
    ("openenv/ReasoningGym-v0", REASONING),
]


@pytest.mark.parametrize(("env_id", "env_kwargs"), TASK_SERVERS)
def test_openenv_010_task_api_calls_and_resets_on_our_task_servers(env_id, env_kwargs):
    """0.10's calls list the set /schema publishes, in its order, each task by its public fields
    alone; its GenericEnvClient resets to a task by split and index; errors are 0.10's codes."""
    with ProcessProvider(env_id, env_kwargs=env_kwargs) as url:
        catalog = TaskCatalog.from_schema(http_get_json(url, "/schema"))
        seen = run_peer("task_api_session.py", url, "test")
    name = env_id.split("/")[1]
    assert seen["environments"] == [name]
    assert seen["splits"] == [{"name": split, "type": split, "num_tasks": n} for split, n in catalog.splits.items()]
    ids = catalog.ids(split="test")
    assert seen["num_tasks"] == len(ids) > 2
    listed = seen["tasks"]["tasks"]
    assert seen["tasks"]["env_name"] == name
    assert [(task["task_id"], task["split"], task["index"]) for task in listed] == [
        (task_id, "test", index) for index, task_id in enumerate(ids)
    ]
    public = {"split", "index", *catalog.fields} - set(catalog.hidden_fields)
    assert catalog.hidden_fields and all(set(task) == public for task in listed)  # every public field, no hidden one
    assert seen["last"] == {"task": listed[-1]}
    assert seen["range"] == {"tasks": listed[1:3]} and seen["whole_range"] == {"tasks": listed}
    errors = {case: answer["status"] for case, answer in seen["errors"].items()}
    assert errors == {"other_case": 200, "unknown_env": 404, "bad_index": 400, "missing_index": 422, "extra_field": 422}
    assert seen["errors"]["other_case"]["body"] == seen["splits"]
    assert seen["resets"] == [
        {"index": 0, "task_id": ids[0], "done": False},
        {"index": len(ids) - 1, "task_id": ids[-1], "done": False},
    ]
    assert seen["by_spec"] == ids[1]


def test_openenv_010_task_api_calls_on_an_init_tools_scaffold(tmp_path):
    """``openenv-gym init --tools``'s env, served as its manifest says, answers 0.10's calls too: its
    name is the app's attribute, its secret (a hidden field) is in no task spec."""
    init_env("demo", tmp_path / "demo", tools=True)
    app = load_manifest(tmp_path / "demo" / "openenv.yaml").app
    with ProcessProvider(app, cwd=tmp_path / "demo") as url:
        catalog = TaskCatalog.from_schema(http_get_json(url, "/schema"))
        seen = run_peer("task_api_session.py", url, "test")
    assert seen["environments"] == [app.rpartition(":")[2]] and catalog.hidden_fields == ("secret",)
    listed = seen["tasks"]["tasks"]
    assert [task["task_id"] for task in listed] == catalog.ids(split="test")
    assert all(set(task) == {"task_id", "difficulty", "split", "index", "low", "high"} for task in listed)
    assert [reset["done"] for reset in seen["resets"]] == [False, False]


def test_openenv_010_reset_to_a_split_the_operator_closed_is_refused_with_the_reason():
    """A server serving its train split alone (``serve --task-splits train``) lists that split,
    resets 0.10's client within it, and refuses the test split with the reason, by HTTP and reset."""
    from openenv_gym.envs.reasoning import ReasoningGymEnvironment

    factory = functools.partial(ReasoningGymEnvironment, **REASONING)
    with running_server(factory, target="openenv/ReasoningGym-v0", task_splits="train") as server:
        catalog = TaskCatalog.from_schema(http_get_json(server.url, "/schema"))
        seen = run_peer("task_api_session.py", server.url, "train", "test")
    assert [split["name"] for split in seen["splits"]] == ["train"]
    assert [task["task_id"] for task in seen["tasks"]["tasks"]] == catalog.ids(split="train")
    assert seen["resets"][0]["task_id"] == catalog.ids(split="train")[0]
    closed = seen["errors"]["closed_split"]
    assert closed["status"] == 400 and "split 'test' is closed on this server" in closed["body"]["message"]
    assert "split 'test' is closed on this server (its operator's choice)" in seen["refused"]


# A user's task set, in process: the routes' bodies and status codes ----------------------------


class Riddle(BaseTask):
    hidden_fields = ("answer",)

    question: str
    answer: str

    @computed_field  # derived from a hidden field: no task spec may carry it
    @property
    def answer_digits(self) -> int:
        return len(self.answer)


class RiddleObservation(Observation):
    task_id: str = ""
    question: str = ""


RIDDLES = [
    Riddle(
        task_id=f"riddle-{n}",
        difficulty="easy",
        split="train" if n < 4 else "test",
        question=f"{n}+1?",
        answer=str(n + 1),
    )
    for n in range(6)
]


class RiddleEnvironment(Environment[Action, RiddleObservation, State]):
    """A user's task env: its set kept as ``task_set`` and published in ``/schema``, as every task env does."""

    observation_type = RiddleObservation

    def __init__(self) -> None:
        self.task_set = TaskSet(RIDDLES)
        self._rng = random.Random()
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> RiddleObservation:
        task = self.task_set.pick(kwargs.get("options"), self._rng)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        return RiddleObservation(task_id=task.task_id, question=task.question)

    def step(self, action: Action) -> RiddleObservation:
        return RiddleObservation(done=True)

    @property
    def state(self) -> State:
        return self._state

    def task_catalog(self) -> dict[str, Any]:
        return self.task_set.describe()


@pytest.fixture(scope="module")
def riddles():
    with running_server(RiddleEnvironment) as server:
        yield server.url


def call(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    status, _, answer = request(url, method, path, None if body is None else json.dumps(body).encode())
    return status, answer


def test_the_task_api_answers_a_user_task_set_with_its_public_fields(riddles):
    assert call(riddles, "GET", "/list_environments") == (200, ["RiddleEnvironment"])
    assert call(riddles, "GET", "/riddleenvironment/splits") == (
        200,
        [{"name": "train", "type": "train", "num_tasks": 4}, {"name": "test", "type": "test", "num_tasks": 2}],
    )
    spec = {"task_id": "riddle-5", "difficulty": "easy", "split": "test", "index": 1, "question": "5+1?"}
    assert call(riddles, "POST", "/RiddleEnvironment/task", {"split": "test", "index": 1}) == (200, {"task": spec})
    assert call(riddles, "POST", "/RiddleEnvironment/tasks", {"split": "test"})[1]["tasks"][1] == spec
    assert call(riddles, "POST", "/RiddleEnvironment/task_range", {"split": "train", "start": -1}) == (
        200,
        {"tasks": [{"task_id": "riddle-3", "difficulty": "easy", "split": "train", "index": 3, "question": "3+1?"}]},
    )
    assert call(riddles, "POST", "/RiddleEnvironment/num_tasks", {"split": "train"}) == (200, {"num_tasks": 4})


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        ("POST", "/Other/num_tasks", {"split": "train"}, 404, "unknown environment 'Other'"),
        ("POST", "/RiddleEnvironment/task", {"split": "train", "index": 4}, 400, "Invalid task index"),
        ("POST", "/RiddleEnvironment/task", {"split": "train", "index": -1}, 400, "Invalid task index"),
        ("POST", "/RiddleEnvironment/num_tasks", {"split": "dev"}, 400, "Invalid split"),
        ("GET", "/RiddleEnvironment/num_tasks", None, 405, "Method Not Allowed"),
        ("POST", "/list_environments", None, 405, "Method Not Allowed"),
    ],
)
def test_the_task_api_refuses_as_openenv_010_does(riddles, method, path, body, status, detail):
    answered = call(riddles, method, path, body)
    assert (answered[0], answered[1]["detail"]) == (status, detail)


def test_a_body_that_does_not_validate_is_fastapis_422_before_the_env_name_is_read(riddles):
    status, answer = call(riddles, "POST", "/Other/task", {"split": "train", "index": "first"})
    assert status == 422 and answer["detail"][0]["loc"] == ["body", "index"]
    status, answer = request(riddles, "POST", "/RiddleEnvironment/tasks", b"{")[::2]
    assert status == 422 and answer["detail"][0]["type"] == "json_invalid"


def test_an_env_without_a_task_set_answers_501_and_publishes_no_task_routes():
    with running_server(EchoEnvironment) as server:
        assert call(server.url, "GET", "/list_environments") == (200, ["EchoEnvironment"])
        status, answer = call(server.url, "GET", "/EchoEnvironment/splits")
        assert (status, answer["detail"]) == (501, "list_splits is not supported for this environment")
        assert "/list_environments" not in call(server.url, "GET", "/openapi.json")[1]["paths"]


def test_openapi_json_describes_the_task_routes_of_a_task_env(riddles):
    document = call(riddles, "GET", "/openapi.json")[1]
    validate(document)
    for path, method in [
        ("/list_environments", "get"),
        ("/{env_name}/splits", "get"),
        *((f"/{{env_name}}/{name}", "post") for name in ("tasks", "num_tasks", "task", "task_range")),
    ]:
        assert method in document["paths"][path], path
    task = document["paths"]["/{env_name}/task"]["post"]
    assert task["requestBody"]["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/GetTaskRequest"
    assert set(task["responses"]) == {"200", "400", "404", "422", "501"}
    assert document["components"]["schemas"]["GetTaskRequest"]["required"] == ["split", "index"]


@pytest.mark.parametrize(
    ("body", "refusal"),
    [
        ({"split": "test", "index": 2}, "index 2 is not a task of split 'test'"),
        ({"task_spec": {"task_id": "riddle-9"}}, "unknown task_id 'riddle-9'"),
        ({"task_spec": {"task_id": "riddle-5", "answer": "7"}}, "task_spec carries 'answer'"),
        ({"task_spec": {"task_id": "riddle-5", "question": "2+2?"}}, "task_spec's 'question' is not the served task's"),
        ({"task_spec": {"question": "2+2?"}}, "a client cannot define a task of its own"),
        ({"task_spec": {"task_id": "riddle-5"}, "index": 0}, "by task_spec, or by split and index: not both"),
        ({"split": "test", "options": {"task_id": "riddle-5"}}, "by options or by split, index and task_spec"),
    ],
)
def test_a_reset_naming_a_task_the_set_does_not_serve_is_refused_with_400(riddles, body, refusal):
    status, answer = call(riddles, "POST", "/reset", body)
    assert status == 400 and refusal in answer["message"]


def test_a_reset_by_split_and_index_or_by_a_served_task_spec_gets_that_task(riddles):
    for index, task_id in enumerate(["riddle-4", "riddle-5"]):
        assert (
            call(riddles, "POST", "/reset", {"split": "test", "index": index})[1]["observation"]["task_id"] == task_id
        )
    spec = call(riddles, "POST", "/RiddleEnvironment/task", {"split": "train", "index": 2})[1]["task"]
    assert call(riddles, "POST", "/reset", {"task_spec": spec})[1]["observation"]["task_id"] == "riddle-2"
