"""The verifier's pieces on their own: which config keys name programs, the safe config written back, inert git dirs.

These functions run inside the sandbox in the env; here they run on the host, on repositories
the tests build (their "programs" only touch files in the test's directory), so each rule is
pinned without a sandbox in the way. The verifier as a whole runs in the sandbox in
``test_git_env.py`` and ``test_git_hostile.py``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openenv_gym.envs.git import sandbox_program
from openenv_gym.envs.git.sandbox_program import (
    config_text,
    hardened_env,
    inert_git_dirs,
    outside_reference,
    safe_config,
    unsafe_config_key,
)


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=30
    ).stdout


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A hardened environment with an empty home, as the verifier's."""
    home = tmp_path / "home"
    home.mkdir()
    base = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com"}
    return hardened_env(
        {**base, "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com"},
        home=str(home),
        ceilings=[str(tmp_path)],
    )


@pytest.mark.parametrize(
    "key",
    [
        "core.fsmonitor",
        "core.hooksPath",
        "core.sshCommand",
        "core.pager",
        "core.editor",
        "core.worktree",
        "diff.external",
        "diff.py.textconv",
        "diff.py.command",
        "filter.lfs.clean",
        "filter.a.b.smudge",
        "filter.x.required",
        "merge.ours.driver",
        "alias.st",
        "include.path",
        "includeIf.gitdir:/x/.path",
        "pager.log",
        "credential.helper",
        "gpg.program",
        "remote.origin.uploadpack",
        "submodule.lib.update",
        "protocol.allow",
        "sequence.editor",
        "trailer.sign.cmd",
        "core.useReplaceRefs",
        "hook.lint.command",
        "hook.lint.event",
        "tar.tgz.command",
        "imap.tunnel",
    ],
)
def test_keys_that_name_a_program_are_unsafe(key):
    """Each key that names a program (or pulls in other config) is unsafe, whatever its case or subsection."""
    assert unsafe_config_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "core.bare",
        "core.repositoryformatversion",
        "core.filemode",
        "extensions.objectformat",
        "user.name",
        "remote.origin.url",
        "remote.origin.fetch",
        "branch.main.merge",
        "url.https://example.com/.insteadof",
        "diff.py.xfuncname",
        "merge.conflictstyle",
    ],
)
def test_data_keys_are_kept(key):
    """Keys that are data (identity, remotes, branches, formats, diff hunk headers) stay."""
    assert not unsafe_config_key(key)


def test_the_safe_config_is_the_original_less_its_unsafe_keys_values_intact(tmp_path, env):
    """Values with quotes, backslashes, tabs, newlines, comment characters, bare booleans and dotted subsections survive."""
    original = tmp_path / "config"
    original.write_text(
        "[core]\n\tbare = false\n\tfsmonitor = touch fsmonitor-ran\n"
        '[remote "my.origin"]\n\turl = "a \\"quoted\\" \\\\path\\t; # not a comment "\n\tfetch = +refs/heads/*:x\n'
        '[user]\n\tname = "  padded  "\n\tsigningkey = "line one\\nline two"\n'
        "[alias]\n\tst = !touch alias-ran\n"
        '[filter "lfs"]\n\tclean = touch clean-ran\n'
        '[branch "main"]\n\trebase\n'
        '[weird "sub\\"quote"]\n\tkey = x\n'
        "[include]\n\tpath = other.config\n"
    )
    entries = safe_config(str(original), env)
    rewritten = tmp_path / "rewritten"
    rewritten.write_text(config_text(entries))
    listed = git("config", "--file", str(original), "--list", "-z", cwd=tmp_path, env=env).split("\0")
    kept = [item for item in listed if item and not unsafe_config_key(item.split("\n", 1)[0])]
    assert git("config", "--file", str(rewritten), "--list", "-z", cwd=tmp_path, env=env).split("\0")[:-1] == kept
    assert [key for key, _ in entries] == [
        "core.bare",
        "remote.my.origin.url",
        "remote.my.origin.fetch",
        "user.name",
        "user.signingkey",
        "branch.main.rebase",
        'weird.sub"quote.key',
    ]
    assert dict(entries)["user.signingkey"] == "line one\nline two" and dict(entries)["branch.main.rebase"] is None


