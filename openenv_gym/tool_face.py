"""The Gymnasium face of a tool env: one tool call as JSON text in, the tool's result as text out.

This is how LLM trainers drive environments (GEM, verifiers, SkyRL: a text action per turn, the
tool list shown to the model in OpenAI's function format), on top of OpenEnv's tool wire:

* ``reset`` returns the task prompt, with ``info["tools"]`` in OpenAI / TRL format;
* ``step('{"name": "add", "arguments": {"a": 1}}')`` (or the same as a dict) calls the tool and
  returns its result's text, the env's reward and ``done`` as ``terminated``; ``info`` carries
  ``tool_name``, the raw ``tool_result`` and, when the call failed, ``error``;
* a malformed call, an unknown tool or bad arguments give an error observation (reward 0, not
  terminated): the model must see its mistake, and the session lives on.

The model's text only ever becomes a tool call, and ``reset`` is no tool (a reserved name): a call
of it is an unknown tool. The task is chosen by whoever calls ``env.reset(seed=, options=)``, the
trainer, never by the model (``docs/tasks.md``).

:class:`ToolFace` is the :class:`~openenv_gym.face.Face` of envs that offer tools; every env of
this package uses it for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

from .errors import ToolCallError
from .face import StepResult, offers_tools, step_result, wants_tool_face
from .protocol import ObservationFrame
from .protocol.tools import LIST_TOOLS, ToolErrorType, call_tool_action, openai_tool, parse_tool_call, result_text
from .spaces.codec import OBSERVATION_FIELD
from .spaces.text import DEFAULT_MAX_TEXT, ToolCallSpace, UnicodeText

__all__ = ["INVALID_TOOL_CALL", "StepResult", "ToolFace", "offers_tools", "wants_tool_face"]

#: ``info["error"]["error_type"]`` of text that is not a tool call (ours: it never reaches a server).
INVALID_TOOL_CALL = "invalid_tool_call"


class _Client(Protocol):
    def reset(self, **kwargs: Any) -> ObservationFrame: ...

    def step(self, action: dict[str, Any]) -> ObservationFrame: ...


def _error_info(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"error_type": kind, "message": message}}


def _error_text(message: str) -> str:
    """What the model reads of an error: the message, said to be one once (OpenEnv's servers
    already begin theirs with "Error calling tool ...")."""
    return message if message[:5].lower() == "error" else f"Error: {message}"


class ToolFace:
    """Tool calls as text actions and tool results as text observations, for one session.

    Args:
        tools: the env's tools as its server lists them (``{"name", "description",
            "input_schema"}``), read once when the env is made: ``info["tools"]`` at every reset.
        max_length: the longest action and observation text.
        read_only_results: give ``info["tool_result"]`` and ``info["metadata"]`` as read-only
            mappings, not dicts: a vector env's info merges dicts key by key, which fails when
            its sub-envs' results differ in shape (a string ``data`` beside an object one).
    """

    def __init__(
        self, tools: list[dict[str, Any]], max_length: int = DEFAULT_MAX_TEXT, *, read_only_results: bool = False
    ) -> None:
        self.tools = tools
        self.read_only_results = read_only_results
        self.action_space = ToolCallSpace([tool["name"] for tool in tools], max_length)
        self.observation_space = UnicodeText(max_length)

    @staticmethod
    def tools_of(frame: ObservationFrame) -> list[dict[str, Any]]:
        """The tools a ``list_tools`` step's observation lists."""
        tools = frame.observation.get("tools")
        if not isinstance(tools, list):
            raise ToolCallError(f"the server answered list_tools without a tool list: {tools!r}")
        return [tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]

    @classmethod
    def list_tools(cls, client: _Client) -> list[dict[str, Any]]:
        """The tools the server lists (a ``list_tools`` step: no reset needed)."""
        return cls.tools_of(client.step(LIST_TOOLS))

    def tool_list_request(self) -> dict[str, Any] | None:
        """The ``list_tools`` action while the face has no tools (an OpenEnv server lists none in ``/schema``)."""
        return None if self.tools else dict(LIST_TOOLS)

    def take_tool_list(self, frame: ObservationFrame) -> None:
        """Take the tools the answer to :meth:`tool_list_request` lists."""
        self.set_tools(self.tools_of(frame))

    def set_tools(self, tools: list[dict[str, Any]]) -> None:
        """Take the tool list a server gave (for a face made before a session could ask)."""
        self.tools = tools
        self.action_space.tool_names = tuple(tool["name"] for tool in tools)

    def _result(self, value: Any) -> Any:
        return MappingProxyType(value) if self.read_only_results and isinstance(value, dict) else value

    def _fit(self, text: str) -> str:
        """``text`` cut to the observation space's length (a server without our result limit may send more)."""
        limit = self.observation_space.max_length
        if len(text) <= limit:
            return text
        marker = f"\n...[cut: {len(text)} characters in all]"
        return text[: limit - len(marker)] + marker

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI / TRL function format."""
        return [openai_tool(tool) for tool in self.tools]

    # The three steps of a call, apart, so that the vector env can send many calls before it reads.

    def to_wire(self, action: str | Mapping[str, Any]) -> dict[str, Any] | StepResult:
        """The ``call_tool`` action to send for ``action``, or the error result to return at once."""
        try:
            name, arguments = parse_tool_call(action)
        except ToolCallError as exc:
            return _error_text(str(exc)), 0.0, False, False, _error_info(INVALID_TOOL_CALL, str(exc))
        return call_tool_action(name, arguments)

    def reset_result(self, frame: ObservationFrame) -> tuple[str, dict[str, Any]]:
        """The prompt and info of a reset's ``frame``: its ``prompt``, else the text an env whose
        observation is one Text sends as ``observation`` (ReasoningGym-v0's question)."""
        metadata = frame.metadata or {}  # the parser moves OpenEnv's, inside the observation, there
        prompt = frame.observation.get("prompt", metadata.get("prompt", frame.observation.get(OBSERVATION_FIELD, "")))
        info = {**frame.info, "tools": self.openai_tools()}
        if metadata:
            info["metadata"] = self._result(metadata)
        return self._fit(prompt if isinstance(prompt, str) else str(prompt)), info

    def step_result(self, frame: ObservationFrame) -> StepResult:
        """The text, reward, flags and info of a call's ``frame``."""
        observation = frame.observation
        result = observation.get("result")
        error = observation.get("error")
        info: dict[str, Any] = {
            **frame.info,
            "tool_name": observation.get("tool_name"),
            "tool_result": self._result(result),
        }
        metadata = frame.metadata
        if metadata:
            info["metadata"] = self._result(metadata)
        if isinstance(error, dict):
            message = str(error.get("message", ""))
            text = _error_text(message)
            info.update(_error_info(str(error.get("error_type", ToolErrorType.EXECUTION_ERROR.value)), message))
        else:
            text = result_text(result if isinstance(result, dict) else None)
            if isinstance(result, dict) and (result.get("is_error") or result.get("isError")):
                info.update(_error_info(ToolErrorType.EXECUTION_ERROR.value, text))
        return step_result(frame, self._fit(text), info)

    def restored_result(self, frame: ObservationFrame) -> tuple[str, dict[str, Any]]:
        """The text and info of the frame a restore answers with: a tool call's result, or the
        reset's prompt when no call came after it."""
        if "tool_name" not in frame.observation:
            return self.reset_result(frame)
        text, *_, info = self.step_result(frame)
        return text, {**info, "tools": self.openai_tools()}

    # One call at a time, for RemoteEnv.

    def reset(self, client: _Client, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Reset the session; the observation is the task prompt, ``info["tools"]`` the tool list."""
        return self.reset_result(client.reset(**kwargs))

    def step(self, client: _Client, action: str | Mapping[str, Any]) -> StepResult:
        """Call the tool ``action`` names; every mistake in the call is an error observation."""
        wire = self.to_wire(action)
        if isinstance(wire, tuple):
            return wire
        return self.step_result(client.step(wire))
