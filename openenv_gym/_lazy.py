"""Module attributes resolved on first use (PEP 562): a package's lazy re-exports, and names that moved away."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports", "moved_names"]


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


def moved_names(old: str, new: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names that moved from module ``old`` to module ``new``: each still
    resolves to the same object, with a ``DeprecationWarning`` that names its new home.

    Example::

        __getattr__ = moved_names(__name__, "openenv_gym.urls", ["ws_url"])
    """
    moved = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} is deprecated: it moved to {new}.{name} (after 0.1.0, December 2026)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__
