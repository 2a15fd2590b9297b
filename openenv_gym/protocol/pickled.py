"""Sub-env factories shipped pickled to a batch session, and the rule that lets a server take them (pure, no I/O).

A client that has its own env factories (``RemoteVectorEnv.from_env_fns``) opens
``/ws/batch?envs=K&autoreset_mode=NextStep&factories=pickled`` and sends one ``batch_make``
frame before anything else, holding each sub-env's factory pickled with cloudpickle, in base64::

    -> {"type":"batch_make","data":{"factories":["gASV...", ...],"python":"3.11","first":0,"path":["/home/me/project", ...]}}
    <- {"type":"batch_values","data":{"values":[{"action":{...},"observation":{...}}, ...]}}

The server unpickles and calls each factory, and answers with each sub-env's spaces in their
JSON form (:func:`openenv_gym.spaces.space_to_json`), which the client checks against its own.
``first`` is the index of the session's first sub-env in the client's vector env, so that an
error names the sub-env as the client knows it. ``path`` is the client's ``sys.path`` (its entries
made absolute): the server puts the entries it lacks at the end of its own before it unpickles,
so a factory whose class lives in a module only the client's path holds (a test module, a local
package) is found, as a ``SubprocVecEnv`` worker finds it; an entry that does not exist on the
server's machine is harmless.
From then on the session is an ordinary batch session (:mod:`.batch`). A factory that cannot be
unpickled, raises, or returns no ``gymnasium.Env`` is answered with a ``FACTORY_ERROR`` frame,
and the connection is closed.

Unpickling runs whatever code the pickle names, so a server takes pickles only when it was
started to (:data:`openenv_gym.startup.ACCEPT_FLAG`) **and** requires a token (:func:`check_pickles_allowed`);
otherwise the session is refused with the error code ``PICKLES_REFUSED``. A token-holding client is trusted
with the server's process, as it would be with a shell on that machine.
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
import urllib.parse
from dataclasses import dataclass, field

from .. import startup
from .._lazy import moved_names
from ..errors import ProtocolError
from ._json import data_object, dumps, invalid, load_object
from .batch import AutoresetMode, batch_query
from .codes import ErrorCode, MessageType

__all__ = [
    "FACTORIES_PARAM",
    "PICKLED",
    "BatchMakeFrame",
    "check_pickles_allowed",
    "import_path",
    "names_factories",
    "parse_batch_make",
    "pickled_batch_query",
    "wants_pickled_factories",
]

#: The query parameter, and its one value, that asks for a session of pickled factories.
FACTORIES_PARAM = "factories"
PICKLED = "pickled"
# How a server is started to take pickles is not the wire: the serve flag and target are in
# openenv_gym.startup (deprecated here after 0.1.0, December 2026).
__getattr__ = moved_names(__name__, "openenv_gym.startup", ["ACCEPT_FLAG", "PICKLED_FACTORIES_TARGET"])


def python_version() -> str:
    """This interpreter's ``major.minor``: a pickle is read by the Python version that wrote it."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def import_path() -> list[str]:
    """This interpreter's ``sys.path``, each entry absolute (``""`` is the working directory), for a server to import from."""
    return [os.path.abspath(entry) for entry in sys.path if isinstance(entry, str)]


def pickled_batch_query(envs: int, autoreset_mode: AutoresetMode) -> str:
    """The query string that opens a batch session whose ``envs`` sub-envs come from pickled factories."""
    return f"{batch_query(envs, autoreset_mode)}&{urllib.parse.urlencode({FACTORIES_PARAM: PICKLED})}"


def wants_pickled_factories(query: str) -> bool:
    """Whether a batch session's query asks for pickled factories (``factories=pickled``).

    Raises:
        ProtocolError: VALIDATION_ERROR for another value of ``factories``.
    """
    values = urllib.parse.parse_qs(query).get(FACTORIES_PARAM)
    if values is None:
        return False
    if values != [PICKLED]:
        raise invalid(f"unknown {FACTORIES_PARAM}={values[0]!r}; the one kind of factories is {PICKLED!r}")
    return True


def names_factories(query: str) -> bool:
    """Whether a query names ``factories`` at all, whatever its value (never raises): a server
    takes the token of such a request from its ``Authorization`` header only."""
    return FACTORIES_PARAM in urllib.parse.parse_qs(query, keep_blank_values=True)


def check_pickles_allowed(accepted: bool, token_required: bool) -> None:
    """Refuse pickled factories unless the server was started to take them and requires a token.

    Raises:
        ProtocolError: ``PICKLES_REFUSED``, saying which of the two is missing.
    """
    if not accepted:
        raise ProtocolError(
            ErrorCode.PICKLES_REFUSED.value,
            f"this server does not accept pickled factories: it was started without {startup.ACCEPT_FLAG} "
            "(unpickling runs arbitrary code, so a server takes pickles only when told to, with a token)",
        )
    if not token_required:
        raise ProtocolError(
            ErrorCode.PICKLES_REFUSED.value,
            "this server does not accept pickled factories: it requires no token (start it with --token-env)",
        )


@dataclass(frozen=True)
class BatchMakeFrame:
    """Each sub-env's factory, pickled; the Python version that pickled them; the first sub-env's
    index; the pickling interpreter's import path (:func:`import_path`)."""

    factories: list[bytes]
    python: str
    first: int = 0
    path: list[str] = field(default_factory=list)

    def serialize(self) -> str:
        encoded = [base64.b64encode(factory).decode("ascii") for factory in self.factories]
        data = {"factories": encoded, "python": self.python, "first": self.first, "path": self.path}
        return dumps({"type": MessageType.BATCH_MAKE.value, "data": data})

    def __str__(self) -> str:
        return f"batch_make of {len(self.factories)} factories ({sum(map(len, self.factories))} bytes)"


def parse_batch_make(message: str | bytes, size: int) -> BatchMakeFrame:
    """Parse the ``batch_make`` frame that opens a session of ``size`` pickled sub-env factories.

    Raises:
        ProtocolError: INVALID_JSON, or VALIDATION_ERROR for another frame type, a number of
            factories other than ``size``, or one that is not base64 text.
    """
    frame = load_object(message)
    if frame.get("type") != MessageType.BATCH_MAKE.value:
        raise invalid(f"a session of pickled factories opens with batch_make, got {frame.get('type')!r}")
    data = data_object(frame, MessageType.BATCH_MAKE.value)
    factories, python, first = data.get("factories"), data.get("python"), data.get("first", 0)
    path = data.get("path", [])
    if not isinstance(factories, list) or not all(isinstance(item, str) for item in factories):
        raise invalid("batch_make needs data.factories, a list of base64 strings")
    if len(factories) != size:
        raise invalid(f"batch_make has {len(factories)} factories for {size} sub-envs")
    if not isinstance(python, str):
        raise invalid("batch_make needs data.python, the pickling interpreter's version ('3.11')")
    if not isinstance(first, int) or isinstance(first, bool) or first < 0:
        raise invalid("batch_make data.first must be a non-negative integer (the first sub-env's index)")
    if not isinstance(path, list) or not all(isinstance(entry, str) for entry in path):
        raise invalid("batch_make data.path must be a list of strings (the client's sys.path)")
    try:
        decoded = [base64.b64decode(item, validate=True) for item in factories]
    except (binascii.Error, ValueError) as exc:
        raise invalid(f"batch_make factories must be base64: {exc}") from None
    return BatchMakeFrame(decoded, python, first, path)
