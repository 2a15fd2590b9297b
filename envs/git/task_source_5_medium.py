"""Git-v0's tasks, medium (part 3): see ``task_source.py``."""

from __future__ import annotations

from .task_writing import check, lines, log_is, prose, read, run, same, sh, task, text, write

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
