"""``openenv-gym init NAME``: write a new env package that works at once."""

from __future__ import annotations

import argparse
from typing import Any

from ._arguments import _UsageError

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    init = commands.add_parser(
        "init",
        help="write a new env package that works at once: env, manifest, Dockerfile, README, tests",
        description="Write a new env package NAME into ./NAME (or --dir PATH): an openenv_gym.server.Environment "
        "(a small seeded env with an action and an observation model, spaces, a reward and a time limit; or, "
        "with --tools, one driven by @tool methods with a submit tool that ends the episode), its openenv.yaml, "
        "a Dockerfile on openenv-gym's runtime image, a README, a pyproject.toml and tests that run Gymnasium's "
        "check_env on the served env. Then: cd NAME && python -m pytest && openenv-gym validate . (pytest, the "
        "package's test extra, installed first if it is missing here).",
    )
    init.add_argument("name", help="lowercase letters, digits, '-' and '_' (the package is NAME with '-' as '_')")
    init.add_argument("--tools", action="store_true", help="an env driven by tools instead of actions")
    init.add_argument("--dir", default=None, metavar="PATH", help="the directory to write (default: ./NAME)")


def run(args: argparse.Namespace) -> int:
    from ..scaffold import EnvNames, init_env, next_steps

    try:
        names = EnvNames.of(args.name)  # before the package exists: from here, it would shadow itself
        written = init_env(args.name, args.dir, tools=args.tools)
    except ValueError as exc:
        raise _UsageError(f"error: {exc}") from exc
    root = args.dir or args.name
    print(f"wrote {len(written)} files in {root}: {'a tool env' if args.tools else 'an env'} {names.gym_id}")
    for path in written:
        print(f"  {path.relative_to(root).as_posix()}")
    print(f"next: cd {root} && {next_steps()}")
    return 0
