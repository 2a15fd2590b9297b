"""`openenv-gym validate`: check that an env is served as openenv-gym and OpenEnv's clients expect.

:func:`run_checks` resolves a TARGET (:func:`~.target.resolve_target`: a URL, an env directory, a
catalog id or a serve target), starts its server with ``openenv-gym serve`` on a free loopback
port unless it is a URL, and yields one :class:`CheckResult` per check as it completes:

=====================  ========================================================================
``manifest``           ``openenv.yaml`` reads and validates; the Dockerfile beside it serves its app
``serve``              the server starts and reports ready
``health``             ``GET /health`` is ``{"status": "healthy"}``
``schema``             ``GET /schema`` holds the action, observation and state JSON schemas
``metadata``           ``GET /metadata`` names and describes the env
``ws handshake``       ``/ws`` accepts a WebSocket handshake
``spaces round trip``  the published Gymnasium spaces read back as the same JSON (and the manifest's)
``check_env``          Gymnasium's ``check_env`` passes through ``openenv/Remote-v0``
``reset/step contract`` the frames' reward, done, truncated, info, and observations in the space
``determinism``        the same seed and actions give the same trajectory (unless nondeterministic)
``snapshot``           where the env snapshots: a restore answers with the snapshot's frame and replays
``capacity``           sessions up to the limit open at once; the next is refused with CAPACITY_REACHED
``idle timeout``       an idle session is closed after the published idle timeout
``openenv client``     openenv-core's ``GenericEnvClient`` resets, steps and reads the state
=====================  ========================================================================

Each check is a function of :mod:`.checks` that takes a :class:`Subject` and returns a
:class:`CheckResult` (PASS, FAIL or SKIP with the reason), so each can be run alone; every wait is
bounded by ``timeout``. A server that refuses the checks for want of its token (HTTP 401) fails
the ``schema`` line, which says how to pass it, and the checks after it are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from .access import token_refusal
from .checks import CHECKS, check_health, check_manifest, check_openenv_client
from .openenv_probe import OpenEnvProbe, openenv_core_installed
from .result import CheckResult, Status
from .target import DEFAULT_TIMEOUT, Subject, Target, resolve_target

__all__ = [
    "CHECKS",
    "CHECK_NAMES",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "CheckResult",
    "OpenEnvProbe",
    "Status",
    "Subject",
    "Target",
    "resolve_target",
    "run_checks",
]

#: The idle timeout of a server ``validate`` starts: short, so the idle check waits it out quickly.
DEFAULT_IDLE_TIMEOUT = 2.0
#: The name of every line of the table, in order (the width of its first column).
CHECK_NAMES = (
    "manifest",
    "serve",
    "health",
    "schema",
    "metadata",
    "ws handshake",
    "spaces round trip",
    "check_env",
    "reset/step contract",
    "determinism",
    "snapshot",
    "capacity",
    "idle timeout",
    "openenv client",
)


def run_checks(
    target: Target | str,
    *,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    max_sessions: int | None = None,
    capacity_cap: int = 4,
    idle_budget: float = 10.0,
    startup_timeout: float = 60.0,
    probe: OpenEnvProbe | None = None,
) -> Iterator[CheckResult]:
    """Check ``target``; yield each check's result as it completes (stop early: the server stops).

    Args:
        target: a :class:`Target`, or the text of one (see :func:`resolve_target`).
        token: the token of a running server (a URL) that requires one.
        timeout: seconds every request, connection and reply may take.
        idle_timeout: the ``--idle-timeout`` of a server started here (the idle check waits it out).
        max_sessions: the ``--max-sessions`` of a server started here (default: the env's own).
        capacity_cap: open at most this many sessions at once (plus one to be refused).
        idle_budget: skip the idle check of a server whose idle timeout is longer.
        startup_timeout: seconds a server started here has to report ready.
        probe: an :class:`OpenEnvProbe` to run openenv-core's client in (it is left open), instead
            of one started (and closed) here.

    Raises:
        ValueError: ``target`` cannot be resolved (a directory without ``openenv.yaml``, ...).
    """
    if isinstance(target, str):
        target = resolve_target(target)
    # openenv-core takes seconds to import: its client's child process starts now, and imports it
    # while the other checks run.
    own_probe = probe is None and openenv_core_installed() and token is None
    if own_probe:
        probe = OpenEnvProbe()
    provider: Any = None
    try:
        if target.manifest_path is not None:
            yield check_manifest(target.manifest_path)
        if target.url is not None:
            url = target.url
            yield CheckResult.skipped("serve", f"a running server at {url}: nothing started")
        else:
            from ..providers import ProcessProvider

            provider = ProcessProvider(
                target.app or "",
                env_kwargs=target.env_kwargs,
                idle_timeout=idle_timeout,
                max_sessions=max_sessions,
                startup_timeout=startup_timeout,
                cwd=target.cwd,
            )
            began = time.monotonic()
            try:
                url = provider.start()
            except Exception as exc:
                yield CheckResult.failed("serve", _start_failure(target, exc))
                yield from _skip_the_rest("the server did not start")
                return
            where = f" in {target.cwd}" if target.cwd is not None else ""
            yield CheckResult.passed(
                "serve", f"openenv-gym serve {target.app}{where}: ready at {url} in {time.monotonic() - began:.1f} s"
            )
        subject = Subject.of(
            url,
            target,
            token=token or (provider.token if provider is not None else None),
            timeout=timeout,
            capacity_cap=capacity_cap,
            idle_budget=idle_budget,
        )
        for check in CHECKS:
            try:
                result = check_openenv_client(subject, probe) if check is check_openenv_client else check(subject)
            except Exception as exc:  # a check's own bug must not hide the other checks
                name = CHECK_NAMES[CHECK_NAMES.index("health") + CHECKS.index(check)]
                result = CheckResult.failed(name, f"the check itself failed: {type(exc).__name__}: {exc}")
            yield result
            if check is check_health and result.status is Status.FAIL:
                yield from _skip_the_rest("the server does not answer /health", after="health")
                return
            refused = token_refusal(subject) if check is check_health else None
            if refused is not None:  # every later check would fail alike: one line says how to pass it
                yield CheckResult.failed("schema", refused)
                yield from _skip_the_rest("the server refuses validate without its token", after="schema")
                return
    finally:
        if provider is not None:
            provider.stop()
        if own_probe and probe is not None:
            probe.close()


def _skip_the_rest(why: str, after: str = "serve") -> Iterator[CheckResult]:
    for name in CHECK_NAMES[CHECK_NAMES.index(after) + 1 :]:
        yield CheckResult.skipped(name, why)


def _start_failure(target: Target, exc: Exception) -> str:
    """Why the server of ``target`` did not start, in one line: the error and its output's last line."""
    from ..errors import EnvCreationError, ServerStartError

    if isinstance(exc, EnvCreationError):
        return f"openenv-gym serve {target.app}: the env could not be made: {exc.message.splitlines()[0]}"
    text = (str(exc).splitlines() or [type(exc).__name__])[0]
    output = getattr(exc, "output", "") if isinstance(exc, ServerStartError) else ""
    lines = [line for line in (output or "").splitlines() if line.strip()]
    return f"openenv-gym serve {target.app}: {text}" + (f": {lines[-1].strip()}" if lines else "")
