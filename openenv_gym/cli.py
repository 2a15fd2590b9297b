"""The ``openenv-gym`` command line: ``serve`` an environment (more commands come with providers)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from .server.env_server import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_FRAME_BYTES

__all__ = ["main"]


def _max_episode_steps(text: str) -> int | None:
    if text.lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(
            f"expected a positive number, -1 (the spec's limit) or 'none' (no limit), got {text!r}"
        )
    return value


def _env_kwargs(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--env-kwargs must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--env-kwargs must be a JSON object")
    return value


def _idle_timeout(text: str) -> float | None:
    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds or 'none', got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-gym", description="Serve Gymnasium and OpenEnv environments over OpenEnv's wire protocol."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="serve an environment on a WebSocket (/ws) with /health, /schema and /metadata",
        description="Serve TARGET: a registered Gymnasium id (CartPole-v1) or module:attr naming "
        "an openenv_gym.server.Environment subclass or factory.",
    )
    serve.add_argument("target", help="a Gymnasium id, or module:attr")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one (default: 8000)")
    serve.add_argument("--max-sessions", type=int, default=None, help="sessions served at once")
    serve.add_argument(
        "--idle-timeout",
        type=_idle_timeout,
        default=DEFAULT_IDLE_TIMEOUT,
        help=f"seconds before an idle session is closed, or none (default: {DEFAULT_IDLE_TIMEOUT:g})",
    )
    serve.add_argument(
        "--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES, help="largest frame accepted (default: 16 MiB)"
    )
    serve.add_argument(
        "--max-episode-steps",
        type=_max_episode_steps,
        default=-1,
        help="for Gymnasium ids: time limit per episode; -1 keeps the spec's, none removes it",
    )
    serve.add_argument("--env-kwargs", type=_env_kwargs, default={}, help="JSON keyword arguments for the env")
    serve.add_argument(
        "--inline",
        action="store_true",
        help="step Gymnasium envs on the event loop, not in a thread per session (for cheap envs; "
        "Gymnasium's classic-control and toy-text envs are inline already)",
    )
    serve.add_argument("--log-level", default="WARNING", help="logging level (default: WARNING)")
    # Used by the process provider: stop when the owner's pipe closes; report readiness on an fd.
    serve.add_argument("--exit-on-stdin-eof", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from .server.runner import load_factory, run

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        factory = load_factory(
            args.target, max_episode_steps=args.max_episode_steps, env_kwargs=args.env_kwargs, inline=args.inline
        )
    except ValueError as exc:
        print(f"openenv-gym serve: {exc}", file=sys.stderr)
        return 2
    try:
        run(
            factory,
            host=args.host,
            port=args.port,
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout,
            max_frame_bytes=args.max_frame_bytes,
            exit_on_stdin_eof=args.exit_on_stdin_eof,
            ready_fd=args.ready_fd,
        )
    except OSError as exc:
        print(f"openenv-gym serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``openenv-gym`` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        sys.exit(_serve(args))
