"""Faults of a vector env's blocks: requests sent to every block, replies read from every one, a lost block restarted.

A block whose server died, stopped answering or cannot be reached is restarted on a healthy
server (its own, restarted by the :class:`~openenv_gym.providers.fleet.Fleet`, else another), and
its sub-envs come back truncated with ``info["remote_failure"]`` saying why. Any other error is
raised, but only after every reply already asked for is read: an unread reply would be taken for
the answer to that session's next request.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openenv_gym.errors import ConnectionLostError, RemoteError, RequestTimeoutError, ServerConnectError
from openenv_gym.protocol.raised import rebuilt

if TYPE_CHECKING:
    from openenv_gym.providers.fleet import Fleet

    from .block import Block

__all__ = [
    "FAILURE_INFO_KEY",
    "RECOVERABLE",
    "complete",
    "complete_all",
    "finish_resets",
    "read_reply",
    "read_step",
    "recover",
    "recover_all",
    "restart",
    "send_all",
]

#: The info key that marks a sub-env restarted after its server died or stopped answering.
FAILURE_INFO_KEY = "remote_failure"
#: The failures that cost a block a restart (its server is lost), not the caller an exception.
RECOVERABLE = (ConnectionLostError, RequestTimeoutError, ServerConnectError)

logger = logging.getLogger(__name__)


def send_all(blocks: list[Block[Any]], send: Callable[[Block[Any]], None]) -> list[Exception | None]:
    """Send one request per block; return per block the failure that needs a restart, if any.

    If a send raises anything else, the requests already sent are read before it propagates:
    an unread reply would make those sessions refuse every later call.
    """
    failures: list[Exception | None] = []
    for block in blocks:
        try:
            send(block)
            failures.append(None)
        except RECOVERABLE as exc:
            failures.append(exc)
        except BaseException:
            for sent, failure in zip(blocks, failures):
                if failure is None:
                    try:
                        sent.complete()
                    except Exception:
                        pass  # that session is dropped, and the next step restarts it
            raise
    return failures


def complete_all(completions: list[Callable[[], Any]]) -> list[Any]:
    """Run every completion (each reads one server's reply) even if one raises, then raise the first error."""
    results, error = [], None
    for complete in completions:
        try:
            results.append(complete())
        except Exception as exc:
            error = error or exc
            results.append(None)
    if error is not None:
        raise error
    return results


def read_reply(block: Block[Any], failure: Exception | None, deadline: float | None = None) -> Any:
    """One block's reply, or the failure that costs it a restart (a lost or silent server).

    Raises:
        Exception: a sub-env's own exception, as :func:`complete` raises it.
    """
    if failure is not None:
        return failure
    try:
        timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        return complete(block, timeout)
    except RECOVERABLE as exc:
        return exc


def complete(block: Block[Any], timeout: float | None = None) -> Any:
    """The block's reply to the request in flight. An exception a sub-env raised is raised as its own
    type, as AsyncVectorEnv re-raises a worker's (:mod:`~openenv_gym.protocol.raised`: from its pickle
    on a session of the caller's own envs, else a builtin by name), from the server's ``RemoteError``,
    which holds its traceback; any other error as the session raises it."""
    try:
        return block.client.complete(timeout)  # the session's own: one call less per block and step
    except RemoteError as error:
        trusts_pickles = getattr(block.connection.kind, "callers_own_envs", False)  # from_env_fns' sessions
        own = rebuilt(error.details, trusts_pickles)
        if own is None:
            raise
        index = error.details.get("sub_env", block.start if block.size == 1 else None)
        who = f"sub-env {index}" if index is not None else f"one of sub-envs {block.start}-{block.stop - 1}"
        own.add_note(f"raised by {who} on its server (the RemoteError above holds its traceback)")
        raise own from error


def restart(block: Block[Any], exc: Exception, fleet: Fleet, env: str) -> str:
    """Give ``block`` a new session on a healthy server of ``fleet`` after ``exc`` lost the old one;
    return the reason, as the block's sub-envs report it."""
    reason = f"{type(exc).__name__}: {exc}"
    logger.warning("sub-envs %d-%d of %s restarted after: %s", block.start, block.stop - 1, env, reason)
    block.close()
    hung = isinstance(exc, RequestTimeoutError) and block.exclusive  # a hung server only this block uses
    url, serving = fleet.recover(fleet.providers.index(block.provider), hung=hung)
    block.reconnect(url, fleet.providers[serving])
    return reason


def finish_resets(
    blocks: list[Block[Any]], outcomes: list[Any], reset: Callable[[Block[Any]], None], fleet: Fleet, env: str
) -> list[Any]:
    """The reset blocks' results, once every reply was read: a block whose server was lost (its
    outcome, the failure) is restarted on a healthy one and reset again. Each block remembers its
    reset's result, which is returned, block by block."""
    outcomes = list(outcomes)
    for index, (block, outcome) in enumerate(zip(blocks, outcomes)):
        if isinstance(outcome, Exception):  # its server is gone: reset it on a healthy one
            restart(block, outcome, fleet, env)
            reset(block)
            outcomes[index] = outcome = complete(block)
        block.remember(outcome)
        block.reset_next = False
    return outcomes


def read_step(block: Block[Any], failure: Exception | None, deadline: float | None) -> Any:
    """One block's step result (no reward, no flags after a NextStep restart's reset), or its failure."""
    result = read_reply(block, failure, deadline)
    if isinstance(result, Exception) or not block.reset_next:
        return result
    return block.read_step(result)


def recover(block: Block[Any], exc: Exception, fleet: Fleet, env: str, autoreset_mode: Any) -> Any:
    """Restart ``block`` on a healthy server and return what it reports: its sub-envs truncated, saying why."""
    return block.lost(restart(block, exc, fleet, env), autoreset_mode, FAILURE_INFO_KEY)


def recover_all(
    blocks: list[Block[Any]], outcomes: list[Any], fleet: Fleet, env: str, autoreset_mode: Any
) -> list[Any]:
    r"""The blocks' results, each failed block :func:`recover`\ ed (once every healthy reply is read)."""
    return [
        recover(block, outcome, fleet, env, autoreset_mode) if isinstance(outcome, Exception) else outcome
        for block, outcome in zip(blocks, outcomes)
    ]


def ask_all(blocks: list[Block[Any]], send: Callable[[Block[Any]], None]) -> list[Any]:
    """Send ``send``'s request to every block, then read every reply.

    Raises:
        ConnectionLostError: (or another lost-server failure) once every reply was read; the next
            step restarts that block.
    """
    failures = send_all(blocks, send)
    sent = [block for block, failure in zip(blocks, failures) if failure is None]
    results = complete_all([functools.partial(complete, block) for block in sent])
    lost = next((failure for failure in failures if failure is not None), None)
    if lost is not None:
        raise lost
    return results
