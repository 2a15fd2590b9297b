"""Run untrusted code confined: a small module any environment can reuse.

    >>> from openenv_gym.sandbox import Limits, Sandbox
    >>> with Sandbox(Limits(wall_time=5)) as sandbox:            # doctest: +SKIP
    ...     sandbox.run("def double(x):\n    return 2 * x", entry_point="double", cases=[[1], [2]]).results
    [{'value': 2}, {'value': 4}]

bubblewrap (:mod:`.bubblewrap`) confines a warm worker (:mod:`.worker`) that forks once per run.
"""

from __future__ import annotations

from .bubblewrap import find_bwrap
from .limits import Limits
from .sandbox import RunResult, Sandbox, SandboxUnavailableError

__all__ = ["Limits", "RunResult", "Sandbox", "SandboxUnavailableError", "find_bwrap"]
