"""Manifest text the Hub and manifest tests share, and a writer for manifest files."""

from __future__ import annotations

import textwrap
from pathlib import Path

__all__ = ["CARTPOLE", "write"]

CARTPOLE = """\
spec_version: 1
name: cartpole-hub
version: "1.0.0"
description: "CartPole from the Hub, 200 steps"
type: space
runtime: openenv-gym
app: CartPole-v1
port: 8000
gym_id: hubtest/CartPole200-v0
max_episode_steps: 200
reward_threshold: 195.0
image: openenv-gym/runtime:0.1.0
resources:
  memory: 512m
  cpus: 1
"""


def write(tmp_path: Path, text: str, name: str = "openenv.yaml") -> Path:
    """Write ``text`` (dedented) to ``tmp_path / name`` and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path
