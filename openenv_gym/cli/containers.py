"""``openenv-gym build``, ``ps`` and ``clean``: env images, and the servers and containers of openenv-gym."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_build_parser", "add_parsers", "build", "clean", "ps"]


def add_build_parser(commands: Any) -> None:
    """``build``."""
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


def add_parsers(commands: Any) -> None:
    """``ps`` and ``clean``."""
    commands.add_parser(
        "ps",
        help="list the env servers of openenv-gym (processes of this user, containers) and their owners",
        description="List the env servers of openenv-gym: first the `openenv-gym serve` processes of this "
        "user, started by hand or by the process provider (pid, target, listening address, owner: the "
        "parent process; 'stops with it' for the provider's), read from /proc (Linux); then the containers "
        "on this Docker Engine, running or not (id, status, target, owner host:pid, '(gone)' once it died, "
        "published ports); on a Docker Swarm manager, the services of the Swarm provider too (id, name, "
        "target, owner, their tasks' states). Without an engine only the processes are listed.",
    )
    commands.add_parser(
        "clean",
        help="remove the containers and swarm services whose owner process is gone",
        description="Remove the containers of openenv-gym whose owner process is gone (killed, crashed), and "
        "on a Docker Swarm manager the Swarm provider's services and their secrets too. Owners remove their "
        "own on close and at exit; this catches the ones left behind.",
    )


def docker_client() -> Any:
    """The Docker Engine client of the docker provider."""
    from ..providers.docker.provider import docker_client

    return docker_client()


def build(args: argparse.Namespace) -> int:
    from ..providers.docker import images as docker_images

    client = docker_client()
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


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])


def ps(args: argparse.Namespace) -> int:
    from ..providers.docker.owners import owned_containers, owned_services
    from ..providers.docker.provider import DockerUnavailableError
    from ..providers.process import server_processes

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
        client = docker_client()
        containers, services = owned_containers(client), owned_services(client)
    except DockerUnavailableError as exc:
        print(f"openenv-gym ps: containers not listed: {exc}", file=sys.stderr)
        return 0
    print()
    rows = [("CONTAINER", "STATUS", "TARGET", "OWNER", "PORTS")]
    for item in containers:
        rows.append((item.id, item.status, item.target, _owner(item), item.ports))
    _table(rows)
    if services:  # on a swarm manager only
        print()
        rows = [("SERVICE", "NAME", "TARGET", "OWNER", "TASKS")]
        for service in services:
            rows.append((service.id, service.name, service.target, _owner(service), service.tasks))
        _table(rows)
    return 0


def _owner(item: Any) -> str:
    return f"{item.owner_host}:{item.owner_pid}" + ("" if item.owner_alive else " (gone)")


def clean(args: argparse.Namespace) -> int:
    from ..providers.docker.owners import reap, reap_services
    from ..providers.docker.swarm_launcher import reap_orphans

    client = docker_client()
    services = reap_services(client)  # first: a removed service's task containers go with it
    removed = reap(client) + reap_orphans(client)
    print(
        f"removed {len(removed)} container(s) of owners that are gone" + (": " + " ".join(removed) if removed else "")
    )
    if services:
        print(f"removed {len(services)} swarm service(s) of owners that are gone: " + " ".join(services))
    return 0
