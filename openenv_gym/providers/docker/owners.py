"""Which process owns a container or a Swarm service: the labels every one of ours carries, and the reaper.

A container, and a Swarm service with its secret, is labelled with its owner's host, pid and
process start time (the pair pid + start time names one process even after the pid is reused).
Owners remove theirs on close and at interpreter exit; those of owners that died without doing so
(SIGKILL, a crash) are removed by :func:`reap` (containers) and :func:`reap_services` (services
and secrets, on a swarm manager), which the providers run when they first start in a process and
``openenv-gym clean`` runs on demand. Owners are judged through this host's ``/proc``: an owner
in another pid namespace under the same hostname (a container sharing the engine) would look
gone, so do not share one engine between such owners.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path
from typing import Any

__all__ = [
    "LABEL_PREFIX",
    "OWNER_LABELS",
    "SWARM_LABEL",
    "OwnedContainer",
    "OwnedService",
    "owned_containers",
    "owned_services",
    "owner_labels",
    "reap",
    "reap_services",
]

LABEL_PREFIX = "openenv-gym"
OWNER_HOST = f"{LABEL_PREFIX}.owner-host"
OWNER_PID = f"{LABEL_PREFIX}.owner-pid"
OWNER_STARTED = f"{LABEL_PREFIX}.owner-started"
TARGET = f"{LABEL_PREFIX}.target"
SWARM_LABEL = f"{LABEL_PREFIX}.swarm-service"  # on a Swarm service's secret and task containers: its name
OWNER_LABELS = (OWNER_HOST, OWNER_PID, OWNER_STARTED)


def process_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_labels(target: str) -> dict[str, str]:
    """The labels naming this process as a container's owner, and what the container serves."""
    return {
        OWNER_HOST: socket.gethostname(),
        OWNER_PID: str(os.getpid()),
        OWNER_STARTED: process_start_time(os.getpid()) or "",
        TARGET: target,
    }


@dataclasses.dataclass(frozen=True)
class OwnedContainer:
    """A container of ours, as ``openenv-gym ps`` lists it."""

    id: str
    name: str
    status: str
    target: str
    owner_pid: int
    owner_host: str
    owner_alive: bool
    ports: str


def _owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(OWNER_HOST) != socket.gethostname():
        return True  # another machine's process: not ours to judge
    try:
        pid = int(labels.get(OWNER_PID, ""))
    except ValueError:
        return True  # no owner we can judge: leave it to `docker rm`
    started = labels.get(OWNER_STARTED)
    if not started:
        return process_start_time(pid) is not None  # no start time was recorded: the pid alone decides
    return process_start_time(pid) == started


def owned_containers(client: Any) -> list[OwnedContainer]:
    """Every container (running or not) that carries our owner labels."""
    found = []
    for container in client.containers.list(all=True, filters={"label": OWNER_PID}):
        labels = container.labels
        ports = ", ".join(
            f"{binding['HostIp']}:{binding['HostPort']}->{port}"
            for port, bindings in (container.ports or {}).items()
            for binding in bindings or []
        )
        found.append(
            OwnedContainer(
                id=container.short_id,
                name=container.name,
                status=container.status,
                target=labels.get(TARGET, "?"),
                owner_pid=int(labels.get(OWNER_PID) or 0),
                owner_host=labels.get(OWNER_HOST, "?"),
                owner_alive=_owner_alive(labels),
                ports=ports,
            )
        )
    return found


def reap(client: Any) -> list[str]:
    """Remove the containers of owners on this host that are no longer running; return their ids."""
    import docker.errors

    removed = []
    for container in client.containers.list(all=True, filters={"label": OWNER_PID}):
        if not _owner_alive(container.labels):
            try:
                container.remove(force=True)
                removed.append(container.short_id)
            except docker.errors.NotFound:
                pass  # removed meanwhile (its owner's exit handler, another reaper)
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    raise
    return removed


@dataclasses.dataclass(frozen=True)
class OwnedService:
    """A Swarm service of ours, as ``openenv-gym ps`` lists it."""

    id: str
    name: str
    target: str
    owner_pid: int
    owner_host: str
    owner_alive: bool
    tasks: str


def _is_manager(client: Any) -> bool:
    swarm = client.info().get("Swarm", {})
    return swarm.get("LocalNodeState") == "active" and bool(swarm.get("ControlAvailable"))


def owned_services(client: Any) -> list[OwnedService]:
    """Every Swarm service that carries our owner labels (none when the engine is no swarm manager)."""
    if not _is_manager(client):
        return []
    found = []
    for service in client.api.services(filters={"label": OWNER_PID}):
        labels = service["Spec"].get("Labels") or {}
        states = [task["Status"]["State"] for task in client.api.tasks(filters={"service": service["ID"]})]
        found.append(
            OwnedService(
                id=service["ID"][:12],
                name=service["Spec"]["Name"],
                target=labels.get(TARGET, "?"),
                owner_pid=int(labels.get(OWNER_PID) or 0),
                owner_host=labels.get(OWNER_HOST, "?"),
                owner_alive=_owner_alive(labels),
                tasks=", ".join(f"{states.count(state)} {state}" for state in sorted(set(states))) or "none",
            )
        )
    return found


def reap_services(client: Any) -> list[str]:
    """Remove the Swarm services and secrets of owners on this host that are no longer running;
    return the services' ids. Nothing when the engine is no swarm manager."""
    import docker.errors

    if not _is_manager(client):
        return []
    removed = []
    for service in client.api.services(filters={"label": OWNER_PID}):
        if not _owner_alive(service["Spec"].get("Labels") or {}):
            try:
                client.api.remove_service(service["ID"])
                removed.append(service["ID"][:12])
            except docker.errors.NotFound:
                pass  # removed meanwhile (its owner's exit handler, another reaper)
    for secret in client.api.secrets(filters={"label": OWNER_PID}):
        if not _owner_alive(secret["Spec"].get("Labels") or {}):
            try:
                client.api.remove_secret(secret["ID"])
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:  # still used by a service another reaper is removing
                if exc.status_code != 400:
                    raise
    return removed
