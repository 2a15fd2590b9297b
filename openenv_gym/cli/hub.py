"""``openenv-gym pull`` and ``push``: envs on the Hugging Face Hub."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parsers", "pull", "push"]


def add_parsers(commands: Any) -> None:
    """``pull`` and ``push``."""
    pull = commands.add_parser(
        "pull",
        help="download an env's manifest from the Hugging Face Hub, check it, and show how it runs",
        description="Download REPO_ID's openenv.yaml (cached; offline from the cache), validate it and print "
        "the Gymnasium id it registers as. No code is imported or installed.",
    )
    pull.add_argument("repo_id", help="org/name on the Hub")
    pull.add_argument("--revision", default=None, help="a branch, tag or commit (default: main)")
    pull.add_argument("--repo-type", default="space", choices=("space", "model", "dataset"))
    push = commands.add_parser(
        "push",
        help="publish an env directory (with its openenv.yaml) as a Docker Space on the Hub",
        description="Upload ENV_DIR as a Docker Space: its files, a README.md with Space front matter "
        "(sdk: docker, app_port, tag openenv) and a Dockerfile serving the manifest's app.",
    )
    push.add_argument("env_dir", help="a directory holding openenv.yaml (e.g. envs/echo)")
    push.add_argument("--repo-id", required=True, help="org/name of the Space")
    push.add_argument("--private", action="store_true", help="make the Space private")
    push.add_argument(
        "--dry-run",
        action="store_true",
        help="print the files and the Space front matter it would upload, and the generated Dockerfile; use no network",
    )


def pull(args: argparse.Namespace) -> int:
    from ..hub import pull

    manifest = pull(args.repo_id, args.revision, repo_type=args.repo_type)
    ways = [
        way
        for way, possible in (("process", True), ("docker", manifest.image), ("url", manifest.space_url))
        if possible
    ]
    print(f"{manifest.default_gym_id()}: {manifest.description or manifest.name} (version {manifest.version})")
    print(
        f"  app: {manifest.app}"
        + ("  (Python code: run='process' needs trust_remote_code=True)" if manifest.app_is_code else "")
    )
    print(
        f"  runs with: {', '.join(ways)}"
        + (f"; image {manifest.image}" if manifest.image else "")
        + (f"; space {manifest.space_url}" if manifest.space_url else "")
    )
    print(f'  use: openenv_gym.hub.register("{args.repo_id}") or gym.make("openenv/Hub-v0", repo_id="{args.repo_id}")')
    return 0


def push(args: argparse.Namespace) -> int:
    from ..hub import SPACE_TOKEN_SECRET, push, push_plan

    if not args.dry_run:
        print(push(args.env_dir, args.repo_id, private=args.private))
        print(
            f"the Space's server requires a token: set the Space's secret {SPACE_TOKEN_SECRET} (clients pass token=)",
            file=sys.stderr,
        )
        return 0
    plan = push_plan(args.env_dir, args.repo_id)
    visibility = "private" if args.private else "public"
    print(f"would push {args.env_dir} to the {visibility} Space {args.repo_id} (dry run: nothing was sent)")
    print(f"files ({len(plan.paths())}):")
    for path in plan.paths():
        print(f"  {path}" + ("  (generated)" if path in plan.generated else ""))
    print("README.md front matter:")
    print("".join(f"  {line}\n" for line in plan.front_matter().splitlines()), end="")
    print("Dockerfile:")
    print("".join(f"  {line}\n" for line in plan.generated["Dockerfile"].splitlines()), end="")
    return 0
