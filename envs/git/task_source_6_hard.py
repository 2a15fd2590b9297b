"""Git-v0's tasks, hard (part 1): see ``task_source.py``."""

from __future__ import annotations

import shlex

from .task_writing import check, lines, log_is, prose, run, same, task, text

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
