"""Git-v0's tasks, medium (part 2): see ``task_source.py``."""

from __future__ import annotations

from .task_writing import check, log_is, prose, run, same, task, text, write

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