def test_a_config_git_cannot_read_becomes_an_empty_one(tmp_path, env):
    """A malformed config, or a symbolic link in its place, leaves the copy with an empty config."""
    broken = tmp_path / "config"
    broken.write_text("[core\n\tfsmonitor = touch x\n")
    assert safe_config(str(broken), env) == []
    (tmp_path / "link").symlink_to(broken)
    assert safe_config(str(tmp_path / "link"), env) == []


def test_inert_git_dirs_finds_every_git_dir_and_leaves_other_files_alone(tmp_path, env):
    """A work tree's .git, a bare remote beside it, a git dir hidden in objects/: each loses hooks and unsafe keys."""
    work = tmp_path / "ws" / "repo"
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=work, env=env)
    git("config", "core.fsmonitor", "touch fsmonitor-ran", cwd=work, env=env)
    git("config", "user.email", "kept@example.com", cwd=work, env=env)
    (work / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ntouch hook-ran\n")
    (work / ".git" / "config.worktree").write_text("[core]\n\tfsmonitor = touch x\n")
    (work / ".git" / "info" / "grafts").write_text("")
    git("init", "-q", "--bare", str(tmp_path / "ws" / "origin.git"), cwd=tmp_path, env=env)
    git("config", "--file", str(tmp_path / "ws" / "origin.git" / "config"), "alias.x", "!touch y", cwd=tmp_path)
    hidden = work / ".git" / "objects" / "evil"
    (hidden / "objects").mkdir(parents=True)
    (hidden / "refs").mkdir()
    (hidden / "config").write_text("[core]\n\tpager = touch pager-ran\n")
    project = work / "settings"
    project.mkdir()
    (project / "config").write_text("[core]\n\tpager = touch pager-ran\n")  # a file of the project, not git's
    changed = inert_git_dirs(str(tmp_path / "ws"), env)
    assert sorted(changed) == sorted(str(path) for path in (work / ".git", tmp_path / "ws" / "origin.git", hidden))
    assert not (work / ".git" / "hooks").exists() and not (work / ".git" / "config.worktree").exists()
    assert not (work / ".git" / "info" / "grafts").exists()
    assert git("config", "--local", "--list", cwd=work, env=env).splitlines() == [
        "core.repositoryformatversion=0",
        "core.filemode=true",
        "core.bare=false",
        "core.logallrefupdates=true",
        "user.email=kept@example.com",
    ]
    assert "alias" not in (tmp_path / "ws" / "origin.git" / "config").read_text()
    assert (hidden / "config").read_text() == ""
    assert (project / "config").read_text() == "[core]\n\tpager = touch pager-ran\n"
    git("status", cwd=work, env=env)
    assert not list(tmp_path.rglob("*-ran"))


def test_modes_the_agent_set_do_not_keep_a_git_dir_from_being_made_inert(tmp_path, env):
    """A read-only .git, hooks and info: they are opened up first, so hooks, config.worktree and grafts go all the same."""
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work, env=env)
    git("config", "core.repositoryformatversion", "1", cwd=work, env=env)
    git("config", "extensions.worktreeConfig", "true", cwd=work, env=env)
    dot_git = work / ".git"
    (dot_git / "config.worktree").write_text('[core]\n\tfsmonitor = "touch fsmonitor-ran"\n')
    (dot_git / "info" / "grafts").write_text("")
    (dot_git / "hooks" / "post-checkout").write_text("#!/bin/sh\ntouch hook-ran\n")
    for directory in (dot_git / "hooks", dot_git / "info", dot_git):
        directory.chmod(0o500)
    assert inert_git_dirs(str(work), env) == [str(dot_git)]
    assert sorted(os.listdir(dot_git)) == ["HEAD", "branches", "config", "description", "info", "objects", "refs"]
    assert os.listdir(dot_git / "info") == ["exclude"]
    assert git("config", "--local", "--get", "extensions.worktreeconfig", cwd=work, env=env) == "true\n"


