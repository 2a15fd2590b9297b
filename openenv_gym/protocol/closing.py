"""How a stopping server tells the sessions still attached why their connection ends.

It closes each with code 1001 (going away, RFC 6455: "a server going down") and the reason
:data:`SERVER_CLOSED_REASON`: OpenEnv's clients see a normal close, ours raise
:class:`~openenv_gym.errors.ServerClosedError` on their next call. Other closes with 1001 (an idle
session reaped) give another reason, so the code alone does not say which it is.
"""

from __future__ import annotations

__all__ = ["SERVER_CLOSED_CODE", "SERVER_CLOSED_REASON", "closed_by_owner"]

SERVER_CLOSED_CODE = 1001
SERVER_CLOSED_REASON = "the server was closed by its owner"


def closed_by_owner(code: int | None, reason: str) -> bool:
    """Whether a close frame says the server stopped because its owner closed it.

    Example:
        >>> closed_by_owner(1001, "the server was closed by its owner")
        True
        >>> closed_by_owner(1001, "session idle for more than 300 s"), closed_by_owner(None, "")
        (False, False)
    """
    return code == SERVER_CLOSED_CODE and reason == SERVER_CLOSED_REASON
