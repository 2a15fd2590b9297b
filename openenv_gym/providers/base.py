"""`Provider`: where an environment server runs, and how it is started and stopped."""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["DEFAULT_STARTUP_TIMEOUT", "Provider", "checked_token"]

#: Seconds a started server has to report that it is ready (every provider's default).
DEFAULT_STARTUP_TIMEOUT = 30.0


def checked_token(token: str | None) -> str | None:
    """``token`` as given; an empty one is refused (a server cannot require an empty token)."""
    if token is not None and not token:
        raise ValueError("token must not be empty")
    return token


class Provider(abc.ABC):
    """Starts (or attaches to) one environment server and stops it again.

    The rest of openenv-gym only sees the base URL :meth:`start` returns, so a server may be a
    local process, a container, a Ray actor or anything reachable over the network.

    Attributes:
        token: the token clients must present to the server (``Authorization: Bearer``), if it
            requires one: a provider that exposes a server beyond loopback generates it.
    """

    token: str | None = None
    #: Where the server runs, for a provider that places servers on other machines (a Ray node's
    #: address); ``None``: the machine of whoever started it.
    node: str | None = None

    @classmethod
    def preferred_count(cls, **options: Any) -> int | None:
        """How many servers a run should start when the caller does not say (``None``: no view).

        A provider that spreads servers over machines answers with the number it can spread them over.
        """
        return None

    @classmethod
    def group(cls, count: int, **options: Any) -> list[Provider]:
        """``count`` providers for the servers of one run (a vector env's), built from ``options``.

        A provider whose servers share something (a token, a reservation on a cluster) overrides it.
        """
        return [cls(**options) for _ in range(count)]

    @abc.abstractmethod
    def start(self) -> str:
        """Make the server ready and return its base URL (``http://host:port``); idempotent."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop what :meth:`start` started; idempotent, and safe if the server already died."""

    def kill(self) -> None:
        """Stop at once, without waiting for the server to close its sessions (it may be hung)."""
        self.stop()

    def is_alive(self) -> bool:
        """Whether the server is believed to be running."""
        return True

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
