"""Runs a Python file where a Kubernetes headless Service's name resolves, for the docs' snippet of a
trainer pod that finds its env servers through the Service (docs/scaling.md).

Run as root inside new mount and network namespaces (``unshare --mount --net python -m
tests.headless_service FILE``): loopback comes up; ``/etc/hosts`` is replaced, in this mount
namespace only, by one naming ``cartpole-env`` at every "pod" address (as the Service's DNS
answers with every ready pod); a CartPole server per pod listens on that address and port 8000,
requiring the token in ``OPENENV_GYM_TOKEN`` as the Deployment's pods do. Then FILE runs with the
token in its environment, and its exit status is this script's. Nothing outlives it: the
namespaces go with their last process, and the servers exit when their stdin closes.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from openenv_gym.startup import READY_PREFIX

SERVICE = "cartpole-env"
PODS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
PORT = 8000
STEP_TIMEOUT = 60.0


def main(snippet: str) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=STEP_TIMEOUT)
    # The file may go once it is bound: the mount keeps it until the namespace ends.
    with tempfile.TemporaryDirectory() as folder:
        hosts = Path(folder) / "hosts"
        hosts.write_text("127.0.0.1 localhost\n" + "".join(f"{pod} {SERVICE}\n" for pod in PODS))
        subprocess.run(["mount", "--bind", str(hosts), "/etc/hosts"], check=True, timeout=STEP_TIMEOUT)
    environment = {**os.environ, "OPENENV_GYM_TOKEN": secrets.token_urlsafe(24)}
    serve = [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--port", str(PORT), "--max-sessions", "16"]
    servers = [
        subprocess.Popen(
            [*serve, "--host", pod, "--token-env", "OPENENV_GYM_TOKEN", "--exit-on-stdin-eof"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment,
        )
        for pod in PODS
    ]
    try:
        for server in servers:
            assert server.stdout is not None
            line = server.stdout.readline()  # the server exits, closing it, if it cannot start
            if not line.startswith(READY_PREFIX):
                print(f"a pod's server did not start: {line!r}", file=sys.stderr)
                return 1
        return subprocess.run([sys.executable, snippet], env=environment, timeout=300).returncode
    finally:
        for server in servers:
            assert server.stdin is not None
            server.stdin.close()
        for server in servers:
            server.wait(STEP_TIMEOUT)
            assert server.stdout is not None
            server.stdout.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
