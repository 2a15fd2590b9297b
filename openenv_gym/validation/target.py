"""What ``openenv-gym validate`` checks: a TARGET resolved (`Target`), and the running server checked (`Subject`).

A TARGET is one of:

- a URL (``http://``, ``https://``, ``ws://``, ``wss://``): a server that is running already, ours or
  OpenEnv's;
- a directory holding an ``openenv.yaml`` (or the manifest itself): its ``app`` is served with
  ``openenv-gym serve``, in that directory, so a package there imports without being installed;
- an id of openenv-gym's catalog (``openenv/CartPole-v1``, or ``CartPole-v1`` for it): its server
  target is served, with the catalog's claims (``nondeterministic``);
- anything else ``openenv-gym serve`` takes: a Gymnasium id or ``module:attr``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..errors import ClientError
from ..manifest import Manifest, load_manifest

__all__ = ["DEFAULT_TIMEOUT", "Subject", "Target", "resolve_target"]

#: Seconds every wait of a check may take: a request, a connection, one reply.
DEFAULT_TIMEOUT = 10.0
_URL_SCHEMES = ("http://", "https://", "ws://", "wss://")
_MANIFEST = "openenv.yaml"


@dataclasses.dataclass(frozen=True)
class Target:
    """A TARGET of ``openenv-gym validate``, resolved.

    Attributes:
        text: the TARGET as given.
        kind: ``"url"``, ``"directory"``, ``"env id"`` (of the catalog) or ``"app"`` (what
            ``openenv-gym serve`` takes).
        url: the running server, for a URL.
        app: what ``openenv-gym serve`` runs, for the others.
        manifest_path: the ``openenv.yaml`` of a directory.
        cwd: the directory its server runs in (a directory's own).
        env_kwargs: keyword arguments for the env (a catalog entry's).
        nondeterministic: what the manifest or the catalog claims about equal seeds; ``None``
            when nothing says.
        claimed_by: who claims it (``"openenv.yaml"``, ``"the catalog entry"``).
    """

    text: str
    kind: str
    url: str | None = None
    app: str | None = None
    manifest_path: Path | None = None
    cwd: Path | None = None
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    nondeterministic: bool | None = None
    claimed_by: str | None = None

    def manifest(self) -> Manifest | None:
        """The target's manifest, if it has one and it reads (the manifest check says why not)."""
        if self.manifest_path is None:
            return None
        try:
            return load_manifest(self.manifest_path)
        except ValueError:  # ManifestError
            return None


def resolve_target(text: str) -> Target:
    """What ``text`` names: a URL, a directory (or its ``openenv.yaml``), a catalog id, or a serve target.

    Nothing is started or imported here but the catalog (and gymnasium, which holds it).

    Raises:
        ValueError: a directory without ``openenv.yaml``, a path to nothing, a manifest that cannot
            be read, or a catalog entry that starts no server of its own (``openenv/Remote-v0``).
    """
    if text.startswith(_URL_SCHEMES):
        return Target(text, "url", url=text)
    path = Path(text)
    if path.is_dir() or path.name == _MANIFEST:
        manifest_path = path / _MANIFEST if path.is_dir() else path
        if not manifest_path.is_file():
            raise ValueError(f"{path} holds no {_MANIFEST}: give a directory of an env (openenv-gym init makes one)")
        manifest = load_manifest(manifest_path)  # ManifestError (a ValueError) says what is wrong
        return Target(
            text,
            "directory",
            app=manifest.app,
            manifest_path=manifest_path,
            cwd=manifest_path.parent.resolve(),
            nondeterministic=manifest.nondeterministic,
            claimed_by=_MANIFEST,
        )
    if text.startswith((".", "/", "~")):
        raise ValueError(f"{text}: no such directory (a directory of an env holds its openenv.yaml)")
    from ..registry import catalog_entry

    entry = catalog_entry(text)
    if entry is None:
        return Target(text, "app", app=text)
    if entry.server is None:
        raise ValueError(f"{entry.id} starts no server of its own: validate the server it attaches to by its URL")
    env_kwargs = entry.kwargs.get("env_kwargs") or {}
    return Target(
        text,
        "env id",
        app=entry.server,
        env_kwargs=dict(env_kwargs),
        nondeterministic=entry.nondeterministic,
        claimed_by=f"the catalog entry {entry.id}",
    )


@dataclasses.dataclass(frozen=True)
class Subject:
    """A running server, and what is known about it, as every check takes it.

    Attributes:
        url: the server's base URL.
        token: the token it requires, if any.
        manifest: the env's manifest, if it has one.
        max_sessions: how many sessions it serves at once, when known (ours publish it in
            ``/metadata``; OpenEnv's say it only when they refuse one).
        idle_timeout: seconds after which it closes an idle session, when known; ``None`` when
            unknown or never (``idle_timeout_known`` tells which).
        idle_timeout_known: whether the server said (``/metadata``'s ``idle_timeout``, even null).
        nondeterministic: what the manifest or the catalog claims about equal seeds (``None``: nothing).
        claimed_by: who claims it.
        timeout: seconds every wait may take.
        capacity_cap: open at most this many sessions (plus the one to be refused) in the capacity check.
        idle_budget: the longest idle timeout the idle check waits out.
    """

    url: str
    token: str | None = dataclasses.field(default=None, repr=False)  # a repr may end up in a log
    manifest: Manifest | None = None
    max_sessions: int | None = None
    idle_timeout: float | None = None
    idle_timeout_known: bool = False
    nondeterministic: bool | None = None
    claimed_by: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    capacity_cap: int = 4
    idle_budget: float = 10.0

    @classmethod
    def of(cls, url: str, target: Target | None = None, **options: Any) -> Subject:
        """The subject at ``url``: what its ``/metadata`` publishes (openenv-gym's limits), and
        what ``target`` claims; ``options`` set the other fields (``token``, ``timeout``, ...)."""
        from ..client import http_get_json

        metadata: Any = None
        try:
            metadata = http_get_json(
                url, "/metadata", timeout=options.get("timeout", DEFAULT_TIMEOUT), token=options.get("token")
            )
        except (ClientError, ValueError):  # the metadata check reports it
            pass
        metadata = metadata if isinstance(metadata, dict) else {}
        max_sessions = metadata.get("max_sessions")
        idle = metadata.get("idle_timeout")
        fields: dict[str, Any] = {
            "max_sessions": max_sessions if isinstance(max_sessions, int) and max_sessions > 0 else None,
            "idle_timeout": float(idle) if isinstance(idle, (int, float)) and idle > 0 else None,
            "idle_timeout_known": "idle_timeout" in metadata,
        }
        if target is not None:
            fields.update(
                manifest=target.manifest(), nondeterministic=target.nondeterministic, claimed_by=target.claimed_by
            )
        return cls(url, **{**fields, **options})
