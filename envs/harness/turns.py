"""A harness turn as OpenEnv 0.10's ``/harness`` socket runs it: the agent works on a user message,
each of its model calls answered by a model the server's operator named, and what happens is told as
events (:mod:`openenv_gym.protocol.harness_turns`).

This is the other use of a harness env: no policy steps it and nothing is graded. The user's text
is the agent's prompt; the workspace carries over from turn to turn (the next turn's agent starts in a
copy of what the last one left), since the agents here run one task to its end and exit. The turn has
the episode's limits: ``max_calls`` replies and ``time_limit_s`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from openenv_gym.protocol.harness_turns import Model, tool_results, turn_event

from .agent_run import AgentRun

__all__ = ["turn_events"]


def turn_events(run: AgentRun, model: Model, deadline: float, max_calls: int) -> Iterator[dict[str, Any]]:
    """The events of ``run``'s agent working until it exits, or a limit ends the turn; the agent is
    stopped before the last, ``turn_complete`` (``done`` when the agent exited by itself, ``end``
    saying how the turn ended).

    Raises:
        ModelCallError: the model's answer is no reply; whatever ``model`` raises.
    """
    names: dict[str, str] = {}  # each tool call's name by its id, for its result's event
    response, calls, end = "", 0, "agent_exited"
    try:
        while True:
            try:
                pending = run.next_call(deadline)
            except TimeoutError:
                end = "time_limit"
                break
            if pending is None:
                break
            observation = pending.call.observation
            yield from tool_results(observation["messages"], names)
            yield turn_event("llm_request", messages=observation["messages"], model=pending.call.model)
            if calls >= max_calls or time.monotonic() >= deadline:
                end = "call_limit" if calls >= max_calls else "time_limit"
                break
            reply = model(observation)
            run.endpoint.reply(pending, reply)
            calls += 1
            response = reply.content or response
            usage = {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens}
            tool_calls = [call.message_form() for call in reply.tool_calls]
            yield turn_event("llm_response", content=reply.content, usage=usage, tool_calls=tool_calls)
            for call in reply.tool_calls:
                names[call.id] = call.name
                yield turn_event("tool_call", tool_name=call.name, arguments=call.input())
    finally:
        exit_code = run.exit_code
        run.stop_agent()
    yield turn_event(
        "turn_complete", response=response, done=end == "agent_exited", end=end, calls=calls, agent_exit_code=exit_code
    )
