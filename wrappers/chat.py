"""`ChatMessages`: a tool env's observations as the chat so far, for trainers that want messages.

Each observation is a tuple of messages in the shape ``transformers`` chat templates and TRL take:
the user's task prompt, then for every step the assistant's tool call and the tool's result, with
the tools passed beside them (``tools=``)::

    env = ChatMessages(gym.make("openenv/CodingTools-v0"))
    messages, info = env.reset(seed=0)       # (user,)
    messages, reward, terminated, truncated, info = env.step('{"name": "run_python", ...}')
    # (user, assistant with tool_calls, tool)
    text = tokenizer.apply_chat_template(list(messages), tools=env.tools, add_generation_prompt=True)

``tool_format="text"`` gives the older form instead: a system message listing the tools as JSON,
and each call as JSON text in the assistant's content.
"""

from __future__ import annotations

import copy
import enum
import json
import string
from collections.abc import Mapping
from typing import Any, Literal, SupportsFloat, get_args

import gymnasium as gym
from gymnasium import spaces

from openenv_gym.errors import ToolCallError
from openenv_gym.protocol.tools import TOOL_CALL_OPEN, parse_tool_call
from openenv_gym.spaces.text import UnicodeText

__all__ = ["DEFAULT_SYSTEM_PROMPT", "ChatMessages", "ChatSpace", "Message", "ToolFormat"]

Message = dict[str, Any]

#: How a step's call and result are written. ``"structured"``: the assistant's ``tool_calls``
#: (``{"type": "function", "id", "function": {"name", "arguments": {...}}}``), a ``tool`` message
#: with the call's ``name`` and ``tool_call_id``, and the tools for the template's ``tools=``.
#: ``"text"``: the call as JSON in the assistant's content, the tools as JSON in the system message.
ToolFormat = Literal["structured", "text"]

#: The text format's system message; ``{tools}`` becomes the tool list in OpenAI function format, as JSON.
DEFAULT_SYSTEM_PROMPT = (
    "You can call the tools below. Reply with exactly one tool call as JSON: "
    '{{"name": <tool name>, "arguments": {{...}}}}.\n\nTools:\n{tools}'
)
ROLES = ("system", "user", "assistant", "tool")


class _Unset(enum.Enum):
    UNSET = "unset"  # system_prompt not given: the tool format's default


def message_space(max_length: int) -> spaces.Dict:
    """The space of one plain message: a role and its content."""
    return spaces.Dict(
        {"role": spaces.Text(max(map(len, ROLES)), charset=string.ascii_lowercase), "content": UnicodeText(max_length)}
    )


class ChatSpace(spaces.Space[tuple[Message, ...]]):
    """Chats as chat templates take them: tuples of messages with a ``role`` and a ``content`` of at
    most ``max_length`` characters, an assistant's ``tool_calls`` and a tool result's ``name`` and
    ``tool_call_id``. It samples plain role/content messages (a chat without calls)."""

    def __init__(self, max_length: int, seed: int | None = None) -> None:
        self.max_length = max_length
        self._content = UnicodeText(max_length)
        super().__init__(None, None, seed)

    def sample(self, mask: Any = None, probability: Any = None) -> tuple[Message, ...]:
        self._content.seed(int(self.np_random.integers(2**31)))
        count = int(self.np_random.integers(0, 8))
        return tuple(
            {"role": ROLES[int(self.np_random.integers(len(ROLES)))], "content": self._content.sample()}
            for _ in range(count)
        )

    def contains(self, x: Any) -> bool:
        return isinstance(x, tuple) and all(self._is_message(message) for message in x)

    def _is_message(self, message: Any) -> bool:
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            return False
        content = message.get("content")
        if not isinstance(content, str) or len(content) > self.max_length:
            return False
        if message.keys() - {"role", "content", "tool_calls", "name", "tool_call_id"}:
            return False
        if "tool_calls" in message and (message["role"] != "assistant" or not _are_calls(message["tool_calls"])):
            return False
        named = {"name", "tool_call_id"} & message.keys()
        return not named or (message["role"] == "tool" and all(isinstance(message[key], str) for key in named))

    def __repr__(self) -> str:
        return f"ChatSpace({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatSpace) and other.max_length == self.max_length


