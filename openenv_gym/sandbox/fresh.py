"""`FreshSandbox`: a sandbox like another, whose worker has run nothing before and runs nothing after.

The clean-up between runs empties what a run can write and kills what it left, but some things
only move forward: the pid namespace's next pid, a tmpfs's next inode number, the loopback's
statistics, the worker's CPU times and page faults, and when the worker remade the work
directory. A run can advance each and a later run of the same worker read it back. Runs that must
tell later runs nothing at all (a Coding env's hidden tests) run in a fresh sandbox instead: a
worker of its own, in namespaces and mounts of its own, ended after them. What both can still
read is the host's (its clock, ``/proc/stat``...): ``docs/reliability.md`` lists it.

The worker starts in the background as soon as the sandbox is made, so its start overlaps the
caller's work before the runs (a Coding step's visible run), and nothing idles between uses: no
process of it exists before it is made or after it is closed.
"""

from __future__ import annotations

import threading

from .sandbox import Sandbox

__all__ = ["FreshSandbox"]


class FreshSandbox:
    """A sandbox of ``like``'s kind (:meth:`Sandbox.alike`: its mechanism, interpreter, limits, hidden
    paths, workspace and IPC rule) with a worker of its own, started in a thread from now on; :meth:`close` ends it.

    Use it as a context manager, or close it: a worker left is killed only when it is collected.
    """

    def __init__(self, like: Sandbox) -> None:
        self._sandbox = like.alike()
        self._failure: BaseException | None = None
        self._starting = threading.Thread(target=self._start, name="openenv-gym-fresh-sandbox", daemon=True)
        self._starting.start()

    def ready(self) -> Sandbox:
        """The sandbox, once its worker has started.

        Raises:
            SandboxUnavailableError: its worker could not start (the sandbox's own error).
        """
        self._starting.join()
        if self._failure is not None:
            raise self._failure
        return self._sandbox

    def close(self, *, wait: bool = True) -> None:
        """Kill its worker (once started) and remove its mounts and cgroup. Idempotent.

        ``wait=False``: in a thread of its own, off the caller's path (tens of milliseconds on a
        loaded machine). Safe once the runs are over: the worker killed every process of each run
        before it answered, so what remains is an idle worker.
        """
        if not wait:
            threading.Thread(target=self.close, name="openenv-gym-fresh-sandbox-close", daemon=True).start()
            return
        self._starting.join()  # a start still under way would otherwise leave its worker behind
        self._sandbox.close()

    def __enter__(self) -> FreshSandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        try:
            self._sandbox.start()
        except BaseException as exc:  # raised to the caller by ready()
            self._failure = exc
