"""`EchoEnvironment`: send a message, get it back with its length; the reward is 0.1 per character.

Wire-compatible with OpenEnv's echo env of the message / echoed_message form::

    -> {"type":"step","data":{"message":"hi"}}
    <- {"type":"observation","data":{"observation":{"echoed_message":"hi","message_length":2},
        "reward":0.2,"done":false,"truncated":false,"info":{}}}

and with OpenEnv's echo tools, ``echo_message`` and ``echo_with_length``, the way its MCP echo env
offers them (``{"type":"call_tool","tool_name":"echo_message","arguments":{"message":"hi"}}``).
"""

from __future__ import annotations

import string
import uuid
from typing import Any

from pydantic import Field

from openenv_gym.server import Action, Environment, EnvironmentMetadata, Observation, State, tool

__all__ = ["MAX_MESSAGE_LENGTH", "EchoAction", "EchoEnvironment", "EchoObservation"]

MAX_MESSAGE_LENGTH = 1024
REWARD_PER_CHARACTER = 0.1
_TEXT = {"type": "Text", "min_length": 0, "max_length": MAX_MESSAGE_LENGTH, "charset": string.printable}


class EchoAction(Action):
    """The message to echo."""

    message: str = Field(max_length=MAX_MESSAGE_LENGTH)


class EchoObservation(Observation):
    """The message as the environment heard it, and its length in characters."""

    echoed_message: str = ""
    message_length: int = 0


# Spaces as data, so the server never imports gymnasium: a Dict of printable Text for the
# action, and the echoed Text plus its length for the observation.
SPACES: dict[str, Any] = {
    "action": {"type": "Dict", "spaces": {"message": _TEXT}},
    "observation": {
        "type": "Dict",
        "spaces": {
            "echoed_message": _TEXT,
            "message_length": {"type": "Discrete", "n": MAX_MESSAGE_LENGTH + 1, "start": 0, "dtype": "int64"},
        },
    },
}


class EchoEnvironment(Environment[EchoAction, EchoObservation, State]):
    """Echoes each message back. Episodes never end on their own."""

    action_type = EchoAction
    observation_type = EchoObservation
    SUPPORTS_CONCURRENT_SESSIONS = True
    blocking = False  # a step is a few microseconds: run it on the event loop

    space_descriptions = SPACES

    def __init__(self) -> None:
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return EchoObservation(reward=0.0)

    def step(self, action: EchoAction) -> EchoObservation:
        self._state.step_count += 1
        message = action.message
        return EchoObservation(
            echoed_message=message, message_length=len(message), reward=len(message) * REWARD_PER_CHARACTER
        )

    @tool
    def echo_message(self, message: str) -> str:
        """Echo back the provided message.

        Args:
            message: The message to echo back
        """
        self._state.step_count += 1
        return message

    @tool
    def echo_with_length(self, message: str) -> dict[str, Any]:
        """Echo back the message with its length.

        Args:
            message: The message to echo back
        """
        self._state.step_count += 1
        return {"message": message, "length": len(message)}

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="echo_env", description="Echoes each message back; reward is 0.1 per character", version="0.1.0"
        )
