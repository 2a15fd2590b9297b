"""Secrets kept out of logs: websockets' handshake lines with tokens and credentials elided.

At ``DEBUG`` websockets logs every handshake line: the request path (the web page's login is
``/web?token=...``) and every header, ``Authorization: Bearer ...`` and the token cookie among
them. Our servers and clients give websockets a :class:`RedactingLogger` in place of its own
``websockets.server`` / ``websockets.client`` logger: records keep that logger's name, level and
handlers, only the secrets in their arguments are replaced by :data:`REDACTED`.

``gym.make(..., token=...)`` keeps its arguments in the env's spec, whose repr trainers print:
:func:`hide_token_kwarg` makes the token there a :class:`HiddenStr`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "SECRET_HEADERS", "HiddenStr", "RedactingLogger", "hide_token_kwarg", "redact"]

REDACTED = "[redacted]"
#: Headers whose values are credentials (lower case).
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
# A token in a URL's query: ``?token=...`` or ``&token=...``, up to the next separator.
_QUERY_TOKEN = re.compile(r"([?&;]token=)[^&;#\s]*", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` and any ``token=`` query value replaced by :data:`REDACTED`.

    Example:
        >>> redact("GET /web?token=s3cret&x=1")
        'GET /web?token=[redacted]&x=1'
        >>> redact("Bearer s3cret", ["s3cret"])
        'Bearer [redacted]'
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return _QUERY_TOKEN.sub(lambda match: match.group(1) + REDACTED, text)


class RedactingLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger for websockets (its ``logger=`` argument) that elides secrets from its records.

    A header line (websockets logs ``"%s: %s"`` with the name and the value) of one of
    :data:`SECRET_HEADERS` loses its value; every other string argument loses ``secrets`` and
    ``token=`` query values (:func:`redact`). Exceptions attached to records are left alone:
    websockets' carry no header values.

    Args:
        logger: the logger records go to (``logging.getLogger("websockets.server")``).
        secrets: strings never to log (the server's or the client's token).
    """

    def __init__(self, logger: logging.Logger, secrets: Iterable[str | None] = ()) -> None:
        super().__init__(logger, {})
        self.secrets = tuple(secret for secret in secrets if secret)

    def __repr__(self) -> str:
        return f"RedactingLogger({self.logger.name!r})"  # never the secrets

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        """Log ``msg % args`` to the wrapped logger, secrets elided.

        Unlike ``LoggerAdapter``, it keeps the ``extra`` of the adapter websockets wraps around
        it, and names websockets' caller in the record, not this method.
        """
        if not self.isEnabledFor(level):
            return
        header = len(args) == 2 and isinstance(args[0], str) and args[0].lower() in SECRET_HEADERS
        cleaned = tuple(REDACTED if header and index == 1 else self._clean(arg) for index, arg in enumerate(args))
        if isinstance(msg, str):
            msg = redact(msg, self.secrets)
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        self.logger.log(level, msg, *cleaned, **kwargs)

    def _clean(self, arg: object) -> object:
        """``arg``, or its text with the secrets elided if it shows any (a frame, an exception)."""
        if arg is None or isinstance(arg, (int, float)):
            return arg
        text = arg if isinstance(arg, str) else str(arg)
        cleaned = redact(text, self.secrets)
        return arg if cleaned == text else cleaned


class HiddenStr(str):
    """A ``str`` that works as its value everywhere (headers, comparison, pickling, JSON) but whose
    ``repr`` hides it: for a secret kept where reprs are printed.

    Example:
        >>> secret = HiddenStr("s3cret")
        >>> secret == "s3cret", f"Bearer {secret}", repr({"token": secret})
        (True, 'Bearer s3cret', "{'token': '[redacted]'}")
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(REDACTED)


def hide_token_kwarg(spec: Any) -> Any:
    """``spec`` (a Gymnasium ``EnvSpec``, or ``None``) with its ``kwargs["token"]`` made a
    :class:`HiddenStr`, so ``repr(env.spec)`` and ``spec.pprint()`` do not show it; ``gym.make(spec)``
    still presents it."""
    kwargs = getattr(spec, "kwargs", None)
    if isinstance(kwargs, dict) and isinstance(kwargs.get("token"), str):
        kwargs["token"] = HiddenStr(kwargs["token"])
    return spec
