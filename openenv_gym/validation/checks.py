"""The checks of ``openenv-gym validate``: each takes the running server (a `Subject`) and returns a `CheckResult`.

They run in the order of :data:`CHECKS`, one session at a time (a server that takes one session
at a time is checked too), and each bounds its waits by ``subject.timeout``. Checks of what a
server does not publish are skipped with the reason: an OpenEnv server has no Gymnasium spaces
and says neither its session limit nor its idle timeout.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..client import EnvClient, auth_headers, http_get_json
from ..errors import (
    CapacityReachedError,
    ClientError,
    ConnectionLostError,
    OpenEnvGymError,
    RemoteError,
    UnsupportedSpaceError,
)
from ..manifest import ManifestError, load_manifest
from ..protocol import ErrorCode
from ..protocol.tools import LIST_TOOLS
from ..protocol.urls import tcp_form, unix_socket_path, ws_url
from .openenv_probe import OpenEnvProbe, openenv_core_installed
from .result import CheckResult
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
    "check_spaces_round_trip",
]

#: The seed of the determinism check's two resets.
DETERMINISM_SEED = 7
#: Steps the contract and determinism checks take (fewer when an episode ends first).
STEPS = 10
# Seconds a session slot that another check just gave up may take to be free again: the server
# closes the env after the client sees its connection closed.
_SETTLE = 1.5
T = TypeVar("T")


# --- helpers -----------------------------------------------------------------------------------


def _short(value: Any, limit: int = 80) -> str:
    """``value`` as JSON (or its repr), cut to ``limit`` characters."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _why(exc: BaseException) -> str:
    """An exception in one line: ours by their message, others with their type."""
    text = (str(exc).strip().splitlines() or [""])[0]
    return text if isinstance(exc, OpenEnvGymError) and text else f"{type(exc).__name__}: {text}".rstrip(": ")


def _get(subject: Subject, path: str) -> Any:
    return http_get_json(subject.url, path, timeout=subject.timeout, token=subject.token)


def _client(subject: Subject) -> EnvClient:
    return EnvClient(subject.url, open_timeout=subject.timeout, call_timeout=subject.timeout, token=subject.token)


def _settled(attempt: Callable[[], T]) -> T:
    """``attempt()``, again while the server refuses it at capacity for a moment (a slot being freed)."""
    deadline = time.monotonic() + _SETTLE
    while True:
        try:
            return attempt()
        except CapacityReachedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def _raw_session(subject: Subject) -> Iterator[Any]:
    """A WebSocket to ``/ws`` with nothing of our client in between: the frames as the server sends them."""
    from websockets.sync.client import connect, unix_connect

    options: dict[str, Any] = {
        "open_timeout": subject.timeout,
        "ping_interval": None,  # no traffic of ours while a check waits (the idle check)
        "compression": None,
        "max_size": 100 * 2**20,
        "additional_headers": auth_headers(subject.token),
    }
    url = ws_url(subject.url)
    socket_path = unix_socket_path(url)
    if socket_path is not None:
        with unix_connect(socket_path, tcp_form(url), **options) as connection:
            yield connection
    else:
        with connect(url, proxy=None, **options) as connection:
            yield connection


def _exchange(connection: Any, frame: dict[str, Any], timeout: float) -> Any:
    """Send ``frame``, return the reply decoded (a string when it is not JSON).

    Raises:
        CapacityReachedError: the reply refuses the session at capacity (so :func:`_settled` tries again).
    """
    from websockets.exceptions import ConnectionClosed

    try:
        connection.send(json.dumps(frame))
    except ConnectionClosed:
        pass  # a server refusing the session closes it at once: its reason may still be there to read
    reply = connection.recv(timeout=timeout)
    try:
        decoded = json.loads(reply)
    except (TypeError, ValueError):
        return reply
    data = decoded.get("data") if isinstance(decoded, dict) and decoded.get("type") == "error" else None
    if isinstance(data, dict) and data.get("code") == ErrorCode.CAPACITY_REACHED.value:
        raise CapacityReachedError(ErrorCode.CAPACITY_REACHED.value, str(data.get("message", "")))
    return decoded


