"""Where a server may listen without a token: on loopback or a Unix socket, or where the user said so.

A server bound beyond loopback (``0.0.0.0``, ``::``, a LAN address: any host that
:func:`~openenv_gym.urls.is_loopback_host` does not name) runs the env, and whatever the
env runs, for anyone who reaches its port. It therefore refuses to start without a token unless
the user opts out explicitly (``EnvServer(insecure=True)``, ``openenv-gym serve --insecure``),
and then it warns. A Unix socket is local: who may connect is decided by who can reach its
directory.
"""

from __future__ import annotations

from ..urls import is_loopback_host

__all__ = ["INSECURE_WARNING", "check_exposure", "exposure_problem"]

#: Logged (with the host) when a server starts beyond loopback without a token.
INSECURE_WARNING = (
    "serving on %s without a token (insecure): anyone who reaches this port can run the env and "
    "whatever it runs; require a token (--token-env VAR, EnvServer(token=...)) unless only trusted "
    "peers can reach it"
)


def exposure_problem(host: str | None, token: bool, insecure: bool, *, cli: bool = False) -> str | None:
    """Why a server bound to ``host`` (``None``: a Unix socket) may not start as asked, or ``None``.

    Args:
        host: the address to bind, or ``None`` for a Unix socket.
        token: whether the server requires a token.
        insecure: whether the user said to serve beyond loopback without one.
        cli: word the fix as ``openenv-gym serve``'s options instead of ``EnvServer``'s arguments.
    """
    with_token, without = ("--token-env VAR", "--insecure") if cli else ("token=...", "insecure=True")
    if token and insecure:
        return f"{with_token} and {without} contradict each other: a server with a token is not insecure; pass one"
    if host is None or is_loopback_host(host) or token or insecure:
        return None
    return (
        f"{host} is beyond loopback, and a server there without a token runs the env for anyone who reaches "
        f"the port: require a token with {with_token} (clients then pass token=...), or serve without one "
        f"with {without} if only trusted peers can reach it"
    )


def check_exposure(host: str | None, token: str | None, insecure: bool) -> None:
    """Refuse what :func:`exposure_problem` refuses.

    Raises:
        ValueError: the server would listen beyond loopback without a token, and ``insecure`` is
            not set; or both a token and ``insecure`` were given.
    """
    problem = exposure_problem(host, token is not None, insecure)
    if problem is not None:
        raise ValueError(problem)
