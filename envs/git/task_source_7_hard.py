"""Git-v0's tasks, hard (part 2): see ``task_source.py``."""

from __future__ import annotations

import shlex

from .task_source_6_hard import ADA, ALAN, GRACE_NEW
from .task_writing import check, log_is, prose, run, same, sh, task, text, write

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
