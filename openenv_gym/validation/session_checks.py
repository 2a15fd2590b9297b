"""The session checks of ``openenv-gym validate``: capacity, the idle timeout, and openenv-core's own client."""

from __future__ import annotations

import time

from ..client import EnvClient
from ..errors import CapacityReachedError, ConnectionLostError, RemoteError, UnsupportedSpaceError
from .access import SETTLE, exchange, face_of, one_line, raw_session, session_client, settled, short
from .openenv_probe import OpenEnvProbe, openenv_core_installed
from .result import CheckResult
from .target import Subject

__all__ = ["check_capacity", "check_idle_timeout", "check_openenv_client"]


def _open_one(subject: Subject, clients: list[EnvClient], settle: bool) -> None:
    """Open one more session (connect and reset, so the server surely made its env) and keep it in ``clients``."""

    def attempt() -> EnvClient:
        client = session_client(subject)
        try:
            client.reset()
        except BaseException:
            client.close()
            raise
        return client

    clients.append(settled(attempt) if settle else attempt())


def check_capacity(subject: Subject) -> CheckResult:
    """Sessions up to the server's limit (or a small cap) open at once; one past a known, small limit is
    refused with a ``CAPACITY_REACHED`` error frame."""
    name = "capacity"
    cap, known = subject.capacity_cap, subject.max_sessions
    # Past a known limit within the cap one more session is due to be refused; with no limit
    # published, the cap's worth and one more show whether a refusal comes and how it reads.
    wanted = known if known is not None and known <= cap else cap if known is not None else cap + 1
    clients: list[EnvClient] = []
    try:
        while len(clients) < wanted:
            try:
                _open_one(subject, clients, settle=True)
            except CapacityReachedError as exc:
                opened = len(clients)
                if known is not None:
                    return CheckResult.failed(
                        name, f"session {opened + 1} was refused with max_sessions {known}: {exc.message}"
                    )
                return CheckResult.passed(
                    name,
                    f"{opened} session(s) at once; session {opened + 1} refused with CAPACITY_REACHED: {exc.message}",
                )
        if known is None:
            return CheckResult.passed(
                name, f"{wanted} sessions at once; the server publishes no max_sessions and refused none"
            )
        if known > cap:
            return CheckResult.passed(
                name,
                f"{wanted} sessions at once (max_sessions {known}: a refusal past it is not checked, over the cap of {cap})",
            )
        try:
            _open_one(subject, clients, settle=False)
        except CapacityReachedError as exc:
            return CheckResult.passed(
                name, f"{known} session(s) at once; session {known + 1} refused with CAPACITY_REACHED: {exc.message}"
            )
        return CheckResult.failed(name, f"max_sessions is {known}, and session {known + 1} was accepted too")
    except ConnectionLostError as exc:
        return CheckResult.failed(
            name, f"session {len(clients) + 1} was closed with no CAPACITY_REACHED frame to say why: {one_line(exc)}"
        )
    except RemoteError as exc:
        return CheckResult.failed(
            name, f"session {len(clients) + 1} was refused with {exc.code}, not CAPACITY_REACHED: {exc.message}"
        )
    except Exception as exc:
        return CheckResult.failed(name, f"session {len(clients) + 1}: {one_line(exc)}")
    finally:
        for client in clients:
            client.close()


def check_idle_timeout(subject: Subject) -> CheckResult:
    """A session left idle is closed after the server's published idle timeout (when it is short enough to wait out)."""
    from websockets.exceptions import ConnectionClosed

    name = "idle timeout"
    idle = subject.idle_timeout
    if idle is None and subject.idle_timeout_known:
        return CheckResult.skipped(name, "idle sessions are never closed (/metadata: idle_timeout null)")
    if idle is None:
        return CheckResult.skipped(name, "the server publishes no idle timeout")
    if idle > subject.idle_budget:
        return CheckResult.skipped(
            name,
            f"the server closes idle sessions after {idle:g} s, longer than this check waits ({subject.idle_budget:g} s)",
        )
    # Our server looks for idle sessions every idle/4 s (at most 5 s): a close is due within that,
    # and a busy machine may take a little longer to get to it.
    deadline = idle + min(max(idle / 4, 0.05), 5.0) + min(subject.timeout, max(1.0, idle))

    def run() -> CheckResult:
        with raw_session(subject) as connection:
            reply = exchange(connection, {"type": "reset", "data": {}}, subject.timeout)
            if isinstance(reply, dict) and reply.get("type") == "error":
                return CheckResult.failed(name, f"reset: the server answered an error frame: {short(reply)}")
            began = time.monotonic()
            try:
                extra = connection.recv(timeout=deadline)
            except TimeoutError:
                return CheckResult.failed(
                    name,
                    f"a session idle for {time.monotonic() - began:.1f} s was still open (idle_timeout {idle:g} s)",
                )
            except ConnectionClosed as exc:
                elapsed = time.monotonic() - began
                if elapsed < idle * 0.9:
                    return CheckResult.failed(
                        name, f"an idle session was closed after {elapsed:.1f} s, before idle_timeout {idle:g} s"
                    )
                rcvd = exc.rcvd
                how = f" (close code {rcvd.code}: {rcvd.reason})" if rcvd is not None else ""
                return CheckResult.passed(
                    name, f"an idle session was closed after {elapsed:.1f} s{how}; idle_timeout {idle:g} s"
                )
            return CheckResult.failed(name, f"an idle session received a frame nobody asked for: {short(extra)}")

    try:
        return settled(run)
    except Exception as exc:
        return CheckResult.failed(name, one_line(exc))


# --- OpenEnv's client --------------------------------------------------------------------------


def check_openenv_client(subject: Subject, probe: OpenEnvProbe | None = None) -> CheckResult:
    """openenv-core's own ``GenericEnvClient`` connects, resets, steps and reads the state.

    Args:
        probe: a probe started earlier (it imports openenv-core while other checks run); one is
            started and closed here when none is given.
    """
    name = "openenv client"
    if not openenv_core_installed():
        return CheckResult.skipped(name, "openenv-core is not installed (pip install openenv-core)")
    if subject.token is not None:
        return CheckResult.skipped(name, "the server requires a token, which openenv-core's client cannot send")
    try:
        face = face_of(subject)
        action = face.actions(1)[0]
    except UnsupportedSpaceError as exc:  # an OpenEnv server's action field with no Gymnasium space
        return CheckResult.skipped(name, f"no action can be sampled: {one_line(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no action to send: {one_line(exc)}")
    own = probe is None
    probe = probe or OpenEnvProbe()
    try:
        deadline = time.monotonic() + SETTLE
        while True:
            answer = probe.run(subject.url, action, subject.timeout)
            refused = "CAPACITY_REACHED" in str(answer.get("reason", ""))
            if not refused or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    except Exception as exc:
        return CheckResult.failed(name, one_line(exc))
    finally:
        if own:
            probe.close()
    if "missing" in answer:
        return CheckResult.skipped(name, f"openenv-core's client cannot be imported: {answer['missing']}")
    if not answer.get("ok"):
        return CheckResult.failed(
            name, f"openenv-core {answer.get('version', '?')}'s GenericEnvClient: {answer.get('reason')}"
        )
    return CheckResult.passed(
        name,
        f"openenv-core {answer['version']}'s GenericEnvClient: reset, step {short(action, 40)} (reward "
        f"{answer['reward']}, done {answer['done']}, observation {', '.join(answer['observation_keys']) or 'empty'}), state",
    )
