"""The ``openenv-gym`` command line: ``serve`` an env; ``init`` a new one, ``validate`` one; ``build``, ``ps``,
``clean`` containers; ``pull``, ``push`` Hub envs; ``tasks``; ``mcp``: one env session's tools as a stdio MCP
server; ``web``: a server's web debug page."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import OpenEnvGymError
from .server.env_server import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_SEND_TIMEOUT,
)
from .server.exposure import exposure_problem
from .startup import ACCEPT_FLAG, PICKLED_FACTORIES_TARGET
from .urls import is_loopback_host

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
    return _seconds(text, " or 'none'")


def _seconds(text: str, or_else: str = "") -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds{or_else}, got {text!r}")
    return value


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="openenv-gym",
        description="Serve Gymnasium and OpenEnv environments over OpenEnv's wire protocol.",
        epilog=f"A failed command prints one line on stderr and exits 1; {_DEBUG_ENV_VAR}=1 shows the traceback.",
    )
    parser.add_argument("--version", action="version", version=f"openenv-gym {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="serve an environment on a WebSocket (/ws) with /health, /schema and /metadata",
        description="Serve TARGET: a registered Gymnasium id (CartPole-v1) or module:attr naming "
        f"an openenv_gym.server.Environment subclass or factory (modules of the current directory import, as "
        f"with python -m). With {ACCEPT_FLAG} (and --token-env), "
        "TARGET may be left out: the server then runs only the sub-env factories clients send pickled.",
    )
    serve.add_argument(
        "target",
        nargs="?",
        default=None,
        help=f"a Gymnasium id, or module:attr (none, or {PICKLED_FACTORIES_TARGET}, with {ACCEPT_FLAG})",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one (default: 8000)")
    serve.add_argument(
        "--unix-socket", default=None, metavar="PATH", help="listen on this Unix socket instead of --host/--port"
    )
    serve.add_argument(
        "--token-env",
        default=None,
        metavar="VAR",
        help="require the token held by environment variable VAR (Authorization: Bearer) on every "
        "request but /health; needed when binding beyond loopback, unless --insecure",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="bind beyond loopback without a token (with a warning): anyone who reaches the port can run "
        "the env; only for networks that admit trusted peers alone",
    )
    serve.add_argument(
        ACCEPT_FLAG,
        action="store_true",
        help="also make batch sessions' sub-envs from factories the client sends pickled "
        "(RemoteVectorEnv.from_env_fns); unpickling runs the client's code, so this needs --token-env",
    )
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
        "--max-connections",
        type=_at_least_one,
        default=None,
        help="TCP connections held at once, handshakes and sessions alike; more get HTTP 503 "
        "(default: 4096, or half of ulimit -n when lower)",
    )
    serve.add_argument(
        "--handshake-timeout",
        type=_seconds,
        default=DEFAULT_HANDSHAKE_TIMEOUT,
        help=f"seconds a connection has to send its request and finish the WebSocket handshake "
        f"(default: {DEFAULT_HANDSHAKE_TIMEOUT:g})",
    )
    serve.add_argument(
        "--send-timeout",
        type=_idle_timeout,
        default=DEFAULT_SEND_TIMEOUT,
        help=f"seconds a reply may wait for the client to read it before the session is dropped, or none "
        f"(default: {DEFAULT_SEND_TIMEOUT:g})",
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
    serve.add_argument(
        "--web",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the web debug page at /web (default: on when bound to loopback, off beyond it)",
    )
    serve.add_argument("--log-level", default="WARNING", help="logging level (default: WARNING)")
    # Used by the process provider: stop when the owner's pipe closes; report readiness on an fd.
    serve.add_argument("--exit-on-stdin-eof", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)

    build = commands.add_parser(
        "build",
        help="build the Docker image of an env in envs/ or of an env directory (and the images below it), offline",
        description="Build the image of ENV (an env of envs/, e.g. coding, or a directory with a Dockerfile and "
        "an openenv.yaml, e.g. one `openenv-gym init` made) or, with 'runtime', the image every Gymnasium env "
        "is served from. The base is made with debootstrap unless --base names a local image with python3 "
        "(e.g. python:3.11-slim); nothing is pulled.",
    )
    build.add_argument("env", help="an env of envs/ (echo, coding), a directory (./demo), 'runtime', or 'base'")
    build.add_argument("--base", default=None, help="a local image with python3 to build on (default: debootstrap)")
    build.add_argument("--rebuild", action="store_true", help="build even if the image exists")
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
    commands.add_parser(
        "ps",
        help="list the env servers of openenv-gym (processes of this user, containers) and their owners",
        description="List the env servers of openenv-gym: first the `openenv-gym serve` processes of this "
        "user, started by hand or by the process provider (pid, target, listening address, owner: the "
        "parent process; 'stops with it' for the provider's), read from /proc (Linux); then the containers "
        "on this Docker Engine, running or not (id, status, target, owner host:pid, '(gone)' once it died, "
        "published ports). Without an engine only the processes are listed.",
    )
    commands.add_parser(
        "clean",
        help="remove the containers whose owner process is gone",
        description="Remove the containers of openenv-gym whose owner process is gone (killed, crashed). "
        "Owners remove their own containers on close and at exit; this catches the ones left behind.",
    )
    _add_init_parser(commands)
    _add_validate_parser(commands)
    _add_tasks_parser(commands)
    _add_mcp_parser(commands)
    _add_web_parser(commands)
    return parser


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _add_mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve one env session as an MCP server on stdin/stdout: its tools, plus reset",
        description="Run a Model Context Protocol server over stdio (for an MCP client to start) that "
        "holds one session of TARGET: an env id (openenv/Echo-v0), a Gymnasium id or module:attr, served "
        "by a server started on loopback; or of the running server at --url. The env's tools become MCP "
        "tools, whose calls are forwarded to the session, plus reset (seed, options) for a new episode; "
        "each result's _meta holds openenv-gym/reward, openenv-gym/done and openenv-gym/truncated. stdout "
        "carries MCP messages only; logs go to stderr. Needs pip install 'openenv-gym[mcp]'.",
    )
    mcp.add_argument("target", nargs="?", default=None, help="an env id, a Gymnasium id, or module:attr")
    mcp.add_argument("--url", default=None, help="a running server (http://host:port) instead of starting one")
    mcp.add_argument(
        "--token-env",
        default=None,
        metavar="VAR",
        help="with --url: the running server's token is in environment variable VAR",
    )
    mcp.add_argument("--env-kwargs", type=_env_kwargs, default={}, help="JSON keyword arguments for the env")
    # The defaults are the client's and the provider's (tests/test_mcp_bridge.py holds the help to
    # them); not imported here, so that `serve` does not load the client and the providers.
    mcp.add_argument(
        "--call-timeout",
        type=_positive_seconds,
        default=None,
        help="seconds to wait for each tool call or reset (default: 60)",
    )
    mcp.add_argument(
        "--startup-timeout",
        type=_positive_seconds,
        default=None,
        help="seconds a started server has to become ready (default: 30)",
    )
    mcp.add_argument("--log-level", default="WARNING", help="logging level, on stderr (default: WARNING)")


def _add_init_parser(commands: Any) -> None:
    init = commands.add_parser(
        "init",
        help="write a new env package that works at once: env, manifest, Dockerfile, README, tests",
        description="Write a new env package NAME into ./NAME (or --dir PATH): an openenv_gym.server.Environment "
        "(a small seeded env with an action and an observation model, spaces, a reward and a time limit; or, "
        "with --tools, one driven by @tool methods with a submit tool that ends the episode), its openenv.yaml, "
        "a Dockerfile on openenv-gym's runtime image, a README, a pyproject.toml and tests that run Gymnasium's "
        "check_env on the served env. Then: cd NAME && python -m pytest && openenv-gym validate .",
    )
    init.add_argument("name", help="lowercase letters, digits, '-' and '_' (the package is NAME with '-' as '_')")
    init.add_argument("--tools", action="store_true", help="an env driven by tools instead of actions")
    init.add_argument("--dir", default=None, metavar="PATH", help="the directory to write (default: ./NAME)")


def _init(args: argparse.Namespace) -> int:
    from .scaffold import EnvNames, init_env

    try:
        written = init_env(args.name, args.dir, tools=args.tools)
    except ValueError as exc:
        print(f"openenv-gym init: error: {exc}", file=sys.stderr)
        return 2
    root = args.dir or args.name
    names = EnvNames.of(args.name)
    print(f"wrote {len(written)} files in {root}: {'a tool env' if args.tools else 'an env'} {names.gym_id}")
    for path in written:
        print(f"  {path.relative_to(root).as_posix()}")
    print(f"next: cd {root} && python -m pytest && openenv-gym validate .")
    return 0


def _add_validate_parser(commands: Any) -> None:
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
        "--timeout", type=_positive_seconds, default=None, help="seconds every request or reply may take (default: 10)"
    )
    validate.add_argument(
        "--idle-timeout",
        type=_positive_seconds,
        default=None,
        help="the idle timeout of the server validate starts, which the idle check waits out (default: 2)",
    )
    validate.add_argument(
        "--max-sessions",
        type=_positive_int,
        default=None,
        help="the max sessions of the server validate starts (default: the env's)",
    )
    validate.add_argument(
        "--sessions",
        type=_positive_int,
        default=4,
        metavar="N",
        help="the capacity check opens at most N sessions at once, and one more to see it refused (default: 4)",
    )


def _validate(args: argparse.Namespace) -> int:
    from .validation import CHECK_NAMES, DEFAULT_IDLE_TIMEOUT, DEFAULT_TIMEOUT, Status, resolve_target, run_checks

    token = None
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            print(
                f"openenv-gym validate: error: --token-env {args.token_env}: that variable is not set", file=sys.stderr
            )
            return 2
    try:
        target = resolve_target(args.target)
    except ValueError as exc:
        print(f"openenv-gym validate: error: {exc}", file=sys.stderr)
        return 2
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


def _add_tasks_parser(commands: Any) -> None:
    tasks = commands.add_parser(
        "tasks",
        help="list a task env's tasks (Coding's, or Git's with --env git): id, difficulty and the prompt's first line",
        description="List the tasks of openenv/Coding-v0 (and CodingTools-v0), or with --env git of "
        "openenv/Git-v0 (tab-separated: id, difficulty, the prompt's first line); an id is what "
        "reset(options={'task_id': ...}) takes.",
    )
    tasks.add_argument(
        "--env",
        default="coding",
        choices=sorted(_TASK_ENVS),
        help="whose tasks: coding (Coding-v0 and CodingTools-v0, the default) or git (Git-v0)",
    )
    tasks.add_argument(
        "--tasks",
        default=None,
        metavar="PATH",
        help="a JSONL task file or hf://datasets/... (default: the shipped set)",
    )
    tasks.add_argument(
        "--difficulty", action="append", choices=("easy", "medium", "hard"), help="only this difficulty (repeatable)"
    )


# The module of each task env that has a select_tasks(source, difficulties), by --env name.
_TASK_ENVS = {"coding": "openenv_gym.envs.coding.tasks", "git": "openenv_gym.envs.git.tasks"}


def _tasks(args: argparse.Namespace) -> int:
    import importlib

    select_tasks = importlib.import_module(_TASK_ENVS[args.env]).select_tasks
    try:
        selected = select_tasks(args.tasks, args.difficulty)
    except (OSError, ValueError) as exc:
        print(f"openenv-gym tasks: error: {exc}", file=sys.stderr)
        return 1
    for task in selected:
        print(f"{task.task_id}\t{task.difficulty}\t{task.prompt.splitlines()[0]}")
    return 0


def _docker_client() -> Any:
    from .providers.docker.provider import docker_client

    return docker_client()


def _build(args: argparse.Namespace) -> int:
    from .providers.docker import images as docker_images

    client = _docker_client()
    directory = Path(args.env)
    if os.sep in args.env or args.env.startswith(".") or (directory / "openenv.yaml").is_file():  # not envs/'s
        image = docker_images.build_directory_image(client, directory.resolve(), base=args.base)
        print(image)
        return 0
    if args.env == "base":
        image = docker_images.LOCAL_BASE_IMAGE
    elif args.env == "runtime":
        image = docker_images.RUNTIME_IMAGE
    else:
        image = docker_images.env_image(args.env)
    ready = docker_images.image_exists if args.env == "base" else docker_images.image_current
    if ready(client, image) and not args.rebuild:
        print(f"{image} is up to date (use --rebuild to build it again)")
        return 0
    if args.env == "base":
        docker_images.build_local_base(client)
    elif args.env == "runtime":
        docker_images.build_runtime_image(client, base=args.base)
    else:
        if args.rebuild:
            docker_images.build_runtime_image(client, base=args.base)
        docker_images.build_env_image(client, args.env, base=args.base)
    print(image)
    return 0


def _pull(args: argparse.Namespace) -> int:
    from .hub import pull

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


def _push(args: argparse.Namespace) -> int:
    from .hub import SPACE_TOKEN_SECRET, push, push_plan

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


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])


def _ps(args: argparse.Namespace) -> int:
    from .providers.docker.owners import owned_containers
    from .providers.docker.provider import DockerUnavailableError
    from .providers.process import server_processes

    servers = server_processes()
    if servers is None:
        print("openenv-gym ps: server processes not listed: this system has no /proc", file=sys.stderr)
    else:
        rows: list[tuple[str, ...]] = [("PID", "TARGET", "ADDRESS", "OWNER")]
        for server in servers:
            owner = f"{server.owner_pid} {server.owner}" + (" (stops with it)" if server.with_owner else "")
            rows.append((str(server.pid), server.target, " ".join(server.addresses) or "?", owner))
        _table(rows)
    try:
        containers = owned_containers(_docker_client())
    except DockerUnavailableError as exc:
        print(f"openenv-gym ps: containers not listed: {exc}", file=sys.stderr)
        return 0
    print()
    rows = [("CONTAINER", "STATUS", "TARGET", "OWNER", "PORTS")]
    for item in containers:
        owner = f"{item.owner_host}:{item.owner_pid}" + ("" if item.owner_alive else " (gone)")
        rows.append((item.id, item.status, item.target, owner, item.ports))
    _table(rows)
    return 0


def _clean(args: argparse.Namespace) -> int:
    from .providers.docker.owners import reap

    removed = reap(_docker_client())
    print(
        f"removed {len(removed)} container(s) of owners that are gone" + (": " + " ".join(removed) if removed else "")
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .server.runner import load_factory, run

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    problem = _serve_target_problem(args)
    if problem is not None:
        print(f"openenv-gym serve: {problem}", file=sys.stderr)
        return 2
    token = None
    if args.token_env is not None:
        # Taken out of the environment, so nothing the env starts (agent code, a subprocess) inherits it.
        token = os.environ.pop(args.token_env, None)
        if not token:
            print(
                f"openenv-gym serve: --token-env {args.token_env}: that variable is not set; set it to the token "
                f"clients will present (in a container: docker run -e {args.token_env}=...)",
                file=sys.stderr,
            )
            return 2
    # As `python -m openenv_gym serve` (and uvicorn) do: a module:attr of the current directory imports.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if args.target in (None, PICKLED_FACTORIES_TARGET):
            from .server.pickled_factories import NoTargetEnvironment

            factory: Any = NoTargetEnvironment
            args.target = PICKLED_FACTORIES_TARGET
        else:
            factory = load_factory(
                args.target, max_episode_steps=args.max_episode_steps, env_kwargs=args.env_kwargs, inline=args.inline
            )
    except ValueError as exc:
        print(f"openenv-gym serve: {exc}", file=sys.stderr)
        return 2
    try:
        status = run(
            factory,
            host=args.host,
            port=args.port,
            unix_socket=args.unix_socket,
            token=token,
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout,
            max_frame_bytes=args.max_frame_bytes,
            max_connections=args.max_connections,
            handshake_timeout=args.handshake_timeout,
            send_timeout=args.send_timeout,
            exit_on_stdin_eof=args.exit_on_stdin_eof,
            ready_fd=args.ready_fd,
            target=args.target,
            accept_pickled_factories=args.accept_pickled_factories,
            web=args.web,
            insecure=args.insecure,
        )
    except OSError as exc:
        where = args.unix_socket or f"{args.host}:{args.port}"
        print(f"openenv-gym serve: cannot listen on {where}: {exc}", file=sys.stderr)
        return 1
    return status


def _serve_target_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``serve``'s TARGET, pickle and web options together, if anything."""
    if args.web and args.token_env is None and args.unix_socket is None and not is_loopback_host(args.host):
        return f"--web on {args.host} needs --token-env VAR: any page a browser visits could reach the server otherwise"
    exposed = exposure_problem(
        None if args.unix_socket is not None else args.host, args.token_env is not None, args.insecure, cli=True
    )
    if exposed is not None:
        return exposed
    if args.accept_pickled_factories and args.token_env is None:
        return (
            f"{ACCEPT_FLAG} needs --token-env VAR: unpickling runs whatever code a client sends, so only "
            "clients holding the token may send it"
        )
    if not args.accept_pickled_factories and args.target in (None, PICKLED_FACTORIES_TARGET):
        what = "TARGET is missing" if args.target is None else f"{PICKLED_FACTORIES_TARGET} serves nothing"
        return f"{what}: give a Gymnasium id or module:attr (only {ACCEPT_FLAG} serves without one)"
    if args.target in (None, PICKLED_FACTORIES_TARGET) and args.env_kwargs:
        return "--env-kwargs needs a TARGET: pickled factories make their envs themselves"
    return None


