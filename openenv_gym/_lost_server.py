"""A single env's call that lost its server: when the server process is gone, the error says so.

A lost connection alone cannot tell a dead server from a network hiccup ("Connection refused",
"Broken pipe"); the provider that started the server can. A single env does not restart its
server (the vector env and the pool do), so the way on is a new env, and the error says that too.

A step that lost a live server (or one nothing can tell of: a server at a URL) lost its episode:
the step is never sent again (its reply, not its effect, may be what was lost: a new session would
pay it twice), and its error says so in a note, with the way on, a reset (a new session).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .errors import ConnectionLostError, ServerClosedError, ServerConnectError

__all__ = ["DIED", "EPISODE_LOST", "said_if_the_server_died"]

#: What a call that lost a dead server adds to its error.
DIED = "the server process died: this env cannot go on, make a new env (gym.make)"
#: The note a step that lost its connection carries (its message says how it was lost).
EPISODE_LOST = (
    "the episode is lost with the connection: the step is not sent again (the server may have paid it "
    "before its reply was lost), nor is any later step; reset() starts a new episode on a new session"
)


@contextlib.contextmanager
def said_if_the_server_died(provider: Any) -> Iterator[None]:
    """Run a call of an env whose server ``provider`` started; a lost connection to it, once the
    server process is found dead, is raised again saying so (:data:`DIED`)."""
    try:
        yield
    except (ServerConnectError, ConnectionLostError) as exc:
        try:
            alive = provider.is_alive()
        except Exception:  # a provider that cannot tell (an engine gone too): the error as it was
            alive = True
        if alive or isinstance(exc, ServerClosedError):  # closed by its owner: that error says so already
            if isinstance(exc, ConnectionLostError) and not isinstance(exc, ServerClosedError) and exc.call == "step":
                exc.add_note(EPISODE_LOST)
            raise
        if isinstance(exc, ServerConnectError):
            raise ServerConnectError(exc.url, f"{exc.reason}; {DIED}") from exc
        raise ConnectionLostError(exc.url, exc.call, reason=DIED + (f" ({exc.reason})" if exc.reason else "")) from exc
