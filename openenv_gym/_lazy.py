"""Package re-exports resolved on first use (PEP 562), so importing a package loads none of its modules."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module ``__getattr__`` and ``__dir__``: each name in ``exports`` imports from its module
    (relative to ``package``, e.g. ``".frames"``) on first use, and a submodule not imported yet imports
    when it is first read as an attribute, as it would have if the package had imported it.

    Example::

        __getattr__, __dir__ = lazy_exports(__name__, {"ErrorFrame": ".frames"})
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name], package), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)  # the next read is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
