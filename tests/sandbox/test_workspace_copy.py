"""A sandbox's workspace copied by its worker (``save_workspace``/``load_workspace``, what Git-v0's
snapshots are made of): every file whatever its mode, links as links, owners made the new
sandbox's, and nothing of a copy reaching outside the workspace."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from openenv_gym.sandbox import Limits, Sandbox
from tests.utils import UNIT

LIMITS = Limits(wall_time=5 * UNIT)

MAKE_FILES = """
import os, socket, subprocess
os.makedirs('d/e')
open('d/e/f', 'w').write('deep')
open('secret', 'w').write('unreadable')
os.chmod('secret', 0)
os.symlink('/etc/passwd', 'absolute-link')
os.symlink('d/e/f', 'relative-link')
os.mkfifo('pipe')
socket.socket(socket.AF_UNIX).bind('socket')
subprocess.run(['git', 'init', '-q', 'repo'], check=True)
os.chmod('d', 0o500)
"""

DESCRIBE = """
import os, stat
entries = sorted(os.listdir('.'))
print(entries)
print(oct(os.lstat('secret').st_mode & 0o777), oct(os.lstat('d').st_mode & 0o777), stat.S_ISFIFO(os.lstat('pipe').st_mode))
print(os.readlink('absolute-link'), os.readlink('relative-link'), open('relative-link').read())
print({os.lstat(name).st_uid == os.getuid() for name in entries}, os.path.isdir('repo/.git'))
os.chmod('secret', 0o600)
print(open('secret').read())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="copying a file the runs made unreadable takes root")
def test_a_copy_loaded_into_another_sandbox_has_every_file_as_it_was():
    with Sandbox(LIMITS, workspace=True) as source, Sandbox(LIMITS, workspace=True) as target:
        made = source.run(MAKE_FILES)
        assert made.exit_code == 0, made.stderr
        copy = source.save_workspace()
        target.run("open('stale', 'w').write('replaced by the copy')")
        target.load_workspace(copy)
        described = target.run(DESCRIBE)
        assert described.exit_code == 0, described.stderr
        assert described.stdout.splitlines() == [
            "['absolute-link', 'd', 'pipe', 'relative-link', 'repo', 'secret']",  # no socket, no stale file
            "0o0 0o500 True",
            "/etc/passwd d/e/f deep",
            "{True} True",  # every file the new sandbox's runs', whose uid is not the old one's
            "unreadable",
        ]
        assert source.run("print(sorted(__import__('os').listdir('.')))").stdout.count("socket") == 1


def crafted(*members: tuple[str, str | None]) -> bytes:
    """A tar of ``(name, symlink target or None for a 4-byte file)`` members, in that order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                archive.addfile(info)
            else:
                info.size = 4
                archive.addfile(info, io.BytesIO(b"evil"))
    return buffer.getvalue()


@pytest.mark.parametrize(
    "archive",
    [crafted(("../outside", None)), crafted(("escape", "/tmp"), ("escape/outside", None))],
    ids=["parent", "through-a-link"],
)
def test_a_copy_that_would_write_outside_the_workspace_is_refused_and_leaves_it_empty(archive):
    """Copies come from a worker's own tar (sealed when they travel); a crafted one still cannot
    write beside the workspace, by a name or through a link."""
    with Sandbox(LIMITS, workspace=True) as box:
        box.run("open('mine', 'w').write('x')")
        with pytest.raises(RuntimeError, match="the workspace cannot be restored"):
            box.load_workspace(archive)
        assert box.run("import os\nprint(os.listdir('.'), os.path.exists('/tmp/outside'))").stdout == "[] False\n"


def test_an_absolute_name_lands_inside_the_workspace():
    with Sandbox(LIMITS, workspace=True) as box:
        box.load_workspace(crafted(("/tmp/outside", None)))
        assert box.run("import os\nprint(open('tmp/outside').read(), os.path.exists('/tmp/outside'))").stdout == (
            "evil False\n"
        )


def test_a_sandbox_without_a_workspace_has_none_to_copy():
    with Sandbox(LIMITS) as box:
        with pytest.raises(RuntimeError, match="no workspace to copy"):
            box.save_workspace()
        with pytest.raises(RuntimeError, match="no workspace to restore"):
            box.load_workspace(b"")


def test_a_copy_of_an_empty_workspace_loads_as_an_empty_one():
    with Sandbox(LIMITS, workspace=True) as source, Sandbox(LIMITS, workspace=True) as target:
        target.run("open('old', 'w').write('x')")
        target.load_workspace(source.save_workspace())
        assert target.run("import os\nprint(os.listdir('.'))").stdout == "[]\n"
