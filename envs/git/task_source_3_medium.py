"""Git-v0's tasks, medium (part 1): see ``task_source.py``."""

from __future__ import annotations

from .task_writing import check, lines, log_is, prose, run, same, task, text, write

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
