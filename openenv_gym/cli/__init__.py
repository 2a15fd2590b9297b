"""The ``openenv-gym`` command line: ``serve`` an env; ``init`` a new one, ``validate`` one; ``build``, ``ps``,
``clean`` containers; ``pull``, ``push`` Hub envs; ``tasks``; ``replay``, ``rescore`` recorded episodes and
``eval`` a policy; ``mcp``: one env session's tools as a stdio MCP server; ``web``: a server's web debug page.

One module per command (or per small group of them), each with the parser of its arguments and the
function that runs it; this module builds the parser and runs the command asked for.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from . import containers, episodes, hub, init, mcp, serve, tasks, validate, web
from ._arguments import DEBUG_ENV_VAR, _UsageError, debug

__all__ = ["build_parser", "main"]

# Each command's function, in the order `openenv-gym --help` lists them.
_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": serve.run,
    "build": containers.build,
    "pull": hub.pull,
    "push": hub.push,
    "ps": containers.ps,
    "clean": containers.clean,
    "init": init.run,
    "validate": validate.run,
    "tasks": tasks.run,
    "replay": episodes.replay,
    "rescore": episodes.rescore,
    "eval": episodes.evaluate,
    "mcp": mcp.run,
    "web": web.run,
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command's arguments."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="openenv-gym",
        description="Serve Gymnasium and OpenEnv environments over OpenEnv's wire protocol.",
        epilog=f"A failed command prints one line on stderr and exits 1; {DEBUG_ENV_VAR}=1 shows the traceback.",
    )
    parser.add_argument("--version", action="version", version=f"openenv-gym {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve.add_parser(commands)
    containers.add_build_parser(commands)
    hub.add_parsers(commands)
    containers.add_parsers(commands)
    for command in (init, validate, tasks):
        command.add_parser(commands)
    episodes.add_parsers(commands)
    for command in (mcp, web):
        command.add_parser(commands)
    return parser


def _user_errors() -> tuple[type[BaseException], ...]:
    """The failures a command reports in one line: what the user asked for cannot be had (a bad
    value, a module or file that is not there, an id Gymnasium does not know, a server that
    refused), as ours, Python's and Gymnasium's errors say, and the Hub client's (if it was loaded).
    Any other exception is a bug, reported with its traceback."""
    from ..errors import OpenEnvGymError

    found: list[type[BaseException]] = [OpenEnvGymError, ValueError, ImportError, OSError]
    if "gymnasium" in sys.modules:  # nothing of it can fail before it is imported
        import gymnasium

        found.append(gymnasium.error.Error)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import errors

        found += [errors.HTTPError, errors.HfHubHTTPError, errors.OfflineModeIsEnabled]
    return tuple(found)


def _one_line(exc: BaseException) -> str:
    """``exc`` as the one line of a failed command: ours by their message's first line (a server
    that would not start with the last line it wrote, which says why), others with their type."""
    from ..errors import OpenEnvGymError, ServerStartError

    text = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, ServerStartError):
        last = [line.strip() for line in exc.output.splitlines() if line.strip()][-1:]
        return exc.message + (f": {last[0]}" if last else "")
    if isinstance(exc, OpenEnvGymError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``openenv-gym`` console script.

    A command that fails as commands may (see :func:`_user_errors`) prints ``openenv-gym COMMAND:
    error: MESSAGE``, one line, on stderr and exits 1; with ``OPENENV_GYM_DEBUG=1`` (or ``serve
    --log-level DEBUG``) the traceback is shown instead. Any other exception keeps its traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        code = _COMMANDS[args.command](args)
        sys.stdout.flush()  # a reader gone (`| head`) is met here, not at exit where it cannot be handled
    except BrokenPipeError:
        # As Python's documentation of SIGPIPE advises: stdout goes nowhere from now on (the
        # interpreter's last flush would fail again), and the exit status says the output was cut.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except _UsageError as exc:
        print(f"openenv-gym {args.command}: {exc}", file=sys.stderr)
        code = 2
    except _user_errors() as exc:
        if debug(args):
            raise
        print(f"openenv-gym {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        code = 1
    sys.exit(code)
