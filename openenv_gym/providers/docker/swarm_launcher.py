"""What a Swarm task runs for an env its service cannot hold: the env server in a container of the node's own.

A Swarm service cannot be given ``security_opt`` (its API has no masked-paths setting, and seccomp
profiles only from API 1.44), which a sandboxed env's server needs for bubblewrap inside. So its
task runs this launcher instead, with the node's Docker socket mounted: it starts the server in
a container beside it on the same node, exactly as the Docker provider would (read-only, no
capabilities, ``no-new-privileges``, the manifest's ``security_opt``, the limits), in the
launcher's network namespace (so the port the task publishes reaches the server, and Swarm's
health check of the task probes it), hands it the token and the snapshot key (the task's Swarm
secrets) on its standard input, never in its environment or command, and then lives as long as the
server does:

- the server exits: the launcher exits with its status, and Swarm replaces the task;
- the task is stopped (the service removed, SIGTERM): the launcher removes the server's container;
- a launcher killed outright leaves its server's container: the next launcher on that node removes
  every such container whose launcher is gone, and so does ``openenv-gym clean`` there once the
  owner has died (the container carries the owner's labels).

Agent code never sees the socket: it runs in the server's container, which has no mounts of the
launcher's, under bubblewrap. Run as ``python3 -m openenv_gym.providers.docker.swarm_launcher SPEC``
(``SPEC``: JSON, see :func:`launch_spec`).
"""

from __future__ import annotations

import json
import signal
import socket
import sys
from typing import Any

__all__ = ["LAUNCHER_LABEL", "NODE_SOCKET", "launch_spec", "main"]

LAUNCHER_LABEL = "openenv-gym.launcher"  # on a launched server's container: its launcher's container id
NODE_SOCKET = "/var/run/docker.sock"  # where the launcher's task has the node's Docker socket
_STOP_TIMEOUT = 5


def launch_spec(
    image: str, arguments: list[str], limits: dict[str, Any], security_opt: list[str], labels: dict[str, str]
) -> str:
    """The launcher's argument: what to run (the image, ``serve``'s arguments), how, and its labels."""
    return json.dumps(
        {"image": image, "arguments": arguments, "limits": limits, "security_opt": security_opt, "labels": labels}
    )


def main(argv: list[str]) -> int:
    """Start the server ``argv[0]`` (:func:`launch_spec`) describes, and live as long as it does;
    return the status the task exits with."""
    import docker

    from ...startup import SNAPSHOT_KEY_FILE_FLAG, TOKEN_FILE_FLAG
    from .images import SERVER_UID
    from .provider import SECRETS_ON_STDIN, locked_down_host_config, start_with_secrets

    made: list[Any] = []  # the server's container, once created: what a SIGTERM removes

    def stop(*_: object) -> None:
        for container in made:
            _remove(container, graceful=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)  # before anything is made: nothing made is left behind
    spec = json.loads(argv[0])
    arguments = [*spec["arguments"]]
    secrets = []
    for flag in (TOKEN_FILE_FLAG, SNAPSHOT_KEY_FILE_FLAG):  # in the order serve reads them
        at = arguments.index(flag) + 1
        with open(arguments[at], encoding="utf-8") as file:
            secrets.append(file.read().rstrip("\r\n"))
        arguments[at] = SECRETS_ON_STDIN  # the secret stays in this task
    client = docker.DockerClient(base_url=f"unix://{NODE_SOCKET}", timeout=60)
    me: str = client.api.inspect_container(socket.gethostname())["Id"]  # a task's hostname: its container's id
    reap_orphans(client)
    host_config = locked_down_host_config(client, spec["limits"], spec["security_opt"], network_mode=f"container:{me}")
    created = client.api.create_container(
        spec["image"],
        arguments,
        user=f"{SERVER_UID}:{SERVER_UID}",
        environment={"PYTHONUNBUFFERED": "1"},
        labels={**spec["labels"], LAUNCHER_LABEL: me},
        host_config=host_config,
        stdin_open=True,  # and StdinOnce: the server's stdin closes when the launcher detaches, the secrets' end
    )
    server = client.containers.get(created["Id"])
    made.append(server)
    try:
        start_with_secrets(client, server, secrets)
        print(f"openenv-gym swarm launcher: serving in container {created['Id'][:12]}", flush=True)
        for line in server.logs(stream=True, follow=True):  # the server's log is the task's log
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
        status = int(server.wait(timeout=60)["StatusCode"])
    except BaseException:
        _remove(server, graceful=False)
        raise
    _remove(server, graceful=False)
    return status or 1  # a server that ended is a task that failed: Swarm replaces it


def reap_orphans(client: Any) -> list[str]:
    """Remove launched servers' containers on this node whose launcher is no longer running."""
    import docker.errors

    removed = []
    for container in client.api.containers(all=True, filters={"label": LAUNCHER_LABEL}):
        launcher = container["Labels"][LAUNCHER_LABEL]
        try:
            alive = client.api.inspect_container(launcher)["State"]["Running"]
        except docker.errors.NotFound:
            alive = False
        if not alive:
            try:
                client.api.remove_container(container["Id"], force=True)
                removed.append(container["Id"][:12])
            except docker.errors.NotFound:
                pass
    return removed


def _remove(container: Any, *, graceful: bool) -> None:
    import docker.errors

    try:
        if graceful:
            container.stop(timeout=_STOP_TIMEOUT)
        container.remove(force=True)
    except docker.errors.NotFound:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