def test_the_hardened_env_turns_off_what_repository_config_could_run(tmp_path, env):
    """With the config untouched, fsmonitor and hooks still do not run: the overrides sit above repository config."""
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work, env=env)
    git("config", "core.fsmonitor", "touch fsmonitor-ran", cwd=work, env=env)
    git("config", "core.hooksPath", ".hooks", cwd=work, env=env)
    (work / ".hooks").mkdir()
    (work / ".hooks" / "post-checkout").write_text("#!/bin/sh\ntouch hook-ran\n")
    (work / ".hooks" / "post-checkout").chmod(0o755)
    (work / "a").write_text("a")
    git("add", "a", cwd=work, env=env)
    git("commit", "-q", "-m", "a", cwd=work, env=env)
    git("status", cwd=work, env=env)
    git("checkout", "-q", "-b", "other", cwd=work, env=env)
    assert not list(work.glob("*-ran"))
    assert env["GIT_CONFIG_GLOBAL"] == env["GIT_CONFIG_SYSTEM"] == os.devnull and env["GIT_NO_REPLACE_OBJECTS"] == "1"
    assert env["GIT_ALLOW_PROTOCOL"] == "file" and env["GIT_CEILING_DIRECTORIES"] == str(tmp_path)


def commit(work: Path, env: dict[str, str], name: str) -> None:
    (work / name).write_text(name)
    git("add", name, cwd=work, env=env)
    git("commit", "-q", "-m", name, cwd=work, env=env)


def test_replace_refs_fool_no_check_even_with_core_use_replace_refs(tmp_path, env):
    """A replace ref with core.useReplaceRefs=true (which wins over GIT_NO_REPLACE_OBJECTS before git 2.43): not honoured."""
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work, env=env)
    commit(work, env, "a")
    fake = git("commit-tree", "HEAD^{tree}", "-m", "Done", cwd=work, env=env).strip()
    git("replace", "HEAD", fake, cwd=work, env={**env, "GIT_NO_REPLACE_OBJECTS": ""})
    git("config", "core.useReplaceRefs", "true", cwd=work, env=env)
    assert git("log", "-1", "--format=%s", cwd=work, env=env) == "a\n"  # the override alone, config untouched
    git("pack-refs", "--all", cwd=work, env=env)
    assert "refs/replace/" in (work / ".git" / "packed-refs").read_text()
    inert_git_dirs(str(work), env)
    assert "usereplacerefs" not in (work / ".git" / "config").read_text().lower()
    assert "refs/replace/" not in (work / ".git" / "packed-refs").read_text()
    assert "refs/heads/main" in (work / ".git" / "packed-refs").read_text()
    assert (
        git("log", "-1", "--format=%s", cwd=work, env={**env, "GIT_NO_REPLACE_OBJECTS": "", "GIT_CONFIG_COUNT": "0"})
        == "a\n"
    )


def test_inert_git_dirs_removes_what_hides_history_or_files(tmp_path, env):
    """refs/replace, the shallow file go; info/exclude is emptied, so only .gitignore files ignore anything."""
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work, env=env)
    commit(work, env, "a")
    commit(work, env, "b")
    dot_git = work / ".git"
    head, parent = git("rev-parse", "HEAD", "HEAD~1", cwd=work, env=env).split()
    (dot_git / "shallow").write_text(head + "\n")
    (dot_git / "refs" / "replace").mkdir()
    (dot_git / "refs" / "replace" / head).write_text(parent + "\n")
    (dot_git / "info" / "exclude").write_text("secret.txt\n")
    (work / "secret.txt").write_text("x")
    assert git("rev-list", "--count", "HEAD", cwd=work, env=env) == "1\n"  # the shallow file hides a commit
    inert_git_dirs(str(work), env)
    assert not (dot_git / "shallow").exists() and not (dot_git / "refs" / "replace").exists()
    assert (dot_git / "info" / "exclude").read_text() == ""
    assert git("rev-list", "--count", "HEAD", cwd=work, env=env) == "2\n"
    assert git("status", "--porcelain", cwd=work, env=env) == "?? secret.txt\n"


def test_the_hardened_env_ignores_only_what_gitignore_files_say(tmp_path, env):
    """core.excludesFile and status.showUntrackedFiles=no in the repository's config hide no untracked file."""
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work, env=env)
    commit(work, env, "a")
    (tmp_path / "ignore").write_text("*.log\n")
    git("config", "core.excludesFile", str(tmp_path / "ignore"), cwd=work, env=env)
    (work / "x.log").write_text("x")
    (work / "y").write_text("y")
    assert git("status", "--porcelain", cwd=work, env=env) == "?? x.log\n?? y\n"
    git("config", "status.showUntrackedFiles", "no", cwd=work, env=env)
    assert git("status", "--porcelain", cwd=work, env=env) == "?? x.log\n?? y\n"
    assert [
        env[f"GIT_CONFIG_VALUE_{i}"]
        for i in range(int(env["GIT_CONFIG_COUNT"]))
        if env[f"GIT_CONFIG_KEY_{i}"] in ("core.untrackedCache", "core.ignoreStat", "core.useReplaceRefs")
    ] == ["false", "false", "false"]


