"""Bridges from openenv-gym environments to other agent frameworks.

Each integration lives in a module of its own and needs its own optional extra, so importing
this package loads nothing: :mod:`openenv_gym.integrations.mcp` serves one env session as an MCP
server over stdio (``pip install 'openenv-gym[mcp]'``; ``openenv-gym mcp TARGET``), and
:mod:`openenv_gym.integrations.trl` gives TRL's ``GRPOTrainer`` an ``environment_factory`` for
tool envs and a ``rollout_func`` for text envs (``pip install 'openenv-gym[trl]'``).
"""

from __future__ import annotations

__all__: list[str] = []
