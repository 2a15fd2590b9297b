"""Git-v0's tasks, easy (part 2): see ``task_source.py``."""

from __future__ import annotations

from .task_writing import check, prose, run, same, task, text

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
