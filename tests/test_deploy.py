"""deploy/kubernetes/env-server.yaml stays true to the code: its args are serve's, its uid the
runtime image's, and the server it describes, started with those args, refuses sessions without
the Secret's token."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from openenv_gym.cli import build_parser
from openenv_gym.client import http_get_json
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.errors import ServerConnectError
from openenv_gym.providers.docker.images import SERVER_UID
from tests.utils import REPO_ROOT, UNIT, free_port, stop_process, wait_until

MANIFEST = REPO_ROOT / "deploy" / "kubernetes" / "env-server.yaml"


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    return {document["kind"]: document for document in yaml.safe_load_all(MANIFEST.read_text())}


def test_the_pods_are_locked_down_and_probed_on_health(documents):
    pod = documents["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == SERVER_UID
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["resources"]["limits"].keys() == {"cpu", "memory"}
    assert {mount["mountPath"] for mount in container["volumeMounts"]} == {"/tmp"}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "ws"}
    labels = documents["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert documents["Service"]["spec"]["clusterIP"] == "None"
    for selector in (
        documents["Service"]["spec"]["selector"],
        documents["NetworkPolicy"]["spec"]["podSelector"]["matchLabels"],
    ):
        assert selector.items() <= labels.items()


def test_the_token_comes_from_the_secret_through_token_env(documents):
    (container,) = documents["Deployment"]["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(["serve", *container["args"]])
    (variable,) = [item for item in container["env"] if item["name"] == args.token_env]
    assert variable["valueFrom"]["secretKeyRef"]["name"] == documents["Secret"]["metadata"]["name"]
    assert args.host == "0.0.0.0" and args.port == container["ports"][0]["containerPort"]


def test_the_server_the_manifest_describes_requires_the_token(documents):
    """Run serve with the manifest's args (bound to loopback here) and its token variable."""
    (container,) = documents["Deployment"]["spec"]["template"]["spec"]["containers"]
    args = list(container["args"])
    port = free_port()
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = str(port)
    token = "a-token-from-the-secret"
    variable = args[args.index("--token-env") + 1]
    server = subprocess.Popen(
        [sys.executable, "-m", "openenv_gym", "serve", *args],
        env={**os.environ, variable: token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            try:
                return http_get_json(url, "/health", timeout=1) == {"status": "healthy"}
            except ServerConnectError:
                return False

        assert wait_until(healthy, 30 * UNIT, interval=0.1)
        refused = EnvClient(url)
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            refused.connect()
        refused.close()
        with EnvClient(url, token=token) as client:
            assert len(client.reset(seed=0).observation["observation"]) == 4  # CartPole
    finally:
        stop_process(server)
