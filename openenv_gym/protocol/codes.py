"""The message types and error codes of the wire protocol, as OpenEnv defines them (and ours)."""

from __future__ import annotations

import enum

__all__ = ["ErrorCode", "MessageType"]


class MessageType(str, enum.Enum):
    """The ``type`` field of a frame."""

    RESET = "reset"
    STEP = "step"
    STATE = "state"
    CLOSE = "close"
    OBSERVATION = "observation"
    ERROR = "error"
    MCP = "mcp"  # an MCP JSON-RPC message, either way
    RENDER = "render"  # ours: the env's frame in the session's render mode, either way
    # Our batch extension (openenv_gym.protocol.batch), served on /ws/batch only.
    BATCH_RESET = "batch_reset"
    BATCH_STEP = "batch_step"
    BATCH_RESULT = "batch_result"
    BATCH_CALL = "batch_call"
    BATCH_VALUES = "batch_values"
    # Opens a batch session of pickled sub-env factories (openenv_gym.protocol.pickled).
    BATCH_MAKE = "batch_make"
    # Vector sessions: one server-side vector env (openenv_gym.protocol.vector).
    VECTOR_RESET = "vector_reset"
    VECTOR_STEP = "vector_step"
    VECTOR_RESULT = "vector_result"
    # A vector session's steps moved to shared memory on one host (openenv_gym.protocol.shm).
    SHM_OPEN = "shm_open"
    SHM_OFFER = "shm_offer"
    # Snapshots of a session's env (openenv_gym.protocol.snapshot): kept, restored, released.
    SNAPSHOT = "snapshot"
    RESTORE = "restore"
    RELEASE = "release"
    # Multi-agent sessions: one PettingZoo env, every agent driven by one client (openenv_gym.protocol.agents).
    AGENTS_SPEC = "agents_spec"
    AGENTS_RESET = "agents_reset"
    AGENTS_STEP = "agents_step"
    AGENTS_OBSERVE = "agents_observe"
    AGENTS_STATE = "agents_state"
    AGENTS_RESULT = "agents_result"
    AGENTS_VALUE = "agents_value"


class ErrorCode(str, enum.Enum):
    """The ``code`` of an error frame, as OpenEnv defines them."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"
    # Ours: a server that takes no pickled factories refused them (openenv_gym.protocol.pickled).
    PICKLES_REFUSED = "PICKLES_REFUSED"
    # Ours: a step or tool call after the episode ended (terminated or truncated), before a reset.
    EPISODE_ENDED = "EPISODE_ENDED"
    # Ours: a frame sent on a watch connection (/web/watch), which can never act on its session.
    READ_ONLY = "READ_ONLY"
    # Ours: this env cannot be snapshotted (the message says why; /schema["snapshot"] said so first).
    SNAPSHOT_UNSUPPORTED = "SNAPSHOT_UNSUPPORTED"
    # Ours: restore or release of an id the server does not keep (released, or its owner closed).
    SNAPSHOT_UNKNOWN = "SNAPSHOT_UNKNOWN"
    # Ours: the session holds as many snapshots, or as many bytes of them, as the server allows.
    SNAPSHOT_LIMIT = "SNAPSHOT_LIMIT"
    # Ours: portable bytes this server did not seal, or sealed for another env.
    SNAPSHOT_REFUSED = "SNAPSHOT_REFUSED"
