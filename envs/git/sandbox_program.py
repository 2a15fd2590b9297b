"""What the Git env runs inside the sandbox besides commands (:mod:`.shell`): a file read or write, and the verifier.

The server never runs git and never opens a file of the repository: every one of these runs in
the sandbox, as this module's source sent to the warm worker with one of its functions as the
entry point (:meth:`~openenv_gym.sandbox.Sandbox.run`). So it uses the standard library only.

The verifier (:func:`verify`) runs after the agent's last call, when none of its processes is
left (the sandbox kills them after each run). It copies the workspace into the run's scratch
directory, locks the original away (mode 000, so nothing in the copy can lead git back to it),
and makes every git directory of the copy inert: hooks, grafts, the shallow file and replace refs
deleted, ``info/exclude`` emptied, and the config rewritten without any key that names a program
to run (:func:`safe_config`). If anything in the copy still leads git outside it (the work tree, a
``.git`` file or link, ``commondir``, alternates), no check runs and every one fails
(:func:`outside_reference`). The index's skip-worktree and assume-unchanged bits are cleared, so
git looks at every file. Then each check runs in the copy's work tree with git hardened from the
environment (:func:`hardened_env`): no system or global config, no replace refs, hooks and
fsmonitor off, the pager ``cat``, no transport but ``file``, and no ignore rules but the
repository's ``.gitignore`` files.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import time
from typing import Any

__all__ = [
    "BASH",
    "VERIFY_COPY",
    "config_text",
    "hardened_env",
    "inert_git_dirs",
    "outside_reference",
    "read_file",
    "safe_config",
    "unsafe_config_key",
    "verify",
    "write_file",
]

BASH = "/bin/bash"  # as in .shell: this program is sent alone, and imports nothing of the package
STRICT = ("-euo", "pipefail")  # how checks run, as setups do
CHECK_OUTPUT_LIMIT = 2000  # characters of a check's output kept (its end)
DRAIN_TIMEOUT = 1.0  # seconds to read what a timed-out check left in its pipe, once its group is killed

#: The verifier's copy of the workspace, in the run's scratch directory.
VERIFY_COPY = "verify"

# Keys of a repository's config that name a program git may run: dropped from the verifier's copy.
# A section is dropped whole; otherwise a (section, variable) pair, with or without a subsection.
_UNSAFE_SECTIONS = frozenset(
    {
        "alias",
        "browser",
        "credential",
        "difftool",
        "filter",
        "gpg",
        "guitool",
        "hook",  # config-defined hooks (hook.<name>.command, git 2.36 and later)
        "include",
        "includeif",
        "instaweb",
        "man",
        "mergetool",
        "pager",
        "protocol",
        "sendemail",
        "trailer",
        "uploadarchive",
        "uploadpack",
        "web",
    }
)
_UNSAFE_VARIABLES = frozenset(
    {
        ("core", "alternaterefscommand"),
        ("core", "askpass"),
        ("core", "editor"),
        ("core", "fsmonitor"),
        ("core", "gitproxy"),
        ("core", "hookspath"),
        ("core", "pager"),
        ("core", "sshcommand"),
        ("core", "usereplacerefs"),  # before git 2.43, true wins over GIT_NO_REPLACE_OBJECTS
        ("core", "worktree"),  # points at the original work tree, not the copy
        ("diff", "command"),
        ("diff", "external"),
        ("diff", "textconv"),
        ("imap", "tunnel"),
        ("interactive", "difffilter"),
        ("merge", "driver"),
        ("remote", "receivepack"),
        ("remote", "uploadpack"),
        ("remote", "vcs"),
        ("sequence", "editor"),
        ("submodule", "update"),
        ("tar", "command"),
    }
)
# Set for every git the verifier runs, above any repository config (GIT_CONFIG_COUNT).
_OVERRIDES = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.useReplaceRefs", "false"),
    ("core.excludesFile", os.devnull),  # ignore rules come from the repository's .gitignore files only
    ("core.untrackedCache", "false"),
    ("core.ignoreStat", "false"),
    ("status.showUntrackedFiles", "normal"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)


# --- the agent's file calls ---------------------------------------------------------------------


def read_file(work_tree: str, path: str, limit: int) -> dict[str, Any]:
    """The text of ``path`` in the work tree, its first ``limit`` bytes; or ``{"error": ...}``."""
    target = _inside(work_tree, path, writing=False)
    if isinstance(target, dict):
        return target
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return {"error": f"{path!r} does not exist"}
    except OSError as exc:
        return {"error": f"{path!r} cannot be read: {exc.strerror}"}
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            return {"error": f"{path!r} is a directory; list it with run, e.g. `ls -la {_quote(path)}`"}
        return {"error": f"{path!r} is not a regular file"}
    with os.fdopen(fd, "rb") as file:
        data = file.read(limit + 1)
    if b"\0" in data:
        return {"error": f"{path!r} is a binary file ({info.st_size} bytes); look at it with run, e.g. `xxd`"}
    text = data[:limit].decode("utf-8", "replace")
    if len(data) > limit:
        text += f"\n[... truncated: {info.st_size - limit} more bytes]"
    return {"content": text}


def write_file(work_tree: str, path: str, content: str) -> dict[str, Any]:
    """Write ``content`` (UTF-8) to ``path`` in the work tree, making its directories; ``{"bytes": n}`` or ``{"error": ...}``."""
    target = _inside(work_tree, path, writing=True)
    if isinstance(target, dict):
        return target
    data = content.encode("utf-8", "surrogateescape")
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY, 0o644)
    except IsADirectoryError:
        return {"error": f"{path!r} is a directory"}
    except (FileExistsError, NotADirectoryError):
        return {"error": f"a file in the way of {path!r} is not a directory"}
    except OSError as exc:
        return {"error": f"{path!r} cannot be written: {exc.strerror}"}
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return {"error": f"{path!r} is not a regular file"}
    with os.fdopen(fd, "wb") as file:
        try:
            file.write(data)
            file.flush()
        except OSError as exc:
            return {"error": f"{path!r} could not be written whole: {exc.strerror}"}
    return {"bytes": len(data)}


def _inside(work_tree: str, path: str, *, writing: bool) -> str | dict[str, Any]:
    """``path`` resolved in the work tree (symbolic links followed), or the error if it leads out of it (or into .git)."""
    root = os.path.realpath(work_tree)
    target = os.path.realpath(os.path.join(root, path))
    if target != root and not target.startswith(root + os.sep):
        return {"error": f"{path!r} leads outside the repository (through a symbolic link)"}
    if writing and ".git" in os.path.relpath(target, root).split(os.sep):
        return {"error": f"{path!r} leads into .git (through a symbolic link); change git's files with git commands"}
    return target


def _quote(path: str) -> str:
    return "'" + path.replace("'", "'\\''") + "'"


# --- the verifier -----------------------------------------------------------------------------------


def verify(
    workspace: str, work_tree: str, scratch: str, checks: list[str], env: dict[str, str], budget: float
) -> list[Any]:
    """Run ``checks`` on a copy of the workspace, with git hardened; per check ``{"passed", "output"}``.

    Args:
        workspace: the sandbox's workspace, which holds the work tree (and any sibling repository).
        work_tree: the work tree's path in it; the checks run in its copy.
        scratch: the run's scratch directory, where the copy is made.
        checks: the checks' bash scripts, run with ``bash -euo pipefail -c``.
        env: the environment the agent's commands had (identity, dates); git is hardened on top.
        budget: seconds for all of it; each check gets an even share of what is left.
    """
    import subprocess  # here, not at the top: a file read or write need not import it

    deadline = time.monotonic() + budget
    copy = os.path.join(scratch, VERIFY_COPY)
    home = os.path.join(scratch, "verify-home")
    os.makedirs(home)
    os.chdir(home)  # out of the workspace, which is locked below
    hardened = hardened_env(env, home=home, ceilings=[copy, home])
    # The worker made the copy already where it can read every file (as root); the copy is ours,
    # so what the agent made unreadable in it is made readable again. Elsewhere, copy it here.
    command = (
        ["chmod", "-R", "u+rwX", "--", copy] if os.path.isdir(copy) else ["cp", "-a", "--", workspace + "/.", copy]
    )
    copied = subprocess.run(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=hardened, check=False
    )
    if copied.returncode != 0:
        # Fail closed: what the copy left out (a file the agent made unreadable, one past a full
        # scratch directory) could be what a check looks for ("this file must be gone").
        why = copied.stderr.decode(errors="replace")[-500:]
        failed = f"[verifier] no check ran: the copy of the repository is incomplete, so none can be trusted: {why}"
        return [{"passed": False, "output": failed[-CHECK_OUTPUT_LIMIT:]} for _ in checks]
    mode = stat.S_IMODE(os.stat(workspace).st_mode)
    os.chmod(workspace, 0)
    try:
        inert_git_dirs(copy, hardened)
        tree = os.path.join(copy, os.path.relpath(work_tree, workspace))
        escape = outside_reference(copy, tree, workspace)
        if escape is not None:  # fail closed: git would read (or write) outside the copy
            why = f"[verifier] no check ran: {escape}"
            return [{"passed": False, "output": why[-CHECK_OUTPUT_LIMIT:]} for _ in checks]
        os.makedirs(tree, exist_ok=True)  # the agent may have removed it: then the checks fail on their own
        _clear_index_bits(tree, hardened)
        outcomes = []
        for index, script in enumerate(checks):
            share = max(0.0, deadline - time.monotonic()) / (len(checks) - index)
            passed, output = _run_check(script, tree, hardened, share)
            outcomes.append({"passed": passed, "output": output[-CHECK_OUTPUT_LIMIT:]})
    finally:
        os.chmod(workspace, mode)  # so an unconfined sandbox's owner can remove it
    return outcomes


def _clear_index_bits(tree: str, env: dict[str, str]) -> None:
    """Clear every skip-worktree and assume-unchanged bit of the work tree's index, so git looks at every file."""
    import subprocess  # here, not at the top: a file read or write need not import it

    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=tree, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    if listed.returncode != 0 or not listed.stdout:
        return  # no repository, or an empty index: nothing to clear
    for flag in ("--no-assume-unchanged", "--no-skip-worktree"):  # one per run: update-index applies only the first
        subprocess.run(
            ["git", "update-index", "-z", flag, "--stdin"],
            cwd=tree,
            env=env,
            input=listed.stdout,
            capture_output=True,
            check=False,
        )


