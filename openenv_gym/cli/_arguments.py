"""What the commands share: argument types, the token read from a variable, and the usage error."""

from __future__ import annotations

import argparse
import json
import os
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


def token_from_file(path: str | None) -> str | None:
    """The token in file ``path`` (``--token-file``; a trailing newline dropped), or ``None`` when none is named.

    Raises:
        _UsageError: the file cannot be read, or holds no token.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            token = file.read().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"--token-file {path}: cannot read the token: {exc}") from None
    if not token:
        raise _UsageError(f"--token-file {path}: the file is empty")
    return token


def debug(args: argparse.Namespace) -> bool:
    """Whether a failure shows its traceback (``OPENENV_GYM_DEBUG=1``, or ``--log-level DEBUG``)."""
    return os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0") or getattr(args, "log_level", "").upper() == "DEBUG"