def _mcp(args: argparse.Namespace) -> int:
    # Before anything starts: without the SDK there is nothing to serve.
    try:
        from .integrations import mcp
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
        print("openenv-gym mcp: error: give a TARGET (an env id or module:attr) or --url", file=sys.stderr)
        return 2
    token = None
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            print(f"openenv-gym mcp: error: --token-env {args.token_env}: that variable is not set", file=sys.stderr)
            return 2
    timeouts = {
        name: value
        for name, value in (("call_timeout", args.call_timeout), ("startup_timeout", args.startup_timeout))
        if value is not None
    }
    try:
        mcp.serve(args.target, url=args.url, env_kwargs=args.env_kwargs, token=token, **timeouts)
    except ValueError as exc:  # a bad TARGET or URL, or options that do not go together
        print(f"openenv-gym mcp: error: {mcp.one_line(exc)}", file=sys.stderr)
        return 2
    except OpenEnvGymError as exc:  # one line even for a server's traceback or start-up log
        if _debug(args):
            raise
        print(f"openenv-gym mcp: error: {mcp.one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the MCP server ran (it handles its own); all stopped
        return 130
    return 0


def _debug(args: argparse.Namespace) -> bool:
    return os.environ.get(_DEBUG_ENV_VAR, "") not in ("", "0") or getattr(args, "log_level", "").upper() == "DEBUG"


def _add_web_parser(commands: Any) -> None:
    web = commands.add_parser(
        "web",
        help="open an env server's web debug page, through a local forward when it is beyond loopback",
        description="Open URL's web page (/web) in a browser. A server beyond this machine's loopback is "
        "reached through a forward listening on 127.0.0.1 (kept open until Ctrl-C); such a server shows "
        "its page only when started with --web. Over SSH, `ssh -L 8000:localhost:8000 HOST` is the "
        "alternative.",
    )
    web.add_argument("url", help="the server's base URL, e.g. http://10.1.2.3:8000")
    web.add_argument("--port", type=int, default=0, help="local port of the forward (default: a free one)")
    web.add_argument(
        "--token-env", default=None, metavar="VAR", help="log the browser in with the token held by variable VAR"
    )
    web.add_argument("--no-browser", action="store_true", help="print the page's address; open no browser")


def _web(args: argparse.Namespace) -> int:
    import webbrowser

    from .client._http import http_get_json
    from .client.port_forward import PortForward, needs_forward, page_url, serve_forward

    token = None
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            print(f"openenv-gym web: --token-env {args.token_env}: that variable is not set", file=sys.stderr)
            return 2
    http_get_json(args.url, "/health", timeout=10.0)  # ServerConnectError says why when it is not there

    def show(base_url: str, forwarded: bool) -> None:
        how = f" (forwarded to {args.url}; Ctrl-C stops)" if forwarded else ""
        login = f" (log in at {page_url(base_url)}?token=<${args.token_env}>)" if token else ""
        print(f"web page: {page_url(base_url)}{how}{login}", flush=True)
        if not args.no_browser:
            webbrowser.open(page_url(base_url, token))

    if not needs_forward(args.url):
        show(args.url, forwarded=False)
        return 0
    try:
        forward = PortForward.to(args.url, port=args.port)
    except ValueError as exc:
        print(f"openenv-gym web: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve_forward(forward, lambda url: show(url, forwarded=True)))
    except KeyboardInterrupt:
        pass
    return 0


def _user_errors() -> tuple[type[BaseException], ...]:
    """The failures a command reports in one line: ours, and the Hub client's (if it was loaded)."""
    from .errors import OpenEnvGymError

    found: list[type[BaseException]] = [OpenEnvGymError]
    if "openenv_gym.manifest" in sys.modules:
        found.append(sys.modules["openenv_gym.manifest"].ManifestError)
    if "huggingface_hub" in sys.modules:  # nothing of it can fail before it is imported
        from huggingface_hub import errors

        found += [errors.HTTPError, errors.HfHubHTTPError, errors.OfflineModeIsEnabled]
    return tuple(found)


_COMMANDS = {
    "serve": _serve,
    "build": _build,
    "ps": _ps,
    "clean": _clean,
    "pull": _pull,
    "push": _push,
    "init": _init,
    "validate": _validate,
    "tasks": _tasks,
    "mcp": _mcp,
    "web": _web,
}
# Set to show the traceback of a failed command instead of its one-line error.
_DEBUG_ENV_VAR = "OPENENV_GYM_DEBUG"


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``openenv-gym`` console script.

    A command that fails with an error of openenv-gym (or of the Hub client) prints
    ``openenv-gym COMMAND: error: MESSAGE`` on stderr and exits 1; with ``OPENENV_GYM_DEBUG=1``
    (or ``serve --log-level DEBUG``) the traceback is shown instead.
    """
    args = build_parser().parse_args(argv)
    try:
        code = _COMMANDS[args.command](args)
    except _user_errors() as exc:
        if _debug(args):
            raise
        print(f"openenv-gym {args.command}: error: {exc}", file=sys.stderr)
        code = 1
    sys.exit(code)
