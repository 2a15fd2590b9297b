"""``openenv-gym eval``: pass@1 and pass@k as computed by hand from the trajectories it writes, and its PNG."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import gymnasium as gym
import pytest

from openenv_gym.cli import _one_line
from openenv_gym.errors import EpisodeNotEndingError
from openenv_gym.evaluation import evaluate, pass_at_k
from openenv_gym.trajectories import read_trajectories
from tests.utils import REPO_ROOT, UNIT


@pytest.mark.parametrize(
    ("n", "c", "k"), [(n, c, k) for n in range(1, 7) for c in range(n + 1) for k in range(1, n + 1)]
)
def test_pass_at_k_is_the_share_of_k_subsets_with_a_success(n, c, k):
    """The estimator equals its definition: of all k-subsets of the n episodes, the share holding a success."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_k_refuses_impossible_counts():
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)


def test_eval_on_coding_tools_prints_what_the_trajectories_say(tmp_path):
    """A scripted policy that solves about half its episodes, 4 episodes on each of 5 test tasks:
    the printed pass@1 and pass@2 per difficulty equal those counted by hand from the written
    trajectories (every pair of episodes of a task), and the plot is a PNG."""
    out, plot = tmp_path / "episodes.jsonl", tmp_path / "returns.png"
    command = [
        sys.executable, "-m", "openenv_gym", "eval", "openenv/CodingTools-v0",
        "--policy", "tests.eval_policies:CoinFlipCoder", "--split", "test", "--episodes", "5",
        "--samples", "4", "--k", "2", "--out", str(out), "--plot", str(plot),
        "--env-kwargs", json.dumps({"max_episode_steps": 2}),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    printed = {
        line.split()[0]: line.split()
        for line in done.stdout.splitlines()[1:]
        if line and not line.startswith("trajectories")
    }

    episodes = list(read_trajectories(out))
    assert len(episodes) == 20
    by_task: dict[str, list[bool]] = defaultdict(list)
    difficulty = {}
    for episode in episodes:
        by_task[episode.task_id].append(episode.total_reward >= 1.0)
        difficulty[episode.task_id] = episode.infos[0]["difficulty"]
    assert len(by_task) == 5 and all(len(outcomes) == 4 for outcomes in by_task.values())
    assert 0 < sum(map(sum, by_task.values())) < 20  # the policy both solves and fails

    def by_hand(tasks: list[str]) -> tuple[float, float]:
        pass1 = sum(sum(by_task[t]) / 4 for t in tasks) / len(tasks)
        pairs = [list(itertools.combinations(by_task[t], 2)) for t in tasks]
        pass2 = sum(sum(any(pair) for pair in task_pairs) / len(task_pairs) for task_pairs in pairs) / len(tasks)
        return pass1, pass2

    groups = defaultdict(list)
    for task_id in by_task:
        groups[difficulty[task_id]].append(task_id)
    groups["all"] = list(by_task)
    assert set(printed) == set(groups)
    for name, tasks in groups.items():
        pass1, pass2 = by_hand(tasks)
        row = printed[name]
        assert (int(row[1]), int(row[2])) == (len(tasks), 4 * len(tasks))
        assert (float(row[3]), float(row[4])) == (round(pass1, 3), round(pass2, 3))
        returns = [e.total_reward for e in episodes if e.task_id in tasks]
        assert math.isclose(float(row[5]), round(sum(returns) / len(returns), 3))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 5000


CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))
# An agent that ends each episode in one call (CodingTools-v0 made with a limit of one step), as a
# dict: the form ChatMessages and most agent code hold a tool call in.
MY_AGENT = """\
def act(observation, info):
    return {"name": "submit", "arguments": {"code": "def f(*args):\\n    return None\\n"}}
"""
MY_REWARD = """\
def fn(trajectory):
    return float(trajectory.length)
"""