def test_skip_worktree_and_assume_unchanged_bits_are_cleared(tmp_path, env):
    """A file changed behind an assume-unchanged or skip-worktree bit shows as changed once the verifier clears the bits."""
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work, env=env)
    commit(work, env, "a")
    commit(work, env, "b")
    git("update-index", "--assume-unchanged", "a", cwd=work, env=env)
    git("update-index", "--skip-worktree", "b", cwd=work, env=env)
    (work / "a").write_text("changed")
    (work / "b").unlink()
    assert git("status", "--porcelain", cwd=work, env=env) == ""
    sandbox_program._clear_index_bits(str(work), env)
    assert git("status", "--porcelain", cwd=work, env=env) == " M a\n D b\n"


@pytest.mark.parametrize(
    "plant",
    [
        "gitfile to /dev",
        "gitfile to /tmp",
        "symlinked .git",
        "commondir",
        "alternates",
        "symlink in the git dir",
        "symlinked work tree",
    ],
)
def test_anything_leading_git_outside_the_copy_is_found(tmp_path, env, plant):
    """A .git file or link, commondir, alternates, a link in a git dir or the work tree itself leading outside."""
    copy = tmp_path / "copy"
    work = copy / "repo"
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=work, env=env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (copy / "sub").mkdir()
    tree = work
    assert outside_reference(str(copy), str(work)) is None
    if plant == "gitfile to /dev":
        (copy / "sub" / ".git").write_text("gitdir: /dev/shm/x\n")
    elif plant == "gitfile to /tmp":
        (copy / "sub" / ".git").write_text(f"gitdir: {elsewhere}\n")
    elif plant == "symlinked .git":
        (copy / "sub" / ".git").symlink_to(elsewhere)
    elif plant == "commondir":
        (copy / "sub" / ".git").mkdir()
        (copy / "sub" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (copy / "sub" / ".git" / "commondir").write_text("../../../elsewhere\n")
    elif plant == "alternates":
        (work / ".git" / "objects" / "info" / "alternates").write_text(f"{elsewhere}\n")
    elif plant == "symlink in the git dir":
        (work / ".git" / "refs" / "heads" / "main").symlink_to(elsewhere / "main")
    else:
        (copy / "linked").symlink_to(elsewhere)
        tree = copy / "linked"
    if plant != "symlinked work tree":
        (copy / "fine").mkdir()  # a submodule-like gitfile inside the copy is fine
        (copy / "fine" / ".git").write_text("gitdir: ../repo/.git\n")
    found = outside_reference(str(copy), str(tree))
    assert found is not None and "outside the copy" in found, found


def test_a_repository_inside_the_copy_is_fine(tmp_path, env):
    """Relative gitfiles, alternates and links that stay inside the copy, and the locked workspace's paths: no escape."""
    copy = tmp_path / "copy"
    work = copy / "repo"
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=work, env=env)
    git("init", "-q", "--bare", str(copy / "other.git"), cwd=tmp_path, env=env)
    (work / ".git" / "objects" / "info" / "alternates").write_text("../../../other.git/objects\n")
    (copy / "sub").mkdir()
    (copy / "sub" / ".git").write_text("gitdir: ../repo/.git\n")
    (copy / "wt").mkdir()
    (copy / "wt" / ".git").write_text(f"gitdir: {tmp_path / 'workspace' / 'repo' / '.git' / 'worktrees' / 'wt'}\n")
    (work / "link").symlink_to("/usr/bin")  # a link of the work tree, not of a git dir
    assert outside_reference(str(copy), str(work), str(tmp_path / "workspace")) is None


def test_a_timed_out_check_whose_daemon_holds_the_pipe_returns(tmp_path, env):
    """A check that leaves a process of its own session holding its output: the verifier gives up on the pipe soon."""
    import signal
    import time

    pid_file = tmp_path / "pid"
    start = time.monotonic()
    try:
        passed, output = sandbox_program._run_check(
            f"setsid sleep 30 & echo $! > {pid_file}; sleep 30", str(tmp_path), env, 0.5
        )
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert time.monotonic() - start < 10
    assert not passed and "the check took more than 0.5 s" in output
