"""`URLProvider`: attach to a server that is already running somewhere."""

from __future__ import annotations

from ..client import http_get_json
from ..urls import check_base_url
from .base import Provider

__all__ = ["URLProvider"]


class URLProvider(Provider):
    """Use an existing server; :meth:`stop` leaves it running, since we did not start it.

    Args:
        base_url: ``http://host:port`` or ``ws://host:port``; anything else is a ``ValueError``.
        check_health: ask ``GET /health`` in :meth:`start`, so a wrong URL fails early.
        timeout: seconds to wait for the health check.
        token: the server's token, if it requires one.
    """

    def __init__(
        self, base_url: str, *, check_health: bool = True, timeout: float = 10.0, token: str | None = None
    ) -> None:
        self.base_url = check_base_url(base_url).rstrip("/")
        self.token = token
        self.check_health = check_health
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"URLProvider({self.base_url!r})"

    def start(self) -> str:
        if self.check_health:
            http_get_json(self.base_url, "/health", timeout=self.timeout)
        return self.base_url

    def stop(self) -> None:
        pass
