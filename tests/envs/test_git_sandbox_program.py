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

from openenv_gym.envs.git.sandbox_program import (
    config_text,
    hardened_env,
    inert_git_dirs,
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
