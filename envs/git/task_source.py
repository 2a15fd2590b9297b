"""The task set of openenv/Git-v0, written in Python so that its bash scripts stay readable.

``tasks.jsonl`` next to this file is generated from :data:`TASKS`; after editing a task, regenerate it::

    python envs/git/task_source.py

Each task builds a repository with its ``setup`` script, shows the agent its ``prompt``, and scores the
final repository by the fraction of its ``checks`` (bash scripts, exit status 0 = pass) that pass. A
check tests the end state the prompt asks for, never the commands used, and fails on the repository
as the setup leaves it, so that submitting without doing anything scores 0. ``solution`` is a
sequence of tool calls that scores 1; ``near_miss`` one that leaves the task almost done (it scores
strictly between 0 and 1).

Setups run with a fixed identity (Ada Lovelace <ada@example.com>) and fixed author and committer
dates from the environment, so the repository they build is the same on every run; a setup that
needs other people or dates sets them per commit. Checks run under ``bash -euo pipefail``, where a
failing ``! cmd`` or ``a && b`` that isn't the script's last command goes unnoticed: they test a
negation with ``[ -z "$(...)" ]`` or ``if cmd; then exit 1; fi`` instead.
"""

from __future__ import annotations

import json
import re
import shlex
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
    """A prompt: paragraphs reflowed to one line each (a list item ``- ...`` to one line of its own);
    a paragraph ``{name}`` becomes ``blocks[name]``, indented as a code block."""
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", textwrap.dedent(text).strip()):
        name = re.fullmatch(r"\{(\w+)\}", paragraph.strip())
        if name:
            paragraphs.append(textwrap.indent(blocks[name.group(1)].strip("\n"), "    "))
        else:
            items = re.split(r"\n\s*(?=- )", paragraph.strip())
            paragraphs.append("\n".join(" ".join(item.split()) for item in items))
    return "\n\n".join(paragraphs)


def text(content: str) -> str:
    """File content written indented in this file."""
    return textwrap.dedent(content).strip("\n") + "\n"


def same(command: str, content: str) -> str:
    """A bash condition: ``command`` prints ``content`` (trailing newlines aside)."""
    return f'[ "$({command})" = "$(cat <<\'EOF\'\n{content.rstrip()}\nEOF\n)" ]'


def lines(*items: str) -> str:
    """A bash word that expands to the items, one a line."""
    return "\"$(printf '%s\\n' " + " ".join(shlex.quote(item) for item in items) + ')"'


def log_is(revisions: str, *subjects: str) -> str:
    """A bash condition: ``git log revisions`` lists exactly these subjects, oldest first."""
    return f'[ "$(git log --reverse --format=%s {revisions})" = {lines(*subjects)} ]'


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
            [ -z "$(grep -E '^(<<<<<<<|=======|>>>>>>>)' menu.txt || true)" ]
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
            [ -z "$(git ls-tree --name-only release/1.x export.py)" ]
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
        any earlier commit, and without adding a commit; leave a clean work tree:

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

# The committed .gitignore alone, in a scratch repository of its own: what .git/info/exclude,
# core.excludesFile or a .gitignore left uncommitted would ignore counts for nothing.
COMMITTED_GITIGNORE = """
    [ "$(git hash-object .gitignore)" = "$(git rev-parse HEAD:.gitignore)" ]
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    git init -q "$scratch"
    git show HEAD:.gitignore > "$scratch/.gitignore"
"""

