"""What the Coding envs' reward-hacking tests share: the task they attack and a submitter that drives
Coding-v0 (a step) or CodingTools-v0 (its ``submit`` tool) in a real bubblewrap sandbox.

The task is ``digit-square-sum``: its prompt shows ``digit_square_sum(123)``; the six hidden tests
call it on 0, 7, -45, 1000, 9999 and 10, expecting 0, 49, 41, 1, 324 and 1.
"""

from __future__ import annotations

import json
from typing import Any

from openenv_gym.envs.coding import CodeAction, CodingEnvironment, CodingToolsEnvironment

__all__ = ["HIDDEN_ARGUMENTS", "KINDS", "LIMITS", "TASK", "WRONG", "Submitter", "score"]

TASK = "digit-square-sum"
HIDDEN_ARGUMENTS = (0, 7, -45, 1000, 9999, 10)
WRONG = "def digit_square_sum(n):\n    return -1\n"  # fails every test: the honest value of most attacks
LIMITS = {"wall_time": 5, "cpu_time": 5}
KINDS = ("Coding-v0", "CodingTools-v0")


class Submitter:
    """One Coding env, reset to ``TASK``: ``submit(code)`` gives the reward and the text the agent sees."""

    def __init__(self, kind: str, **kwargs: Any) -> None:
        self.kind = kind
        make = CodingEnvironment if kind == "Coding-v0" else CodingToolsEnvironment
        self.env: Any = make(limits=LIMITS, **kwargs)

    def reset(self) -> None:
        self.env.reset(options={"task_id": TASK})

    def submit(self, code: str) -> tuple[float, str, bool]:
        """The reward, everything the agent is shown of the submission, and whether the episode ended."""
        if self.kind == "Coding-v0":
            observation = self.env.step(CodeAction(code=code))
            shown = observation.model_dump(exclude={"prompt", "info", "metadata"})
            return float(observation.reward), json.dumps(shown), observation.done or observation.truncated
        result = self.env.submit(code)
        return float(result.reward), json.dumps(result.value), result.done or result.truncated

    def close(self) -> None:
        self.env.close()


def score(submitter: Submitter, code: str) -> tuple[float, str]:
    """``code``'s reward and what the agent is shown, as the first submission of a fresh episode."""
    submitter.reset()
    reward, shown, _ = submitter.submit(code)
    return reward, shown
