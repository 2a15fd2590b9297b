"""``openenv-gym serve TARGET``: serve an env; its server options are :class:`ServerOptions`' fields."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from ..server.options import COMMAND_LINE, ServerOptions
from ..startup import (
    ACCEPT_FLAG,
    PICKLED_FACTORIES_TARGET,
    SNAPSHOT_KEY_ENV_VAR,
    SNAPSHOT_KEY_FILE_FLAG,
    TOKEN_FILE_FLAG,
)
from ._arguments import _UsageError, env_kwargs, secret_from_file, token_from_env, token_from_file
from ._user_code import current_directory_importable

__all__ = ["add_parser", "run"]


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


def add_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve an environment on a WebSocket (/ws) with /health, /schema and /metadata",
        description="Serve TARGET: an id of openenv-gym's catalog (openenv/CodingTools-v0 serves the env "
        "the id names, with its tools, as validate does), a registered Gymnasium id (CartPole-v1) or module:attr naming "
        f"an openenv_gym.server.Environment subclass or factory (modules of the current directory import, as "
        f"with python -m). With {ACCEPT_FLAG} (and --token-env), "
        "TARGET may be left out: the server then runs only the sub-env factories clients send pickled.",
    )
    serve.add_argument(
        "target",
        nargs="?",
        default=None,
        help=f"an openenv/ or Gymnasium id, or module:attr (none, or {PICKLED_FACTORIES_TARGET}, with {ACCEPT_FLAG})",
    )
    for flag, keywords in ServerOptions.flags():
        serve.add_argument(flag, **keywords)
    token = serve.add_mutually_exclusive_group()
    token.add_argument(
        "--token-env",
        default=None,
        metavar="VAR",
        help="require the token held by environment variable VAR (Authorization: Bearer) on every "
        "request but /health; needed when binding beyond loopback, unless --insecure",
    )
    token.add_argument(
        TOKEN_FILE_FLAG,
        default=None,
        metavar="PATH",
        help="as --token-env, with the token read from file PATH (a Docker Swarm or Kubernetes secret, "
        "e.g. /run/secrets/NAME); a trailing newline is not part of it",
    )
    serve.add_argument(
        SNAPSHOT_KEY_FILE_FLAG,
        default=None,
        metavar="PATH",
        help=f"seal portable snapshots with the key in file PATH (a secret, as --token-file's; servers "
        f"sharing it restore each other's) instead of ${SNAPSHOT_KEY_ENV_VAR}, which must then be unset; "
        "/dev/stdin: a line of the standard input (after the token's, when --token-file is /dev/stdin too)",
    )
    serve.add_argument(
        "--max-episode-steps",
        type=_max_episode_steps,
        default=-1,
        help="for Gymnasium ids: time limit per episode; -1 keeps the spec's, none removes it",
    )
    serve.add_argument("--env-kwargs", type=env_kwargs, default={}, help="JSON keyword arguments for the env")
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


def run(args: argparse.Namespace) -> int:
    from ..server.runner import load_factory, run

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Taken out of the environment, so nothing the env starts (agent code, a subprocess) inherits it.
    hint = f"; set it to the token clients will present (in a container: docker run -e {args.token_env}=...)"
    token = token_from_env(args.token_env, pop=True, hint=hint) or token_from_file(args.token_file)
    no_target = args.target in (None, PICKLED_FACTORIES_TARGET)
    options = ServerOptions.from_arguments(
        args,
        token=token,
        snapshot_key=_snapshot_key(args.snapshot_key_file),
        target=PICKLED_FACTORIES_TARGET if no_target else args.target,
    )
    problem = options.problem(COMMAND_LINE) or _serve_target_problem(args)
    if problem is not None:
        raise _UsageError(problem)
    current_directory_importable()
    try:
        if no_target:
            from ..server.pickled_factories import NoTargetEnvironment

            factory: Any = NoTargetEnvironment
        else:
            factory = load_factory(
                args.target, max_episode_steps=args.max_episode_steps, env_kwargs=args.env_kwargs, inline=args.inline
            )
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    try:
        status = run(factory, options=options, exit_on_stdin_eof=args.exit_on_stdin_eof, ready_fd=args.ready_fd)
    except OSError as exc:
        where = args.unix_socket or f"{args.host}:{args.port}"
        print(f"openenv-gym serve: cannot listen on {where}: {exc}", file=sys.stderr)
        return 1
    return status


def _snapshot_key(path: str | None) -> str | None:
    """The snapshot key: from ``--snapshot-key-file``, or taken out of the environment (as the
    token is: nothing the env starts inherits it); ``None``: the server draws one.

    Raises:
        _UsageError: both give one, or the file cannot be read.
    """
    inherited = os.environ.pop(SNAPSHOT_KEY_ENV_VAR, None)
    named = secret_from_file(path, SNAPSHOT_KEY_FILE_FLAG, "snapshot key")
    if named is not None and inherited:
        raise _UsageError(f"{SNAPSHOT_KEY_FILE_FLAG} and ${SNAPSHOT_KEY_ENV_VAR} both give a snapshot key: give one")
    return named or inherited or None


def _serve_target_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``serve``'s TARGET and the options that load it, if anything (the server's
    own options are :meth:`ServerOptions.problem`'s)."""
    if not args.accept_pickled_factories and args.target in (None, PICKLED_FACTORIES_TARGET):
        what = "TARGET is missing" if args.target is None else f"{PICKLED_FACTORIES_TARGET} serves nothing"
        return f"{what}: give a Gymnasium id or module:attr (only {ACCEPT_FLAG} serves without one)"
    if args.target in (None, PICKLED_FACTORIES_TARGET) and args.env_kwargs:
        return "--env-kwargs needs a TARGET: pickled factories make their envs themselves"
    return None
