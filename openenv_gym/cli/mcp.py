"""``openenv-gym mcp``: one env session's tools as an MCP server on stdin/stdout."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from ..errors import OpenEnvGymError
from ._arguments import SECONDS, _UsageError, debug, env_kwargs, token_from_env

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve one env session as an MCP server on stdin/stdout: its tools, plus reset",
        description="Run a Model Context Protocol server over stdio (for an MCP client to start) that "
        "holds one session of TARGET: an env id (openenv/Echo-v0), a Gymnasium id or module:attr, served "
        "by a server started on loopback; or of the running server at --url. The env's tools become MCP "
        "tools, whose calls are forwarded to the session, plus reset for a new episode, whose task the env "
        "draws (the model chooses none, unless --allow-task-choice); each result's _meta holds "
        "openenv-gym/reward, openenv-gym/done and openenv-gym/truncated. stdout carries MCP messages only; "
        "logs go to stderr. Needs pip install 'openenv-gym[mcp]'.",
    )
    mcp.add_argument("target", nargs="?", default=None, help="an env id, a Gymnasium id, or module:attr")
    mcp.add_argument("--url", default=None, help="a running server (http://host:port) instead of starting one")
    mcp.add_argument(
        "--token-env",
        default=None,
        metavar="VAR",
        help="with --url: the running server's token is in environment variable VAR",
    )
    mcp.add_argument("--env-kwargs", type=env_kwargs, default={}, help="JSON keyword arguments for the env")
    # The defaults are the client's and the provider's (tests/test_mcp_bridge.py holds the help to
    # them); not imported here, so that `serve` does not load the client and the providers.
    mcp.add_argument(
        "--call-timeout",
        type=SECONDS.argument,
        default=None,
        help="seconds to wait for each tool call or reset (default: 60)",
    )
    mcp.add_argument(
        "--startup-timeout",
        type=SECONDS.argument,
        default=None,
        help="seconds a started server has to become ready (default: 30)",
    )
    mcp.add_argument(
        "--allow-task-choice",
        action="store_true",
        help="offer reset's seed and options (a task id, a split, an index) to the model, which then "
        "picks its own task, held-out ones included; by default reset takes no arguments and the env "
        'draws the task (from the split --env-kwargs \'{"split": "train"}\' names)',
    )
    mcp.add_argument("--log-level", default="WARNING", help="logging level, on stderr (default: WARNING)")


def run(args: argparse.Namespace) -> int:
    # Before anything starts: without the SDK there is nothing to serve.
    try:
        from ..integrations import mcp
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types"):
            raise
        print(f"openenv-gym mcp: error: {exc}", file=sys.stderr)
        return 1

    # stdout is the MCP channel: every log line goes to stderr.
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.target is None and args.url is None:
        raise _UsageError("error: give a TARGET (an env id or module:attr) or --url")
    token = token_from_env(args.token_env, error="error: ")
    timeouts = {
        name: value
        for name, value in (("call_timeout", args.call_timeout), ("startup_timeout", args.startup_timeout))
        if value is not None
    }
    try:
        mcp.serve(
            args.target,
            url=args.url,
            env_kwargs=args.env_kwargs,
            token=token,
            allow_task_choice=args.allow_task_choice,
            **timeouts,
        )
    except ValueError as exc:  # a bad TARGET or URL, or options that do not go together
        raise _UsageError(f"error: {mcp.one_line(exc)}") from exc
    except OpenEnvGymError as exc:  # one line even for a server's traceback or start-up log
        if debug(args):
            raise
        print(f"openenv-gym mcp: error: {mcp.one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the MCP server ran (it handles its own); all stopped
        return 130
    return 0