def _run_check(script: str, cwd: str, env: dict[str, str], timeout: float) -> tuple[bool, str]:
    import subprocess  # here, not at the top: a file read or write need not import it

    if timeout <= 0:
        return False, "[verifier] no time was left for this check"
    process = subprocess.Popen(
        [BASH, *STRICT, "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # and whatever it started, which holds the pipe too
        try:
            output, _ = process.communicate(timeout=DRAIN_TIMEOUT)
        except subprocess.TimeoutExpired:  # a process in a session of its own holds the pipe: give up on it
            output = b""
            assert process.stdout is not None
            process.stdout.close()
            process.wait()
        return False, output.decode("utf-8", "replace") + f"\n[verifier] the check took more than {timeout:.1f} s"
    return process.returncode == 0, output.decode("utf-8", "replace")


def hardened_env(env: dict[str, str], *, home: str, ceilings: list[str]) -> dict[str, str]:
    """``env`` with git kept from running anything a repository's config or files name.

    No system, global or user config (``HOME`` and ``XDG_CONFIG_HOME`` empty); hooks, fsmonitor
    and automatic gc off, above any repository config; the pager and editors do nothing; no
    replace refs (``core.useReplaceRefs`` false too: before git 2.43 it wins over the variable);
    no ignore rules but ``.gitignore`` files (``core.excludesFile`` empty) and untracked files
    shown, no untracked cache, no ``core.ignoreStat``; no transport but local ``file`` (so no
    ``core.sshCommand``, no remote helper); and git looks for a repository no higher than ``ceilings``.
    """
    hardened = dict(env)
    hardened.update(
        {
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_SYSTEM": os.devnull,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_ALLOW_PROTOCOL": "file",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CEILING_DIRECTORIES": os.pathsep.join(ceilings),
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": "true",
            "GIT_SEQUENCE_EDITOR": "true",
            "GIT_CONFIG_COUNT": str(len(_OVERRIDES)),
        }
    )
    for name in (
        "GIT_EXTERNAL_DIFF",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_DIR",
        "GIT_WORK_TREE",
    ):
        hardened.pop(name, None)
    for index, (key, value) in enumerate(_OVERRIDES):
        hardened[f"GIT_CONFIG_KEY_{index}"] = key
        hardened[f"GIT_CONFIG_VALUE_{index}"] = value
    return hardened


def inert_git_dirs(root: str, env: dict[str, str]) -> list[str]:
    """Make every git directory under ``root`` inert: no hooks, worktree config, grafts, shallow file or replace refs, a safe config.

    A git directory is one holding ``objects`` and ``refs`` (a repository, bare or a work tree's
    ``.git``, or a submodule's), ``commondir`` (a linked work tree's), or ``HEAD`` and
    ``config``. Its ``info/exclude`` is emptied (what is ignored is what the repository's
    ``.gitignore`` files say). Symbolic links are not followed. Every directory is first made its owner's to
    read, write and enter (the copy is the runs' own), so a mode the agent set cannot keep a
    file from being removed; a removal that fails all the same raises (and so no check runs).
    Returns the directories changed.
    """
    _open_up(root)
    changed = []
    for directory, dirs, files in os.walk(root):
        names = {*dirs, *files}
        if not ({"objects", "refs"} <= names or "commondir" in names or {"HEAD", "config"} <= names):
            continue
        changed.append(directory)
        for name in ("config.worktree", "info/grafts", "shallow", "refs/replace"):
            _remove(os.path.join(directory, name))
        _remove(os.path.join(directory, "hooks"))
        _drop_packed_replace_refs(os.path.join(directory, "packed-refs"))
        exclude = os.path.join(directory, "info", "exclude")
        if os.path.lexists(exclude):  # ignore rules are the repository's .gitignore files, nothing local
            _remove(exclude)
            with open(exclude, "w", encoding="utf-8"):
                pass
        config = os.path.join(directory, "config")
        if os.path.lexists(config):
            entries = safe_config(config, env)
            _remove(config)
            with open(config, "w", encoding="utf-8", errors="surrogateescape") as file:
                file.write(config_text(entries))
        if "hooks" in dirs:
            dirs.remove("hooks")
    return changed


def _drop_packed_replace_refs(path: str) -> None:
    """Rewrite a ``packed-refs`` file without its ``refs/replace/`` entries (and their peeled lines)."""
    if os.path.islink(path) or not os.path.isfile(path):
        _remove(path)  # not a file git wrote: no packed refs at all
        return
    with open(path, "rb") as file:
        lines = file.read().splitlines(keepends=True)
    kept, dropping = [], False
    for line in lines:
        if line.startswith(b"^"):  # the peeled value of the ref above
            if not dropping:
                kept.append(line)
            continue
        fields = line.split(maxsplit=1)
        dropping = len(fields) == 2 and fields[1].startswith(b"refs/replace/")
        if not dropping:
            kept.append(line)
    if kept != lines:
        _remove(path)
        with open(path, "wb") as file:
            file.write(b"".join(kept))


def outside_reference(copy: str, work_tree: str, locked: str | None = None) -> str | None:
    """What in the copy leads git outside it, if anything: the work tree, a ``.git`` file or link, a git dir's links.

    Checked: the work tree's real path; every ``.git`` in the copy (a symbolic link, or a
    ``gitdir:`` file); in every git directory, ``commondir``, ``objects/info/alternates`` and
    every symbolic link. Each must resolve inside the copy, or inside ``locked`` (the original
    workspace, which the verifier locks away: a linked work tree's absolute ``gitdir:`` leads
    there, and git finds nothing it can read). Returns a sentence naming the first that does
    not, or ``None``.
    """
    roots = [os.path.realpath(path) for path in (copy, locked) if path is not None]

    def outside(path: str) -> bool:
        target = os.path.realpath(path)
        return not any(target == root or target.startswith(root + os.sep) for root in roots)

    def named(base: str, text: str) -> list[str]:
        return [
            os.path.join(base, line.strip()) for line in text.splitlines() if line.strip() and not line.startswith("#")
        ]

    if outside(work_tree):
        return f"the work tree leads outside the copy (to {os.path.realpath(work_tree)})"
    for directory, dirs, files in os.walk(copy):
        names = {*dirs, *files}
        for name in sorted(names):
            path = os.path.join(directory, name)
            if name == ".git" and os.path.islink(path) and outside(path):
                return f"{os.path.relpath(path, copy)} is a symbolic link outside the copy"
            if name == ".git" and os.path.isfile(path) and not os.path.islink(path):
                text = _read_text(path)
                if text.startswith("gitdir:") and outside(os.path.join(directory, text[len("gitdir:") :].strip())):
                    return f"{os.path.relpath(path, copy)} names a git directory outside the copy"
        if not ({"objects", "refs"} <= names or "commondir" in names or {"HEAD", "config"} <= names):
            continue
        for name, base in (("commondir", ""), ("objects/info/alternates", "objects")):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                for target in named(os.path.join(directory, base), _read_text(path)):
                    if outside(target):
                        return f"{os.path.relpath(path, copy)} names {target!r}, outside the copy"
        for below, subdirs, subfiles in os.walk(directory):
            for name in [*subdirs, *subfiles]:
                path = os.path.join(below, name)
                if os.path.islink(path) and outside(path):
                    return f"{os.path.relpath(path, copy)} is a symbolic link outside the copy"
    return None


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read(65536)
    except OSError:
        return ""


def safe_config(path: str, env: dict[str, str]) -> list[tuple[str, str | None]]:
    """The entries of the config file ``path`` (as git reads it, includes not followed) but its unsafe ones.

    A file git cannot read (or not a regular file) has no entries: the repository is left with
    an empty config, as if it had none.
    """
    import subprocess  # here, not at the top: a file read or write need not import it

    if os.path.islink(path) or not os.path.isfile(path):
        return []
    listed = subprocess.run(
        ["git", "config", "--file", path, "--no-includes", "--list", "-z"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        check=False,
    )
    if listed.returncode != 0:
        return []
    entries: list[tuple[str, str | None]] = []
    for item in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not item:
            continue
        key, newline, value = item.partition("\n")
        if not unsafe_config_key(key):
            entries.append((key, value if newline else None))
    return entries


def unsafe_config_key(key: str) -> bool:
    """Whether a config key (``section[.subsection].variable``, as ``git config --list`` names it) names a program.

    Example:
        >>> [unsafe_config_key(key) for key in ("core.fsmonitor", "filter.lfs.clean", "diff.py.textconv", "user.name")]
        [True, True, True, False]
    """
    section, _, rest = key.partition(".")
    variable = rest.rpartition(".")[2]
    section, variable = section.lower(), variable.lower()
    return section in _UNSAFE_SECTIONS or (section, variable) in _UNSAFE_VARIABLES


def config_text(entries: list[tuple[str, str | None]]) -> str:
    r"""A config file holding ``entries`` (key, value or ``None`` for a bare boolean), in their order.

    Example:
        >>> config_text([("core.bare", "false"), ("remote.my.origin.url", 'a "b"'), ("core.x", None)]).splitlines()
        ['[core]', '\tbare = "false"', '[remote "my.origin"]', '\turl = "a \\"b\\""', '[core]', '\tx']
    """
    lines = []
    current = None
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, dot, variable = rest.rpartition(".")
        header = f"[{section}]" if not dot else f'[{section} "{_escape_subsection(subsection)}"]'
        if header != current:
            lines.append(header)
            current = header
        lines.append(f"\t{variable}" if value is None else f'\t{variable} = "{_escape(value)}"')
    return "".join(line + "\n" for line in lines)


def _escape_subsection(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\b", "\\b")


def _open_up(root: str) -> None:
    """Give the owner ``rwx`` on ``root`` and every directory below it (symbolic links left alone)."""
    os.chmod(root, stat.S_IMODE(os.lstat(root).st_mode) | 0o700)
    for directory, dirs, _ in os.walk(root):
        for name in dirs:  # before os.walk lists them
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o700)


def _remove(path: str) -> None:
    """Remove a file or a directory tree; nothing there is fine, a failure raises."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
