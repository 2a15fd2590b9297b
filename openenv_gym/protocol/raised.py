"""An exception an env raised on its server, in the error frame that answers the call, and rebuilt by
the caller: the one rule every session kind follows (pure, no I/O).

Gymnasium's ``AsyncVectorEnv`` re-raises a worker's exception as its own type, with its message;
a vector env of remote sub-envs does as much from the frame:

* every ``EXECUTION_ERROR`` frame names the exception's type and, where JSON holds them, its
  arguments (:func:`exception_details`); a caller rebuilds an exception of :mod:`builtins` by name
  (the ``Exception`` subclasses there: an allow-list, so no name from the wire runs other code);
* a session whose sub-envs are the caller's own (``from_env_fns``'), which trusts pickles already,
  also carries the type and arguments pickled (:func:`pickled_exception`): any type travels, and
  only a caller that trusts that session unpickles it;
* anything else stays the caller's ``RemoteError``, whose message names the remote type.
"""

from __future__ import annotations

import base64
import builtins
import math
import pickle
from collections.abc import Mapping
from typing import Any

__all__ = ["exception_details", "pickled_exception", "rebuilt"]

TYPE_KEY = "exception_type"
ARGS_KEY = "exception_args"
PICKLED_KEY = "exception"

#: The exceptions a caller rebuilds by name: the builtins that are ``Exception`` subclasses.
BUILTIN_EXCEPTIONS: dict[str, type[Exception]] = {
    name: value for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, Exception)
}


def _is_json_scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)  # NaN and infinity are not JSON
    return value is None or isinstance(value, (str, int, bool))


def exception_details(exc: BaseException) -> dict[str, Any]:
    """The error frame's details that name ``exc``'s type (``module.Name`` unless a builtin) and
    hold its arguments (its text alone, when an argument is not a JSON scalar)."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    args = list(exc.args) if all(_is_json_scalar(arg) for arg in exc.args) else [str(exc)]
    return {TYPE_KEY: name, ARGS_KEY: args}


def pickled_exception(exc: BaseException) -> dict[str, Any]:
    """The details that carry ``exc``'s type and arguments pickled, for a session that trusts pickles
    (none if they do not pickle: the caller then rebuilds it by name, or raises a ``RemoteError``)."""
    try:
        import cloudpickle  # a session that trusts pickles has it

        return {PICKLED_KEY: base64.b64encode(cloudpickle.dumps((type(exc), exc.args))).decode()}
    except Exception:
        return {}


def rebuilt(details: Mapping[str, Any], trusts_pickles: bool) -> BaseException | None:
    """The exception an error frame's ``details`` stand for, as it was raised: from its pickle if the
    caller ``trusts_pickles`` of that session, else a builtin by name; None when neither applies."""
    pickled = details.get(PICKLED_KEY)
    if trusts_pickles and isinstance(pickled, str):
        try:
            cls, args = pickle.loads(base64.b64decode(pickled))  # the caller's own servers: they trust each other
            own = cls(*args)
        except Exception:
            own = None
        if isinstance(own, BaseException):
            return own
    cls = BUILTIN_EXCEPTIONS.get(str(details.get(TYPE_KEY)))
    args = details.get(ARGS_KEY)
    if cls is None or not isinstance(args, list):
        return None
    try:
        return cls(*args)
    except Exception:  # arguments the type does not take (UnicodeDecodeError's five): not rebuilt
        return None
