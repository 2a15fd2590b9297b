"""The Echo environment: the wire protocol's reference env, compatible with OpenEnv's echo env."""

from __future__ import annotations

from .environment import EchoAction, EchoEnvironment, EchoObservation

__all__ = ["EchoAction", "EchoEnvironment", "EchoObservation"]
