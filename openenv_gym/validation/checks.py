"""The checks of ``openenv-gym validate``: each takes the running server (a `Subject`) and returns a `CheckResult`.

They run in the order of :data:`CHECKS`, one session at a time (a server that takes one session
at a time is checked too), and each bounds its waits by ``subject.timeout``. Checks of what a
server does not publish are skipped with the reason: an OpenEnv server has no Gymnasium spaces
and says neither its session limit nor its idle timeout. This module holds the manifest's and the
endpoints' checks; :mod:`.space_checks`, :mod:`.episode_checks` and :mod:`.session_checks` the others.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from ..errors import ClientError
from ..manifest import ManifestError, load_manifest
from ..urls import ws_url
from .access import get_json, one_line, raw_session, short
from .episode_checks import (
    DETERMINISM_SEED,
    check_determinism,
    check_gymnasium,
    check_reset_step_contract,
    check_snapshot,
)
from .result import CheckResult
from .session_checks import check_capacity, check_idle_timeout, check_openenv_client
from .space_checks import check_spaces_round_trip
from .target import Subject

__all__ = [
    "CHECKS",
    "DETERMINISM_SEED",
    "check_capacity",
    "check_determinism",
    "check_endpoint_handshake",
    "check_gymnasium",
    "check_health",
    "check_idle_timeout",
    "check_manifest",
    "check_metadata",
    "check_openenv_client",
    "check_reset_step_contract",
    "check_schema",
    "check_snapshot",
    "check_spaces_round_trip",
]


# --- the manifest ------------------------------------------------------------------------------


def _dockerfile_command(text: str) -> list[str] | None:
    """The arguments of a Dockerfile's last ``CMD`` (exec or shell form, continued lines joined)."""
    joined = re.sub(r"\\\n", " ", text)
    commands = [line.strip()[3:].strip() for line in joined.splitlines() if line.strip()[:4].upper() == "CMD "]
    if not commands:
        return None
    try:
        parsed = json.loads(commands[-1])
    except ValueError:
        return shlex.split(commands[-1])
    return [str(item) for item in parsed] if isinstance(parsed, list) else None


def check_manifest(path: Path) -> CheckResult:
    """The manifest reads and validates, and the Dockerfile beside it (if any) serves its app."""
    name = "manifest"
    try:
        manifest = load_manifest(path)
    except ManifestError as exc:
        return CheckResult.failed(name, str(exc))
    dockerfile = path.parent / "Dockerfile"
    if dockerfile.is_file():
        command = _dockerfile_command(dockerfile.read_text(encoding="utf-8"))
        if command is not None and manifest.app not in command:
            return CheckResult.failed(
                name, f"the Dockerfile's CMD {command!r} does not serve the manifest's app {manifest.app!r}"
            )
    facts = [f"{manifest.name} {manifest.version}", f"app {manifest.app}", f"gym_id {manifest.default_gym_id()}"]
    if manifest.max_episode_steps is not None:
        facts.append(f"max_episode_steps {manifest.max_episode_steps}")
    if manifest.image:
        facts.append(f"image {manifest.image}")
    return CheckResult.passed(name, f"{path.name}: " + ", ".join(facts))


# --- the endpoints -----------------------------------------------------------------------------


def check_health(subject: Subject) -> CheckResult:
    """``GET /health`` answers ``{"status": "healthy"}``."""
    name = "health"
    try:
        answer = get_json(subject, "/health")
    except ClientError as exc:
        return CheckResult.failed(name, f"/health: {one_line(exc)}")
    if not isinstance(answer, dict) or answer.get("status") != "healthy":
        return CheckResult.failed(name, f'/health answered {short(answer)}, not {{"status": "healthy"}}')
    return CheckResult.passed(name, '/health: {"status": "healthy"}')


def check_schema(subject: Subject) -> CheckResult:
    """``GET /schema`` holds the action, observation and state JSON schemas (OpenEnv's), and names our extensions."""
    name = "schema"
    try:
        schema = get_json(subject, "/schema")
    except ClientError as exc:
        return CheckResult.failed(name, f"/schema: {one_line(exc)}")
    if not isinstance(schema, dict):
        return CheckResult.failed(name, f"/schema answered {short(schema)}, not a JSON object")
    missing = [key for key in ("action", "observation", "state") if not isinstance(schema.get(key), dict)]
    if missing:
        return CheckResult.failed(name, f"/schema has no JSON schema for {', '.join(missing)}")
    extensions = [
        key
        for key in ("spaces", "tools", "max_episode_steps", "render", "vector_backends", "snapshot")
        if key in schema
    ]
    tail = f"; openenv-gym's extensions: {', '.join(extensions)}" if extensions else "; no openenv-gym extensions"
    return CheckResult.passed(name, "action, observation and state JSON schemas" + tail)


def check_metadata(subject: Subject) -> CheckResult:
    """``GET /metadata`` names the env and describes it (what OpenEnv's own validator asks)."""
    name = "metadata"
    try:
        metadata = get_json(subject, "/metadata")
    except ClientError as exc:
        return CheckResult.failed(name, f"/metadata: {one_line(exc)}")
    if not isinstance(metadata, dict):
        return CheckResult.failed(name, f"/metadata answered {short(metadata)}, not a JSON object")
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        return CheckResult.failed(name, f"/metadata has no name: {short(metadata)}")
    if not isinstance(metadata.get("description"), str):
        return CheckResult.failed(
            name, f"/metadata's description is not a string: {short(metadata.get('description'))}"
        )
    facts = [f"name {metadata['name']!r}"]
    for key in ("target", "max_sessions", "idle_timeout"):
        if key in metadata:
            facts.append(f"{key} {short(metadata[key], 60)}")
    return CheckResult.passed(name, ", ".join(facts))


def check_endpoint_handshake(subject: Subject) -> CheckResult:
    """A WebSocket handshake on ``/ws`` is accepted."""
    name = "ws handshake"
    try:
        with raw_session(subject) as connection:
            subprotocol = connection.subprotocol
    except Exception as exc:  # websockets' handshake errors, OSError, TimeoutError
        return CheckResult.failed(name, f"{ws_url(subject.url)}: {one_line(exc)}")
    return CheckResult.passed(
        name, f"{ws_url(subject.url)} accepted the handshake (subprotocol {subprotocol or 'none'})"
    )


#: The checks of a running server, in the order they run (the manifest's and the start's come first).
CHECKS: tuple[Callable[[Subject], CheckResult], ...] = (
    check_health,
    check_schema,
    check_metadata,
    check_endpoint_handshake,
    check_spaces_round_trip,
    check_gymnasium,
    check_reset_step_contract,
    check_determinism,
    check_snapshot,
    check_capacity,
    check_idle_timeout,
    check_openenv_client,
)
