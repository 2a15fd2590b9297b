"""What the commands share: argument types, secrets read from a variable or a file, and the usage error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import OpenEnvGymError
from ..server.options import AT_LEAST_ONE, SECONDS

__all__ = [
    "AT_LEAST_ONE",
    "DEBUG_ENV_VAR",
    "SECONDS",
    "_UsageError",
    "debug",
    "env_kwargs",
    "secret_from_file",
    "token_from_env",
    "token_from_file",
]

# Set to show the traceback of a failed command instead of its one-line error.
DEBUG_ENV_VAR = "OPENENV_GYM_DEBUG"


class _UsageError(OpenEnvGymError):
    """A command asked for something it cannot do: ``openenv-gym COMMAND: MESSAGE`` on stderr, exit 2."""


def env_kwargs(text: str) -> dict[str, Any]:
    """``--env-kwargs``: a JSON object."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--env-kwargs must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--env-kwargs must be a JSON object")
    return value


def token_from_env(variable: str | None, *, error: str = "", pop: bool = False, hint: str = "") -> str | None:
    """The token held by environment variable ``variable`` (``--token-env``), or ``None`` when none is named.

    Args:
        variable: the variable's name, or ``None``.
        error: what the refusal starts with (``"error: "`` for the commands that say so).
        pop: take it out of the environment, so nothing started later inherits it.
        hint: said after the refusal.

    Raises:
        _UsageError: the variable is not set, or empty.
    """
    if variable is None:
        return None
    token = os.environ.pop(variable, None) if pop else os.environ.get(variable)
    if not token:
        raise _UsageError(f"{error}--token-env {variable}: that variable is not set{hint}")
    return token


#: A secret file naming this is a line of the standard input: a starter hands one secret or more
#: there (a Swarm launcher, a Docker provider), each read in the order the command reads them.
STDIN_PATH = "/dev/stdin"


def secret_from_file(path: str | None, flag: str, what: str) -> str | None:
    """The secret in file ``path`` (``flag``'s; a trailing newline dropped; :data:`STDIN_PATH`: the
    next line of the standard input), or ``None`` when none is named.

    Raises:
        _UsageError: the file cannot be read, or holds no secret.
    """
    if path is None:
        return None
    try:
        if path == STDIN_PATH:
            if sys.stdin is None:
                raise OSError("this process has no standard input")
            secret = sys.stdin.readline().rstrip("\r\n")
        else:
            with open(path, encoding="utf-8") as file:
                secret = file.read().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"{flag} {path}: cannot read the {what}: {exc}") from None
    if not secret:
        raise _UsageError(f"{flag} {path}: the file is empty")
    return secret


def token_from_file(path: str | None) -> str | None:
    """The token in file ``path`` (``--token-file``), as :func:`secret_from_file` reads it."""
    return secret_from_file(path, "--token-file", "token")


def debug(args: argparse.Namespace) -> bool:
    """Whether a failure shows its traceback (``OPENENV_GYM_DEBUG=1``, or ``--log-level DEBUG``)."""
    return os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0") or getattr(args, "log_level", "").upper() == "DEBUG"
