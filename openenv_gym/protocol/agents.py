"""Multi-agent sessions: one PettingZoo env, every agent driven by one client (pure, no I/O).

A server of a PettingZoo env serves ``/ws/agents?api=aec`` (or ``api=parallel``, and
``&render_mode=``): one env per connection, made with the API the client asked for. Values
(observations, actions, rewards, infos) travel as :mod:`openenv_gym.protocol.arrays` packs them,
so every array keeps its dtype and shape and every numpy scalar comes back a numpy scalar: a
remote env's trajectory equals the local one's, value for value. A connection that agreed on the
binary subprotocol sends both ways packed; JSON otherwise. Agents are named by strings (they are
the keys of JSON objects)::

    -> {"type":"agents_spec"}
    <- {"type":"agents_spec","data":{"api":"aec","possible_agents":["player_0","player_1"],
        "observation_spaces":{...},"action_spaces":{...},"state_space":null,"metadata":{...},
        "render_mode":null}}
    -> {"type":"agents_reset","data":{"seed":0,"options":null}}
    <- {"type":"agents_result","data":{"agents":[...],"agent_selection":"player_0",
        "rewards":{...},"cumulative_rewards":{...},"terminations":{...},"truncations":{...},
        "infos":{...},"observation":<what observe(agent_selection) gives>}}
    -> {"type":"agents_step","data":{"action":3}}                  (AEC: agent_selection's action)
    -> {"type":"agents_step","data":{"actions":{"piston_0":...}}}  (Parallel: one per live agent)
    <- {"type":"agents_result","data":{"agents":[...],"observations":{...},"rewards":{...},
        "terminations":{...},"truncations":{...},"infos":{...}}}   (Parallel)
    -> {"type":"agents_observe","data":{"agent":"player_1"}}   <- {"type":"agents_value","data":{"value":...}}
    -> {"type":"agents_state"}                                  <- {"type":"agents_value","data":{"value":...}}

``render`` and ``close`` are the ``/ws`` frames. An AEC result carries the observation of the
agent whose turn it is (what ``last()`` needs), so a turn costs one round trip; observing another
agent asks for it. The server checks an action against the acting agent's space before the env
sees it: a bad one is a ``VALIDATION_ERROR`` and the session goes on.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProtocolError
from . import arrays
from ._json import data_object, elide, invalid
from .codes import ErrorCode, MessageType
from .frames import CloseFrame, ErrorFrame, RenderFrame, RenderRequest, parse_server_frame

__all__ = [
    "AGENTS_PATH",
    "APIS",
    "AgentsRequest",
    "AgentsResult",
    "AgentsSpec",
    "AgentsValue",
    "agents_query",
    "parse_agents_client_frame",
    "parse_agents_query",
    "parse_agents_server_frame",
]

#: Where a server of a PettingZoo env opens multi-agent sessions.
AGENTS_PATH = "/ws/agents"
#: PettingZoo's two APIs: turn by turn (AEC), or every live agent at once (Parallel).
APIS = ("aec", "parallel")

#: The keys of a result's per-agent dicts, as they travel.
_AEC_KEYS = ("rewards", "cumulative_rewards", "terminations", "truncations", "infos")
_PARALLEL_KEYS = ("observations", "rewards", "terminations", "truncations", "infos")


def agents_query(api: str, render_mode: str | None = None) -> str:
    """The query string that opens a multi-agent session with ``api``."""
    params = {"api": api}
    if render_mode is not None:
        params["render_mode"] = render_mode
    return urllib.parse.urlencode(params)


def parse_agents_query(query: str) -> tuple[str, str | None]:
    """The API and render mode a ``/ws/agents`` query asks for.

    Raises:
        ProtocolError: VALIDATION_ERROR: no API, or one PettingZoo does not have.
    """
    params = urllib.parse.parse_qs(query)
    api = params.get("api", [""])[0]
    if api not in APIS:
        raise ProtocolError(ErrorCode.VALIDATION_ERROR.value, f"api={api!r}: expected one of {list(APIS)}")
    return api, params.get("render_mode", [None])[0]


def _dumps(frame: dict[str, Any], binary: bool) -> str | bytes:
    return arrays.pack(frame) if binary else arrays.to_json(frame)


@dataclass(frozen=True)
class AgentsRequest:
    """A request on a multi-agent session: ``agents_spec``, ``agents_reset``, ``agents_step``,
    ``agents_observe`` or ``agents_state``, with its data."""

    type: MessageType
    data: dict[str, Any] = field(default_factory=dict)

    def _frame(self) -> dict[str, Any]:
        return {"type": self.type.value, "data": self.data}

    def serialize(self) -> str:
        return arrays.to_json(self._frame())

    def serialize_binary(self) -> bytes:
        return arrays.pack(self._frame())

    def __str__(self) -> str:
        return f"{self.type.value} {elide(self.data)}"


@dataclass(frozen=True)
class AgentsSpec:
    """What the env is: its API, agents, their spaces (JSON, :mod:`openenv_gym.spaces`), metadata."""

    api: str
    possible_agents: list[str]
    observation_spaces: dict[str, Any]
    action_spaces: dict[str, Any]
    metadata: dict[str, Any]
    render_mode: str | None = None
    state_space: dict[str, Any] | None = None

    def serialize(self, binary: bool = False) -> str | bytes:
        return _dumps({"type": MessageType.AGENTS_SPEC.value, "data": self.__dict__}, binary)

    def __str__(self) -> str:
        return f"agents_spec {self.api} {self.possible_agents}"


@dataclass(frozen=True)
class AgentsResult:
    """The env after a reset or a step: ``data`` as the module's docstring shows, per API."""

    data: dict[str, Any]

    def serialize(self, binary: bool = False) -> str | bytes:
        return _dumps({"type": MessageType.AGENTS_RESULT.value, "data": self.data}, binary)

    def check(self, api: str) -> None:
        """Raise :class:`ProtocolError` unless the result has what an ``api`` result must."""
        agents = self.data.get("agents")
        if not isinstance(agents, list) or not all(isinstance(agent, str) for agent in agents):
            raise invalid("agents_result needs data.agents, a list of agent names")
        keys = _AEC_KEYS if api == "aec" else _PARALLEL_KEYS
        for key in keys:
            if key in self.data and not isinstance(self.data[key], dict):
                raise invalid(f"agents_result data.{key} must be an object keyed by agent")
        if api == "aec" and not isinstance(self.data.get("agent_selection"), (str, type(None))):
            raise invalid("agents_result data.agent_selection must be an agent name")

    def __str__(self) -> str:
        return f"agents_result agents={elide(self.data.get('agents'))}"


