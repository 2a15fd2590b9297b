"""The asynchronous half of the VectorEnv API: which call a vector env waits on, and Gymnasium's errors.

``reset_async``/``reset_wait``, ``step_async``/``step_wait`` and ``call_async``/``call_wait`` send
a request to every block, then read every reply, as ``gymnasium.vector.AsyncVectorEnv`` does with
its workers' pipes. :class:`PendingCall` is that state machine: a second ``*_async`` raises
``AlreadyPendingCallError``, a ``*_wait`` without its ``*_async`` ``NoAsyncCallError``, and a
``*_wait`` that runs out of its ``timeout`` a :class:`WaitTimeoutError` (AsyncVectorEnv's
``multiprocessing.TimeoutError``), with AsyncVectorEnv's messages. Unlike AsyncVectorEnv's, a call
that timed out stays pending with what was read so far: a later ``*_wait`` reads the rest (an
unread reply would otherwise be taken for the answer to that session's next request).
"""

from __future__ import annotations

import enum
import multiprocessing
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gymnasium import logger
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

from openenv_gym.errors import ConnectionLostError, RemoteError, RequestTimeoutError, WaitTimeoutError

from .faults import send_all

if TYPE_CHECKING:
    from .block import Block

__all__ = ["Call", "InFlight", "PendingCall"]

#: Reads one block's reply: ``(block, its send failure, deadline)`` to the reply (or the failure
#: that costs the block a restart, returned).
Read = Callable[["Block[Any]", "Exception | None", "float | None"], Any]


class Call(enum.Enum):
    """A call the vector env waits on; the values are AsyncVectorEnv's ``AsyncState`` ones."""

    RESET = "reset"
    STEP = "step"
    CALL = "call"
    SEND_RECV = "send/recv"  # EnvPool-style stepping: blocks in flight on their own


@dataclass
class InFlight:
    """The requests of one pending call: per block, its send failure and its outcome once read (``None``: not yet)."""

    call: Call
    blocks: list[Block[Any]]
    failures: list[Exception | None]
    outcomes: list[Any]
    context: Any = None  # what the wait needs besides the replies (a reset's mask)


class PendingCall:
    """Which asynchronous call a vector env waits on (``None``: none), and the requests it sent."""

    def __init__(self) -> None:
        self.call: Call | None = None
        self.flight: InFlight | None = None

    def check_idle(self, name: str) -> None:
        """Raise AsyncVectorEnv's ``AlreadyPendingCallError`` if a call is pending."""
        if self.call is not None:
            raise AlreadyPendingCallError(
                f"Calling `{name}` while waiting for a pending call to `{self.call.value}` to complete.",
                self.call.value,
            )

    def begin(
        self, call: Call, blocks: list[Block[Any]], send: Callable[[Block[Any]], None], context: Any = None
    ) -> None:
        """Send ``send``'s request to every block (all before any reply is read); ``call`` is then pending."""
        failures = send_all(blocks, send)
        self.flight = InFlight(call, blocks, failures, [None] * len(blocks), context)
        self.call = call

    def enter(self, call: Call) -> None:
        """Mark ``call`` pending (its requests are tracked elsewhere: EnvPool's mode)."""
        self.call = call

    def done(self) -> None:
        """No call is pending any more."""
        self.call, self.flight = None, None

    def check_waiting(self, call: Call) -> InFlight:
        """The pending requests of ``call``, or AsyncVectorEnv's ``NoAsyncCallError``."""
        if self.call is not call or self.flight is None:
            raise NoAsyncCallError(
                f"Calling `{call.value}_wait` without any prior call to `{call.value}_async`.", call.value
            )
        return self.flight

    def wait(self, call: Call, timeout: float | None, read: Read) -> tuple[InFlight, Exception | None]:
        """Read every reply of ``call`` not read yet; then nothing is pending. Returns the requests with
        their outcomes (a lost block's failure, for a restart) and the first error a server answered with
        (a ``RemoteError``), to raise once every reply is read.

        Raises:
            NoAsyncCallError: ``call`` is not pending.
            WaitTimeoutError: not every reply came within ``timeout``; those read are kept.
        """
        flight = self.check_waiting(call)
        deadline = None if timeout is None else time.monotonic() + timeout
        errors: list[Exception] = []
        for index, (block, failure) in enumerate(zip(flight.blocks, flight.failures)):
            if flight.outcomes[index] is not None:
                continue  # read by an earlier wait that ran out of time
            try:
                flight.outcomes[index] = read(block, failure, deadline)
            except RequestTimeoutError:
                raise  # not raised by a read: its call timeout means a restart
            except TimeoutError:
                raise WaitTimeoutError(
                    f"The call to `{call.value}_wait` has timed out after {timeout} second(s); the "
                    f"{call.value} is still pending: call {call.value}_wait again"
                ) from None
            except Exception as exc:  # the env's own error: keep reading the others, then raise it
                errors.append(exc)
                flight.outcomes[index] = exc
            except BaseException:  # interrupted (Ctrl-C): that session is gone; a later wait restarts it
                flight.outcomes[index] = ConnectionLostError(block.url, f"batch_{call.value}", None, "interrupted")
                raise
        self.done()
        return flight, _to_raise(errors)

    def close(self, waits: Mapping[Call, Callable[[float | None], Any]], timeout: float | None) -> None:
        """Before a close, as AsyncVectorEnv: warn of a pending call and give its wait (of ``waits``)
        ``timeout`` to finish."""
        call = self.call
        wait = waits.get(call) if call is not None else None
        if call is None or wait is None:
            return  # nothing pending, or EnvPool's mode, whose blocks are always in flight: closed unread
        logger.warn(f"Calling `close` while waiting for a pending call to `{call.value}` to complete.")
        try:
            wait(timeout)
        except multiprocessing.TimeoutError:
            pass  # AsyncVectorEnv then terminates its workers; closing the sessions does as much


def _sub_env_of(exc: BaseException) -> int | None:
    """The sub-env whose own exception ``exc`` is (``from_env_fns``': its cause, the server's
    ``RemoteError``, names it); None for any other error."""
    cause = exc.__cause__
    index = cause.details.get("sub_env") if isinstance(cause, RemoteError) and cause is not exc else None
    return index if isinstance(index, int) else None


def _to_raise(errors: list[Exception]) -> Exception | None:
    """The error a wait raises: the first a server answered with; or, when sub-envs raised their own
    exceptions (``from_env_fns``'), the last of those, each logged first as AsyncVectorEnv logs a
    worker's (its index, then its traceback: the server's), every failed sub-env of a server too.
    Logged once every reply is read, so a warning raised as an error leaves no call pending."""
    own = [exc for exc in errors if _sub_env_of(exc) is not None]
    for exc in own:
        cause = exc.__cause__
        assert isinstance(cause, RemoteError)
        # Every sub-env of that server that raised (its frame's "failures"), or the one that did.
        for failure in cause.details.get("failures") or [cause.details]:
            logger.error(f"Received the following error from Worker-{failure.get('sub_env')} - Shutting it down")
            logger.error(f"{failure.get('traceback', cause.message)}")
    if own:
        logger.error("Raising the last exception back to the main process.")
        return own[-1]
    return errors[0] if errors else None
