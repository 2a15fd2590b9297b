"""Git-v0's tasks, easy (part 1): see ``task_source.py``."""

from __future__ import annotations

from .task_writing import check, prose, run, same, task, text, write

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
