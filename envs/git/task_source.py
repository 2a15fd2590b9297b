"""The task set of openenv/Git-v0, written in Python so that its bash scripts stay readable.

``tasks.jsonl`` next to this file is generated from :data:`TASKS`; after editing a task, regenerate it::

    python envs/git/task_source.py

Each task builds a repository with its ``setup`` script, shows the agent its ``prompt``, and scores the
final repository by the fraction of its ``checks`` (bash scripts, exit status 0 = pass) that pass. A
check tests the end state the prompt asks for, never the commands used, and fails on the repository
as the setup leaves it, so that submitting without doing anything scores 0. ``solution`` is a
sequence of tool calls that scores 1; ``near_miss`` one that leaves the task almost done (scores
strictly below 1).

Setups run with a fixed identity (Ada Lovelace <ada@example.com>) and fixed author and committer
dates from the environment, so the repository they build is the same on every run.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["TASKS", "TASKS_FILE", "render_jsonl"]

TASKS_FILE = Path(__file__).with_name("tasks.jsonl")
MAX_TURNS = {"easy": 20, "medium": 30, "hard": 40}

TASKS: list[dict[str, Any]] = []


def sh(script: str, **values: str) -> str:
    """A bash script written indented in this file: dedented, then each ``{NAME}`` of ``values`` filled in.

    Filling in after dedenting lets a multi-line value (a file's content in a heredoc) start at column 0.
    """
    script = textwrap.dedent(script).strip("\n") + "\n"
    return re.sub(r"\{([A-Z][A-Z0-9_]*)\}", lambda m: values.get(m.group(1), m.group(0)), script)


def prose(text: str, **blocks: str) -> str:
    """A prompt: paragraphs reflowed to one line each; a paragraph ``{name}`` becomes ``blocks[name]``, indented."""
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", textwrap.dedent(text).strip()):
        name = re.fullmatch(r"\{(\w+)\}", paragraph.strip())
        if name:
            paragraphs.append(textwrap.indent(blocks[name.group(1)].strip("\n"), "    "))
        else:
            paragraphs.append(" ".join(paragraph.split()))
    return "\n\n".join(paragraphs)


def text(content: str) -> str:
    """File content written indented in this file."""
    return textwrap.dedent(content).strip("\n") + "\n"


def same(command: str, content: str) -> str:
    """A bash condition: ``command`` prints ``content`` (trailing newlines aside)."""
    return f"[ \"$({command})\" = \"$(cat <<'EOF'\n{content.rstrip()}\nEOF\n)\" ]"


def run(command: str) -> dict[str, Any]:
    return {"tool": "run", "arguments": {"command": sh(command).rstrip("\n")}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "arguments": {"path": path, "content": content}}


def read(path: str) -> dict[str, Any]:
    return {"tool": "read_file", "arguments": {"path": path}}


def check(name: str, *parts: str) -> dict[str, str]:
    """A check: its script is the parts (each dedented on its own), one after another."""
    return {"name": name, "run": "".join(sh(part) for part in parts)}


def task(
    task_id: str,
    difficulty: str,
    prompt: str,
    setup: str,
    checks: list[dict[str, str]],
    solution: list[dict[str, Any]],
    near_miss: list[dict[str, Any]],
    **values: str,
) -> None:
    """Add a task; ``values`` fill the setup's ``{NAME}`` placeholders, and ``{COMMIT}`` is always :data:`COMMIT`."""
    TASKS.append(
        {
            "task_id": task_id,
            "difficulty": difficulty,
            "prompt": prompt,
            "setup": sh(setup, COMMIT=COMMIT, **values),
            "checks": checks,
            "solution": solution,
            "near_miss": near_miss,
            "max_turns": MAX_TURNS[difficulty],
        }
    )


# A bash function most setups start with: stage everything and commit with the given message.
COMMIT = 'commit() { git add -A && git commit -q -m "$1"; }'


# ---------------------------------------------------------------------------------------------- easy

MENU_RESOLVED = text(
    """
    Starters:
    - soup of the day
    Mains:
    - grilled fish
    - steak frites
    - lentil curry (vegan)
    Desserts:
    - apple pie
    - mango sorbet (vegan)
    """
)

task(
    "resolve-conflict-keep-both",
    "easy",
    prose(
        """
        Merge the branch `feature/vegan` into `main` (main is checked out). The merge conflicts in
        `menu.txt`: both sides added a main course right after `- grilled fish`. Resolve the conflict by
        keeping both additions, main's line first and then the branch's line, and keep every other
        change of both sides, so that `menu.txt` ends up exactly:

        {menu}

        Finish the merge with a merge commit on `main` (the default merge message is fine) and leave the
        work tree clean.
        """,
        menu=MENU_RESOLVED,
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > menu.txt <<'EOF'
    Starters:
    - soup of the day
    Mains:
    - grilled fish
    Desserts:
    - apple pie
    EOF
    commit "Add the menu"
    git checkout -q -b feature/vegan
    cat > menu.txt <<'EOF'
    Starters:
    - soup of the day
    Mains:
    - grilled fish
    - lentil curry (vegan)
    Desserts:
    - apple pie
    - mango sorbet (vegan)
    EOF
    commit "Add vegan dishes"
    git checkout -q main
    cat > menu.txt <<'EOF'
    Starters:
    - soup of the day
    Mains:
    - grilled fish
    - steak frites
    Desserts:
    - apple pie
    EOF
    commit "Add steak frites"
    """,
    [
        check(
            "main's tip merges feature/vegan into the previous main",
            """
            [ "$(git rev-parse main^2)" = "$(git rev-parse feature/vegan)" ]
            [ "$(git log -1 --format=%s main^1)" = "Add steak frites" ]
            """,
        ),
        check("menu.txt keeps both main courses, main's first", same("git show main:menu.txt", MENU_RESOLVED)),
        check(
            "the merge is finished: no conflict markers, nothing left to commit, main checked out",
            """
            git rev-parse -q --verify main^2 >/dev/null
            [ ! -e "$(git rev-parse --git-path MERGE_HEAD)" ]
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            ! grep -qE '^(<<<<<<<|=======|>>>>>>>)' menu.txt
            """,
        ),
    ],
    [
        run("git merge feature/vegan"),
        write("menu.txt", MENU_RESOLVED),
        run("git add menu.txt && git commit --no-edit"),
    ],
    [
        run("git merge feature/vegan"),
        run("git checkout --ours menu.txt && git add menu.txt && git commit --no-edit"),
    ],
)

PAGER_FIXED_LINE = "return items[start:start + size]"

task(
    "cherry-pick-fix-to-release",
    "easy",
    prose(
        """
        The release branch `release/1.x` needs the bug fix 'Fix off-by-one in paginate()' that was
        committed on `main`, but none of main's other new commits. Cherry-pick that one commit onto
        `release/1.x` with `git cherry-pick -x`, so that its message records the commit it was picked
        from, as one new commit on top of the branch. Leave `main` unchanged.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > pager.py <<'EOF'
    def paginate(items, page, size):
        start = page * size
        return items[start:start + size + 1]
    EOF
    echo "# pager" > README.md
    commit "Add paginate()"
    git tag v1.0
    git checkout -q -b release/1.x
    echo 1.0.1-dev > VERSION
    commit "Start 1.0.1 development"
    git checkout -q main
    cat > export.py <<'EOF'
    def to_csv(rows):
        return "\\n".join(",".join(row) for row in rows)
    EOF
    commit "Add CSV export"
    sed -i 's/start + size + 1]/start + size]/' pager.py
    commit "Fix off-by-one in paginate()"
    cat >> export.py <<'EOF'


    def to_json(rows):
        import json
        return json.dumps(rows)
    EOF
    commit "Add JSON export"
    """,
    [
        check(
            "release/1.x gained exactly one commit, and main is unchanged",
            """
            [ "$(git rev-list --count v1.0..release/1.x)" = 2 ]
            [ "$(git log -1 --format=%s release/1.x~1)" = "Start 1.0.1 development" ]
            [ "$(git log --format=%s main)" = "$(printf '%s\\n' 'Add JSON export' 'Fix off-by-one in paginate()' 'Add CSV export' 'Add paginate()')" ]
            """,
        ),
        check(
            "the new commit is the paginate fix, with its message, changing only pager.py",
            """
            [ "$(git log -1 --format=%s release/1.x)" = "Fix off-by-one in paginate()" ]
            [ "$(git diff --name-only release/1.x~1 release/1.x)" = pager.py ]
            """,
        ),
        check(
            "pager.py on release/1.x has the fix, and no export.py came along",
            f"""
            pager=$(git show release/1.x:pager.py)
            [[ $pager == *"{PAGER_FIXED_LINE}" ]]
            ! git cat-file -e release/1.x:export.py 2>/dev/null
            """,
        ),
        check(
            "the message records the picked commit (cherry-pick -x)",
            """
            fix=$(git log main --format=%H -F --grep='Fix off-by-one in paginate()')
            [[ $(git log -1 --format=%B release/1.x) == *"(cherry picked from commit $fix)"* ]]
            """,
        ),
    ],
    [
        run("git log --oneline main"),
        run("git checkout -q release/1.x && git cherry-pick -x main~1"),
    ],
    [run("git checkout -q release/1.x && git cherry-pick main~1")],
)

task(
    "recover-deleted-branch",
    "easy",
    prose(
        """
        The branch `experiment` was deleted by mistake with `git branch -D experiment`. It had three
        commits on top of main's commit 'Add lookup table'. Recreate the branch `experiment` so that it
        points at the commit it pointed to when it was deleted (its last commit), with all three
        commits. Leave `main` as it is.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "lookup = {}" > lookup.py
    commit "Add lookup module"
    echo "TABLE = {'a': 1}" >> lookup.py
    commit "Add lookup table"
    git checkout -q -b experiment
    echo "class Trie: pass" > trie.py
    commit "Try a trie for lookups"
    echo "# bench: trie 2x faster" > BENCH.md
    commit "Benchmark the trie"
    echo "NODE_SIZE = 16" >> trie.py
    commit "Tune trie node size"
    git checkout -q main
    echo "# lookup" > README.md
    commit "Add README"
    git branch -q -D experiment
    """,
    [
        check(
            "experiment points at its last commit",
            """
            [ "$(git log -1 --format=%s refs/heads/experiment)" = "Tune trie node size" ]
            [ "$(git show experiment:trie.py)" = "$(printf '%s\\n' 'class Trie: pass' 'NODE_SIZE = 16')" ]
            """,
        ),
        check(
            "experiment has all three commits on 'Add lookup table'",
            """
            [ "$(git log --reverse --format=%s refs/heads/experiment)" = "$(printf '%s\\n' 'Add lookup module' 'Add lookup table' 'Try a trie for lookups' 'Benchmark the trie' 'Tune trie node size')" ]
            """,
        ),
        check(
            "experiment forks from main's 'Add lookup table', and main is unchanged",
            """
            [ "$(git log -1 --format=%s "$(git merge-base main refs/heads/experiment)")" = "Add lookup table" ]
            [ "$(git log --format=%s main)" = "$(printf '%s\\n' 'Add README' 'Add lookup table' 'Add lookup module')" ]
            """,
        ),
    ],
    [
        run("git reflog | head -5"),
        run("git branch experiment HEAD@{2}"),
    ],
    [
        run(
            """
            git branch experiment "$(git log -g --format='%H %s' HEAD | grep 'Benchmark the trie' | head -n 1 | cut -d' ' -f1)"
            """
        )
    ],
)

task(
    "annotated-release-tag",
    "easy",
    prose(
        """
        Create an annotated tag `v2.1.0` on the commit of `main` with the message 'Bump version to 2.1.0'
        (this is not the latest commit). The tag's message must be exactly 'Release 2.1.0'. Don't move any
        branch.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# widgets" > README.md
    echo 2.0.0 > VERSION
    commit "Initial commit"
    echo "## 2.1.0: faster widgets" > CHANGELOG.md
    commit "Add changelog entry for 2.1.0"
    echo 2.1.0 > VERSION
    commit "Bump version to 2.1.0"
    echo 2.2.0-dev > VERSION
    commit "Start 2.2.0 development"
    """,
    [
        check("v2.1.0 is an annotated tag", '[ "$(git cat-file -t refs/tags/v2.1.0)" = tag ]'),
        check(
            "v2.1.0 points at the version bump on main, and main is unchanged",
            """
            [ "$(git log -1 --format=%s 'refs/tags/v2.1.0^{commit}')" = "Bump version to 2.1.0" ]
            [ "$(git show 'refs/tags/v2.1.0^{commit}:VERSION')" = 2.1.0 ]
            git merge-base --is-ancestor refs/tags/v2.1.0 main
            [ "$(git log -1 --format=%s main)" = "Start 2.2.0 development" ]
            """,
        ),
        check(
            "the tag's message is 'Release 2.1.0'",
            """[ "$(git for-each-ref --format='%(contents)' refs/tags/v2.1.0)" = "Release 2.1.0" ]""",
        ),
    ],
    [
        run("git log --oneline"),
        run("git tag -a v2.1.0 -m 'Release 2.1.0' main~1"),
    ],
    [run("git tag v2.1.0 main~1")],
)

task(
    "amend-last-commit-message",
    "easy",
    prose(
        """
        The last commit on `main` has a misspelled message. Change its message to exactly the following
        (a subject line, a blank line and one line of body), without changing the commit's content or
        any earlier commit, and without adding a commit:

        {message}
        """,
        message="Add retry logic to the HTTP client\n\nRetries up to 3 times with exponential backoff.",
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > client.py <<'EOF'
    def get(url):
        return transport.request("GET", url)
    EOF
    commit "Add HTTP client"
    cat >> client.py <<'EOF'

    MAX_RETRIES = 3


    def get_with_retries(url):
        for attempt in range(MAX_RETRIES):
            try:
                return get(url)
            except ConnectionError:
                sleep(2 ** attempt)
        raise ConnectionError(url)
    EOF
    commit "Add retyr logic to the HTTP clinet"
    """,
    [
        check(
            "the subject is fixed",
            '[ "$(git log -1 --format=%s main)" = "Add retry logic to the HTTP client" ]',
        ),
        check(
            "the body line is there",
            '[ "$(git log -1 --format=%b main)" = "Retries up to 3 times with exponential backoff." ]',
        ),
        check(
            "no commit added, the content and the first commit kept, the typo gone",
            """
            [ "$(git rev-list --count main)" = 2 ]
            [ "$(git log -1 --format=%s main~1)" = "Add HTTP client" ]
            [ -z "$(git log main --format=%s -F --grep=retyr)" ]
            client=$(git show main:client.py)
            [[ $client == *"MAX_RETRIES = 3"* && $client == *"raise ConnectionError(url)" ]]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run(
            """
            git commit --amend -m 'Add retry logic to the HTTP client' -m 'Retries up to 3 times with exponential backoff.'
            """
        )
    ],
    [run("git commit --amend -m 'Add retry logic to the HTTP client'")],
)

GITIGNORE = text(
    """
    /build/
    /dist/
    __pycache__/
    *.pyc
    /logs/*.log
    /.env
    *.swp
    """
)

task(
    "gitignore-build-artifacts",
    "easy",
    prose(
        """
        `git status` lists a lot of generated and local files. Add a `.gitignore` file at the top of the
        repository and commit it on `main`, so that `git status --porcelain` prints nothing afterwards.
        It must ignore:

        {rules}

        No tracked file may match an ignore pattern (`git ls-files --cached --ignored --exclude-standard`
        must print nothing), and don't delete, untrack or commit any other file.
        """,
        rules=text(
            """
            - the top-level build/ and dist/ directories (but not other directories named build:
              docs/build/ is tracked and files added there later must not be ignored);
            - Python bytecode anywhere: __pycache__/ directories and *.pyc files;
            - *.log files directly in logs/ (logs/README.md is tracked and stays tracked);
            - the .env file at the top level (config/settings.example.env is tracked);
            - editor swap files (*.swp) anywhere.
            """
        ),
    ),
    """
    git init -q -b main
    {COMMIT}
    mkdir -p src docs/build logs config
    echo "print('app')" > src/app.py
    echo "def helper(): pass" > src/util.py
    echo "# app" > README.md
    echo "Generated docs are published from here." > docs/build/index.md
    echo "Application logs are written here." > logs/README.md
    echo "SECRET_KEY=change-me" > config/settings.example.env
    commit "Initial commit"
    mkdir -p build/lib dist src/__pycache__ tests/__pycache__
    echo "print('app')" > build/lib/app.py
    echo "archive" > dist/app-0.1.tar.gz
    echo "bytecode" > src/__pycache__/app.cpython-311.pyc
    echo "bytecode" > tests/__pycache__/test_app.cpython-311.pyc
    echo "bytecode" > src/old_util.pyc
    echo "started" > logs/2024-01-01.log
    echo "started" > logs/2024-01-02.log
    echo "SECRET_KEY=hunter2" > .env
    echo "swap" > src/.app.py.swp
    """,
    [
        check(
            ".gitignore is committed and git status is clean",
            """
            git cat-file -e HEAD:.gitignore
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
        check(
            "no tracked file matches an ignore pattern",
            """
            git cat-file -e HEAD:.gitignore
            [ -z "$(git ls-files --cached --ignored --exclude-standard)" ]
            """,
        ),
        check(
            "the same files are tracked, plus .gitignore, and the ignored files are still there",
            """
            [ "$(git ls-files)" = "$(printf '%s\\n' .gitignore README.md config/settings.example.env docs/build/index.md logs/README.md src/app.py src/util.py)" ]
            for f in build/lib/app.py dist/app-0.1.tar.gz src/__pycache__/app.cpython-311.pyc src/old_util.pyc logs/2024-01-01.log .env src/.app.py.swp; do
                [ -f "$f" ]
            done
            """,
        ),
        check(
            "the patterns ignore new files of each kind, and only those",
            """
            for path in build/new/out.o dist/app-0.2.whl pkg/sub/__pycache__/m.cpython-312.pyc lib/x.pyc logs/2024-02-01.log .env docs/.notes.md.swp; do
                git check-ignore -q "$path"
            done
            for path in docs/build/page.md src/build.py config/settings.example.env src/new.py; do
                ! git check-ignore -q --no-index "$path"
            done
            ! git check-ignore -q --no-index logs/README.md
            """,
        ),
    ],
    [
        run("git status --porcelain --untracked-files=all"),
        write(".gitignore", GITIGNORE),
        run("git add .gitignore && git commit -q -m 'Add .gitignore' && git status --porcelain"),
    ],
    [
        write(".gitignore", GITIGNORE.replace("/build/", "build/")),
        run("git add .gitignore && git commit -q -m 'Add .gitignore'"),
    ],
)

ARCHITECTURE_V2 = text(
    """
    # Architecture

    The server is a single process with three layers:

    - the HTTP front end parses requests;
    - the service layer holds the business rules;
    - the storage layer talks to SQLite.
    """
)

task(
    "restore-deleted-file",
    "easy",
    prose(
        """
        `docs/architecture.md` was deleted in an earlier commit on `main`. Bring it back with the content
        it had just before it was deleted, as one new commit on top of `main` with the message
        'Restore docs/architecture.md'. Don't rewrite existing history and don't change any other file.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    mkdir docs
    cat > docs/architecture.md <<'EOF'
    # Architecture

    The server is a single process.
    EOF
    echo "print('server')" > server.py
    commit "Add architecture notes"
    cat > docs/architecture.md <<'EOF'
    {ARCH}
    EOF
    commit "Expand architecture notes"
    echo "# API" > docs/api.md
    commit "Add API docs"
    git rm -q docs/architecture.md
    echo "See docs/api.md." >> docs/api.md
    commit "Remove outdated docs"
    echo "print('cli')" > cli.py
    commit "Add CLI"
    """,
    [
        check(
            "main has one new commit 'Restore docs/architecture.md' on top of 'Add CLI'",
            """
            [ "$(git log -1 --format=%s main)" = "Restore docs/architecture.md" ]
            [ "$(git log -1 --format=%s main~1)" = "Add CLI" ]
            [ "$(git rev-list --count main)" = 6 ]
            """,
        ),
        check(
            "docs/architecture.md has the content it had before its deletion",
            same("git show main:docs/architecture.md", ARCHITECTURE_V2),
        ),
        check(
            "the new commit only adds docs/architecture.md, and the work tree is clean",
            """
            [ "$(git diff --name-status main~1 main)" = "$(printf 'A\\tdocs/architecture.md')" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run("git log --oneline --diff-filter=D -- docs/architecture.md"),
        run(
            """
            gone=$(git log --format=%H -n 1 --diff-filter=D -- docs/architecture.md)
            git checkout "$gone^" -- docs/architecture.md
            git commit -q -m 'Restore docs/architecture.md'
            """
        ),
    ],
    [
        run(
            """
            first=$(git log --format=%H --diff-filter=A -- docs/architecture.md | tail -n 1)
            git checkout "$first" -- docs/architecture.md
            git commit -q -m 'Restore docs/architecture.md'
            """
        )
    ],
    ARCH=ARCHITECTURE_V2.rstrip("\n"),
)

task(
    "track-remote-branch",
    "easy",
    prose(
        """
        This repository has a remote `origin`: a bare repository at `.remote.git` inside the work tree
        (excluded from `git status`). Someone pushed a new commit to its `hotfix` branch. Fetch from
        `origin`, set the local branch `hotfix` to track `origin/hotfix` (as `git branch -u` does), and
        bring `hotfix` up to date with it by fast-forwarding. Don't change `main` or the remote.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "def handle(payload): return payload" > handler.py
    commit "Add payload handler"
    git init -q --bare .remote.git
    echo /.remote.git >> .git/info/exclude
    git remote add origin .remote.git
    git push -q origin main
    git checkout -q -b hotfix
    echo "def handle(payload): return payload or None" > handler.py
    commit "Guard against empty payloads"
    git push -q origin hotfix
    echo "log = []" >> handler.py
    commit "Log rejected payloads"
    git push -q origin hotfix
    git reset -q --hard HEAD~1
    git update-ref -d refs/remotes/origin/hotfix
    git checkout -q main
    """,
    [
        check(
            "hotfix tracks origin/hotfix",
            """
            [ "$(git config branch.hotfix.remote)" = origin ]
            [ "$(git config branch.hotfix.merge)" = refs/heads/hotfix ]
            """,
        ),
        check(
            "origin/hotfix is fetched",
            '[ "$(git rev-parse -q --verify refs/remotes/origin/hotfix)" = "$(git --git-dir=.remote.git rev-parse refs/heads/hotfix)" ]',
        ),
        check(
            "hotfix is fast-forwarded to the remote's hotfix, which is unchanged",
            """
            remote=$(git --git-dir=.remote.git rev-parse refs/heads/hotfix)
            [ "$(git rev-parse hotfix)" = "$remote" ]
            [ "$(git --git-dir=.remote.git log --format=%s "$remote")" = "$(printf '%s\\n' 'Log rejected payloads' 'Guard against empty payloads' 'Add payload handler')" ]
            [ "$(git rev-parse main)" = "$(git --git-dir=.remote.git rev-parse refs/heads/main)" ]
            """,
        ),
    ],
    [
        run("git fetch -q origin && git branch -u origin/hotfix hotfix"),
        run("git checkout -q hotfix && git merge --ff-only origin/hotfix && git checkout -q main"),
    ],
    [run("git fetch -q origin && git branch -u origin/hotfix hotfix")],
)

task(
    "fix-detached-head",
    "easy",
    prose(
        """
        HEAD is detached: the last two commits, 'Add pie charts' and 'Add pie chart legend', were made
        on top of main's commit 'Add bar charts' without being on any branch. Put them on a new branch
        `feature/pie-charts` (keeping them where they are, on top of 'Add bar charts') and check that
        branch out, so that HEAD is no longer detached. Don't change `main`.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "def chart(): pass" > charts.py
    commit "Add chart module"
    echo "def bar(): pass" >> charts.py
    commit "Add bar charts"
    echo "def line(): pass" >> charts.py
    commit "Add line charts"
    git checkout -q --detach main~1
    echo "def pie(): pass" > pie.py
    commit "Add pie charts"
    echo "def legend(): pass" >> pie.py
    commit "Add pie chart legend"
    """,
    [
        check(
            "feature/pie-charts holds the two commits on top of 'Add bar charts', and main is unchanged",
            """
            [ "$(git log --reverse --format=%s refs/heads/feature/pie-charts)" = "$(printf '%s\\n' 'Add chart module' 'Add bar charts' 'Add pie charts' 'Add pie chart legend')" ]
            [ "$(git log --format=%s main)" = "$(printf '%s\\n' 'Add line charts' 'Add bar charts' 'Add chart module')" ]
            """,
        ),
        check(
            "HEAD is on feature/pie-charts, with a clean work tree",
            """
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/feature/pie-charts ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [run("git switch -c feature/pie-charts")],
    [run("git branch feature/pie-charts")],
)

task(
    "clean-untracked-keep-ignored",
    "easy",
    prose(
        """
        Delete every untracked file and directory that is not ignored (notes, drafts, scratch
        directories), but keep the ignored files (those matched by `.gitignore`: `.env`, `node_modules/`
        and `*.log`), and keep the uncommitted change to `src/index.js` as it is. Don't commit anything.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    mkdir src
    printf '.env\\nnode_modules/\\n*.log\\n' > .gitignore
    echo "console.log('hi');" > src/index.js
    echo "# site" > README.md
    commit "Initial commit"
    echo "console.log('hello');" > src/index.js
    mkdir -p scratch/deep node_modules/left-pad
    echo "todo" > notes.txt
    echo "draft" > src/draft.js
    echo "tmp" > scratch/a.tmp
    echo "tmp" > scratch/deep/b.tmp
    echo "TOKEN=abc" > .env
    echo "module.exports = 1;" > node_modules/left-pad/index.js
    echo "debug" > debug.log
    """,
    [
        check(
            "no untracked file is left",
            """
            [ -z "$(git ls-files --others --exclude-standard)" ]
            [ ! -e notes.txt ] && [ ! -e src/draft.js ]
            """,
        ),
        check(
            "no untracked directory is left",
            "[ ! -e scratch ]",
        ),
        check(
            "the ignored files are kept",
            """
            [ ! -e notes.txt ]
            [ -f .env ] && [ -f node_modules/left-pad/index.js ] && [ -f debug.log ]
            """,
        ),
        check(
            "the change to src/index.js is still uncommitted, and nothing was committed",
            """
            [ ! -e notes.txt ]
            [ "$(git diff --name-only)" = src/index.js ]
            [ "$(cat src/index.js)" = "console.log('hello');" ]
            [ "$(git rev-list --count HEAD)" = 1 ]
            """,
        ),
    ],
    [run("git clean -n -d"), run("git clean -f -d")],
    [run("git clean -f -d -x")],
)

task(
    "tag-commit-that-introduced-line",
    "easy",
    prose(
        """
        Find the commit on `main` that first introduced the line `MAX_RETRIES = 7` into `settings.py`
        (the value was changed again later) and create a lightweight tag `retries-7` pointing at that
        commit. Don't change any branch.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    printf 'TIMEOUT = 30\\n' > settings.py
    commit "Add settings"
    printf 'TIMEOUT = 30\\nMAX_RETRIES = 3\\n' > settings.py
    commit "Retry failed requests"
    echo "# client" > README.md
    commit "Add README"
    printf 'TIMEOUT = 20\\nMAX_RETRIES = 7\\nBACKOFF = 2\\n' > settings.py
    commit "Tune network settings"
    echo "def get(): pass" > client.py
    commit "Add client"
    printf 'TIMEOUT = 20\\nMAX_RETRIES = 7\\nBACKOFF = 1.5\\n' > settings.py
    commit "Lower the backoff factor"
    printf 'TIMEOUT = 20\\nMAX_RETRIES = 5\\nBACKOFF = 1.5\\n' > settings.py
    commit "Retry less often"
    echo "def post(): pass" >> client.py
    commit "Add POST support"
    """,
    [
        check(
            "retries-7 is a lightweight tag",
            '[ "$(git cat-file -t refs/tags/retries-7)" = commit ]',
        ),
        check(
            "retries-7 is on main",
            """
            git merge-base --is-ancestor refs/tags/retries-7 main
            [ "$(git log -1 --format=%s main)" = "Add POST support" ]
            """,
        ),
        check(
            "retries-7 is the commit that introduced the line",
            """
            [ "$(git log -1 --format=%s refs/tags/retries-7)" = "Tune network settings" ]
            [[ $'\\n'$(git show refs/tags/retries-7:settings.py)$'\\n' == *$'\\nMAX_RETRIES = 7\\n'* ]]
            """,
        ),
    ],
    [
        run("git log --oneline -S 'MAX_RETRIES = 7' -- settings.py"),
        run("git tag retries-7 \"$(git log --reverse --format=%H -S 'MAX_RETRIES = 7' -- settings.py | head -n 1)\""),
    ],
    [run("git tag retries-7 \"$(git log --format=%H -n 1 -S 'MAX_RETRIES = 7' -- settings.py)\"")],
)

task(
    "squash-merge-feature",
    "easy",
    prose(
        """
        Bring all the changes of the branch `feature/logging` into `main` as one single new commit (a
        squash merge, not a merge commit) with the message 'Add structured logging'. Keep the branch
        `feature/logging` itself unchanged.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "def main(): pass" > app.py
    echo "# app" > README.md
    commit "Initial commit"
    git checkout -q -b feature/logging
    echo "import json" > logging_setup.py
    commit "Add a JSON log formatter"
    echo "def configure(): pass" >> logging_setup.py
    commit "Add configure()"
    printf 'from logging_setup import configure\\ndef main(): configure()\\n' > app.py
    commit "Configure logging at start-up"
    git checkout -q main
    echo "Run with python app.py." >> README.md
    commit "Update README"
    """,
    [
        check(
            "main has one new non-merge commit 'Add structured logging' on top of 'Update README'",
            """
            [ "$(git log -1 --format=%s main)" = "Add structured logging" ]
            [ "$(git log -1 --format=%P main | wc -w)" = 1 ]
            [ "$(git log -1 --format=%s main~1)" = "Update README" ]
            [ "$(git rev-list --count main)" = 3 ]
            """,
        ),
        check(
            "main has all of feature/logging's changes, which is unchanged",
            """
            [ "$(git diff --name-only feature/logging main)" = README.md ]
            [ "$(git log --format=%s feature/logging)" = "$(printf '%s\\n' 'Configure logging at start-up' 'Add configure()' 'Add a JSON log formatter' 'Initial commit')" ]
            """,
        ),
    ],
    [run("git merge --squash feature/logging && git commit -q -m 'Add structured logging'")],
    [run("git merge --no-ff -m 'Add structured logging' feature/logging")],
)


def render_jsonl() -> str:
    """The content of tasks.jsonl: one task a line, in the order of TASKS."""
    return "".join(json.dumps(task, ensure_ascii=False) + "\n" for task in TASKS)


if __name__ == "__main__":
    TASKS_FILE.write_text(render_jsonl())
    print(f"wrote {len(TASKS)} tasks to {TASKS_FILE}")