@dataclass(frozen=True)
class AgentsValue:
    """One value: an agent's observation, or the env's global state."""

    value: Any

    def serialize(self, binary: bool = False) -> str | bytes:
        return _dumps({"type": MessageType.AGENTS_VALUE.value, "data": {"value": self.value}}, binary)

    def __str__(self) -> str:
        return f"agents_value {elide(self.value)}"


def _load(message: str | bytes) -> dict[str, Any]:
    if not isinstance(message, str) and not arrays.is_packed(message):
        raise invalid("a binary frame on a multi-agent session must be a packed message")
    frame = arrays.from_json(message) if isinstance(message, str) else arrays.unpack(message)
    if not isinstance(frame, dict):
        raise invalid(f"a frame must be an object, got {type(frame).__name__}")
    return frame


def _agent_name(data: dict[str, Any], kind: str) -> str:
    agent = data.get("agent")
    if not isinstance(agent, str):
        raise invalid(f"{kind} needs data.agent, an agent's name")
    return agent


def parse_agents_client_frame(message: str | bytes) -> AgentsRequest | RenderRequest | CloseFrame:
    """Parse one message a client sends on a multi-agent session (text, or packed binary).

    Raises:
        ProtocolError: INVALID_JSON, UNKNOWN_TYPE or VALIDATION_ERROR.
    """
    frame = _load(message)
    kind = frame.get("type")
    if kind == MessageType.CLOSE.value:
        return CloseFrame()
    if kind == MessageType.RENDER.value:
        return RenderRequest()
    if kind in (MessageType.AGENTS_SPEC.value, MessageType.AGENTS_STATE.value):
        return AgentsRequest(MessageType(kind))
    data = data_object(frame, str(kind))
    if kind == MessageType.AGENTS_RESET.value:
        seed, options = data.get("seed"), data.get("options")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise invalid("agents_reset seed must be null or an integer")
        if options is not None and not isinstance(options, dict):
            raise invalid("agents_reset options must be null or an object")
        return AgentsRequest(MessageType.AGENTS_RESET, {"seed": seed, "options": options})
    if kind == MessageType.AGENTS_STEP.value:
        if "action" in data:
            return AgentsRequest(MessageType.AGENTS_STEP, {"action": data["action"]})
        actions = data.get("actions")
        if not isinstance(actions, dict):
            raise invalid("agents_step needs data.action (AEC) or data.actions, an object keyed by agent (Parallel)")
        return AgentsRequest(MessageType.AGENTS_STEP, {"actions": actions})
    if kind == MessageType.AGENTS_OBSERVE.value:
        return AgentsRequest(MessageType.AGENTS_OBSERVE, {"agent": _agent_name(data, "agents_observe")})
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE.value,
        f"Unknown message type: {kind} (a multi-agent session takes agents_spec, agents_reset, agents_step, "
        "agents_observe, agents_state, render and close)",
    )


def parse_agents_server_frame(
    message: str | bytes,
) -> AgentsSpec | AgentsResult | AgentsValue | RenderFrame | ErrorFrame:
    """Parse one message a server sends on a multi-agent session.

    Raises:
        ProtocolError: the message is not a well-formed multi-agent, render or error frame.
    """
    frame = _load(message)
    kind = frame.get("type")
    if kind == MessageType.RENDER.value:
        return RenderFrame.from_object(frame)
    if kind == MessageType.ERROR.value and isinstance(message, str):
        parsed = parse_server_frame(message)
        if isinstance(parsed, ErrorFrame):
            return parsed
    if kind not in (MessageType.AGENTS_SPEC.value, MessageType.AGENTS_RESULT.value, MessageType.AGENTS_VALUE.value):
        raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"expected a multi-agent frame, got {kind!r}")
    data = data_object(frame, str(kind))
    if kind == MessageType.AGENTS_VALUE.value:
        if "value" not in data:
            raise invalid("agents_value needs data.value")
        return AgentsValue(data["value"])
    if kind == MessageType.AGENTS_RESULT.value:
        return AgentsResult(data)
    try:
        return AgentsSpec(
            api=data["api"],
            possible_agents=list(data["possible_agents"]),
            observation_spaces=dict(data["observation_spaces"]),
            action_spaces=dict(data["action_spaces"]),
            metadata=dict(data.get("metadata") or {}),
            render_mode=data.get("render_mode"),
            state_space=data.get("state_space"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise invalid(f"agents_spec is missing or has a malformed field: {exc}") from exc
