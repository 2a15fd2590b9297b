"""``openenv-gym eval``: pass@1 and pass@k as computed by hand from the trajectories it writes, and its PNG."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from collections import defaultdict

import pytest

from openenv_gym.evaluation import pass_at_k
from openenv_gym.trajectories import read_trajectories
from tests.utils import REPO_ROOT


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
