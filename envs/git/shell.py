"""The program a command of the Git env runs as, in the sandbox: ``bash`` in the work tree.

It is sent as source with :func:`run_bash` as the entry point, and compiled for every command, so
it stays this small (the rest of what runs in the sandbox is :mod:`.sandbox_program`).
"""

from __future__ import annotations

import os

__all__ = ["BASH", "STRICT", "run_bash"]

BASH = "/bin/bash"
STRICT = ("-euo", "pipefail")  # how setups and checks run, as the task format says


def run_bash(script: str, work_tree: str, env: dict[str, str], strict: bool) -> None:
    """Become ``bash -c script`` in the work tree (``bash -euo pipefail -c`` when ``strict``); never returns.

    The run's output and exit status are bash's. The work tree is made again if the agent
    removed it, so the next command has somewhere to run (its parent, the workspace, must be
    there: a replaced worker's new workspace is not made under the old one's path).
    """
    os.close(3)  # the results channel: not the command's to write
    for directory in (env["HOME"], work_tree):
        if not os.path.isdir(directory):
            os.mkdir(directory)
    os.chdir(work_tree)
    os.execve(BASH, ["bash", *(STRICT if strict else ()), "-c", script], env)
