"""OpenEnv 0.10 capture traces read as trajectories of ``openenv/Harness-v0``.

OpenEnv 0.10's capture proxy sits between a black-box agent and its model and records each model call;
its rollout document (``GET /sessions/{id}/rollout?include_messages=true``, the JSON a trainer reads)
lists the calls under ``"turns"``, each with the request (``request_messages``, ``request_tools``,
``requested_sampling_params``, already in OpenAI chat form whatever dialect the agent spoke) and the
reply (``response_message``). Each call is one step of a harness episode, so a trace becomes the
:class:`~openenv_gym.trajectories.Trajectory` records ``Harness-v0`` writes: the observation the
request read as a chat completions call (:func:`~openenv_gym.protocol.model_calls.read_model_call`),
the action its reply as an assistant message, both as the env's JSON text.

One trajectory per conversation (the proxy's ``root_id``: a harness that runs a title generator
beside its agent, or rewrites its system prompt, starts another root), its calls in arrival order;
calls the proxy discarded (retries that led nowhere) are left out. A trace holds no grade: each
reward is 0, and the record says it came from a capture (``metadata["source"]``). Pure parsing: no
OpenEnv import.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ModelCallError
from .protocol.model_calls import parse_reply, read_model_call
from .trajectories import Trajectory

__all__ = ["HARNESS_ENV_ID", "read_capture_trace"]

HARNESS_ENV_ID = "openenv/Harness-v0"
#: Harness-v0's spaces as data (envs/harness/environment.py's SPACES): Text both ways.
_SPACES = {
    "action": {"type": "Text", "min_length": 0, "max_length": 1024 * 1024, "charset": string.printable},
    "observation": {"type": "Text", "min_length": 0, "max_length": 8 * 1024 * 1024, "charset": string.printable},
}
_SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed")


def read_capture_trace(source: str | Path | Mapping[str, Any]) -> list[Trajectory]:
    """The trajectories a capture trace holds: ``source`` is the rollout document, or a JSON file of it.

    Raises:
        ValueError: the document is not a capture rollout with messages (exported without
            ``include_messages``).
        ModelCallError: a call's request or reply does not read as a model call (the message names it).
    """
    document = _load(source)
    session = str(document.get("session_id") or "")
    conversations: dict[str, list[Mapping[str, Any]]] = {}
    for index, turn in enumerate(document["turns"]):
        if not isinstance(turn, Mapping) or "request_messages" not in turn or "response_message" not in turn:
            raise ValueError(
                f"turns[{index}] has no request_messages/response_message: export the rollout with include_messages"
            )
        if not turn.get("discarded"):
            conversations.setdefault(str(turn.get("root_id") or ""), []).append(turn)
    metadata = document.get("metadata") or {}
    return [
        _trajectory(session, episode, root, turns, metadata)
        for episode, (root, turns) in enumerate(conversations.items())
    ]


def _load(source: str | Path | Mapping[str, Any]) -> Mapping[str, Any]:
    document = source if isinstance(source, Mapping) else json.loads(Path(source).read_text(encoding="utf-8"))
    if not isinstance(document, Mapping) or not isinstance(document.get("turns"), list):
        raise ValueError('a capture trace is the rollout document, an object with a "turns" list')
    return document


def _trajectory(
    session: str, episode: int, root: str, turns: list[Mapping[str, Any]], metadata: Mapping[str, Any]
) -> Trajectory:
    observations: list[Any] = []
    actions: list[Any] = []
    infos: list[dict[str, Any]] = []
    for turn in turns:
        where = f"turn {turn.get('node_id')!r}"
        call = read_model_call("/v1/chat/completions", _request(turn))
        observations.append(_json_text(call.observation))
        infos.append({**call.info(), "capture": _capture_info(turn)})
        message = turn["response_message"]
        try:
            if not isinstance(message, Mapping):
                raise ModelCallError(f"it is {type(message).__name__}")
            reply = parse_reply({key: value for key, value in message.items() if key != "name"})
        except ModelCallError as exc:
            raise ModelCallError(f"{where}: its response_message is no assistant reply ({exc})") from None
        actions.append(_json_text(reply.message()))
    # The agent's call after the last reply is the episode's end, as Harness-v0 gives it: empty text.
    observations.append("")
    infos.append({"end": "captured"})
    return Trajectory(
        env_id=HARNESS_ENV_ID,
        stream=session,
        episode=episode,
        spaces=_SPACES,
        observations=observations,
        actions=actions,
        rewards=[0.0] * len(actions),
        env_rewards=[0.0] * len(actions),
        reward_components=[{} for _ in actions],
        infos=infos,
        terminated=True,
        metadata={"source": "openenv-capture", "session_id": session, "root_id": root, "capture": dict(metadata)},
    )


def _request(turn: Mapping[str, Any]) -> dict[str, Any]:
    """The call as a chat completions body: the proxy keeps its messages, tools and sampling apart."""
    body: dict[str, Any] = {"messages": turn["request_messages"]}
    if turn.get("request_tools"):
        body["tools"] = turn["request_tools"]
    sampling = turn.get("requested_sampling_params") or {}
    body.update({key: sampling[key] for key in _SAMPLING_KEYS if key in sampling})
    return body


def _capture_info(turn: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("node_id", "index", "finish_reason", "harness_session_id", "sampling_params", "sampled_logprobs")
    return {key: turn[key] for key in keys if key in turn}


def _json_text(value: Any) -> str:
    # Harness-v0's form: compact JSON text, its escapes keeping it printable ASCII (a Text space's charset).
    return json.dumps(value, separators=(",", ":"))
