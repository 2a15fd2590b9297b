"""What a server process tells whoever started it, and how: the lines of its start-up report.

A provider (a child process, a container, a Ray actor) starts ``openenv-gym serve`` and waits
for one line: :data:`READY_PREFIX` and the server's URL once it listens, or
:data:`FAILED_PREFIX` and the ``FACTORY_ERROR`` frame's data as JSON when its environment
cannot be made (written to ``--ready-fd``); on stderr, a container's log, the last line is then
:data:`FAILED_LINE` and the reason. The server reads its token from :data:`TOKEN_ENV_VAR`, never
from its command line (which ``ps`` shows).
"""

from __future__ import annotations

__all__ = ["FAILED_LINE", "FAILED_PREFIX", "READY_PREFIX", "TOKEN_ENV_VAR"]

READY_PREFIX = "openenv-gym server listening on "
FAILED_PREFIX = "openenv-gym server cannot create its environment: "
FAILED_LINE = "openenv-gym serve: cannot create the environment: "
TOKEN_ENV_VAR = "OPENENV_GYM_SERVER_TOKEN"