def user_shell(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``openenv-gym ARGS`` run in ``cwd`` as a user's shell runs it: the console script, nothing of
    this test run's import path."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "PYTHONPATH"))}
    return subprocess.run(
        [CONSOLE_SCRIPT, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300 * UNIT
    )


def test_eval_rescore_and_replay_take_modules_of_the_current_directory(tmp_path):
    """docs/tasks.md's `eval --policy my_agent:act` and `rescore --reward mod:fn`, with my_agent.py and
    mod.py in the current directory; the trajectories eval wrote from the policy's dict calls re-play
    with no divergence."""
    (tmp_path / "my_agent.py").write_text(MY_AGENT)
    (tmp_path / "mod.py").write_text(MY_REWARD)
    kwargs = json.dumps({"max_episode_steps": 1})
    evaluated = user_shell(
        tmp_path, "eval", "openenv/CodingTools-v0", "--policy", "my_agent:act", "--split", "test",
        "--episodes", "2", "--env-kwargs", kwargs, "--out", "episodes.jsonl",
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    episodes = list(read_trajectories(tmp_path / "episodes.jsonl"))
    assert len(episodes) == 2 and all(episode.actions[0]["name"] == "submit" for episode in episodes)

    rescored = user_shell(tmp_path, "rescore", "episodes.jsonl", "--reward", "mod:fn")
    assert rescored.returncode == 0, rescored.stderr
    assert "fn: mean 1 over 2 episodes" in rescored.stdout

    replayed = user_shell(tmp_path, "replay", "episodes.jsonl", "--env-kwargs", kwargs)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.strip().endswith("2 of 2 episodes re-played; 0 diverged")


def test_eval_writes_files_only_when_asked(tmp_path):
    """Without --out and --plot, eval prints its table and leaves the current directory as it was."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [CONSOLE_SCRIPT, "eval", "openenv/CodingTools-v0", "--policy", "tests.eval_policies:CoinFlipCoder",
         "--split", "test", "--episodes", "1", "--env-kwargs", json.dumps({"max_episode_steps": 1})],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300 * UNIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split()[:3] == ["difficulty", "tasks", "episodes"]
    assert list(tmp_path.iterdir()) == []


def test_the_plot_legend_has_the_bars_colours_and_a_zero_return_shows(tmp_path, monkeypatch):
    """Each legend swatch is the colour of its difficulty's bars, and a task whose mean return is 0
    (a bar of no height) is still drawn: a marker at 0 in its difficulty's colour."""
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure

    from openenv_gym.evaluation import EvalReport, TaskResult, plot_returns

    figures = []
    save = Figure.savefig
    monkeypatch.setattr(
        Figure, "savefig", lambda self, *args, **kwargs: (figures.append(self), save(self, *args, **kwargs))[1]
    )
    report = EvalReport(
        [
            TaskResult("a", "easy", [1.0, 1.0], 2),
            TaskResult("b", "medium", [0.0, 0.0], 0),
            TaskResult("c", "hard", [0.5, 0.0], 0),
        ],
        k=1,
        threshold=1.0,
    )
    plot_returns(report, tmp_path / "returns.png")
    (axes,) = figures[0].axes
    bars = {round(bar.get_x() + bar.get_width() / 2): bar for bar in axes.patches}
    colour_of = {result.difficulty: to_rgba(bars[index].get_facecolor()) for index, result in enumerate(report.results)}
    assert len(set(colour_of.values())) == 3
    legend = {
        text.get_text(): handle for text, handle in zip(axes.get_legend().texts, axes.get_legend().legend_handles)
    }
    for difficulty, colour in colour_of.items():
        assert to_rgba(legend[difficulty].get_facecolor()) == colour, difficulty
    # Task b (position 1) has a bar of height 0; something else of its colour is drawn at (1, 0).
    assert bars[1].get_height() == 0
    shown = [
        artist
        for artist in [*axes.lines, *axes.collections]
        if any(tuple(point) == (1.0, 0.0) for point in _points(artist))
    ]
    assert shown and all(_colour(artist) == colour_of["medium"] for artist in shown)


def _points(artist):
    from matplotlib.lines import Line2D

    if isinstance(artist, Line2D):
        return [tuple(map(float, point)) for point in artist.get_xydata()]
    return [tuple(map(float, point)) for point in artist.get_offsets()]


def _colour(artist):
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D

    return to_rgba(artist.get_color() if isinstance(artist, Line2D) else artist.get_facecolor()[0])


class _Endless(gym.Env[int, int]):
    """A task env whose episodes never end: eval must stop it, and say how to bound it."""

    observation_space = gym.spaces.Discrete(1)
    action_space = gym.spaces.Discrete(1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {"task_id": (options or {}).get("task_id")}

    def step(self, action):
        return 0, 0.0, False, False, {}


def test_an_episode_that_never_ends_is_a_one_line_error_that_says_how_to_bound_it():
    with pytest.raises(EpisodeNotEndingError, match=r"did not end in 3 steps: give the env a time limit"):
        evaluate(
            _Endless(), lambda: lambda observation, info: 0, ["t"], {"t": "easy"},
            samples=1, k=1, threshold=1.0, max_steps=3, progress=False,
        )  # fmt: skip
    assert _one_line(EpisodeNotEndingError("x")) == "x"  # the CLI prints it as one line, no traceback
