"""How a server process is started, and what it tells whoever started it: the start-up handshake.

A provider (a child process, a container, a Ray actor) starts ``openenv-gym serve`` and waits
for one line: :data:`READY_PREFIX` and the server's URL once it listens, or
:data:`FAILED_PREFIX` and the ``FACTORY_ERROR`` frame's data as JSON when its environment
cannot be made (written to ``--ready-fd``); on stderr, a container's log, the last line is then
:data:`FAILED_LINE` and the reason. The server reads its token from :data:`TOKEN_ENV_VAR`, never
from its command line (which ``ps`` shows). A server that may take pickled sub-env factories is
started with :data:`ACCEPT_FLAG`, and one that serves nothing else with the target
:data:`PICKLED_FACTORIES_TARGET`.

This is not the wire (:mod:`openenv_gym.protocol`, what travels on a session's connection), and
belongs to no layer: the server writes it, the providers read it, and both import it. Like
:mod:`openenv_gym.errors`, :mod:`openenv_gym.urls` and :mod:`openenv_gym.redaction`, it imports
nothing of the package.
"""

from __future__ import annotations

__all__ = [
    "ACCEPT_FLAG",
    "FAILED_LINE",
    "FAILED_PREFIX",
    "PICKLED_FACTORIES_TARGET",
    "READY_PREFIX",
    "SNAPSHOT_KEY_ENV_VAR",
    "SNAPSHOT_KEY_FILE_FLAG",
    "TOKEN_ENV_VAR",
    "TOKEN_FILE_FLAG",
    "serve_flags",
    "shared_snapshot_key",
]

READY_PREFIX = "openenv-gym server listening on "
FAILED_PREFIX = "openenv-gym server cannot create its environment: "
FAILED_LINE = "openenv-gym serve: cannot create the environment: "
TOKEN_ENV_VAR = "OPENENV_GYM_SERVER_TOKEN"
#: The ``openenv-gym serve`` flag naming a file that holds the token (a Swarm or Kubernetes secret).
TOKEN_FILE_FLAG = "--token-file"
#: Servers sealing portable snapshots with the key this variable holds restore each other's.
SNAPSHOT_KEY_ENV_VAR = "OPENENV_GYM_SNAPSHOT_KEY"
#: The ``openenv-gym serve`` flag naming a file that holds the snapshot key instead (a secret, as
#: the token's; ``/dev/stdin``: a line of the server's standard input, after the token's if both are there).
SNAPSHOT_KEY_FILE_FLAG = "--snapshot-key-file"
_process_snapshot_key: list[str] = []  # drawn once per process, when first needed


def shared_snapshot_key() -> str:
    """The snapshot key for the servers this process starts: ``OPENENV_GYM_SNAPSHOT_KEY`` when set,
    else one drawn for this process. Servers sharing it restore each other's portable snapshots
    (a vector env's servers, a fork's). The key keeps a client from forging a snapshot; whoever
    starts a server runs code in it anyway, so handing its starter's servers one key gives away
    nothing.
    """
    import os
    import secrets

    configured = os.environ.get(SNAPSHOT_KEY_ENV_VAR)
    if configured:
        return configured
    if not _process_snapshot_key:
        _process_snapshot_key.append(secrets.token_hex(32))
    return _process_snapshot_key[0]


#: The ``openenv-gym serve`` flag that lets a server take pickled factories (it needs ``--token-env``).
ACCEPT_FLAG = "--accept-pickled-factories"
#: What a server started only to run pickled factories serves: no environment of its own. No
#: Gymnasium id or module can have this name.
PICKLED_FACTORIES_TARGET = "@pickled-factories"


def serve_flags(
    *,
    max_episode_steps: int | None = -1,
    env_kwargs: dict[str, object] | None = None,
    max_sessions: int | None = None,
    idle_timeout: float | None = None,
    token_from: list[str] | None = None,
    accept_pickled_factories: bool = False,
    snapshot_key_file: str | None = None,
) -> list[str]:
    """The ``openenv-gym serve`` flags every starter passes after its own listening flags.

    Args:
        max_episode_steps: ``-1`` keeps a Gymnasium spec's limit, ``None`` removes it.
        idle_timeout: seconds before an idle session is reaped; ``None``: never.
        token_from: where the server reads its token: ``["--token-env", VAR]`` or
            ``[TOKEN_FILE_FLAG, PATH]``; ``None``: it requires none.
        accept_pickled_factories: add :data:`ACCEPT_FLAG` (it needs a token).
        snapshot_key_file: where the server reads its snapshot key (:data:`SNAPSHOT_KEY_FILE_FLAG`);
            ``None``: from :data:`SNAPSHOT_KEY_ENV_VAR`, or a key of its own.
    """
    import json

    flags = ["--max-episode-steps", "none" if max_episode_steps is None else str(max_episode_steps)]
    if env_kwargs:
        flags += ["--env-kwargs", json.dumps(env_kwargs)]
    if max_sessions is not None:
        flags += ["--max-sessions", str(max_sessions)]
    flags += ["--idle-timeout", "none" if idle_timeout is None else str(idle_timeout)]
    flags += token_from or []
    if accept_pickled_factories:
        flags.append(ACCEPT_FLAG)
    if snapshot_key_file is not None:
        flags += [SNAPSHOT_KEY_FILE_FLAG, snapshot_key_file]
    return flags
