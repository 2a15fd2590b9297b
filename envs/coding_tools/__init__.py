"""The CodingTools environment (``openenv/CodingTools-v0``): the Coding tasks, worked through tools.

The code lives with the Coding env (:mod:`openenv_gym.envs.coding.tools_environment`), whose
tasks, sandbox and scoring it shares; this folder holds its own manifest, so the Docker provider
and ``openenv-gym push`` read this env's turn limit and resources, not Coding-v0's.
"""

from __future__ import annotations

from ..coding.tools_environment import CodingToolsEnvironment, CodingToolsObservation

__all__ = ["CodingToolsEnvironment", "CodingToolsObservation"]