task(
    "gitignore-build-artifacts",
    "easy",
    prose(
        """
        `git status` lists a lot of generated and local files. Add a `.gitignore` file at the top of the
        repository and commit it on `main`, so that `git status --porcelain` prints nothing afterwards.
        It must ignore:

        - the top-level `build/` and `dist/` directories, but not other directories named build:
          `docs/build/` is tracked, and files added there later must not be ignored;
        - Python bytecode anywhere: `__pycache__/` directories and `*.pyc` files;
        - `*.log` files directly in `logs/` (`logs/README.md` is tracked and stays tracked);
        - the `.env` file at the top level (`config/settings.example.env` is tracked);
        - editor swap files (`*.swp`) anywhere.

        No tracked file may match an ignore pattern (`git ls-files --cached --ignored --exclude-standard`
        must print nothing), and don't delete, untrack or commit any other file.
        """
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
            COMMITTED_GITIGNORE,
            """
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ "$(git ls-files -v | cut -c1 | sort -u)" = H ]
            [ -z "$(git status --porcelain --untracked-files=no)" ]
            all=$(git ls-files --others | wc -l)
            ignored=$(git ls-files --others | { git -C "$scratch" check-ignore --no-index --stdin || true; } | wc -l)
            [ "$ignored" = "$all" ]
            """,
        ),
        check(
            "no tracked file matches an ignore pattern",
            COMMITTED_GITIGNORE,
            """
            [ -z "$(git ls-files --cached --ignored --exclude-standard)" ]
            [ -z "$(git ls-tree -r --name-only HEAD | { git -C "$scratch" check-ignore --no-index --stdin || true; })" ]
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
            COMMITTED_GITIGNORE,
            """
            cd "$scratch"
            for path in build/new/out.o dist/app-0.2.whl pkg/__pycache__/cache.bin lib/x.pyc logs/2024-02-01.log .env docs/.notes.md.swp; do
                git check-ignore -q --no-index "$path"
            done
            for path in docs/build/page.md src/build.py config/settings.example.env src/new.py logs/README.md; do
                if git check-ignore -q --no-index "$path"; then exit 1; fi
            done
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
        'Restore docs/architecture.md'. Don't rewrite existing history, don't change any other file, and
        leave a clean work tree.
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
        branch out, so that HEAD is no longer detached, with a clean work tree. Don't change `main`.
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
            [ ! -e notes.txt ]
            [ ! -e src/draft.js ]
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
            [ -f .env ]
            [ -f node_modules/left-pad/index.js ]
            [ -f debug.log ]
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

# -------------------------------------------------------------------------------------------- medium

CHECK_SH = text(
    """
    #!/usr/bin/env bash
    # Exits 0 when calc.sh adds, subtracts and multiplies correctly, 1 otherwise.
    [ "$(bash calc.sh add 2 3)" = 5 ] || exit 1
    [ "$(bash calc.sh sub 7 10)" = -3 ] || exit 1
    [ "$(bash calc.sh mul 4 6)" = 24 ] || exit 1
    """
)

# Inserts a line before the first line of calc.sh equal to a marker: `insert_before esac '    div) ...'`.
INSERT_BEFORE = text(
    """
    insert_before() {
        local out=() line inserted=
        while IFS= read -r line; do
            if [ -z "$inserted" ] && [ "$line" = "$1" ]; then out+=("$2"); inserted=1; fi
            out+=("$line")
        done < calc.sh
        printf '%s\\n' "${out[@]}" > calc.sh
    }
    """
)

task(
    "bisect-first-bad-commit",
    "medium",
    prose(
        """
        The script `./check.sh` (present in every commit of `main`) passes on main's first commit but
        fails on its latest one. Find the first commit of `main` on which it fails, for example with
        `git bisect run ./check.sh`, and create a tag `first-bad` (lightweight or annotated) pointing at
        exactly that commit. When you're done, no bisect session may be in progress, `main` must be
        unchanged and checked out, with a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    {INSERT_BEFORE}
    cat > check.sh <<'EOF'
    {CHECK_SH}
    EOF
    chmod +x check.sh
    cat > calc.sh <<'EOF'
    #!/usr/bin/env bash
    op=$1
    a=$2
    b=$3
    case $op in
        add) echo $((a + b)) ;;
        sub) echo $((a - b)) ;;
        mul) echo $((a * b)) ;;
    esac
    EOF
    commit "Add calculator with add, sub and mul"
    echo "# calc" > README.md
    commit "Add README"
    insert_before 'op=$1' '[ $# -eq 3 ] || { echo "usage: calc OP A B" >&2; exit 2; }'
    commit "Add usage message"
    insert_before esac '    div) echo $((a / b)) ;;'
    commit "Add division"
    echo "Operations: add, sub, mul, div." >> README.md
    commit "Document the operations"
    insert_before esac '    mod) echo $((a % b)) ;;'
    commit "Add modulo"
    echo "## 0.1" > CHANGELOG.md
    commit "Add a changelog"
    insert_before 'case $op in' '[ "$op" = div ] && [ "$b" = 0 ] && { echo "division by zero" >&2; exit 2; }'
    commit "Reject division by zero"
    echo "Exit status 2 means a usage error." >> README.md
    commit "Describe exit codes"
    insert_before esac '    pow) echo $((a ** b)) ;;'
    commit "Add power operation"
    sed -i -e 's/) echo /)  echo /' -e 's/(a - b)/(b - a)/' calc.sh
    commit "Align the case arms"
    insert_before esac '    max)  echo $((a > b ? a : b)) ;;'
    insert_before esac '    min)  echo $((a < b ? a : b)) ;;'
    commit "Add max and min"
    echo "## 0.2: max, min, pow" >> CHANGELOG.md
    commit "Update changelog"
    insert_before esac '    abs)  echo $((a < 0 ? -a : a)) ;;'
    commit "Add abs"
    echo "pow raises A to the power B." >> README.md
    commit "Mention power in README"
    insert_before esac '    neg)  echo $((-a)) ;;'
    commit "Add negation"
    echo "## 0.3: abs, neg" >> CHANGELOG.md
    commit "Update changelog for 0.3"
    sed -i 's/usage: calc OP A B/usage: calc.sh OP A B/' calc.sh
    commit "Tidy usage message"
    """,
    [
        check(
            "first-bad points at a commit of main",
            """
            git rev-parse -q --verify 'refs/tags/first-bad^{commit}' >/dev/null
            git merge-base --is-ancestor refs/tags/first-bad main
            """,
        ),
        check(
            "first-bad is exactly the first commit on which check.sh fails",
            '[ "$(git log -1 --format=%s refs/tags/first-bad)" = "Align the case arms" ]',
        ),
        check(
            "no bisect in progress; main unchanged and checked out",
            """
            git rev-parse -q --verify refs/tags/first-bad >/dev/null
            [ ! -e "$(git rev-parse --git-path BISECT_START)" ]
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ "$(git rev-list --count main)" = 18 ]
            [ "$(git log -1 --format=%s main)" = "Tidy usage message" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run('git bisect start main "$(git rev-list --max-parents=0 main)" && git bisect run ./check.sh'),
        run("git tag first-bad refs/bisect/bad && git bisect reset"),
    ],
    [
        run('git bisect start main "$(git rev-list --max-parents=0 main)" && git bisect run ./check.sh'),
        run("git tag first-bad refs/bisect/bad~1 && git bisect reset"),
    ],
    INSERT_BEFORE=INSERT_BEFORE.rstrip("\n"),
    CHECK_SH=CHECK_SH.rstrip("\n"),
)


SEARCH_BASE = text(
    '''
    """Search over records."""

    DEFAULT_FIELDS = ("title",)
    MIN_TERM_LENGTH = 1
    MAX_RESULTS = 100


    def search(records, term, fields=DEFAULT_FIELDS):
        term = term.lower()
        return [r for r in records if any(term in r[f].lower() for f in fields)]
    '''
)
SEARCH_RESOLVED = text(
    '''
    """Search over records."""

    DEFAULT_FIELDS = ("title", "tags", "body")
    MIN_TERM_LENGTH = 1
    MAX_RESULTS = 100


    def search(records, term, fields=DEFAULT_FIELDS):
        term = term.lower()
        return [r for r in records if any(term in r[f].lower() for f in fields)]
    '''
)
SEARCH_FINAL = text(
    '''
    """Search over records."""

    DEFAULT_FIELDS = ("title", "tags", "body")
    MIN_TERM_LENGTH = 1
    MAX_RESULTS = 100


    def search(records, term, fields=DEFAULT_FIELDS, limit=MAX_RESULTS):
        term = term.lower()
        found = [r for r in records if any(term in r[f].lower() for f in fields)]
        return found[:limit]
    '''
)
SEARCH_BRANCH = SEARCH_FINAL.replace('"tags", ', "")
SEARCH_SUBJECTS = ("Search bodies by default", "Add a result limit", "Document search options")

task(
    "rebase-feature-onto-main",
    "medium",
    prose(
        """
        Rebase the branch `feature/search-options` onto the current `main`, so that its three commits
        sit on top of main in a straight line (no merge commit), with their messages unchanged. The
        first of them conflicts in `search.py` with main's 'Search tags by default': resolve it by
        keeping both sides' fields, as `DEFAULT_FIELDS = ("title", "tags", "body")`. After the rebase,
        `search.py` on the branch must read exactly:

        {search}

        Don't change `main`.
        """,
        search=SEARCH_FINAL,
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > search.py <<'EOF'
    {SEARCH_BASE}
    EOF
    commit "Add search module"
    git checkout -q -b feature/search-options
    sed -i 's/("title",)/("title", "body")/' search.py
    commit "Search bodies by default"
    cat > search.py <<'EOF'
    {SEARCH_BRANCH}
    EOF
    commit "Add a result limit"
    mkdir docs
    echo "search(records, term, fields, limit)" > docs/search.md
    commit "Document search options"
    git checkout -q main
    mkdir tests
    echo "from search import search" > tests/test_search.py
    commit "Add search tests"
    sed -i 's/("title",)/("title", "tags")/' search.py
    commit "Search tags by default"
    """,
    [
        check(
            "feature/search-options is three commits in a line on top of main, which is unchanged",
            """
            git merge-base --is-ancestor main feature/search-options
            [ "$(git rev-list --count main..feature/search-options)" = 3 ]
            [ -z "$(git rev-list --merges main..feature/search-options)" ]
            """,
            log_is("main", "Add search module", "Add search tests", "Search tags by default"),
        ),
        check(
            "the three commits keep their messages and order",
            "git merge-base --is-ancestor main feature/search-options\n",
            log_is("main..feature/search-options", *SEARCH_SUBJECTS),
        ),
        check(
            "search.py has both sides' changes, and main's test file is in the branch",
            same("git show feature/search-options:search.py", SEARCH_FINAL),
            "git cat-file -e feature/search-options:tests/test_search.py\n",
            "git cat-file -e feature/search-options:docs/search.md\n",
        ),
    ],
    [
        run("git checkout -q feature/search-options && git rebase main"),
        write("search.py", SEARCH_RESOLVED),
        run("git add search.py && GIT_EDITOR=true git rebase --continue"),
        run("git log --oneline --graph --all"),
    ],
    [
        run("git checkout -q feature/search-options && git merge main"),
        write("search.py", SEARCH_FINAL),
        run("git add search.py && git commit -q --no-edit"),
    ],
    SEARCH_BASE=SEARCH_BASE.rstrip("\n"),
    SEARCH_BRANCH=SEARCH_BRANCH.rstrip("\n"),
)

CSV_FINAL = text(
    """
    def to_csv(rows, sep=",", header=None):
        lines = [sep.join(header)] if header else []
        return "\\n".join(lines + [sep.join(row) for row in rows])
    """
)
JSON_FINAL = text(
    """
    import json


    def to_json(rows):
        return json.dumps(rows, indent=2)
    """
)
REGISTRY = text(
    """
    from .csv import to_csv
    from .json import to_json

    EXPORTERS = {"csv": to_csv, "json": to_json}
    """
)
EXPORTER_SUBJECTS = ("Add CSV exporter", "Add JSON exporter", "Add exporter registry")

task(
    "squash-fixups-autosquash",
    "medium",
    prose(
        """
        The branch `feature/exporters` has 'fixup!' commits. Squash each of them into the commit it
        fixes, as `git rebase -i --autosquash` does, so that the branch has exactly three commits on top
        of `main`, in this order: 'Add CSV exporter', 'Add JSON exporter', 'Add exporter registry'. Each
        commit must contain its fixes, and the branch's final content must not change. Don't change
        `main`.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# exporters" > README.md
    commit "Initial commit"
    git checkout -q -b feature/exporters
    mkdir exporters
    cat > exporters/csv.py <<'EOF'
    def to_csv(rows, sep=";"):
        return "\\n".join(sep.join(row) for row in rows)
    EOF
    commit "Add CSV exporter"
    cat > exporters/json.py <<'EOF'
    import json


    def to_json(rows):
        return json.dumps(rows, indent=8)
    EOF
    commit "Add JSON exporter"
    sed -i 's/sep=";"/sep=","/' exporters/csv.py
    commit "fixup! Add CSV exporter"
    cat > exporters/__init__.py <<'EOF'
    {REGISTRY}
    EOF
    commit "Add exporter registry"
    sed -i 's/indent=8/indent=2/' exporters/json.py
    commit "fixup! Add JSON exporter"
    cat > exporters/csv.py <<'EOF'
    {CSV_FINAL}
    EOF
    commit "fixup! Add CSV exporter"
    """,
    [
        check(
            "the branch is exactly the three commits on top of main",
            log_is("main..feature/exporters", *EXPORTER_SUBJECTS),
            "git merge-base --is-ancestor main feature/exporters\n",
            log_is("main", "Initial commit"),
        ),
        check(
            "'Add CSV exporter' contains both of its fixes",
            """
            csv=$(git rev-list --grep='^Add CSV exporter$' main..feature/exporters)
            [ "$(git log -1 --format=%s "$csv")" = "Add CSV exporter" ]
            """,
            same('git show "$csv:exporters/csv.py"', CSV_FINAL),
            '[ -z "$(git ls-tree --name-only "$csv" exporters/json.py)" ]\n',
        ),
        check(
            "'Add JSON exporter' contains its fix",
            """
            json=$(git rev-list --grep='^Add JSON exporter$' main..feature/exporters)
            [ "$(git log -1 --format=%s "$json")" = "Add JSON exporter" ]
            """,
            same('git show "$json:exporters/json.py"', JSON_FINAL),
        ),
        check(
            "no fixup commit is left, and the final content is unchanged",
            """
            [ -z "$(git log --format=%s main..feature/exporters | grep '^fixup!' || true)" ]
            """,
            same("git show feature/exporters:exporters/csv.py", CSV_FINAL),
            same("git show feature/exporters:exporters/json.py", JSON_FINAL),
            same("git show feature/exporters:exporters/__init__.py", REGISTRY),
        ),
    ],
    [
        run("git checkout -q feature/exporters && GIT_SEQUENCE_EDITOR=true git rebase -i --autosquash main"),
        run("git log --oneline main..feature/exporters"),
    ],
    [
        run(
            """
            git checkout -q feature/exporters
            GIT_SEQUENCE_EDITOR="sed -i '/fixup! Add JSON exporter/s/^fixup/pick/'" git rebase -i --autosquash main
            """
        ),
    ],
    REGISTRY=REGISTRY.rstrip("\n"),
    CSV_FINAL=CSV_FINAL.rstrip("\n"),
)

task(
    "move-commit-to-new-branch",
    "medium",
    prose(
        """
        The commit 'Add dark mode toggle' was committed to `main` by mistake; a commit was made on top of
        it since. Move it to a new branch `feature/dark-mode`: afterwards `main` must no longer contain
        it (main is 'Create the settings page', 'Add a language selector', 'Fix typo in settings page',
        in this order, each with its changes), and `feature/dark-mode` must be the new `main` plus
        exactly that one commit on top, with its message and changes. Leave `main` checked out with a
        clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "<h1>Setings</h1>" > settings.html
    commit "Create the settings page"
    echo "export const languages = ['en', 'fr'];" > lang.js
    commit "Add a language selector"
    echo "body.dark { background: #111; }" > theme.css
    echo "export function toggleDark() {}" > dark.js
    commit "Add dark mode toggle"
    echo "<h1>Settings</h1>" > settings.html
    commit "Fix typo in settings page"
    """,
    [
        check(
            "main no longer contains the dark mode commit",
            log_is("main", "Create the settings page", "Add a language selector", "Fix typo in settings page"),
            """
            [ "$(git ls-tree --name-only main)" = "$(printf '%s\\n' lang.js settings.html)" ]
            [ "$(git show main:settings.html)" = "<h1>Settings</h1>" ]
            """,
        ),
        check(
            "feature/dark-mode is main plus the dark mode commit",
            """
            [ "$(git rev-parse feature/dark-mode~1)" = "$(git rev-parse main)" ]
            [ "$(git log -1 --format=%s feature/dark-mode)" = "Add dark mode toggle" ]
            [ "$(git diff --name-only main feature/dark-mode)" = "$(printf '%s\\n' dark.js theme.css)" ]
            """,
        ),
        check(
            "main is checked out, clean, without the dark mode files",
            """
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            [ ! -e dark.js ]
            [ ! -e theme.css ]
            """,
        ),
    ],
    [
        run(
            """
            dark=$(git log --format=%H -F --grep='Add dark mode toggle' main)
            git rebase -q --onto "$dark^" "$dark" main
            git checkout -q -b feature/dark-mode
            git cherry-pick "$dark"
            git checkout -q main
            """
        ),
    ],
    [
        run(
            """
            git branch feature/dark-mode
            dark=$(git log --format=%H -F --grep='Add dark mode toggle' main)
            git rebase -q --onto "$dark^" "$dark" main
            """
        ),
    ],
)

SIGNED = "Signed-off-by: Ada Lovelace <ada@example.com>"
CONTRIBUTING_SUBJECTS = ("Add CONTRIBUTING guide", "Describe the review process", "Link the code of conduct")
REVIEW_MESSAGE = "Describe the review process\n\nReviews need one approval from a maintainer."

task(
    "sign-off-branch-commits",
    "medium",
    prose(
        """
        Add the trailer `Signed-off-by: Ada Lovelace <ada@example.com>` to each of the three commits of
        the branch `docs/contributing` that are not on `main`, as `git commit --signoff` writes it (after
        the rest of the message, separated by a blank line). Keep their order, content and the rest of
        their messages, and leave `main`'s commits alone (they must not be signed off).
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# project" > README.md
    commit "Initial commit"
    echo "MIT" > LICENSE
    commit "Add license"
    git checkout -q -b docs/contributing
    echo "# Contributing" > CONTRIBUTING.md
    commit "Add CONTRIBUTING guide"
    echo "Every change is reviewed." >> CONTRIBUTING.md
    git add -A
    git commit -q -m "Describe the review process" -m "Reviews need one approval from a maintainer."
    echo "Please follow the code of conduct." >> CONTRIBUTING.md
    commit "Link the code of conduct"
    git checkout -q main
    """,
    [
        check(
            "the branch's last commit is signed off",
            """[ "$(git log -1 --format='%(trailers:key=Signed-off-by,valueonly)' docs/contributing)" = "Ada Lovelace <ada@example.com>" ]""",
        ),
        check(
            "each of the three commits is signed off exactly once",
            """
            [ "$(git rev-list --count main..docs/contributing)" = 3 ]
            for c in $(git rev-list main..docs/contributing); do
                [ "$(git log -1 --format='%(trailers:key=Signed-off-by,valueonly)' "$c")" = "Ada Lovelace <ada@example.com>" ]
            done
            """,
        ),
        check(
            "messages, order and content are kept; main is unchanged and not signed off",
            """
            [ -n "$(git log --format='%(trailers:key=Signed-off-by)' main..docs/contributing)" ]
            """,
            log_is("main..docs/contributing", *CONTRIBUTING_SUBJECTS),
            log_is("main", "Initial commit", "Add license"),
            """
            [ -z "$(git log --format='%(trailers)' main)" ]
            git merge-base --is-ancestor main docs/contributing
            review=$(git log --format=%H -F --grep='Describe the review process' main..docs/contributing)
            """,
            f'[ "$(git log -1 --format=%B "$review")" = {lines(REVIEW_MESSAGE + chr(10) + chr(10) + SIGNED)} ]\n',
            """
            [ "$(git show docs/contributing:CONTRIBUTING.md)" = "$(printf '%s\\n' '# Contributing' 'Every change is reviewed.' 'Please follow the code of conduct.')" ]
            """,
        ),
    ],
    [
        run(
            """
            git checkout -q docs/contributing
            git rebase -q --exec 'git commit -q --amend --no-edit --trailer "Signed-off-by: Ada Lovelace <ada@example.com>"' main
            git log --format='%h %s%n%b' main..docs/contributing
            """
        ),
    ],
    [run("git checkout -q docs/contributing && git commit -q --amend --no-edit --signoff")],
)

task(
    "revert-bad-merge",
    "medium",
    prose(
        """
        The merge of `feature/cache` into `main` (the commit "Merge branch 'feature/cache'") broke
        production. Undo it on `main` with one new commit on top that reverts the whole merge relative
        to main's side of it (its first parent), keeping the changes of every other commit, including
        those made after the merge. Don't rewrite history: the merge must stay in main's history. The
        default revert message is fine. Leave a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    printf 'def load(key):\\n    return DB[key]\\n' > storage.py
    echo "# store" > README.md
    commit "Add storage layer"
    git checkout -q -b feature/cache
    echo "def cached(fn): return fn" > cache.py
    commit "Add an in-memory cache"
    printf 'from cache import cached\\n\\n\\n@cached\\ndef load(key):\\n    return DB[key]\\n' > storage.py
    commit "Use the cache in storage"
    git checkout -q main
    echo "COUNTERS = {}" > metrics.py
    commit "Add metrics"
    git merge -q --no-ff -m "Merge branch 'feature/cache'" feature/cache
    echo "def health(): return 'ok'" > health.py
    commit "Add health check"
    echo "Run: python -m store" >> README.md
    commit "Update README"
    """,
    [
        check(
            "main ends with one new commit, a revert, and the merge stays in its history",
            """
            [ "$(git log -1 --format=%P main | wc -w)" = 1 ]
            [[ $(git log -1 --format=%s main) == Revert* ]]
            [ "$(git log -1 --format=%s main~1)" = "Update README" ]
            [ "$(git log --merges --format=%s main)" = "Merge branch 'feature/cache'" ]
            [ "$(git rev-list --count main)" = 8 ]
            """,
        ),
        check(
            "feature/cache's changes are gone from main",
            """
            [ -z "$(git ls-tree --name-only main cache.py)" ]
            merge=$(git log --merges --format=%H main)
            [ "$(git rev-parse main:storage.py)" = "$(git rev-parse "$merge^1:storage.py")" ]
            """,
        ),
        check(
            "the other commits' changes are kept",
            """
            [ -z "$(git ls-tree --name-only main cache.py)" ]
            [ "$(git ls-tree --name-only main)" = "$(printf '%s\\n' README.md health.py metrics.py storage.py)" ]
            [ "$(git show main:README.md)" = "$(printf '%s\\n' '# store' 'Run: python -m store')" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run('git revert --no-edit -m 1 "$(git log --merges --format=%H -n 1 main)"'),
    ],
    [
        run("git revert --no-edit \"$(git log --format=%H -F --grep='Use the cache in storage' main)\""),
    ],
)

EXPRESSION_SUBJECTS = (
    "Add parser",
    "Add lexer",
    "Add entry point",
    "Add evaluator",
    "Add REPL",
    "Handle syntax errors",
)

task(
    "drop-middle-commit",
    "medium",
    prose(
        """
        Remove the commit 'Add debug tracing' from `main`'s history entirely, as if it had never been
        made: `main` must keep all its other commits, in the same order, with the same messages and
        changes, and none of the debug tracing. Rewriting `main` is fine here (nobody else uses it), and
        reverting is not what's asked. Leave a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "def parse(text): return text.split()" > parser.py
    commit "Add parser"
    echo "def tokens(text): return list(text)" > lexer.py
    commit "Add lexer"
    printf 'from parser import parse\\n\\nparse(input())\\n' > main.py
    commit "Add entry point"
    echo "def trace(*args): print(*args)" > debug.py
    printf 'import debug\\nfrom parser import parse\\n\\nparse(input())\\n' > main.py
    commit "Add debug tracing"
    echo "def evaluate(tree): return tree" > evaluator.py
    commit "Add evaluator"
    echo "def repl(): pass" > repl.py
    commit "Add REPL"
    echo "class SyntaxError_(Exception): pass" >> parser.py
    commit "Handle syntax errors"
    """,
    [
        check(
            "the debug tracing commit and its changes are gone from main",
            """
            [ -z "$(git log --format=%s -F --grep='debug tracing' main)" ]
            [ -z "$(git ls-tree --name-only main debug.py)" ]
            [ "$(git show main:main.py)" = "$(printf '%s\\n' 'from parser import parse' '' 'parse(input())')" ]
            """,
        ),
        check("the other commits are kept, in order", log_is("main", *EXPRESSION_SUBJECTS)),
        check(
            "the other commits' changes are kept",
            """
            [ "$(git ls-tree --name-only main)" = "$(printf '%s\\n' evaluator.py lexer.py main.py parser.py repl.py)" ]
            [ "$(git show main:parser.py)" = "$(printf '%s\\n' 'def parse(text): return text.split()' 'class SyntaxError_(Exception): pass')" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run(
            """
            debug=$(git log --format=%H -F --grep='Add debug tracing' main)
            git rebase -q --onto "$debug^" "$debug" main
            """
        )
    ],
    [run("git revert --no-edit \"$(git log --format=%H -F --grep='Add debug tracing' main)\"")],
)

task(
    "reorder-commits",
    "medium",
    prose(
        """
        The last three commits of `main` add release notes in the wrong order. Reorder them so that,
        oldest to newest, they are 'Add release notes for 1.1', 'Add release notes for 1.2', 'Add
        release notes for 1.3', directly on top of 'Initial commit'. Each commit must keep its message
        and its own changes (only its own notes file). Leave a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    mkdir notes
    echo "# Release notes" > notes/README.md
    commit "Initial commit"
    echo "1.3: faster start-up" > notes/1.3.md
    commit "Add release notes for 1.3"
    echo "1.1: first public release" > notes/1.1.md
    commit "Add release notes for 1.1"
    echo "1.2: plugin support" > notes/1.2.md
    commit "Add release notes for 1.2"
    """,
    [
        check(
            "the notes for 1.1 come first, directly on 'Initial commit'",
            """
            [ "$(git rev-list --count main)" = 4 ]
            [ "$(git log -1 --format=%s main~3)" = "Initial commit" ]
            [ "$(git log -1 --format=%s main~2)" = "Add release notes for 1.1" ]
            [ "$(git diff --name-only main~3 main~2)" = notes/1.1.md ]
            """,
        ),
        check(
            "the three commits are in order 1.1, 1.2, 1.3",
            log_is("main", "Initial commit", *(f"Add release notes for 1.{n}" for n in (1, 2, 3))),
        ),
        check(
            "each commit adds only its own notes file",
            """
            for n in 1 2 3; do
                c=$(git rev-parse "main~$((3 - n))")
                [ "$(git log -1 --format=%s "$c")" = "Add release notes for 1.$n" ]
                [ "$(git diff --name-status "$c^" "$c")" = "$(printf 'A\\tnotes/1.%s.md' "$n")" ]
            done
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [run("""GIT_SEQUENCE_EDITOR="sed -i '1{h;d};3G'" git rebase -i main~3 && git log --oneline""")],
    [run('top=$(git rev-parse main) && git reset -q --hard main~3 && git cherry-pick "$top~1" "$top~2" "$top"')],
)

HELPERS_RESOLVED = text(
    '''
    """Small helpers for the HTTP client."""

    TIMEOUT = 30  # seconds


    def fetch(url):
        return request(url, timeout=TIMEOUT)


    def fetch_json(url):
        return fetch(url).json()
    '''
)

task(
    "resolve-rename-modify-conflict",
    "medium",
    prose(
        """
        Merge the branch `feature/timeouts` into `main` (main is checked out). The branch changed
        `utils.py`, which main meanwhile moved to `lib/helpers.py` (with a comment added to its TIMEOUT
        line), and the merge conflicts on that line. Resolve it keeping main's move and comment with
        the branch's value: the code lives only in `lib/helpers.py` (no `utils.py` anywhere), whose
        content must be exactly:

        {helpers}

        Finish the merge with a merge commit (the default message is fine) and leave a clean work tree.
        """,
        helpers=HELPERS_RESOLVED,
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > utils.py <<'EOF'
    """
    + '"""Small helpers for the HTTP client."""'
    + """

    TIMEOUT = 10


    def fetch(url):
        return request(url, timeout=TIMEOUT)
    EOF
    echo "from utils import fetch" > client.py
    commit "Add helpers"
    git checkout -q -b feature/timeouts
    sed -i 's/^TIMEOUT = 10$/TIMEOUT = 30/' utils.py
    commit "Raise the default timeout"
    printf '\\n\\ndef fetch_json(url):\\n    return fetch(url).json()\\n' >> utils.py
    commit "Add fetch_json"
    git checkout -q main
    mkdir lib
    git mv utils.py lib/helpers.py
    sed -i 's/^TIMEOUT = 10$/TIMEOUT = 10  # seconds/' lib/helpers.py
    touch lib/__init__.py
    echo "from lib.helpers import fetch" > client.py
    commit "Move helpers into lib/"
    """,
    [
        check(
            "main's tip merges feature/timeouts into the previous main",
            """
            [ "$(git rev-parse main^2)" = "$(git rev-parse feature/timeouts)" ]
            [ "$(git log -1 --format=%s main^1)" = "Move helpers into lib/" ]
            """,
        ),
        check(
            "lib/helpers.py has main's comment with the branch's value and function",
            same("git show main:lib/helpers.py", HELPERS_RESOLVED),
        ),
        check(
            "no utils.py, the merge is finished, and the work tree is clean",
            """
            git rev-parse -q --verify main^2 >/dev/null
            [ -z "$(git ls-tree --name-only main utils.py)" ]
            [ ! -e utils.py ]
            [ "$(git show main:client.py)" = "from lib.helpers import fetch" ]
            [ ! -e "$(git rev-parse --git-path MERGE_HEAD)" ]
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run("git merge feature/timeouts"),
        write("lib/helpers.py", HELPERS_RESOLVED),
        run("git add lib/helpers.py && git commit -q --no-edit"),
    ],
    [
        run("git merge feature/timeouts"),
        write("lib/helpers.py", HELPERS_RESOLVED.replace("TIMEOUT = 30", "TIMEOUT = 10")),
        run("git add lib/helpers.py && git commit -q --no-edit"),
    ],
)

task(
    "rebase-onto-main-without-parent-branch",
    "medium",
    prose(
        """
        The branch `feature/b` was started from `feature/a` by mistake, but it doesn't need any of
        feature/a's work. Move feature/b's own two commits ('Add rate limiter' and 'Test the rate
        limiter') onto the current `main` (as `git rebase --onto` does), so that `feature/b` is `main`
        plus exactly those two commits and contains none of feature/a's commits or files. Leave
        `feature/a` and `main` unchanged.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# service" > README.md
    commit "Initial commit"
    echo "def app(): pass" > app.py
    commit "Add app skeleton"
    git checkout -q -b feature/a
    echo "class OAuthClient: pass" > oauth.py
    commit "Add OAuth client"
    echo "SCOPES = ['read']" >> oauth.py
    commit "Add OAuth scopes"
    git checkout -q -b feature/b
    echo "class RateLimiter: pass" > ratelimit.py
    commit "Add rate limiter"
    mkdir tests
    echo "from ratelimit import RateLimiter" > tests/test_ratelimit.py
    commit "Test the rate limiter"
    git checkout -q main
    echo "requests==2.32.0" > requirements.txt
    commit "Bump dependencies"
    """,
    [
        check("feature/b is based on the current main", "git merge-base --is-ancestor main feature/b\n"),
        check(
            "feature/b is main plus exactly its two commits",
            "git merge-base --is-ancestor main feature/b\n",
            log_is("main..feature/b", "Add rate limiter", "Test the rate limiter"),
        ),
        check(
            "feature/b has none of feature/a's work, and feature/a and main are unchanged",
            """
            [ -z "$(git ls-tree --name-only feature/b oauth.py)" ]
            [ "$(git ls-tree -r --name-only feature/b)" = "$(printf '%s\\n' README.md app.py ratelimit.py requirements.txt tests/test_ratelimit.py)" ]
            """,
            log_is("feature/a", "Initial commit", "Add app skeleton", "Add OAuth client", "Add OAuth scopes"),
            log_is("main", "Initial commit", "Add app skeleton", "Bump dependencies"),
        ),
    ],
    [run("git rebase --onto main feature/a feature/b && git log --oneline --graph --all")],
    [run("git rebase main feature/b")],
)

task(
    "update-vendored-copy",
    "hard",
    prose(
        """
        `vendor/mathlib/` holds a copy of the mathlib library at the tag `mathlib-1.2`. The tags are on
        the branch `mathlib-upstream`, an unrelated history whose files are at its top level. Update the
        copy to the tag `mathlib-1.3`: `vendor/mathlib/` must end up exactly like the tree of
        `mathlib-1.3` (files added, changed and removed accordingly), committed as one new commit on
        `main` with the message 'Update vendored mathlib to 1.3'. Change nothing outside
        `vendor/mathlib/`, and don't merge the upstream history into `main` (no merge commit, no subtree
        merge). Leave `main` checked out with a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# app" > README.md
    echo "print('app')" > app.py
    commit "Initial commit"
    git checkout -q --orphan mathlib-upstream
    git rm -rq --cached .
    rm README.md app.py
    echo "# mathlib" > README.md
    echo "def add(a, b): return a + b" > vector.py
    echo "def scale(v, k): return v * k" > scalar.py
    echo "def old_add(a, b): return a + b" > legacy.py
    commit "mathlib 1.2"
    git tag mathlib-1.2
    echo "def sub(a, b): return a - b" >> vector.py
    git rm -q legacy.py
    echo "def identity(n): return n" > matrix.py
    mkdir tests
    echo "from vector import add" > tests/test_vector.py
    echo "# mathlib 1.3" > README.md
    commit "mathlib 1.3"
    git tag mathlib-1.3
    git checkout -q main
    git read-tree --prefix=vendor/mathlib/ -u mathlib-1.2
    commit "Vendor mathlib 1.2"
    echo "from vendor.mathlib.vector import add" >> app.py
    commit "Use mathlib vectors in app"
    """,
    [
        check(
            "vendor/mathlib on main is exactly mathlib-1.3",
            '[ "$(git rev-parse main:vendor/mathlib)" = "$(git rev-parse \'mathlib-1.3^{tree}\')" ]',
        ),
        check(
            "one new commit with the right message, changing nothing outside vendor/mathlib",
            """
            [ "$(git log -1 --format=%s main)" = "Update vendored mathlib to 1.3" ]
            [ "$(git log -1 --format=%s main~1)" = "Use mathlib vectors in app" ]
            git diff --quiet main~1 main -- . ':(exclude)vendor/mathlib'
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
        check(
            "main has no upstream history merged, and the upstream tags are unchanged",
            """
            [ "$(git rev-list --count main)" = 4 ]
            [ -z "$(git rev-list --merges main)" ]
            if git merge-base main mathlib-1.3 >/dev/null; then exit 1; fi
            [ "$(git log -1 --format=%s mathlib-1.3)" = "mathlib 1.3" ]
            [ "$(git rev-parse mathlib-upstream)" = "$(git rev-parse mathlib-1.3)" ]
            """,
        ),
    ],
    [
        run("git diff --stat mathlib-1.2 mathlib-1.3"),
        run(
            """
            git rm -rq vendor/mathlib
            git read-tree --prefix=vendor/mathlib/ -u mathlib-1.3
            git commit -q -m 'Update vendored mathlib to 1.3'
            """
        ),
    ],
    [
        run(
            """
            for f in $(git ls-tree -r --name-only mathlib-1.3); do
                mkdir -p "vendor/mathlib/$(dirname "$f")"
                git show "mathlib-1.3:$f" > "vendor/mathlib/$f"
            done
            git add vendor/mathlib && git commit -q -m 'Update vendored mathlib to 1.3'
            """
        ),
    ],
)

PARSER_STASHED = text(
    """
    import csv


    def parse_line(line):
        return next(csv.reader([line]))
    """
)

task(
    "apply-stash-to-other-branch",
    "medium",
    prose(
        """
        The stash 'quoted fields' holds work in progress on `parser.py` that was started on `main` but
        belongs on the branch `feature/quoting`. Apply it on `feature/quoting` and commit it there as one
        new commit with the message 'Handle quoted fields'. Then drop that stash, but keep the other
        stash ('readme tweaks'). `main` must stay as it is, without those changes, and the work tree
        must be clean at the end.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    printf 'def parse_line(line):\\n    return line.split(",")\\n' > parser.py
    commit "Add CSV parser"
    git checkout -q -b feature/quoting
    mkdir tests
    echo 'assert parse_line("\\"a,b\\",c") == ["a,b", "c"]' > tests/test_quoting.py
    commit "Add quoting tests"
    git checkout -q main
    echo "# csv tools" > README.md
    commit "Add README"
    cat > parser.py <<'EOF'
    {PARSER_STASHED}
    EOF
    git stash push -q -m "quoted fields"
    echo "A small CSV toolkit." >> README.md
    git stash push -q -m "readme tweaks"
    """,
    [
        check(
            "feature/quoting has 'Handle quoted fields' with the stashed parser.py, and main is unchanged",
            """
            [ "$(git log -1 --format=%s feature/quoting)" = "Handle quoted fields" ]
            [ "$(git log -1 --format=%s feature/quoting~1)" = "Add quoting tests" ]
            [ "$(git diff --name-only feature/quoting~1 feature/quoting)" = parser.py ]
            """,
            same("git show feature/quoting:parser.py", PARSER_STASHED),
            log_is("main", "Add CSV parser", "Add README"),
            """
            [ "$(git show main:parser.py)" = "$(printf '%s\\n' 'def parse_line(line):' '    return line.split(",")')" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
        check(
            "only the 'quoted fields' stash is gone",
            '[ "$(git stash list --format=%s)" = "On main: readme tweaks" ]',
        ),
    ],
    [
        run("git stash list"),
        run(
            "git checkout -q feature/quoting && git stash apply -q 'stash@{1}' && git commit -q -am 'Handle quoted fields'"
        ),
        run("git stash drop -q 'stash@{1}' && git stash list"),
    ],
    [
        run(
            "git checkout -q feature/quoting && git stash apply -q 'stash@{1}' && git commit -q -am 'Handle quoted fields'"
        )
    ],
    PARSER_STASHED=PARSER_STASHED.rstrip("\n"),
)

SHAPES_BASE = text(
    '''
    """Areas of simple shapes."""


    def area_circle(radius):
        return 3.14 * radius * radius


    def area_square(side):
        return side * side
    '''
)
SHAPES_FIX = SHAPES_BASE.replace('shapes."""\n', 'shapes."""\nimport math\n').replace("3.14", "math.pi")
SHAPES_ALL = SHAPES_FIX.replace("(side):\n", '(side):\n    """Return the area of a square with the given side."""\n')

task(
    "commit-part-of-a-change",
    "medium",
    prose(
        """
        `shapes.py` has two uncommitted changes: a fix of `area_circle` (it uses `math.pi` instead of
        3.14, with `import math` added near the top) and a new docstring in `area_square`. Commit only
        the `area_circle` fix, both of its parts, as one commit with the message 'Use math.pi for circle
        areas', and leave the docstring change uncommitted in the work tree (shapes.py itself must keep
        both changes).
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > shapes.py <<'EOF'
    {SHAPES_BASE}
    EOF
    commit "Add shapes"
    cat > shapes.py <<'EOF'
    {SHAPES_ALL}
    EOF
    """,
    [
        check(
            "HEAD is the circle fix on top of 'Add shapes'",
            log_is("HEAD", "Add shapes", "Use math.pi for circle areas"),
        ),
        check("the commit has the fix and not the docstring", same("git show HEAD:shapes.py", SHAPES_FIX)),
        check(
            "the docstring change is still uncommitted in the work tree",
            """
            [ "$(git log -1 --format=%s)" = "Use math.pi for circle areas" ]
            [ "$(git diff --name-only)" = shapes.py ]
            git diff --cached --quiet
            """,
            same("cat shapes.py", SHAPES_ALL),
        ),
    ],
    [
        read("shapes.py"),
        write("shapes.py", SHAPES_FIX),
        run("git add shapes.py && git commit -q -m 'Use math.pi for circle areas'"),
        write("shapes.py", SHAPES_ALL),
        run("git status --short"),
    ],
    [run("git commit -q -am 'Use math.pi for circle areas'")],
    SHAPES_BASE=SHAPES_BASE.rstrip("\n"),
    SHAPES_ALL=SHAPES_ALL.rstrip("\n"),
)

REMOTE_SETUP = """
    git init -q --bare .remote.git
    echo /.remote.git >> .git/info/exclude
    git remote add origin .remote.git
"""

task(
    "publish-branch-and-tag",
    "medium",
    prose(
        """
        The remote `origin` is a bare repository at `.remote.git` inside the work tree (excluded from
        `git status`). Publish the local branch `feature/export` to `origin` under the same name and
        make the local `feature/export` track `origin/feature/export`. Also push the annotated tag
        `v0.3.0`, as the tag object itself. Push nothing else: in particular not the local tag
        `tmp-benchmark`, and leave the remote's `main` as it is.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    {REMOTE}
    echo "def export(rows): pass" > export.py
    commit "Add export stub"
    git push -q origin main
    git tag -a v0.3.0 -m "Version 0.3.0"
    git checkout -q -b feature/export
    echo "def export_csv(rows): pass" >> export.py
    commit "Export CSV"
    echo "def export_xlsx(rows): pass" >> export.py
    commit "Export spreadsheets"
    git tag tmp-benchmark
    git checkout -q main
    """,
    [
        check(
            "origin has feature/export at the local branch's commit",
            '[ "$(git --git-dir=.remote.git rev-parse -q --verify refs/heads/feature/export)" = "$(git rev-parse feature/export)" ]',
        ),
        check(
            "feature/export tracks origin/feature/export",
            """
            [ "$(git config branch.feature/export.remote)" = origin ]
            [ "$(git config branch.feature/export.merge)" = refs/heads/feature/export ]
            [ "$(git rev-parse refs/remotes/origin/feature/export)" = "$(git rev-parse feature/export)" ]
            """,
        ),
        check(
            "origin has the annotated tag v0.3.0 itself",
            """
            [ "$(git --git-dir=.remote.git cat-file -t refs/tags/v0.3.0)" = tag ]
            [ "$(git --git-dir=.remote.git rev-parse refs/tags/v0.3.0)" = "$(git rev-parse refs/tags/v0.3.0)" ]
            """,
        ),
        check(
            "nothing else was pushed, and the remote's main is unchanged",
            f"""
            [ "$(git --git-dir=.remote.git for-each-ref --format='%(refname)')" = {lines("refs/heads/feature/export", "refs/heads/main", "refs/tags/v0.3.0")} ]
            [ "$(git --git-dir=.remote.git rev-parse refs/heads/main)" = "$(git rev-parse main)" ]
            """,
        ),
    ],
    [run("git push -q -u origin feature/export && git push -q origin v0.3.0")],
    [run("git push -q -u origin feature/export && git push -q --tags origin")],
    REMOTE=sh(REMOTE_SETUP).rstrip("\n"),
)

INVENTORY_SUBJECTS = (
    "Add inventory model",
    "Add stock levels",
    "Add reorder alerts",
    "Add supplier list",
    "Add warehouse map",
)

task(
    "recover-commits-after-hard-reset",
    "medium",
    prose(
        """
        Someone ran `git reset --hard HEAD~3` on `main` by mistake, losing its last three commits ('Add
        stock levels', 'Add reorder alerts', 'Add supplier list'), and then committed 'Add warehouse map'.
        Bring the lost commits back: `main` must be linear, with the three lost commits in their original
        order right after 'Add inventory model', and 'Add warehouse map' on top, every commit with its
        original message and changes.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "class Item: pass" > inventory.py
    commit "Add inventory model"
    echo "LEVELS = {}" > stock.py
    commit "Add stock levels"
    echo "def alert(item): pass" > alerts.py
    commit "Add reorder alerts"
    echo "SUPPLIERS = []" > suppliers.py
    commit "Add supplier list"
    git reset -q --hard HEAD~3
    echo "AISLES = 12" > warehouse.py
    commit "Add warehouse map"
    """,
    [
        check(
            "the three lost commits are back in main, with their changes",
            """
            for subject in 'Add stock levels' 'Add reorder alerts' 'Add supplier list'; do
                [ -n "$(git log --format=%H -F --grep="$subject" main)" ]
            done
            [ "$(git ls-tree --name-only main)" = "$(printf '%s\\n' alerts.py inventory.py stock.py suppliers.py warehouse.py)" ]
            """,
        ),
        check(
            "main is linear: the lost commits in order after 'Add inventory model', then the warehouse map",
            log_is("main", *INVENTORY_SUBJECTS),
            '[ -z "$(git rev-list --merges main)" ]\n',
        ),
        check(
            "each recovered commit has its original changes",
            """
            [ "$(git rev-list --count main)" = 5 ]
            for pair in 'Add stock levels:stock.py' 'Add reorder alerts:alerts.py' 'Add supplier list:suppliers.py'; do
                c=$(git log --format=%H -F --grep="${pair%%:*}" main)
                [ "$(git diff --name-status "$c^" "$c")" = "$(printf 'A\\t%s' "${pair#*:}")" ]
            done
            """,
        ),
    ],
    [
        run("git reflog -n 4"),
        run("git branch lost 'HEAD@{2}' && git rebase -q --onto lost main~1 main && git branch -D lost"),
    ],
    [
        run(
            """
            lost=$(git rev-parse 'HEAD@{2}')
            git cherry-pick "$lost~2" "$lost~1" "$lost"
            """
        ),
    ],
)

# ---------------------------------------------------------------------------------------------- hard

README_FIXED = "# Config tool\n\nLoads settings from a file.\n"
CONFIG_PY = text(
    """
    import json


    def load(path):
        with open(path) as f:
            return json.load(f)
    """
)

task(
    "split-commit-in-two",
    "hard",
    prose(
        """
        The second commit of `main`, 'Add config loader and fix README typo', mixes two unrelated
        changes. Split it, in its place in history, into two commits: first 'Fix README typo', containing
        only the change to `README.md`, then 'Add config loader', containing only the new `config.py`.
        The commit 'Add CLI entry point' must stay on top of them, and the final content of `main` must
        not change. Leave `main` checked out with a clean work tree and no rebase in progress.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    printf '# Config tool\\n\\nLoads setings from a file.\\n' > README.md
    commit "Initial commit"
    printf '# Config tool\\n\\nLoads settings from a file.\\n' > README.md
    cat > config.py <<'EOF'
    {CONFIG_PY}
    EOF
    commit "Add config loader and fix README typo"
    echo "from config import load" > cli.py
    commit "Add CLI entry point"
    """,
    [
        check(
            "main has the four commits in the right order",
            log_is("main", "Initial commit", "Fix README typo", "Add config loader", "Add CLI entry point"),
        ),
        check(
            "'Fix README typo' changes only README.md, fixing the typo",
            """
            c=$(git rev-list --grep='^Fix README typo$' main)
            [ "$(git log -1 --format=%s "$c")" = "Fix README typo" ]
            [ "$(git diff --name-only "$c^" "$c")" = README.md ]
            """,
            same('git show "$c:README.md"', README_FIXED),
        ),
        check(
            "'Add config loader' only adds config.py",
            """
            c=$(git rev-list --grep='^Add config loader$' main)
            [ "$(git log -1 --format=%s "$c")" = "Add config loader" ]
            [ "$(git diff --name-status "$c^" "$c")" = "$(printf 'A\\tconfig.py')" ]
            """,
            same('git show "$c:config.py"', CONFIG_PY),
        ),
        check(
            "the mixed commit is gone, the final content is unchanged, and no rebase is in progress",
            """
            [ -z "$(git log --format=%s -F --grep='Add config loader and fix README typo' main)" ]
            [ "$(git ls-tree --name-only main)" = "$(printf '%s\\n' README.md cli.py config.py)" ]
            [ "$(git show main:cli.py)" = "from config import load" ]
            """,
            same("git show main:README.md", README_FIXED),
            same("git show main:config.py", CONFIG_PY),
            """
            [ ! -e "$(git rev-parse --git-path rebase-merge)" ]
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run("""GIT_SEQUENCE_EDITOR="sed -i '1s/^pick/edit/'" git rebase -i main~2"""),
        run(
            """
            git reset -q HEAD^
            git add README.md && git commit -q -m 'Fix README typo'
            git add config.py && git commit -q -m 'Add config loader'
            git rebase --continue
            """
        ),
        run("git log --stat --format='%s' main"),
    ],
    [
        run("""GIT_SEQUENCE_EDITOR="sed -i '1s/^pick/edit/'" git rebase -i main~2"""),
        run(
            """
            git reset -q HEAD^
            git add config.py && git commit -q -m 'Add config loader'
            git add README.md && git commit -q -m 'Fix README typo'
            git rebase --continue
            """
        ),
    ],
    CONFIG_PY=CONFIG_PY.rstrip("\n"),
)

ADA = ("Ada Lovelace", "ada@example.com")
GRACE_OLD = ("Grace Hopper", "grace@old-corp.example")
GRACE_NEW = ("Grace Hopper", "grace@new-corp.example")
ALAN = ("Alan Turing", "alan@old-corp.example")

# (branch, subject, author, committer): the history of the author-rewrite task, one commit a day.
HOPPER_HISTORY = [
    ("main", "Initial commit", ADA, ADA),
    ("main", "Add compiler front end", GRACE_OLD, GRACE_OLD),
    ("main", "Add the decision procedure", ALAN, ALAN),
    ("main", "Add linker", GRACE_OLD, ADA),
    ("legacy", "Keep the COBOL bridge", GRACE_OLD, GRACE_OLD),
    ("legacy", "Document the bridge", ADA, GRACE_OLD),
    ("main", "Add optimizer", ADA, ADA),
    ("main", "Fix optimizer crash", GRACE_OLD, GRACE_OLD),
]


def _hopper_setup() -> str:
    script = [
        "git init -q -b main",
        "# commit_as DAY AUTHOR_NAME AUTHOR_EMAIL COMMITTER_NAME COMMITTER_EMAIL MESSAGE (DAY of March 2024, 1-9)",
        "commit_as() {",
        "    git add -A",
        '    GIT_AUTHOR_NAME=$2 GIT_AUTHOR_EMAIL=$3 GIT_AUTHOR_DATE="2024-03-0$1T08:00:00Z" \\',
        '        GIT_COMMITTER_NAME=$4 GIT_COMMITTER_EMAIL=$5 GIT_COMMITTER_DATE="2024-03-0$1T09:00:00Z" \\',
        '        git commit -q -m "$6"',
        "}",
    ]
    branch = "main"
    for day, (on, subject, author, committer) in enumerate(HOPPER_HISTORY, start=1):
        if on != branch:
            script.append(f"git checkout -q {'-b ' if on == 'legacy' else ''}{on}")
            branch = on
        name = subject.lower().replace(" ", "-")
        script.append(f"echo {shlex.quote(subject)} > {name}.txt")
        script.append(
            "commit_as {} {} {} {} {} {}".format(day, *(shlex.quote(s) for s in (*author, *committer, subject)))
        )
        if subject == "Keep the COBOL bridge":
            script.append("GIT_COMMITTER_DATE=2024-03-05T10:00:00Z git tag -a v0.9 -m 'Version 0.9'")
    return "\n".join(script) + "\n"


def _hopper_log(branch: str) -> str:
    """A check's condition: the branch's commits have these subjects and identities (Grace's new address) and dates."""
    expected = []
    for day, (on, subject, author, committer) in enumerate(HOPPER_HISTORY, start=1):
        if on == branch or (branch == "legacy" and day <= 4):
            author, committer = (GRACE_NEW if who == GRACE_OLD else who for who in (author, committer))
            expected.append(
                f"{subject}|{author[0]} <{author[1]}>|{committer[0]} <{committer[1]}>"
                f"|2024-03-0{day}T08:00:00+00:00|2024-03-0{day}T09:00:00+00:00"
            )
    return f"[ \"$(git log --reverse --format='%s|%an <%ae>|%cn <%ce>|%aI|%cI' {branch})\" = {lines(*expected)} ]\n"


task(
    "rewrite-author-email-everywhere",
    "hard",
    prose(
        """
        Grace Hopper's address changed from `grace@old-corp.example` to `grace@new-corp.example`.
        Rewrite the history of every branch (`main` and `legacy`) and tag (the annotated tag `v0.9`) so
        that no commit has `grace@old-corp.example` as its author or committer email any more: it
        becomes `grace@new-corp.example`, for authors and committers alike. Everything else must stay as
        it is: names, author and committer dates, messages, content, and the other people's identities
        (including Alan Turing's `alan@old-corp.example`). `v0.9` must stay an annotated tag with its
        message and point at the rewritten commit. Finally delete any backup refs the rewriting tool
        left (such as `refs/original/`), so that no ref reaches the old commits.
        """
    ),
    _hopper_setup(),
    [
        check(
            "no ref reaches a commit with the old address",
            """
            [ -z "$(git log --all --format='%ae%n%ce' | grep -Fx grace@old-corp.example || true)" ]
            """,
        ),
        check("main's commits: Grace's new address, all else unchanged", _hopper_log("main")),
        check("legacy's commits: Grace's new address, all else unchanged", _hopper_log("legacy")),
        check(
            "v0.9 is still the annotated tag 'Version 0.9', on the rewritten 'Keep the COBOL bridge'",
            """
            [ "$(git cat-file -t refs/tags/v0.9)" = tag ]
            [ "$(git for-each-ref --format='%(contents)' refs/tags/v0.9)" = "Version 0.9" ]
            [ "$(git log -1 --format='%s|%ae|%ce' 'refs/tags/v0.9^{commit}')" = "Keep the COBOL bridge|grace@new-corp.example|grace@new-corp.example" ]
            git merge-base --is-ancestor refs/tags/v0.9 legacy
            """,
        ),
    ],
    [
        run("git log --all --format='%h %an <%ae> / %cn <%ce> %s'"),
        run(
            """
            export FILTER_BRANCH_SQUELCH_WARNING=1
            git filter-branch --env-filter '
                if [ "$GIT_AUTHOR_EMAIL" = grace@old-corp.example ]; then GIT_AUTHOR_EMAIL=grace@new-corp.example; fi
                if [ "$GIT_COMMITTER_EMAIL" = grace@old-corp.example ]; then GIT_COMMITTER_EMAIL=grace@new-corp.example; fi
            ' --tag-name-filter cat -- --all
            git for-each-ref --format='%(refname)' refs/original/ | while read -r ref; do git update-ref -d "$ref"; done
            """
        ),
    ],
    [
        run(
            """
            export FILTER_BRANCH_SQUELCH_WARNING=1
            git filter-branch --env-filter '
                if [ "$GIT_AUTHOR_EMAIL" = grace@old-corp.example ]; then GIT_AUTHOR_EMAIL=grace@new-corp.example; fi
                if [ "$GIT_COMMITTER_EMAIL" = grace@old-corp.example ]; then GIT_COMMITTER_EMAIL=grace@new-corp.example; fi
            ' -- main
            git update-ref -d refs/original/refs/heads/main
            """
        ),
    ],
)

DEPLOY_YML = "target: production\nreplicas: 2\n"
DEPLOY_STAGING_YML = "target: staging\nreplicas: 1\n"

task(
    "purge-secret-from-history",
    "hard",
    prose(
        """
        The file `config/credentials.json`, which holds a secret deploy key, was committed and is still
        in the history of the branches `main` and `staging` and of the tag `v1.0`, although main stopped
        tracking it later (the local copy in the work tree is ignored now and may stay). Rewrite the
        history of every branch and tag so that no commit reachable from any ref contains
        `config/credentials.json`. Every other file of every commit must stay exactly as it was.
        Commits that change nothing once the file is gone (like 'Rotate the deploy key') must disappear;
        all other commits keep their messages and order. `v1.0` must point at the rewritten 'Add health
        endpoint'. Delete any backup refs the rewriting tool left (such as `refs/original/`).
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# deployer" > README.md
    echo "def app(): pass" > app.py
    commit "Initial commit"
    mkdir config
    printf 'target: production\\nreplicas: 2\\n' > deploy.yml
    echo '{"deploy_key": "s3cr3t-0001"}' > config/credentials.json
    commit "Add deployment config"
    echo '{"deploy_key": "s3cr3t-0002"}' > config/credentials.json
    commit "Rotate the deploy key"
    git checkout -q -b staging
    echo '{"deploy_key": "s3cr3t-0003"}' > config/credentials.json
    printf 'target: staging\\nreplicas: 1\\n' > deploy.yml
    commit "Stage the new key"
    git checkout -q main
    echo "def health(): return 'ok'" >> app.py
    commit "Add health endpoint"
    git tag v1.0
    git rm -q --cached config/credentials.json
    echo config/credentials.json > .gitignore
    commit "Stop tracking credentials"
    """,
    [
        check(
            "no commit reachable from any ref contains config/credentials.json",
            """
            for c in $(git rev-list --all); do
                [ -z "$(git ls-tree --name-only "$c" config/credentials.json)" ]
            done
            """,
        ),
        check(
            "main keeps its other commits and files",
            log_is(
                "main", "Initial commit", "Add deployment config", "Add health endpoint", "Stop tracking credentials"
            ),
            """
            [ "$(git ls-tree -r --name-only main)" = "$(printf '%s\\n' .gitignore README.md app.py deploy.yml)" ]
            [ "$(git ls-tree -r --name-only main~2)" = "$(printf '%s\\n' README.md app.py deploy.yml)" ]
            """,
            same("git show main:deploy.yml", DEPLOY_YML),
            same("git show main:app.py", "def app(): pass\ndef health(): return 'ok'\n"),
        ),
        check(
            "staging keeps its other commits and files",
            log_is("staging", "Initial commit", "Add deployment config", "Stage the new key"),
            """
            [ "$(git ls-tree -r --name-only staging)" = "$(printf '%s\\n' README.md app.py deploy.yml)" ]
            [ "$(git rev-parse staging~1)" = "$(git rev-parse main~2)" ]
            """,
            same("git show staging:deploy.yml", DEPLOY_STAGING_YML),
        ),
        check(
            "v1.0 points at the rewritten 'Add health endpoint'",
            """
            [ "$(git log -1 --format=%s refs/tags/v1.0)" = "Add health endpoint" ]
            [ "$(git rev-parse 'refs/tags/v1.0^{commit}')" = "$(git rev-parse main~1)" ]
            [ -z "$(git ls-tree --name-only refs/tags/v1.0 config/credentials.json)" ]
            """,
        ),
    ],
    [
        run(
            """
            export FILTER_BRANCH_SQUELCH_WARNING=1
            git filter-branch --index-filter 'git rm -q --cached --ignore-unmatch config/credentials.json' \\
                --prune-empty --tag-name-filter cat -- --all
            git for-each-ref --format='%(refname)' refs/original/ | while read -r ref; do git update-ref -d "$ref"; done
            """
        ),
    ],
    [
        run(
            """
            export FILTER_BRANCH_SQUELCH_WARNING=1
            git filter-branch --index-filter 'git rm -q --cached --ignore-unmatch config/credentials.json' \\
                --prune-empty -- main staging
            git for-each-ref --format='%(refname)' refs/original/ | while read -r ref; do git update-ref -d "$ref"; done
            """
        ),
    ],
)

SERVER_STASHED = text(
    """
    from ratelimit import allow


    def handle(request):
        if not allow(request.client):
            return 429
        return route(request)
    """
)
RATELIMIT_PY = "def allow(client):\n    return True\n"

task(
    "recover-dropped-stash",
    "hard",
    prose(
        """
        The stash 'rate limiter draft' was lost when someone ran `git stash clear` (the stash list is
        empty now), but its commit is still in the repository's object database. Find it and bring its
        changes onto `main`: its change to `server.py` and the new file `ratelimit.py` it contained.
        Commit them as one new commit on top of `main` with the message 'Add rate limiter'. Don't bring
        in any other lost work (another stash was cleared too), and leave a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    printf 'def handle(request):\\n    return route(request)\\n' > server.py
    echo "# api" > README.md
    commit "Add API server"
    cat > server.py <<'EOF'
    {SERVER_STASHED}
    EOF
    printf 'def allow(client):\\n    return True\\n' > ratelimit.py
    git add ratelimit.py
    git stash push -q -m "rate limiter draft"
    echo "An HTTP API." >> README.md
    git stash push -q -m "readme wording"
    git stash clear
    echo "def health(): return 'ok'" > health.py
    commit "Add health check"
    """,
    [
        check(
            "main has one new commit 'Add rate limiter' on top of 'Add health check'",
            log_is("main", "Add API server", "Add health check", "Add rate limiter"),
        ),
        check(
            "it has the stash's server.py and ratelimit.py",
            same("git show main:server.py", SERVER_STASHED),
            same("git show main:ratelimit.py", RATELIMIT_PY),
        ),
        check(
            "it changes nothing else, and the work tree is clean",
            """
            [ "$(git diff --name-only main~1 main)" = "$(printf '%s\\n' ratelimit.py server.py)" ]
            [ "$(git show main:README.md)" = "# api" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run("git fsck --unreachable --no-reflogs 2>/dev/null | grep commit"),
        run(
            """
            stash=$(for c in $(git fsck --unreachable --no-reflogs 2>/dev/null | grep '^unreachable commit' | cut -d' ' -f3); do
                git log -1 --format='%H %s' "$c"
            done | grep 'On main: rate limiter draft' | cut -d' ' -f1)
            git stash apply "$stash"
            git add -A && git commit -q -m 'Add rate limiter'
            """
        ),
    ],
    [
        run(
            """
            stash=$(for c in $(git fsck --unreachable --no-reflogs 2>/dev/null | grep '^unreachable commit' | cut -d' ' -f3); do
                git log -1 --format='%H %s' "$c"
            done | grep 'On main: rate limiter draft' | cut -d' ' -f1)
            git checkout "$stash" -- server.py
            git commit -q -m 'Add rate limiter'
            """
        ),
    ],
    SERVER_STASHED=SERVER_STASHED.rstrip("\n"),
)

LOWER = "tr '[:upper:]' '[:lower:]'"
DASHES = "tr -c 'a-z0-9\\n' '-'"
SQUEEZE = "tr -s '-'"
TRIM = "sed 's/^-*//; s/-*$//'"


def slugify_script(*stages: str) -> str:
    """slugify.sh: its title argument through a pipeline of these commands."""
    return '#!/usr/bin/env bash\necho "$1" | ' + " | ".join(stages)


REGRESSION_SH = text(
    """
    #!/usr/bin/env bash
    # Regression test for issue #42: slugs keep their digits.
    [ "$(bash slugify.sh 'Top 10 Tips')" = top-10-tips ] || exit 1
    [ "$(bash slugify.sh 'Route 66')" = route-66 ] || exit 1
    """
)

task(
    "bisect-merged-history",
    "hard",
    prose(
        """
        `slugify.sh` has a regression: slugs lose their digits. The test `tests/regression.sh` exits 0
        when the behaviour is right and 1 when it's broken, but it was added only in main's latest commit,
        so older commits don't contain it: run the latest version against them, for example with
        `git bisect run bash -c 'git show main:tests/regression.sh | bash'`. The history of `main` contains a merge, and
        the culprit may be on the merged branch. Find the first bad commit, the one where the behaviour
        broke while its parent was still fine, and create a tag `regression-start` pointing at exactly
        that commit. At the end, no bisect may be in progress and `main` must be unchanged, checked out,
        with a clean work tree.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > slugify.sh <<'EOF'
    {SLUG_1}
    EOF
    commit "Add slugify"
    echo "# slugify" > README.md
    commit "Add README"
    cat > slugify.sh <<'EOF'
    {SLUG_2}
    EOF
    commit "Collapse repeated dashes"
    echo "Usage: slugify.sh TITLE" >> README.md
    commit "Document usage"
    git checkout -q -b feature/cleanup
    cat > slugify.sh <<'EOF'
    {SLUG_3}
    EOF
    commit "Trim leading and trailing dashes"
    cat > slugify.sh <<'EOF'
    {SLUG_4}
    EOF
    commit "Only keep letters and separators"
    echo "Slugs are lower case and dash-separated." >> README.md
    commit "Document slug rules"
    echo "## cleanup" > CHANGELOG.md
    commit "Add changelog"
    git checkout -q main
    mkdir docs
    echo "slugify.sh TITLE" > docs/usage.md
    commit "Add usage docs"
    echo "lint: bash -n slugify.sh" > Makefile
    commit "Add a lint target"
    git merge -q --no-ff -m "Merge branch 'feature/cleanup'" feature/cleanup
    echo "1.1" > VERSION
    commit "Bump version to 1.1"
    mkdir tests
    cat > tests/regression.sh <<'EOF'
    {REGRESSION_SH}
    EOF
    commit "Add regression test for digits in slugs"
    git branch -q -D feature/cleanup
    """,
    [
        check(
            "regression-start points at a commit in main's history",
            """
            git rev-parse -q --verify 'refs/tags/regression-start^{commit}' >/dev/null
            git merge-base --is-ancestor refs/tags/regression-start main
            """,
        ),
        check(
            "regression-start is exactly the first bad commit",
            '[ "$(git log -1 --format=%s refs/tags/regression-start)" = "Only keep letters and separators" ]',
        ),
        check(
            "no bisect in progress; main unchanged, checked out and clean",
            """
            git rev-parse -q --verify refs/tags/regression-start >/dev/null
            [ ! -e "$(git rev-parse --git-path BISECT_START)" ]
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ "$(git rev-list --count main)" = 13 ]
            [ "$(git log -1 --format=%s main)" = "Add regression test for digits in slugs" ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run('git bisect start main "$(git rev-list --max-parents=0 main)"'),
        run("git bisect run bash -c 'git show main:tests/regression.sh | bash'"),
        run("git tag regression-start refs/bisect/bad && git bisect reset"),
    ],
    [
        run('git bisect start --first-parent main "$(git rev-list --max-parents=0 main)"'),
        run("git bisect run bash -c 'git show main:tests/regression.sh | bash'"),
        run("git tag regression-start refs/bisect/bad && git bisect reset"),
    ],
    REGRESSION_SH=REGRESSION_SH.rstrip("\n"),
    SLUG_1=slugify_script(LOWER, DASHES),
    SLUG_2=slugify_script(LOWER, DASHES, SQUEEZE),
    SLUG_3=slugify_script(LOWER, DASHES, SQUEEZE, TRIM),
    SLUG_4=slugify_script(LOWER, DASHES.replace("a-z0-9", "a-z"), SQUEEZE, TRIM),
)


LIMITS_SUBJECTS = ("Add rate limit settings", "Add a per-user limit", "Document the limits", "Raise the window to 120s")
LIMITS_1 = "[limits]\nmax_requests = 1000\nwindow = 60\nburst = 5\n"
LIMITS_2 = LIMITS_1 + "per_user = 20\n"
LIMITS_4 = LIMITS_2.replace("window = 60", "window = 120")


def _limits_commit(subject: str, limits: str, changed: str) -> str:
    """Check lines: the branch's commit with this subject has this limits.conf and changes only ``changed``."""
    return sh(
        f"""
            c=$(git rev-list --grep='^{subject}$' main..feature/limits)
            [ "$(git log -1 --format=%s "$c")" = "{subject}" ]
            [ "$(git diff --name-only "$c^" "$c")" = {changed} ]
            """
    ) + same('git show "$c:limits.conf"', limits)


task(
    "fix-value-throughout-history",
    "hard",
    prose(
        """
        On the branch `feature/limits`, the commit 'Add rate limit settings' wrote `burst = 50` into
        `limits.conf`; it should have been `burst = 5` from the start. Fix the history of the branch so
        that this commit and every later one has `burst = 5`, without adding a commit: the branch keeps
        its four commits on top of `main`, with the same messages, in the same order, and apart from
        that one line every commit's changes stay the same. Don't change `main`.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# gateway" > README.md
    commit "Initial commit"
    git checkout -q -b feature/limits
    printf '[limits]\\nmax_requests = 1000\\nwindow = 60\\nburst = 50\\n' > limits.conf
    commit "Add rate limit settings"
    echo "per_user = 20" >> limits.conf
    commit "Add a per-user limit"
    mkdir docs
    echo "burst: requests allowed above the rate for a moment" > docs/limits.md
    commit "Document the limits"
    sed -i 's/^window = 60$/window = 120/' limits.conf
    commit "Raise the window to 120s"
    git checkout -q main
    """,
    [
        check(
            "the branch's last commit has burst = 5",
            same("git show feature/limits:limits.conf", LIMITS_4),
        ),
        check(
            "every commit from 'Add rate limit settings' on has burst = 5 and its own changes",
            _limits_commit("Add rate limit settings", LIMITS_1, "limits.conf"),
            _limits_commit("Add a per-user limit", LIMITS_2, "limits.conf"),
            _limits_commit("Document the limits", LIMITS_2, "docs/limits.md"),
            _limits_commit("Raise the window to 120s", LIMITS_4, "limits.conf"),
        ),
        check(
            "the branch keeps exactly its four commits, in order, on top of main, which is unchanged",
            '[ "$(git show feature/limits:limits.conf | grep -c "^burst = 5$")" = 1 ]\n',
            log_is("main..feature/limits", *LIMITS_SUBJECTS),
            "git merge-base --is-ancestor main feature/limits\n",
            log_is("main", "Initial commit"),
        ),
    ],
    [
        run(
            """
            export FILTER_BRANCH_SQUELCH_WARNING=1
            git filter-branch --tree-filter "sed -i 's/^burst = 50\\$/burst = 5/' limits.conf" -- main..feature/limits
            git update-ref -d refs/original/refs/heads/feature/limits
            """
        ),
    ],
    [
        run(
            """
            git checkout -q feature/limits
            sed -i 's/^burst = 50$/burst = 5/' limits.conf
            git commit -q -am 'Fix the burst limit'
            """
        ),
    ],
)

TOKENIZER_BASE = text(
    '''
    VERSION = "1.4"


    def tokenize(text):
        """Split text into tokens."""
        text = normalize(text)
        words = text.split(" ")
        return [word for word in words if word]


    def normalize(text):
        return text
    '''
)
TOKENIZER_TABS_RESOLVED = (
    TOKENIZER_BASE.replace('"1.4"', '"1.4.1"')
    .replace('text.split(" ")', "text.strip().split()")
    .replace("    return text\n", '    return text or ""\n')
)
TOKENIZER_BACKPORTED = TOKENIZER_TABS_RESOLVED.replace('return text or ""', 'return (text or "").lstrip("\\ufeff")')
BACKPORTS = ("Fix crash on empty input", "Handle tabs as whitespace", "Fix crash on unicode BOM")

task(
    "backport-fixes-with-conflict",
    "hard",
    prose(
        """
        Backport the three bug fixes 'Fix crash on empty input', 'Handle tabs as whitespace' and 'Fix
        crash on unicode BOM' from `main` to the branch `release/1.x`, in that order, as three new
        commits on top of it with the same messages, each recording the commit it was picked from (as
        `git cherry-pick -x` does). Nothing else from `main` may come along (in particular not 'Add
        emoji support' or the version bump). The tab fix conflicts, because release/1.x already strips
        surrounding whitespace: keep both, as `words = text.strip().split()`. In the end
        `tokenizer.py` on `release/1.x` must read exactly:

        {tokenizer}

        Don't change `main`, and leave a clean work tree.
        """,
        tokenizer=TOKENIZER_BACKPORTED,
    ),
    """
    git init -q -b main
    {COMMIT}
    cat > tokenizer.py <<'EOF'
    {TOKENIZER_BASE}
    EOF
    commit "Add tokenizer"
    git checkout -q -b release/1.x
    sed -i 's/^VERSION = "1.4"$/VERSION = "1.4.1"/' tokenizer.py
    commit "Prepare 1.4.1"
    sed -i 's/words = text.split(" ")/words = text.strip().split(" ")/' tokenizer.py
    commit "Strip surrounding whitespace"
    git checkout -q main
    echo "def strip_emoji(text): return text" > emoji.py
    commit "Add emoji support"
    sed -i 's/^    return text$/    return text or ""/' tokenizer.py
    commit "Fix crash on empty input"
    sed -i 's/words = text.split(" ")/words = text.split()/' tokenizer.py
    commit "Handle tabs as whitespace"
    sed -i 's/^    return text or ""$/    return (text or "").lstrip("\\\\ufeff")/' tokenizer.py
    commit "Fix crash on unicode BOM"
    sed -i 's/^VERSION = "1.4"$/VERSION = "2.1"/' tokenizer.py
    commit "Bump version to 2.1"
    """,
    [
        check(
            "release/1.x gained exactly the three fixes, in order",
            log_is("release/1.x", "Add tokenizer", "Prepare 1.4.1", "Strip surrounding whitespace", *BACKPORTS),
        ),
        check(
            "each new commit records the commit it was picked from",
            """
            [ "$(git rev-list --count release/1.x)" -ge 6 ]
            for subject in 'Fix crash on empty input' 'Handle tabs as whitespace' 'Fix crash on unicode BOM'; do
                picked=$(git rev-list --grep="^$subject\\$" main..release/1.x)
                original=$(git rev-list --grep="^$subject\\$" release/1.x..main)
                [ -n "$picked" ]
                [ -n "$original" ]
                [[ $(git log -1 --format=%B "$picked") == *"(cherry picked from commit $original)"* ]]
            done
            """,
        ),
        check(
            "tokenizer.py on release/1.x has the three fixes and keeps the release's changes",
            same("git show release/1.x:tokenizer.py", TOKENIZER_BACKPORTED),
        ),
        check(
            "nothing else came from main, which is unchanged",
            """
            [ "$(git log -1 --format=%s release/1.x~3)" = "Strip surrounding whitespace" ]
            [ "$(git diff --name-only release/1.x~3 release/1.x)" = tokenizer.py ]
            [ -z "$(git ls-tree --name-only release/1.x emoji.py)" ]
            """,
            log_is("main", "Add tokenizer", "Add emoji support", *BACKPORTS, "Bump version to 2.1"),
            """
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run("git log --oneline main"),
        run("git checkout -q release/1.x && git cherry-pick -x main~4..main~1"),
        write("tokenizer.py", TOKENIZER_TABS_RESOLVED),
        run("git add tokenizer.py && GIT_EDITOR=true git cherry-pick --continue"),
    ],
    [
        run("git checkout -q release/1.x && git cherry-pick -x main~5..main~1"),
        write("tokenizer.py", TOKENIZER_TABS_RESOLVED),
        run("git add tokenizer.py && GIT_EDITOR=true git cherry-pick --continue"),
    ],
    TOKENIZER_BASE=TOKENIZER_BASE.rstrip("\n"),
)

ROUTES_RESOLVED = text(
    """
    from views import about, home

    ROUTES = {
        "/": home,
        "/about": about,
    }
    """
)
APP_CONF_RESOLVED = "[server]\nport = 8080\nworkers = 4\n"

task(
    "merge-with-several-conflicts",
    "hard",
    prose(
        """
        Merge the branch `feature/v2` into `main` (main is checked out). Three files conflict. Resolve
        them like this:

        - `legacy.py`: main deleted it and the branch changed it; it stays deleted.
        - `routes.py`: main dropped the legacy route and the branch added the about page; keep the about
          page without the legacy route, so that routes.py reads exactly:

        {routes}

        - `app.conf`: main's port with the branch's workers, exactly:

        {conf}

        Everything else merges by itself. Finish the merge with a merge commit (the default message is
        fine) and leave a clean work tree.
        """,
        routes=ROUTES_RESOLVED,
        conf=APP_CONF_RESOLVED,
    ),
    """
    git init -q -b main
    {COMMIT}
    printf '[server]\\nport = 8000\\nworkers = 2\\n' > app.conf
    echo "def old_handler(): return 'old'" > legacy.py
    echo "def home(): return 'home'" > views.py
    cat > routes.py <<'EOF'
    from legacy import old_handler
    from views import home

    ROUTES = {
        "/": home,
        "/old": old_handler,
    }
    EOF
    commit "Initial commit"
    git checkout -q -b feature/v2
    echo "def old_handler(): return 'old'.encode()" > legacy.py
    commit "Fix the legacy handler's encoding"
    echo "def about(): return 'about'" >> views.py
    cat > routes.py <<'EOF'
    from legacy import old_handler
    from views import about, home

    ROUTES = {
        "/": home,
        "/about": about,
        "/old": old_handler,
    }
    EOF
    commit "Add the about page"
    printf '[server]\\nport = 9000\\nworkers = 4\\n' > app.conf
    commit "Use four workers and port 9000"
    git checkout -q main
    git rm -q legacy.py
    cat > routes.py <<'EOF'
    from views import home

    ROUTES = {
        "/": home,
    }
    EOF
    commit "Remove the legacy handler"
    sed -i 's/^port = 8000$/port = 8080/' app.conf
    commit "Serve on port 8080"
    """,
    [
        check(
            "main's tip merges feature/v2 into the previous main",
            """
            [ "$(git rev-parse main^2)" = "$(git rev-parse feature/v2)" ]
            [ "$(git log -1 --format=%s main^1)" = "Serve on port 8080" ]
            """,
        ),
        check(
            "legacy.py stays deleted",
            """
            git rev-parse -q --verify main^2 >/dev/null
            [ -z "$(git ls-tree --name-only main legacy.py)" ]
            [ ! -e legacy.py ]
            """,
        ),
        check("routes.py has the about page and no legacy route", same("git show main:routes.py", ROUTES_RESOLVED)),
        check("app.conf has main's port and the branch's workers", same("git show main:app.conf", APP_CONF_RESOLVED)),
        check(
            "the merge is finished, views.py has the about page, and the work tree is clean",
            """
            git rev-parse -q --verify main^2 >/dev/null
            [ "$(git show main:views.py)" = "$(printf '%s\\n' "def home(): return 'home'" "def about(): return 'about'")" ]
            [ ! -e "$(git rev-parse --git-path MERGE_HEAD)" ]
            [ "$(git symbolic-ref -q HEAD)" = refs/heads/main ]
            [ -z "$(git status --porcelain)" ]
            """,
        ),
    ],
    [
        run("git merge feature/v2"),
        run("git rm -q legacy.py"),
        write("routes.py", ROUTES_RESOLVED),
        write("app.conf", APP_CONF_RESOLVED),
        run("git add routes.py app.conf && git commit -q --no-edit"),
    ],
    [
        run("git merge feature/v2"),
        write("routes.py", ROUTES_RESOLVED),
        write("app.conf", APP_CONF_RESOLVED),
        run("git add legacy.py routes.py app.conf && git commit -q --no-edit"),
    ],
)

task(
    "rebase-keeping-merges",
    "hard",
    prose(
        """
        Rebase the branch `release/next` onto the current `main` while keeping its shape, as `git rebase
        --rebase-merges` does. Today, on top of main's older commit 'Add core module', it has 'Start
        release notes', then a merge of the branch `topic` ("Merge branch 'topic' into release/next",
        whose second parent brings topic's commits 'Add plugin API' and 'Document the plugin API',
        forked from 'Start release notes'), then 'Update release notes'. After the rebase, these must
        sit on top of main's latest commit the same way: the merge stays a merge commit with the same
        message, topic's two commits on its second-parent side, forking from the rebased 'Start release
        notes'. Leave `main` and the branch `topic` unchanged.
        """
    ),
    """
    git init -q -b main
    {COMMIT}
    echo "# app" > README.md
    commit "Initial commit"
    echo "def core(): return 1" > core.py
    commit "Add core module"
    git checkout -q -b release/next
    echo "# Release notes" > NOTES.md
    commit "Start release notes"
    git checkout -q -b topic
    echo "HOOKS = []" > plugins.py
    commit "Add plugin API"
    mkdir docs
    echo "Register hooks in plugins.HOOKS." > docs/plugins.md
    commit "Document the plugin API"
    git checkout -q release/next
    git merge -q --no-ff -m "Merge branch 'topic' into release/next" topic
    echo "- plugin API" >> NOTES.md
    commit "Update release notes"
    git checkout -q main
    echo "def core(): return 2" > core.py
    commit "Fix core bug"
    """,
    [
        check("release/next is based on the current main", "git merge-base --is-ancestor main release/next\n"),
        check(
            "its first-parent history on main: notes, the merge, notes update",
            """
            [ "$(git rev-parse release/next~3)" = "$(git rev-parse main)" ]
            [ "$(git log --first-parent --reverse --format=%s main..release/next)" = "$(printf '%s\\n' 'Start release notes' "Merge branch 'topic' into release/next" 'Update release notes')" ]
            """,
        ),
        check(
            "the merge keeps topic's two commits on its second-parent side, forking from the rebased notes",
            """
            merge=$(git rev-parse release/next~1)
            [ "$(git log -1 --format=%P "$merge" | wc -w)" = 2 ]
            [ "$(git log -1 --format=%s "$merge^2")" = "Document the plugin API" ]
            [ "$(git log -1 --format=%s "$merge^2~1")" = "Add plugin API" ]
            [ "$(git rev-parse "$merge^2~2")" = "$(git rev-parse "$merge^1")" ]
            git merge-base --is-ancestor main "$merge^2"
            """,
        ),
        check(
            "the content has both sides, and main and topic are unchanged",
            """
            [ "$(git ls-tree -r --name-only release/next)" = "$(printf '%s\\n' NOTES.md README.md core.py docs/plugins.md plugins.py)" ]
            [ "$(git show release/next:core.py)" = "def core(): return 2" ]
            [ "$(git log -1 --format=%s "$(git merge-base topic main)")" = "Add core module" ]
            """,
            log_is(
                "topic",
                "Initial commit",
                "Add core module",
                "Start release notes",
                "Add plugin API",
                "Document the plugin API",
            ),
            log_is("main", "Initial commit", "Add core module", "Fix core bug"),
        ),
    ],
    [run("git rebase --rebase-merges main release/next && git log --graph --oneline main..release/next")],
    [run("git rebase main release/next")],
)

# (subject, author, files written): the history of the subdirectory-split task.
LIB_HISTORY = [
    ("Initial commit", ADA, {"README.md": "# app", "app/main.py": 'print("app")'}),
    ("Add string helpers", GRACE_NEW, {"lib/strings.py": "def pad(s): return s"}),
    ("Wire the app to the helpers", ADA, {"app/main.py": "from lib.strings import pad"}),
    ("Add number helpers", ALAN, {"lib/numbers.py": "def clamp(x): return x"}),
    (
        "Fix padding in strings",
        GRACE_NEW,
        {"lib/strings.py": "def pad(s): return s.ljust(8)", "app/main.py": "from lib.strings import pad  # 8 wide"},
    ),
    ("Update README", ADA, {"README.md": "# app and lib"}),
    ("Document lib", ALAN, {"lib/README.md": "# lib"}),
]


def _lib_setup() -> str:
    script = ["git init -q -b main", "mkdir app lib"]
    for subject, (name, email), files in LIB_HISTORY:
        for path, content in files.items():
            script.append(f"echo {shlex.quote(content)} > {path}")
        script.append("git add -A")
        script.append(f"git commit -q --author={shlex.quote(f'{name} <{email}>')} -m {shlex.quote(subject)}")
    return "\n".join(script) + "\n"


task(
    "extract-subdirectory-history",
    "hard",
    prose(
        """
        Create a new branch `lib-only` holding only the history of the library in `lib/`, as `git
        subtree split --prefix=lib` or `git filter-branch --subdirectory-filter lib` would: its commits
        are exactly the commits of `main` that changed something under `lib/`, in the same order, with
        the same messages and authors, and each commit's tree is what `lib/` contained at that commit
        of `main`, moved to the top level (so `lib/strings.py` becomes `strings.py`). Commits of `main`
        that didn't touch `lib/` must not appear. `main` must stay unchanged.
        """
    ),
    _lib_setup(),
    [
        check(
            "lib-only has exactly main's commits that touched lib/, in order",
            """
            git rev-parse -q --verify refs/heads/lib-only >/dev/null
            [ "$(git log --reverse --format=%s lib-only)" = "$(git log --reverse --format=%s main -- lib)" ]
            [ "$(git rev-list --count --max-parents=0 lib-only)" = 1 ]
            [ -z "$(git rev-list --merges lib-only)" ]
            """,
        ),
        check(
            "each commit's tree is lib/ of the matching main commit, at the top level",
            """
            expected=$(for c in $(git rev-list --reverse main -- lib); do git rev-parse "$c:lib"; done)
            [ -n "$expected" ]
            [ "$(git log --reverse --format=%T lib-only)" = "$expected" ]
            """,
        ),
        check(
            "authors and messages are kept, and main is unchanged",
            """
            git rev-parse -q --verify refs/heads/lib-only >/dev/null
            [ "$(git log --reverse --format='%an <%ae>|%B' lib-only)" = "$(git log --reverse --format='%an <%ae>|%B' main -- lib)" ]
            """,
            log_is("main", *(subject for subject, _, _ in LIB_HISTORY)),
        ),
    ],
    [
        run(
            """
            git branch lib-only main
            FILTER_BRANCH_SQUELCH_WARNING=1 git filter-branch --subdirectory-filter lib lib-only
            git log --stat --format='%s' lib-only
            """
        ),
    ],
    [
        run(
            """
            git branch lib-only main
            FILTER_BRANCH_SQUELCH_WARNING=1 git filter-branch --prune-empty \\
                --index-filter 'git rm -r -q --cached --ignore-unmatch app README.md' lib-only
            """
        ),
    ],
)


# Easy tasks first, then medium, then hard; in the order they are written within a level.
TASKS.sort(key=lambda task: list(MAX_TURNS).index(task["difficulty"]))


def render_jsonl() -> str:
    """The content of tasks.jsonl: one task a line, in the order of TASKS."""
    return "".join(json.dumps(task, ensure_ascii=False) + "\n" for task in TASKS)


if __name__ == "__main__":
    TASKS_FILE.write_text(render_jsonl())
    print(f"wrote {len(TASKS)} tasks to {TASKS_FILE}")