@dataclasses.dataclass(frozen=True)
class _Face:
    """How the checks act on a server: through its spaces (published, or mapped from its JSON
    schemas), or, for a tool env without spaces, by listing its tools."""

    spaces: Any  # openenv_gym.env.ServerSpaces, or None for a tool env
    published: bool

    @property
    def tools(self) -> bool:
        return self.spaces is None

    def actions(self, count: int, seed: int = 0) -> list[dict[str, Any]]:
        """``count`` wire actions, sampled from the action space seeded with ``seed`` (a tool env: list_tools)."""
        if self.spaces is None:
            return [dict(LIST_TOOLS)]
        space = self.spaces.action_space
        space.seed(seed)
        return [self.spaces.action_to_wire(space.sample()) for _ in range(count)]


def _face(subject: Subject, schema: Any = None) -> _Face:
    """The subject's face (see :class:`_Face`); raises what reading its spaces raises."""
    from ..env import resolve_spaces
    from ..tool_face import offers_tools

    if schema is None:
        schema = _get(subject, "/schema")
    if isinstance(schema, dict) and offers_tools(schema) and not schema.get("spaces"):
        return _Face(None, published=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fields without a space: the check_env line shows the warning
        spaces = resolve_spaces(
            subject.url, subject.timeout, json_schema_fallback=True, token=subject.token, schema=schema
        )
    return _Face(spaces, published=spaces.published)


# --- the manifest ------------------------------------------------------------------------------


def check_manifest(path: Path) -> CheckResult:
    """The manifest reads and validates, and the Dockerfile beside it (if any) serves its app."""
    name = "manifest"
    try:
        manifest = load_manifest(path)
    except ManifestError as exc:
        return CheckResult.failed(name, str(exc))
    dockerfile = path.parent / "Dockerfile"
    if dockerfile.is_file():
        commands = [line for line in dockerfile.read_text(encoding="utf-8").splitlines() if line.startswith("CMD")]
        if commands and manifest.app not in commands[-1]:
            return CheckResult.failed(
                name, f"the Dockerfile's {commands[-1]!r} does not serve the manifest's app {manifest.app!r}"
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
        answer = _get(subject, "/health")
    except ClientError as exc:
        return CheckResult.failed(name, f"/health: {_why(exc)}")
    if answer != {"status": "healthy"}:
        return CheckResult.failed(name, f'/health answered {_short(answer)}, not {{"status": "healthy"}}')
    return CheckResult.passed(name, '/health: {"status": "healthy"}')


def check_schema(subject: Subject) -> CheckResult:
    """``GET /schema`` holds the action, observation and state JSON schemas (OpenEnv's), and names our extensions."""
    name = "schema"
    try:
        schema = _get(subject, "/schema")
    except ClientError as exc:
        return CheckResult.failed(name, f"/schema: {_why(exc)}")
    if not isinstance(schema, dict):
        return CheckResult.failed(name, f"/schema answered {_short(schema)}, not a JSON object")
    missing = [key for key in ("action", "observation", "state") if not isinstance(schema.get(key), dict)]
    if missing:
        return CheckResult.failed(name, f"/schema has no JSON schema for {', '.join(missing)}")
    extensions = [key for key in ("spaces", "tools", "max_episode_steps", "render", "vector_backends") if key in schema]
    tail = f"; openenv-gym's extensions: {', '.join(extensions)}" if extensions else "; no openenv-gym extensions"
    return CheckResult.passed(name, "action, observation and state JSON schemas" + tail)


def check_metadata(subject: Subject) -> CheckResult:
    """``GET /metadata`` names the env and describes it (what OpenEnv's own validator asks)."""
    name = "metadata"
    try:
        metadata = _get(subject, "/metadata")
    except ClientError as exc:
        return CheckResult.failed(name, f"/metadata: {_why(exc)}")
    if not isinstance(metadata, dict):
        return CheckResult.failed(name, f"/metadata answered {_short(metadata)}, not a JSON object")
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        return CheckResult.failed(name, f"/metadata has no name: {_short(metadata)}")
    if not isinstance(metadata.get("description"), str):
        return CheckResult.failed(
            name, f"/metadata's description is not a string: {_short(metadata.get('description'))}"
        )
    facts = [f"name {metadata['name']!r}"]
    for key in ("target", "max_sessions", "idle_timeout"):
        if key in metadata:
            facts.append(f"{key} {_short(metadata[key], 60)}")
    return CheckResult.passed(name, ", ".join(facts))


def check_endpoint_handshake(subject: Subject) -> CheckResult:
    """A WebSocket handshake on ``/ws`` is accepted."""
    name = "ws handshake"
    try:
        with _raw_session(subject) as connection:
            subprotocol = connection.subprotocol
    except Exception as exc:  # websockets' handshake errors, OSError, TimeoutError
        return CheckResult.failed(name, f"{ws_url(subject.url)}: {_why(exc)}")
    return CheckResult.passed(
        name, f"{ws_url(subject.url)} accepted the handshake (subprotocol {subprotocol or 'none'})"
    )


# --- the spaces --------------------------------------------------------------------------------


def _numbers(value: Any) -> Any:
    """A JSON number, list of numbers or ``"inf"``-style string as floats for numpy; ``None`` if it holds other things."""
    import numpy as np

    def convert(item: Any) -> Any:
        if isinstance(item, list):
            return [convert(part) for part in item]
        if isinstance(item, str):
            return float(item)  # "inf", "-inf", "nan"; anything else raises ValueError
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return item
        raise ValueError(item)

    try:
        return np.asarray(convert(value), dtype=np.float64)
    except (ValueError, TypeError):
        return None


def _describe(space: Any) -> str:
    """A space in a few words: its kind and shape, not its bounds or charset."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return f"Box(shape={space.shape}, {space.dtype})"
    if isinstance(space, spaces.Text):
        return f"Text({space.min_length}..{space.max_length})"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{key}: {_describe(sub)}" for key, sub in space.spaces.items()) + ")"
    if isinstance(space, spaces.Tuple):
        return "Tuple(" + ", ".join(_describe(sub) for sub in space.spaces) + ")"
    return str(space)


def _json_difference(published: Any, again: Any, path: str) -> str | None:
    """Where the JSON a space was published as and the JSON of the space read from it differ in meaning.

    Form does not count: a key left out that reads as its default, an array written out whose
    every item is the same number, ``"float"`` for ``"float64"``. A key that is lost, or a value
    that is read as another one, does.
    """
    import numpy as np

    if isinstance(published, dict) and isinstance(again, dict):
        kind = published.get("type", "space")
        for key, value in published.items():
            if key not in again:
                return f"{path}.{key}: not part of a {kind} description, lost in the round trip"
            difference = _json_difference(value, again[key], f"{path}.{key}")
            if difference is not None:
                return difference
        return None
    if published == again:
        return None
    if path.endswith(".dtype") and isinstance(published, str) and isinstance(again, str):
        try:
            if np.dtype(published) == np.dtype(again):
                return None
        except TypeError:
            pass
    left, right = _numbers(published), _numbers(again)
    if left is not None and right is not None:
        try:
            left, right = np.broadcast_arrays(left, right)
        except ValueError:  # shapes that do not broadcast
            pass
        else:
            if np.array_equal(left, right, equal_nan=True):
                return None
    return f"{path}: published {_short(published, 60)}, read back as {_short(again, 60)}"


def _round_trip(role: str, description: Any) -> tuple[Any, str | None]:
    """The space a description reads as, and what goes wrong in its round trip (``None``: nothing)."""
    from ..spaces import space_from_json, space_to_json

    path = f"spaces.{role}"
    try:
        space = space_from_json(description)
    except Exception as exc:  # any decoding error is the description's
        return None, f"{path} does not read as a space: {_why(exc)}"
    try:
        again = space_to_json(space)
    except Exception as exc:
        return space, f"{path} reads as {space}, which has no JSON form: {_why(exc)}"
    difference = _json_difference(description, again, path)
    if difference is not None:
        return space, difference
    if space_from_json(again) != space:
        return space, f"{path}: {space} written as JSON reads back as another space"
    return space, None


def check_spaces_round_trip(subject: Subject) -> CheckResult:
    """The Gymnasium spaces in ``/schema`` read as spaces whose JSON says the same (and match the manifest's)."""
    from ..spaces import space_from_json
    from ..tool_face import offers_tools

    name = "spaces round trip"
    try:
        schema = _get(subject, "/schema")
    except ClientError as exc:
        return CheckResult.failed(name, f"/schema: {_why(exc)}")
    published = schema.get("spaces") if isinstance(schema, dict) else None
    if not published:
        if offers_tools(schema):
            return CheckResult.skipped(
                name, "a tool env without Gymnasium spaces: its Gymnasium face takes tool calls as text"
            )
        return CheckResult.skipped(
            name,
            "/schema publishes no Gymnasium spaces (OpenEnv's servers publish JSON schemas only): "
            "the Gymnasium face maps them from the JSON schemas",
        )
    if not isinstance(published, dict) or not {"action", "observation"} <= published.keys():
        return CheckResult.failed(name, f"/schema's spaces must hold 'action' and 'observation': {_short(published)}")
    found = {}
    for role in ("action", "observation"):
        space, problem = _round_trip(role, published[role])
        if problem is not None:
            return CheckResult.failed(name, problem)
        found[role] = space
    manifest_spaces = subject.manifest.spaces if subject.manifest is not None else None
    if manifest_spaces:
        for role in ("action", "observation"):
            if space_from_json(manifest_spaces[role]) != found[role]:
                return CheckResult.failed(
                    name,
                    f"openenv.yaml's spaces.{role} is not /schema's: {space_from_json(manifest_spaces[role])} "
                    f"against {found[role]}",
                )
    action, observation = _describe(found["action"]), _describe(found["observation"])
    return CheckResult.passed(name, f"action {action}, observation {observation}: the JSON read back says the same")


# --- Gymnasium ---------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def check_gymnasium(subject: Subject) -> CheckResult:
    """Gymnasium's ``check_env`` passes on the env through openenv-gym's Gymnasium face (``openenv/Remote-v0``)."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    name = "check_env"

    def run() -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env = gym.make(
                "openenv/Remote-v0",
                base_url=subject.url,
                token=subject.token,
                open_timeout=subject.timeout,
                call_timeout=subject.timeout,
            )
            try:
                # The close check would make a second env while this one is open: a server of one
                # session would refuse it.
                check_env(env.unwrapped, skip_render_check=True, skip_close_check=True)
            finally:
                env.close()
        notes = [_ANSI.sub("", str(warning.message)).removeprefix("WARN: ") for warning in caught]
        return list(dict.fromkeys(notes))

    try:
        notes = _settled(run)
    except Exception as exc:  # check_env's AssertionErrors, our errors, the env's
        return CheckResult.failed(name, _why(exc))
    if notes:
        return CheckResult.passed(name, f"passed with {len(notes)} warning(s): {'; '.join(notes)}")
    return CheckResult.passed(name, "passed, no warnings")


def _frame_problem(reply: Any, space: Any, face: _Face) -> str | None:
    """What is wrong with an observation frame, by OpenEnv's wire and our extensions, and against the space."""
    if not isinstance(reply, dict) or "type" not in reply:
        return f"the reply is not a frame: {_short(reply)}"
    data = reply.get("data")
    if reply["type"] == "error":
        error = data if isinstance(data, dict) else {}
        return f"the server answered an error frame: {error.get('code')}: {_short(error.get('message'), 120)}"
    if reply["type"] != "observation" or not isinstance(data, dict):
        return f"expected an observation frame, got {_short(reply)}"
    observation = data.get("observation")
    if not isinstance(observation, dict):
        return f"its observation is {_short(observation)}, not a JSON object"
    reward = data.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        return f"its reward is a {type(reward).__name__} ({_short(reward)}): a reward must be a number (int or float) or null"
    if not isinstance(data.get("done"), bool):
        return f"its done is {_short(data.get('done'))}, not a boolean"
    if "truncated" in data and not isinstance(data["truncated"], bool):
        return f"its truncated is {_short(data['truncated'])}, not a boolean"
    if "info" in data and not isinstance(data["info"], dict):
        return f"its info is {_short(data['info'])}, not a JSON object"
    if face.spaces is None:
        return None
    try:
        value = face.spaces.observation_from_wire(observation)
    except Exception as exc:
        return f"its observation {_short(observation)} does not decode: {_why(exc)}"
    if not space.contains(value):
        from ..spaces import mismatch

        reason = mismatch(space, value)
        return f"its observation {_short(observation)} is not in the observation space {space}" + (
            f": {reason}" if reason and reason != f"not a value of {space}" else ""
        )
    return None


def check_reset_step_contract(subject: Subject) -> CheckResult:
    """Reset and a few steps, as the server sends them: reward a number or null, done and truncated
    booleans, info an object, the observation in the observation space."""
    name = "reset/step contract"
    try:
        face = _face(subject)
    except UnsupportedSpaceError as exc:  # an OpenEnv server's action field with no Gymnasium space
        return CheckResult.skipped(name, f"no action can be sampled: {_why(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no spaces to act in: {_why(exc)}")
    space = face.spaces.observation_space if face.spaces is not None else None
    actions = face.actions(STEPS)

    def run() -> str:
        with _raw_session(subject) as connection:
            reply = _exchange(connection, {"type": "reset", "data": {"seed": 0}}, subject.timeout)
            problem = _frame_problem(reply, space, face)
            if problem is not None:
                raise _Broken(f"reset: {problem}")
            steps = 0
            for action in actions:
                reply = _exchange(connection, {"type": "step", "data": action}, subject.timeout)
                problem = _frame_problem(reply, space, face)
                steps += 1
                if problem is not None:
                    raise _Broken(f"step {steps} ({_short(action, 40)}): {problem}")
                data = reply["data"]
                if data["done"] or data.get("truncated"):
                    return f"reset and {steps} step(s) to the episode's end"
            return "reset and list_tools" if face.tools else f"reset and {steps} steps"

    try:
        done = _settled(run)
    except _Broken as exc:
        return CheckResult.failed(name, str(exc))
    except Exception as exc:
        return CheckResult.failed(name, _why(exc))
    checked = "rewards numbers or null, done and truncated booleans, info objects"
    if face.spaces is not None:
        checked += ", observations in the observation space"
    return CheckResult.passed(name, f"{done}: {checked}")


class _Broken(Exception):
    """A frame that breaks the contract (the message says how)."""


def check_determinism(subject: Subject) -> CheckResult:
    """Two resets with the same seed, and the same actions, give the same trajectory, where the env
    claims it: its manifest or catalog entry does not say ``nondeterministic: true``, and it is
    an openenv-gym server (it publishes spaces or tools) or its manifest says it is deterministic."""
    name = "determinism"
    if subject.nondeterministic:
        return CheckResult.skipped(name, f"{subject.claimed_by} says nondeterministic: true")
    try:
        schema = _get(subject, "/schema")
        face = _face(subject, schema)
    except UnsupportedSpaceError as exc:  # an OpenEnv server's action field with no Gymnasium space
        return CheckResult.skipped(name, f"no action can be sampled: {_why(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no spaces to act in: {_why(exc)}")
    ours = isinstance(schema, dict) and bool(schema.get("spaces") or schema.get("tools"))
    if not ours and subject.nondeterministic is None:
        return CheckResult.skipped(
            name, "an OpenEnv server (no Gymnasium spaces or tools in /schema) makes no claim about seeds"
        )
    actions = [] if face.tools else face.actions(STEPS)

    def episode(client: EnvClient) -> list[tuple[Any, ...]]:
        first = client.reset(seed=DETERMINISM_SEED)
        trajectory: list[tuple[Any, ...]] = [(first.observation,)]
        for action in actions:
            frame = client.step(action)
            trajectory.append((frame.observation, frame.reward, frame.done, frame.truncated))
            if frame.done or frame.truncated:
                break
        return trajectory

    def run() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        with _client(subject) as client:
            return episode(client), episode(client)

    try:
        first, second = _settled(run)
    except Exception as exc:
        return CheckResult.failed(name, f"replaying an episode: {_why(exc)}")
    for index, (one, other) in enumerate(zip(first, second)):
        if one != other:
            if index == 0:
                return CheckResult.failed(
                    name,
                    f"reset(seed={DETERMINISM_SEED}) twice gave different observations, {_short(one[0], 60)} and "
                    f"{_short(other[0], 60)}: reset ignores its seed (or draws from a generator it does not seed)",
                )
            fields = ("observation", "reward", "done", "truncated")
            which = next(field for field, a, b in zip(fields, one, other) if a != b)
            return CheckResult.failed(
                name,
                f"step {index} after reset(seed={DETERMINISM_SEED}) gave another {which} the second time: "
                f"{_short(one[fields.index(which)], 50)} and {_short(other[fields.index(which)], 50)}",
            )
    if len(first) != len(second):
        return CheckResult.failed(
            name, f"the same actions ended one episode after {min(len(first), len(second)) - 1} steps only"
        )
    if face.tools:
        return CheckResult.passed(
            name, f"reset(seed={DETERMINISM_SEED}) twice gave the same observation (a tool env: no actions replayed)"
        )
    return CheckResult.passed(
        name, f"reset(seed={DETERMINISM_SEED}) and the same {len(first) - 1} actions gave the same trajectory twice"
    )


# --- sessions ----------------------------------------------------------------------------------


def _open_one(subject: Subject, clients: list[EnvClient], settle: bool) -> None:
    """Open one more session (connect and reset, so the server surely made its env) and keep it in ``clients``."""

    def attempt() -> EnvClient:
        client = _client(subject)
        try:
            client.reset()
        except BaseException:
            client.close()
            raise
        return client

    clients.append(_settled(attempt) if settle else attempt())


def check_capacity(subject: Subject) -> CheckResult:
    """Sessions up to the server's limit (or a small cap) open at once; one past a known, small limit is
    refused with a ``CAPACITY_REACHED`` error frame."""
    name = "capacity"
    cap, known = subject.capacity_cap, subject.max_sessions
    # Past a known limit within the cap one more session is due to be refused; with no limit
    # published, the cap's worth and one more show whether a refusal comes and how it reads.
    wanted = known if known is not None and known <= cap else cap if known is not None else cap + 1
    clients: list[EnvClient] = []
    try:
        while len(clients) < wanted:
            try:
                _open_one(subject, clients, settle=True)
            except CapacityReachedError as exc:
                opened = len(clients)
                if known is not None:
                    return CheckResult.failed(
                        name, f"session {opened + 1} was refused with max_sessions {known}: {exc.message}"
                    )
                return CheckResult.passed(
                    name,
                    f"{opened} session(s) at once; session {opened + 1} refused with CAPACITY_REACHED: {exc.message}",
                )
        if known is None:
            return CheckResult.passed(
                name, f"{wanted} sessions at once; the server publishes no max_sessions and refused none"
            )
        if known > cap:
            return CheckResult.passed(
                name,
                f"{wanted} sessions at once (max_sessions {known}: a refusal past it is not checked, over the cap of {cap})",
            )
        try:
            _open_one(subject, clients, settle=False)
        except CapacityReachedError as exc:
            return CheckResult.passed(
                name, f"{known} session(s) at once; session {known + 1} refused with CAPACITY_REACHED: {exc.message}"
            )
        return CheckResult.failed(name, f"max_sessions is {known}, and session {known + 1} was accepted too")
    except ConnectionLostError as exc:
        return CheckResult.failed(
            name, f"session {len(clients) + 1} was closed with no CAPACITY_REACHED frame to say why: {_why(exc)}"
        )
    except RemoteError as exc:
        return CheckResult.failed(
            name, f"session {len(clients) + 1} was refused with {exc.code}, not CAPACITY_REACHED: {exc.message}"
        )
    except Exception as exc:
        return CheckResult.failed(name, f"session {len(clients) + 1}: {_why(exc)}")
    finally:
        for client in clients:
            client.close()


def check_idle_timeout(subject: Subject) -> CheckResult:
    """A session left idle is closed after the server's published idle timeout (when it is short enough to wait out)."""
    from websockets.exceptions import ConnectionClosed

    name = "idle timeout"
    idle = subject.idle_timeout
    if idle is None:
        why = (
            "idle sessions are never closed (/metadata: idle_timeout null)"
            if subject.idle_timeout_known
            else ("the server publishes no idle timeout")
        )
        return CheckResult.skipped(name, why)
    if idle > subject.idle_budget:
        return CheckResult.skipped(
            name,
            f"the server closes idle sessions after {idle:g} s, longer than this check waits ({subject.idle_budget:g} s)",
        )
    # Our server looks for idle sessions every idle/4 s (at most 5 s): a close is due within that.
    deadline = idle + min(max(idle / 4, 0.05), 5.0) + 1.0

    def run() -> CheckResult:
        with _raw_session(subject) as connection:
            reply = _exchange(connection, {"type": "reset", "data": {}}, subject.timeout)
            if isinstance(reply, dict) and reply.get("type") == "error":
                return CheckResult.failed(name, f"reset: the server answered an error frame: {_short(reply)}")
            began = time.monotonic()
            try:
                extra = connection.recv(timeout=deadline)
            except TimeoutError:
                return CheckResult.failed(
                    name,
                    f"a session idle for {time.monotonic() - began:.1f} s was still open (idle_timeout {idle:g} s)",
                )
            except ConnectionClosed as exc:
                elapsed = time.monotonic() - began
                if elapsed < idle * 0.9:
                    return CheckResult.failed(
                        name, f"an idle session was closed after {elapsed:.1f} s, before idle_timeout {idle:g} s"
                    )
                rcvd = exc.rcvd
                how = f" (close code {rcvd.code}: {rcvd.reason})" if rcvd is not None else ""
                return CheckResult.passed(
                    name, f"an idle session was closed after {elapsed:.1f} s{how}; idle_timeout {idle:g} s"
                )
            return CheckResult.failed(name, f"an idle session received a frame nobody asked for: {_short(extra)}")

    try:
        return _settled(run)
    except Exception as exc:
        return CheckResult.failed(name, _why(exc))


# --- OpenEnv's client --------------------------------------------------------------------------


def check_openenv_client(subject: Subject, probe: OpenEnvProbe | None = None) -> CheckResult:
    """openenv-core's own ``GenericEnvClient`` connects, resets, steps and reads the state.

    Args:
        probe: a probe started earlier (it imports openenv-core while other checks run); one is
            started and closed here when none is given.
    """
    name = "openenv client"
    if not openenv_core_installed():
        return CheckResult.skipped(name, "openenv-core is not installed (pip install openenv-core)")
    if subject.token is not None:
        return CheckResult.skipped(name, "the server requires a token, which openenv-core's client cannot send")
    try:
        face = _face(subject)
        action = face.actions(1)[0]
    except UnsupportedSpaceError as exc:  # an OpenEnv server's action field with no Gymnasium space
        return CheckResult.skipped(name, f"no action can be sampled: {_why(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no action to send: {_why(exc)}")
    own = probe is None
    probe = probe or OpenEnvProbe()
    try:
        deadline = time.monotonic() + _SETTLE
        while True:
            answer = probe.run(subject.url, action, subject.timeout)
            refused = "CAPACITY_REACHED" in str(answer.get("reason", ""))
            if not refused or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    except Exception as exc:
        return CheckResult.failed(name, _why(exc))
    finally:
        if own:
            probe.close()
    if "missing" in answer:
        return CheckResult.skipped(name, f"openenv-core's client cannot be imported: {answer['missing']}")
    if not answer.get("ok"):
        return CheckResult.failed(
            name, f"openenv-core {answer.get('version', '?')}'s GenericEnvClient: {answer.get('reason')}"
        )
    return CheckResult.passed(
        name,
        f"openenv-core {answer['version']}'s GenericEnvClient: reset, step {_short(action, 40)} (reward "
        f"{answer['reward']}, done {answer['done']}, observation {', '.join(answer['observation_keys']) or 'empty'}), state",
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
    check_capacity,
    check_idle_timeout,
    check_openenv_client,
)