def _are_calls(calls: Any) -> bool:
    return isinstance(calls, list) and all(
        isinstance(call, Mapping)
        and call.get("type") == "function"
        and isinstance(call.get("id"), str)
        and isinstance(call.get("function"), Mapping)
        and isinstance(call["function"].get("name"), str)
        and isinstance(call["function"].get("arguments"), dict)
        for call in calls
    )


class ChatMessages(gym.Wrapper[tuple[Message, ...], Any, str | Mapping[str, Any], Any]):
    """Turn a tool env's text observations into the chat history (a tuple of messages).

    Args:
        env: a tool env (``info["tools"]`` at reset, text observations).
        system_prompt: the system message, with ``{tools}`` where the tool list goes (as JSON);
            ``None`` leaves it out. By default the structured format has none (a chat template
            renders ``tools=`` itself) and the text format has :data:`DEFAULT_SYSTEM_PROMPT`.
        tool_format: how calls and results are written (:data:`ToolFormat`).
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        system_prompt: str | _Unset | None = _Unset.UNSET,
        *,
        tool_format: ToolFormat = "structured",
    ) -> None:
        super().__init__(env)
        if tool_format not in get_args(ToolFormat):
            raise ValueError(f"tool_format={tool_format!r}: expected one of {get_args(ToolFormat)}")
        self.tool_format = tool_format
        if isinstance(system_prompt, _Unset):
            system_prompt = DEFAULT_SYSTEM_PROMPT if tool_format == "text" else None
        self.system_prompt = system_prompt
        length = getattr(env.observation_space, "max_length", UnicodeText().max_length)
        if tool_format == "text":
            self.observation_space = spaces.Sequence(message_space(length), stack=False)
        else:
            self.observation_space = ChatSpace(length)
        self.messages: tuple[Message, ...] = ()
        #: The env's tools in OpenAI function format (as of the last reset), for a template's ``tools=``.
        self.tools: list[dict[str, Any]] = []
        self._calls = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[Message, ...], dict[str, Any]]:
        prompt, info = self.env.reset(seed=seed, options=options)
        self.tools = list(info.get("tools", []))
        self._calls = 0
        messages: list[Message] = []
        if self.system_prompt is not None:
            tools = json.dumps(self.tools, indent=2, ensure_ascii=False)
            messages.append({"role": "system", "content": self.system_prompt.format(tools=tools)})
        messages.append({"role": "user", "content": str(prompt)})
        self.messages = tuple(messages)
        return self.messages, info

    def step(
        self, action: str | Mapping[str, Any]
    ) -> tuple[tuple[Message, ...], SupportsFloat, bool, bool, dict[str, Any]]:
        result, reward, terminated, truncated, info = self.env.step(action)
        turn = self._text_turn(action, str(result)) if self.tool_format == "text" else self._turn(action, str(result))
        self.messages = (*self.messages, *turn)
        return self.messages, reward, terminated, truncated, info

    def _turn(self, action: str | Mapping[str, Any], result: str) -> tuple[Message, Message]:
        """The structured call and its result; text that is no call stays the assistant's text."""
        try:
            name, arguments = parse_tool_call(action)
        except ToolCallError:  # the env answered with an error the model must read
            return {"role": "assistant", "content": _as_text(action)}, {"role": "tool", "content": result}
        call_id = f"call_{self._calls}"
        self._calls += 1
        # A completion's words before its <tool_call> stay what the assistant said.
        said = (
            action.split(TOOL_CALL_OPEN, 1)[0].strip() if isinstance(action, str) and TOOL_CALL_OPEN in action else ""
        )
        function = {"name": name, "arguments": copy.deepcopy(arguments)}
        return (
            {
                "role": "assistant",
                "content": said,
                "tool_calls": [{"type": "function", "id": call_id, "function": function}],
            },
            {"role": "tool", "name": name, "tool_call_id": call_id, "content": result},
        )

    @staticmethod
    def _text_turn(action: str | Mapping[str, Any], result: str) -> tuple[Message, Message]:
        return {"role": "assistant", "content": _as_text(action)}, {"role": "tool", "content": result}


def _as_text(action: str | Mapping[str, Any]) -> str:
    return json.dumps(action, ensure_ascii=False) if isinstance(action, Mapping) else str(action)
