"""`ChatMessages`: a tool env's observations as the chat so far, for trainers that want messages.

Each observation is a tuple of ``{"role", "content"}`` messages, the shape ``transformers`` chat
templates take: a system message listing the tools, the user's task prompt, then for every step
the assistant's tool call and the tool's result::

    env = ChatMessages(gym.make("openenv/CodingTools-v0"))
    messages, info = env.reset(seed=0)       # (system, user)
    messages, reward, terminated, truncated, info = env.step('{"name": "run_python", ...}')
    # (system, user, assistant, tool)
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces

from openenv_gym.spaces.text import UnicodeText

__all__ = ["DEFAULT_SYSTEM_PROMPT", "ChatMessages", "Message"]

Message = dict[str, str]

#: The system message; ``{tools}`` becomes the tool list in OpenAI function format, as JSON.
DEFAULT_SYSTEM_PROMPT = (
    "You can call the tools below. Reply with exactly one tool call as JSON: "
    '{{"name": <tool name>, "arguments": {{...}}}}.\n\nTools:\n{tools}'
)
ROLES = ("system", "user", "assistant", "tool")


def message_space(max_length: int) -> spaces.Dict:
    """The space of one message: a role and its content."""
    return spaces.Dict(
        {"role": spaces.Text(max(map(len, ROLES)), charset=string.ascii_lowercase), "content": UnicodeText(max_length)}
    )


class ChatMessages(gym.Wrapper[tuple[Message, ...], Any, str, Any]):
    """Turn a tool env's text observations into the chat history (a tuple of messages).

    Args:
        env: a tool env (``info["tools"]`` at reset, text observations).
        system_prompt: the system message, with ``{tools}`` where the tool list goes; ``None``
            leaves the system message out (for chat templates that render ``tools`` themselves:
            pass ``info["tools"]`` to ``apply_chat_template``).
    """

    def __init__(self, env: gym.Env[Any, Any], system_prompt: str | None = DEFAULT_SYSTEM_PROMPT) -> None:
        super().__init__(env)
        self.system_prompt = system_prompt
        length = getattr(env.observation_space, "max_length", UnicodeText().max_length)
        self.observation_space = spaces.Sequence(message_space(length), stack=False)
        self.messages: tuple[Message, ...] = ()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[Message, ...], dict[str, Any]]:
        prompt, info = self.env.reset(seed=seed, options=options)
        messages: list[Message] = []
        if self.system_prompt is not None:
            tools = json.dumps(info.get("tools", []), indent=2, ensure_ascii=False)
            messages.append({"role": "system", "content": self.system_prompt.format(tools=tools)})
        messages.append({"role": "user", "content": str(prompt)})
        self.messages = tuple(messages)
        return self.messages, info

    def step(self, action: str) -> tuple[tuple[Message, ...], SupportsFloat, bool, bool, dict[str, Any]]:
        result, reward, terminated, truncated, info = self.env.step(action)
        call = json.dumps(action, ensure_ascii=False) if isinstance(action, Mapping) else str(action)
        self.messages = (
            *self.messages,
            {"role": "assistant", "content": call},
            {"role": "tool", "content": str(result)},
        )
        return self.messages, reward, terminated, truncated, info
