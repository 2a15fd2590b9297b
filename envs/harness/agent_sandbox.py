"""The bubblewrap command line that confines a harness env's agent: no network but a loopback of its
own, on which a relay (:mod:`.relay`) takes the agent's model calls to the env's endpoint through a Unix
socket bound in; its workspace and home the only writable places it shares with the host.

The agent sees, read-only, what it runs on (``/usr`` and the merged directories beside it, the
interpreter's prefixes, its packages among them, and a few files of ``/etc``), a fresh ``/proc``, a
minimal ``/dev`` and a tmpfs at ``/tmp``; its own pid, network, IPC and UTS namespaces (nothing outside
is seen or signalled, and everything it started dies with it); the task files (the grader's) hidden
even where they lie inside a bound tree. Run as root, it keeps no capability; as any other user,
bubblewrap adds a user namespace.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from openenv_gym.sandbox.bubblewrap import system_binds

__all__ = ["AGENT_HOME", "AGENT_PORT", "AGENT_WORKSPACE", "ENDPOINT_SOCKET", "sandboxed_argv"]

#: Where the agent's workspace and home are inside, and where the endpoint's socket is bound.
AGENT_WORKSPACE = "/workspace"
AGENT_HOME = "/agent"
ENDPOINT_SOCKET = "/run/model-endpoint.sock"
#: The loopback port the relay listens on (the sandbox's network is its own: any port is free).
AGENT_PORT = 8000
_ETC_FILES = ("ld.so.cache", "passwd", "group", "nsswitch.conf", "hosts", "localtime", "mime.types")
_TMP_SIZE = 256 * 2**20


def interpreter_prefixes() -> list[str]:
    """The directories the agent's interpreter needs: a venv's and the Python it was made from."""
    return sorted({sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))})


def sandboxed_argv(
    bwrap: str,
    agent_argv: Sequence[str],
    *,
    workspace: Path,
    home: Path,
    socket_path: Path,
    variables: Mapping[str, str],
    status_fd: int,
    hidden: Sequence[str] = (),
    install_dirs: Sequence[str] = (),
) -> list[str]:
    """The argv that runs ``agent_argv`` (its paths the sandbox's: :data:`AGENT_WORKSPACE`,
    :data:`AGENT_HOME`) confined, behind the relay, with exactly ``variables`` set; the relay writes
    the agent's end to ``status_fd`` (passed to bubblewrap)."""
    argv = [bwrap, "--die-with-parent", "--new-session"]
    argv += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    argv += ["--cap-drop", "ALL"] if os.geteuid() == 0 else ["--unshare-user"]
    argv += system_binds()
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for prefix in interpreter_prefixes():
        argv += _bound_read_only(prefix)
    for path in sorted({os.path.realpath(path) for path in hidden}):
        if os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            argv += ["--ro-bind", "/dev/null", path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(_TMP_SIZE), "--tmpfs", "/tmp"]
    for directory in install_dirs:  # after /tmp's tmpfs, which would hide one installed there
        argv += _bound_read_only(directory)
    argv += ["--bind", str(workspace), AGENT_WORKSPACE, "--bind", str(home), AGENT_HOME]
    argv += ["--perms", "0755", "--dir", "/run", "--ro-bind", str(socket_path), ENDPOINT_SOCKET]
    argv += ["--clearenv"]
    for name, value in variables.items():
        argv += ["--setenv", name, value]
    relay = Path(__file__).with_name("relay.py").read_text(encoding="utf-8")
    argv += ["--remount-ro", "/", "--chdir", AGENT_WORKSPACE]
    argv += [sys.executable, "-c", relay, ENDPOINT_SOCKET, str(AGENT_PORT), str(status_fd), *agent_argv]
    return argv


def _bound_read_only(directory: str) -> list[str]:
    """Bind ``directory`` read-only, the directories above it made empty and traversable (bubblewrap
    would copy their host modes, such as /root's 0700)."""
    argv = []
    for parent in reversed(Path(directory).parents[:-1]):
        argv += ["--perms", "0755", "--dir", str(parent)]
    return [*argv, "--ro-bind", directory, directory]
