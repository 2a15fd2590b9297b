"""Run under OpenEnv 0.10: a stock ``MCPEnvironment`` whose FastMCP tools echo a message
(``echo_message``, ``echo_with_length``), served by ``create_app`` with uvicorn on port ``argv[1]``:
the tests compare what its ``/mcp`` WebSocket answers with what ours answers."""

from __future__ import annotations

import sys

import uvicorn
from fastmcp import FastMCP
from openenv.core.env_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


def echo_tools() -> FastMCP:
    server = FastMCP("echo")

    @server.tool
    def echo_message(message: str) -> str:
        """Echo back the provided message.

        Args:
            message: The message to echo back
        """
        return message

    @server.tool
    def echo_with_length(message: str) -> dict:
        """Echo back the message with its length.

        Args:
            message: The message to echo back
        """
        return {"message": message, "length": len(message)}

    return server


class EchoToolsEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__(echo_tools())
        self._state = State(step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        self._state = State(episode_id=episode_id, step_count=0)
        return Observation()

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(metadata={"error": f"not a tool call: {type(action).__name__}"})

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    app = create_app(EchoToolsEnvironment, CallToolAction, CallToolObservation, env_name="echo_env")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
