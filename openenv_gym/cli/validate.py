"""``openenv-gym validate TARGET``: check an env as served and print a table of the checks."""

from __future__ import annotations

import argparse
from typing import Any

from ._arguments import AT_LEAST_ONE, SECONDS, _UsageError, token_from_env

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    validate = commands.add_parser(
        "validate",
        help="check an env as served: manifest, endpoints, spaces, check_env, seeds, capacity, OpenEnv's client",
        description="Check TARGET and print a table of PASS, FAIL and SKIP lines with their reasons; exit 1 if any "
        "check fails. TARGET is a directory holding openenv.yaml (its app is served with openenv-gym serve, in "
        "that directory), an env id (openenv/CartPole-v1, CartPole-v1) or anything serve takes (module:attr), "
        "all served on a free loopback port; or the URL of a running server, ours or OpenEnv's (what it does "
        "not publish is skipped).",
    )
    validate.add_argument("target", help="a directory with openenv.yaml, an env id, module:attr, or http://host:port")
    validate.add_argument(
        "--token-env", default=None, metavar="VAR", help="with a URL: the running server's token is in variable VAR"
    )
    validate.add_argument(
        "--timeout", type=SECONDS.argument, default=None, help="seconds every request or reply may take (default: 10)"
    )
    validate.add_argument(
        "--idle-timeout",
        type=SECONDS.argument,
        default=None,
        help="the idle timeout of the server validate starts, which the idle check waits out (default: 2)",
    )
    validate.add_argument(
        "--max-sessions",
        type=AT_LEAST_ONE.argument,
        default=None,
        help="the max sessions of the server validate starts (default: the env's)",
    )
    validate.add_argument(
        "--sessions",
        type=AT_LEAST_ONE.argument,
        default=4,
        metavar="N",
        help="the capacity check opens at most N sessions at once, and one more to see it refused (default: 4)",
    )


def run(args: argparse.Namespace) -> int:
    from ..validation import CHECK_NAMES, DEFAULT_IDLE_TIMEOUT, DEFAULT_TIMEOUT, Status, resolve_target, run_checks

    token = token_from_env(args.token_env, error="error: ")
    try:
        target = resolve_target(args.target)
    except ValueError as exc:
        raise _UsageError(f"error: {exc}") from exc
    what = {"url": "a running server", "directory": f"openenv.yaml's app {target.app}", "env id": target.app}
    print(f"validating {args.target} ({what.get(target.kind, 'served with openenv-gym serve')})", flush=True)
    width = max(len(name) for name in CHECK_NAMES)
    print(f"{'CHECK':<{width}}  RESULT  REASON", flush=True)
    counts = dict.fromkeys(Status, 0)
    results = run_checks(
        target,
        token=token,
        timeout=args.timeout or DEFAULT_TIMEOUT,
        idle_timeout=args.idle_timeout or DEFAULT_IDLE_TIMEOUT,
        max_sessions=args.max_sessions,
        capacity_cap=args.sessions,
    )
    for result in results:
        counts[result.status] += 1
        reason = result.reason.replace("\n", "\\n")  # one line per check
        print(f"{result.name:<{width}}  {result.status.value:<6}  {reason}", flush=True)
    print(
        f"{sum(counts.values())} checks: {counts[Status.PASS]} passed, {counts[Status.FAIL]} failed, "
        f"{counts[Status.SKIP]} skipped"
    )
    return 1 if counts[Status.FAIL] else 0
