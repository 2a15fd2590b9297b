"""`SeedCheck`: a seeded reset on a server that cannot say it honours seeds is checked once, and refused if not.

openenv-gym's servers refuse a seed their env's reset cannot take (``server/seeding.py``). OpenEnv's
server keeps only the keyword arguments an env's reset takes and drops the rest without a word, and
an env may take a seed and drop it (OpenEnv #1102): nothing in its answer tells a seed honoured from
one ignored. So on a server that is not openenv-gym's (its ``/metadata`` says nothing of its session
limit, as every openenv-gym server's does), a client's first seeded reset is made twice with the same seed,
and Gymnasium's promise is checked: the same seed, the same first observation. Kept, later seeded
resets go once; broken, :class:`~openenv_gym.errors.SeedNotHonouredError`, now and at every later
seeded reset (a reset without a seed goes on). It costs a ``GET /metadata`` and one reset, once per
client (``/schema`` stays read once, by the env); an env whose
first observation is the same whatever the seed passes, as its seeded episodes may still differ later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import SeedNotHonouredError, ServerConnectError
from ..protocol import ObservationFrame
from ._http import http_get_json

__all__ = ["SeedCheck", "metadata_of", "served_by_openenv_gym"]


def metadata_of(address: str, timeout: float, token: str | None) -> Any:
    """The ``/metadata`` of the server at ``address``, or ``None`` if it serves none (then nothing
    says it keeps seeds)."""
    try:
        return http_get_json(address, "/metadata", timeout, token)
    except ServerConnectError:
        return None


def served_by_openenv_gym(metadata: Any) -> bool:
    """Whether a ``/metadata`` is an openenv-gym server's (it says its session limit, our
    extension), which refuses a seed its env cannot take."""
    return isinstance(metadata, Mapping) and "max_sessions" in metadata


class SeedCheck:
    """What a client knows of its server's seeds: not yet checked, kept, or broken (refused from then on)."""

    def __init__(self) -> None:
        self.kept = False
        self.broken = False

    def pending(self, url: str, kwargs: Mapping[str, Any]) -> bool:
        """Whether the reset of ``kwargs`` may need checking: it has a seed, and nothing says yet
        that the server keeps seeds (then :meth:`read` the server's ``/metadata``).

        Raises:
            SeedNotHonouredError: the server broke a seed before; send nothing.
        """
        seed = kwargs.get("seed")
        if seed is None or self.kept:
            return False
        if self.broken:
            raise SeedNotHonouredError(url, seed)
        return True

    def read(self, metadata: Any) -> bool:
        """Take the server's ``/metadata``; whether the pending reset must be checked (it is not
        openenv-gym's)."""
        self.kept = served_by_openenv_gym(metadata)
        return not self.kept

    def judge(self, url: str, seed: Any, first: ObservationFrame, again: ObservationFrame) -> None:
        """Compare the first observations of two resets with ``seed``.

        Raises:
            SeedNotHonouredError: they differ.
        """
        if first.observation != again.observation:
            self.broken = True
            raise SeedNotHonouredError(url, seed)
        self.kept = True
