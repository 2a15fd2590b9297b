"""The task set of openenv/Git-v0 (envs/git/tasks.jsonl): well-formed, deterministic, and scored right.

Every task runs through the local runner of :mod:`tests.envs.git_task_runner`: its reference solution
scores 1, submitting at once scores 0 with every check failing, and its near miss scores between 0
and 1; other valid ways of doing some tasks score 1 too, and tempting shortcuts score below 1.
tasks.jsonl is generated from envs/git/task_source.py (``python envs/git/task_source.py``); a test
keeps the two in step.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.envs.git_task_runner import git_env, repository_fingerprint, run_setup, run_task

TASK_DIR = Path(__file__).resolve().parents[2] / "envs" / "git"
TASKS_FILE = TASK_DIR / "tasks.jsonl"
DIFFICULTIES = ("easy", "medium", "hard")
TOOLS = {"run": {"command"}, "read_file": {"path"}, "write_file": {"path", "content"}, "submit": set()}
FIELDS = {"task_id", "difficulty", "prompt", "setup", "checks", "solution", "near_miss", "max_turns"}


def _load_tasks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS_FILE.read_text().splitlines()]


def _task_source() -> ModuleType:
    spec = importlib.util.spec_from_file_location("git_task_source", TASK_DIR / "task_source.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TASKS = _load_tasks()
BY_ID = {task["task_id"]: task for task in TASKS}
by_id = pytest.mark.parametrize("task", TASKS, ids=[task["task_id"] for task in TASKS])


def test_tasks_jsonl_is_what_the_source_generates():
    assert TASKS_FILE.read_text() == _task_source().render_jsonl(), "run: python envs/git/task_source.py"


def test_the_set_has_32_or_more_tasks_with_unique_ids_in_order_of_difficulty():
    ids = [task["task_id"] for task in TASKS]
    assert len(ids) == len(set(ids)) >= 32
    counts = Counter(task["difficulty"] for task in TASKS)
    assert set(counts) == set(DIFFICULTIES)
    assert counts["easy"] >= 10 and counts["medium"] >= 12 and counts["hard"] >= 10, counts
    levels = [DIFFICULTIES.index(task["difficulty"]) for task in TASKS]
    assert levels == sorted(levels)


def _well_formed_calls(calls: Any) -> None:
    assert isinstance(calls, list) and calls
    for call in calls:
        assert set(call) == {"tool", "arguments"}
        assert set(call["arguments"]) == TOOLS[call["tool"]], call
        assert all(isinstance(value, str) and value for value in call["arguments"].values()), call


@by_id
def test_task_is_well_formed(task):
    assert set(task) == FIELDS
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", task["task_id"])
    assert task["difficulty"] in DIFFICULTIES
    assert isinstance(task["prompt"], str) and len(task["prompt"]) >= 100
    assert task["setup"].startswith("git init -q -b main\n")
    # Deterministic by construction: no clock, no randomness, no process ids or temporary names.
    assert not re.search(r"\$RANDOM|\$\$|\bdate\b|mktemp|/tmp/", task["setup"])
    checks = task["checks"]
    assert isinstance(checks, list) and len(checks) >= 2
    assert len({check["name"] for check in checks}) == len(checks)
    for check in checks:
        assert set(check) == {"name", "run"} and check["name"] and check["run"].strip()
        for line in check["run"].splitlines():
            # Under `bash -e` a failing `! cmd` or `a && b` that is not the last command goes unnoticed.
            stripped = line.strip()
            assert not stripped.startswith("! "), f"{check['name']}: {line!r}"
            assert "&&" not in re.sub(r"\[\[.*?\]\]", "", stripped), f"{check['name']}: {line!r}"
    _well_formed_calls(task["solution"])
    _well_formed_calls(task["near_miss"])
    assert isinstance(task["max_turns"], int) and task["max_turns"] > len(task["solution"])


@by_id
def test_setup_builds_the_same_repository_every_time(task):
    fingerprints = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="git-task-") as tmp:
            home, work = Path(tmp, "home"), Path(tmp, "work")
            home.mkdir()
            work.mkdir()
            env = git_env(home)
            run_setup(task, work, env)
            fingerprints.append(repository_fingerprint(work, env))
    assert fingerprints[0]["commits"].strip(), "the setup made no commit"
    assert fingerprints[0] == fingerprints[1]


@by_id
def test_solution_scores_1(task):
    result = run_task(task, task["solution"])
    assert result.score == 1.0, (result.failed(), result.outputs)


@by_id
def test_submitting_at_once_scores_0(task):
    result = run_task(task, [])
    assert [check.name for check in result.checks if check.passed] == []
    assert result.score == 0.0


@by_id
def test_near_miss_scores_below_1_and_above_0(task):
    """A near miss leaves the task almost done: some checks pass, not all."""
    result = run_task(task, task["near_miss"])
    assert 0.0 < result.score < 1.0, (result.failed(), result.outputs)


def _run(command: str) -> dict[str, Any]:
    return {"tool": "run", "arguments": {"command": command}}


def _has_git_subtree() -> bool:
    usage = subprocess.run(["git", "subtree", "-h"], capture_output=True, text=True, check=False)
    return "git subtree" in usage.stdout + usage.stderr and "not a git command" not in usage.stderr


# Other valid ways to do some tasks than their reference solutions: the checks test the end state, so
# each must score 1 too (other commands, other commit ids, other messages where the prompt allows).
OTHER_VALID_WAYS = {
    "cherry-pick-fix-to-release": [
        _run("git switch -q release/1.x && git cherry-pick -x \"$(git log main --format=%H -F --grep='off-by-one')\""),
    ],
    "recover-deleted-branch": [
        _run(
            "git branch experiment \"$(git log -g --format='%H %gs' HEAD | grep 'commit: Tune trie' | cut -d' ' -f1)\""
        ),
    ],
    "squash-merge-feature": [
        _run(
            'for c in $(git rev-list --reverse main..feature/logging); do git cherry-pick -n "$c"; done'
            " && git commit -q -m 'Add structured logging'"
        ),
    ],
    "bisect-first-bad-commit": [
        _run(
            'for c in $(git rev-list --reverse main); do git checkout -q "$c";'
            ' if ! ./check.sh; then git tag -a first-bad -m "first bad" "$c"; break; fi; done; git checkout -q main'
        ),
    ],
    "squash-fixups-autosquash": [
        _run(
            "git checkout -q feature/exporters && git -c rebase.autoSquash=true -c sequence.editor=true rebase -i main"
        ),
    ],
    "move-commit-to-new-branch": [
        _run("git checkout -q -b feature/dark-mode main~1"),
        _run(
            "git checkout -q main && GIT_SEQUENCE_EDITOR=\"sed -i '/Add dark mode toggle/s/^pick/drop/'\" git rebase -i main~2"
        ),
        _run("git rebase -q main feature/dark-mode && git checkout -q main"),
    ],
    "sign-off-branch-commits": [_run("git checkout -q docs/contributing && git rebase -q --signoff main")],
    "revert-bad-merge": [
        _run(
            'git revert --no-commit -m 1 "$(git log --merges --format=%H -n 1)" && git commit -q -m "Revert the cache merge"'
        ),
    ],
    "drop-middle-commit": [_run("GIT_SEQUENCE_EDITOR=\"sed -i '/Add debug tracing/d'\" git rebase -i --root")],
    "reorder-commits": [
        _run('top=$(git rev-parse main) && git reset -q --hard main~3 && git cherry-pick "$top~1" "$top" "$top~2"'),
    ],
    "rebase-onto-main-without-parent-branch": [
        _run(
            "git checkout -q -b tmp main && git cherry-pick feature/b~1 feature/b && git branch -f feature/b tmp"
            " && git checkout -q main && git branch -D tmp"
        ),
    ],
    "apply-stash-to-other-branch": [
        _run(
            "git checkout -q feature/quoting && git stash pop -q 'stash@{1}' && git commit -q -am 'Handle quoted fields'"
        ),
    ],
    "recover-commits-after-hard-reset": [
        _run("map=$(git rev-parse HEAD) && git reset -q --hard 'HEAD@{2}' && git cherry-pick \"$map\""),
    ],
    "update-vendored-copy": [
        _run(
            "git diff --binary mathlib-1.2 mathlib-1.3 | git apply --index --directory=vendor/mathlib"
            " && git commit -q -m 'Update vendored mathlib to 1.3'"
        ),
    ],
    "split-commit-in-two": [
        _run(
            "git reset -q --hard main~2 && git checkout ORIG_HEAD~1 -- README.md && git commit -q -m 'Fix README typo'"
            " && git checkout ORIG_HEAD~1 -- config.py && git commit -q -m 'Add config loader' && git cherry-pick ORIG_HEAD"
        ),
    ],
    "purge-secret-from-history": [
        _run(
            "FILTER_BRANCH_SQUELCH_WARNING=1 git filter-branch --prune-empty --tag-name-filter cat"
            " --index-filter 'git rm -r -q --cached --ignore-unmatch config/credentials.json' -- --branches --tags"
            " && git for-each-ref --format='delete %(refname)' refs/original/ | git update-ref --stdin"
        ),
    ],
    "rebase-keeping-merges": [
        _run(
            "git checkout -q -b rebuilt main && git cherry-pick release/next~2 && git checkout -q -b topic2"
            " && git cherry-pick topic~1 topic && git checkout -q rebuilt"
            " && git merge -q --no-ff -m \"Merge branch 'topic' into release/next\" topic2 && git cherry-pick release/next"
            " && git branch -f release/next rebuilt && git checkout -q main && git branch -D rebuilt topic2"
        ),
    ],
    "extract-subdirectory-history": [_run("git subtree split -q --prefix=lib -b lib-only")],
}

_IGNORED = "/build/\\n/dist/\\n__pycache__/\\n*.pyc\\n/logs/*.log\\n/.env\\n*.swp\\n"
_EMPTY_GITIGNORE = ": > .gitignore && git add .gitignore && git commit -q -m ignore"

# Tempting ways to cut a corner: each must score below 1 (a key's task is the part before any "/").
CORNERS_CUT = {
    # An empty .gitignore committed, the patterns where git reads them but the repository does not keep them.
    "gitignore-build-artifacts/info-exclude": [_run(f"{_EMPTY_GITIGNORE} && printf '{_IGNORED}' >> .git/info/exclude")],
    "gitignore-build-artifacts/excludes-file": [
        _run(f"{_EMPTY_GITIGNORE} && printf '{_IGNORED}' > .git/ignored && git config core.excludesFile .git/ignored")
    ],
    "gitignore-build-artifacts/untracked-hidden": [
        _run(f"{_EMPTY_GITIGNORE} && git config status.showUntrackedFiles no")
    ],
    "gitignore-build-artifacts/uncommitted": [
        _run(
            f"{_EMPTY_GITIGNORE} && printf '{_IGNORED}' > .gitignore && git update-index --assume-unchanged .gitignore"
        )
    ],
    # Deleting the untracked files instead of ignoring them.
    "gitignore-build-artifacts": [
        _run("printf '/build/\\n' > .gitignore && git add .gitignore && git commit -q -m ignore && git clean -fdq -x"),
    ],
    # Tagging the right commit, but after rewriting main.
    "bisect-first-bad-commit": [
        _run(
            "git tag first-bad \"$(git log --format=%H -F --grep='Align the case arms')\" && git commit -q --allow-empty -m x"
        ),
    ],
    # Untracking the secret only at the tip: it stays in history.
    "purge-secret-from-history": [
        _run("git rm -q --cached --ignore-unmatch config/credentials.json; git commit -q --allow-empty -m x")
    ],
    # Copying the stashed file by hand but committing it on main.
    "apply-stash-to-other-branch": [_run("git stash pop -q 'stash@{1}' && git commit -q -am 'Handle quoted fields'")],
    # Amending every commit's author in a rebase: the committers and their dates change too.
    "rewrite-author-email-everywhere": [
        _run(
            "cat > .git/fix-author <<'EOF'\n"
            'author=$(git log -1 --format="%an <%ae>" | sed "s/grace@old-corp/grace@new-corp/")\n'
            'git commit -q --amend --no-edit --author="$author"\n'
            "EOF\n"
            "for b in main legacy; do git rebase -q --root --exec 'sh .git/fix-author' $b; done; git checkout -q main"
        ),
    ],
}


@pytest.mark.parametrize("task_id", sorted(OTHER_VALID_WAYS))
def test_other_valid_ways_score_1(task_id):
    if "git subtree" in json.dumps(OTHER_VALID_WAYS[task_id]) and not _has_git_subtree():
        pytest.skip("this git has no subtree command (contrib)")
    result = run_task(BY_ID[task_id], OTHER_VALID_WAYS[task_id])
    assert result.score == 1.0, (result.failed(), result.outputs)


@pytest.mark.parametrize("task_id", sorted(CORNERS_CUT))
def test_cutting_corners_scores_below_1(task_id):
    result = run_task(BY_ID[task_id.split("/")[0]], CORNERS_CUT[task_id])
    assert result.score < 1.0, result.outputs


def test_the_runner_confines_files_to_the_work_tree_and_stops_at_submit():
    task = {"setup": "git init -q -b main\n", "checks": [{"name": "a.txt", "run": '[ "$(cat a.txt)" = a ]'}]}
    calls = [
        {"tool": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}},
        {"tool": "read_file", "arguments": {"path": "a.txt"}},
        {"tool": "submit", "arguments": {}},
        {"tool": "write_file", "arguments": {"path": "a.txt", "content": "b\n"}},
    ]
    result = run_task(task, calls)
    assert result.score == 1.0 and result.outputs == ["wrote a.txt", "a\n"]
    with pytest.raises(ValueError, match="outside the work tree"):
        run_task(task, [{"tool": "write_file", "arguments": {"path": "../escape.txt", "content": ""}}])
