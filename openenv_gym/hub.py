"""Env specs from the Hugging Face Hub: pull a manifest, register a Gymnasium id, publish an env.

    >>> import gymnasium as gym, openenv_gym.hub
    >>> env_id = openenv_gym.hub.register("org/cartpole")      # doctest: +SKIP
    >>> env = gym.make(env_id)                                  # doctest: +SKIP

Only the manifest (``openenv.yaml``) is downloaded, through ``huggingface_hub.hf_hub_download``:
pulls are cached, a revision can be pinned, and a cached manifest is found offline
(``HF_HUB_OFFLINE=1``). How the env then runs is the user's choice (``run=``):

- ``"url"``: the Space's running server (the manifest's ``space_url``);
- ``"docker"``: the manifest's image, through the Docker provider (never pulled);
- ``"process"``: a local server process; it imports the manifest's ``app``, so when that is
  Python code (``module:attr``) it needs ``trust_remote_code=True``, and the package providing it
  must be installed already (nothing is ever installed). A Gymnasium id registered in this
  process (``CartPole-v1``) needs no trust: it is code you installed and registered yourself.

``"auto"`` (the default) takes the first that is possible, in that order: process, docker, url.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from .errors import HubError, ManifestError, TrustRemoteCodeError
from .manifest import Manifest, load_manifest

__all__ = [
    "MANIFEST_FILENAME",
    "SPACE_TOKEN_SECRET",
    "HubError",
    "PushPlan",
    "TrustRemoteCodeError",
    "make_hub_env",
    "make_hub_vector_env",
    "pull",
    "push",
    "push_plan",
    "register",
    "register_manifest",
]

MANIFEST_FILENAME = "openenv.yaml"
#: The Space secret whose value a pushed Space's server requires as its token (Spaces pass secrets
#: to the container as environment variables).
SPACE_TOKEN_SECRET = "OPENENV_GYM_TOKEN"
RepoType = Literal["space", "model", "dataset"]
Run = Literal["auto", "process", "docker", "url"]
_RUNS = ("auto", "process", "docker", "url")
_PROBE_TIMEOUT = 5.0  # seconds the Hub has to answer before a pull with nothing cached gives up (a refused
# connection or an unknown host answers at once; only a network that drops packets waits this long)


def pull(repo_id: str, revision: str | None = None, *, repo_type: RepoType = "space") -> Manifest:
    """Download (or find in the cache) and validate the manifest of ``repo_id``.

    Raises:
        HubError: no such repo, revision or manifest, or offline with nothing cached.
        ManifestError: the manifest does not validate (the message names the field).
    """
    return load_manifest(_download(repo_id, revision, repo_type))


def register(
    repo_id: str,
    revision: str | None = None,
    *,
    repo_type: RepoType = "space",
    run: Run = "auto",
    trust_remote_code: bool = False,
    env_id: str | None = None,
    provider_kwargs: dict[str, Any] | None = None,
) -> str:
    """Pull ``repo_id``'s manifest and register it with Gymnasium; return the id to ``gym.make``.

    Args:
        repo_id: ``"org/name"`` on the Hub.
        revision: a branch, tag or commit to pin (default: the main branch).
        repo_type: where the manifest lives: a Space (default), a model or a dataset repo.
        run: how the env runs (see the module docstring).
        trust_remote_code: allow a local server process to import the manifest's ``app``.
        env_id: register under this id instead of the manifest's ``gym_id``.
        provider_kwargs: options of the provider (for Docker: ``memory``, ``pool``, ...).

    Raises:
        HubError, ManifestError: as for :func:`pull`.
        TrustRemoteCodeError: ``run="process"`` would import code and ``trust_remote_code`` is false.
    """
    manifest = pull(repo_id, revision, repo_type=repo_type)
    return register_manifest(
        manifest,
        run=run,
        trust_remote_code=trust_remote_code,
        env_id=env_id,
        provider_kwargs=provider_kwargs,
        source=f"{repo_id}@{revision or 'main'}",
    )


def register_manifest(
    manifest: Manifest | str | Path,
    *,
    run: Run = "auto",
    trust_remote_code: bool = False,
    env_id: str | None = None,
    provider_kwargs: dict[str, Any] | None = None,
    source: str = "a manifest",
) -> str:
    """Register a manifest (or a path to one) with Gymnasium; return its id. See :func:`register`."""
    from .registry import CatalogEntry
    from .registry import register as register_entry

    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest)
    kwargs = _run_kwargs(manifest, run, trust_remote_code, provider_kwargs or {}, source)
    if manifest.sessions_per_server is not None and "base_url" not in kwargs:
        kwargs["sessions_per_server"] = manifest.sessions_per_server  # how make_vec packs sub-envs
    entry_id = env_id or manifest.default_gym_id()
    register_entry(
        CatalogEntry(
            id=entry_id,
            server=manifest.app,
            max_episode_steps=manifest.max_episode_steps,
            reward_threshold=manifest.reward_threshold,
            nondeterministic=manifest.nondeterministic,
            kwargs=kwargs,
            description=manifest.description or f"{manifest.name} from {source}",
        )
    )
    return entry_id


def make_hub_env(
    repo_id: str,
    revision: str | None = None,
    *,
    repo_type: RepoType = "space",
    run: Run = "auto",
    trust_remote_code: bool = False,
    provider_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``gym.make("openenv/Hub-v0", repo_id=...)``: the env of a Hub manifest, with its time limit."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator
    from gymnasium.wrappers import TimeLimit

    env_id = register(
        repo_id, revision, repo_type=repo_type, run=run, trust_remote_code=trust_remote_code,
        provider_kwargs=provider_kwargs,
    )  # fmt: skip
    spec = gym.spec(env_id)
    # The registered entry point makes the env (gym.make("openenv/Hub-v0") adds the other wrappers).
    entry_point = spec.entry_point
    assert entry_point is not None  # register() always names one
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    env = creator(**{**spec.kwargs, **kwargs})
    assert isinstance(env, gym.Env)  # the catalog's entry point makes a RemoteEnv
    return TimeLimit(env, spec.max_episode_steps) if spec.max_episode_steps else env


def make_hub_vector_env(
    num_envs: int = 1,
    *,
    repo_id: str,
    revision: str | None = None,
    repo_type: RepoType = "space",
    run: Run = "auto",
    trust_remote_code: bool = False,
    provider_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``gym.make_vec("openenv/Hub-v0", num_envs, repo_id=...)``: a RemoteVectorEnv of a Hub manifest."""
    import gymnasium as gym

    env_id = register(
        repo_id, revision, repo_type=repo_type, run=run, trust_remote_code=trust_remote_code,
        provider_kwargs=provider_kwargs,
    )  # fmt: skip
    return gym.make_vec(env_id, num_envs=num_envs, **kwargs)


@dataclasses.dataclass(frozen=True)
class PushPlan:
    """What :func:`push` uploads for an env directory, worked out without the network.

    Attributes:
        env_dir: the directory pushed.
        repo_id: the Space it goes to.
        manifest: the directory's ``openenv.yaml``, validated.
        files: the directory's own files, by their path in the Space (caches and build output
            left out), minus the two generated ones.
        generated: ``README.md`` (Space front matter, then the env's README) and ``Dockerfile``,
            which replace the directory's own.
    """

    env_dir: Path
    repo_id: str
    manifest: Manifest
    files: dict[str, Path]
    generated: dict[str, str]

    def paths(self) -> list[str]:
        """Every path the Space will hold, sorted."""
        return sorted([*self.files, *self.generated])

    def front_matter(self) -> str:
        """The generated README's front matter, ``---`` lines included."""
        readme = self.generated["README.md"]
        return readme[: readme.index("\n---\n", 4) + 5]


# Directories and files of an env directory that are never uploaded: caches and build output.
_NOT_UPLOADED = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv"})


def push_plan(env_dir: str | Path, repo_id: str) -> PushPlan:
    """What :func:`push` would upload for ``env_dir`` (``openenv-gym push --dry-run`` prints it).

    Raises:
        ManifestError: no valid manifest in ``env_dir``.
    """
    env_dir = Path(env_dir)
    manifest = load_manifest(env_dir / MANIFEST_FILENAME)
    generated = {
        "README.md": space_readme(manifest, env_dir),
        "Dockerfile": space_dockerfile(manifest, installs_directory=(env_dir / "pyproject.toml").is_file()),
    }
    files = {
        path.relative_to(env_dir).as_posix(): path
        for path in sorted(env_dir.rglob("*"))
        if path.is_file()
        and not any(part in _NOT_UPLOADED or part.endswith(".egg-info") for part in path.relative_to(env_dir).parts)
    }
    for name in generated:
        files.pop(name, None)
    return PushPlan(env_dir, repo_id, manifest, files, generated)


def push(
    env_dir: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    token: str | None = None,
    api: Any = None,
) -> str:
    """Publish an env directory as a Docker Space; return the Space's URL.

    The directory must hold an ``openenv.yaml``. The upload is the directory plus a ``README.md``
    whose front matter declares a Docker Space (``sdk: docker``, ``app_port``, tag ``openenv``)
    and a ``Dockerfile`` that installs openenv-gym from the index (and the directory itself,
    when it is a Python package with a ``pyproject.toml``) and serves the manifest's ``app`` on
    that port; these two replace the directory's own (its README's text goes into the generated
    one). :func:`push_plan` says what that is, without the network.

    Raises:
        ManifestError: no valid manifest in ``env_dir``.
        HubError: the Hub cannot be reached, or refused the upload (not logged in, no write access).
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    plan = push_plan(env_dir, repo_id)
    api = api or HfApi(token=token)
    action = f"push {plan.env_dir} to the Space {repo_id}"
    with _hub_errors(action, repo_id):
        api.create_repo(repo_id, repo_type="space", space_sdk="docker", private=private, exist_ok=True)
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path)) for name, path in plan.files.items()]
    operations += [
        CommitOperationAdd(path_in_repo=name, path_or_fileobj=content.encode())
        for name, content in plan.generated.items()
    ]
    with _hub_errors(action, repo_id):
        api.create_commit(
            repo_id,
            operations,
            repo_type="space",
            commit_message=f"openenv-gym push {plan.manifest.name} {plan.manifest.version}",
        )
    return f"https://huggingface.co/spaces/{repo_id}"


def space_readme(manifest: Manifest, env_dir: Path) -> str:
    """The Space's README: front matter for a Docker Space, then the env's own README, if any."""
    front = (
        "---\n"
        f"title: {manifest.name}\n"
        "sdk: docker\n"
        f"app_port: {manifest.port}\n"
        "tags:\n  - openenv\n  - openenv-gym\n"
        "---\n\n"
    )
    readme = env_dir / "README.md"
    if readme.is_file():
        body = readme.read_text(encoding="utf-8")
        body = re.sub(r"\A---\n.*?\n---\n+", "", body, flags=re.DOTALL)  # its own front matter goes
    else:
        body = f"# {manifest.name}\n\n{manifest.description}\n"
    return front + body


def space_dockerfile(manifest: Manifest, *, installs_directory: bool = False) -> str:
    """A Dockerfile for the Space: openenv-gym from the index, serving the manifest's app with the
    token of the Space's secret :data:`SPACE_TOKEN_SECRET` (a server without it does not start).

    Args:
        installs_directory: the Space's files are a Python package (a ``pyproject.toml`` at the
            top, as ``openenv-gym init`` makes): copy them in and install them too, so an ``app``
            of that package imports.
    """
    from . import __version__

    packages = " ".join(filter(None, [f"openenv-gym=={__version__}", manifest.package]))
    copy = ""
    if installs_directory:
        copy, packages = "WORKDIR /app\nCOPY . /app\n", f"{packages} /app"
    return (
        "FROM python:3.11-slim\n"
        f"{copy}"
        f"RUN pip install --no-cache-dir {packages}\n"
        "USER 1000\n"
        f"EXPOSE {manifest.port}\n"
        f"# The Space is reachable from anywhere: the server requires the token in the Space's secret {SPACE_TOKEN_SECRET}.\n"
        f'CMD ["python", "-m", "openenv_gym", "serve", "{manifest.app}", "--host", "0.0.0.0", '
        f'"--port", "{manifest.port}", "--token-env", "{SPACE_TOKEN_SECRET}"]\n'
    )


# --- internals ---------------------------------------------------------------------------------


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The exceptions huggingface_hub lets through when a request gets no answer at all.

    Its HTTP client changed across versions (requests, httpx): whichever is loaded counts.
    """
    from huggingface_hub import errors

    found: list[type[BaseException]] = [ConnectionError, TimeoutError, errors.HTTPError]
    requests = sys.modules.get("requests")
    if requests is not None:
        found.append(requests.exceptions.RequestException)
    return tuple(found)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@contextlib.contextmanager
def _hub_errors(action: str, repo_id: str) -> Iterator[None]:
    """Turn huggingface_hub's failures while doing ``action`` into one-line ``HubError`` exceptions."""
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError, OfflineModeIsEnabled

    try:
        yield
    except OfflineModeIsEnabled as exc:
        raise HubError(f"cannot {action}: HF_HUB_OFFLINE is set; unset it to reach the Hub") from exc
    except LocalTokenNotFoundError as exc:
        raise HubError(
            f"cannot {action}: not logged in to the Hub; log in with `hf auth login` or set HF_TOKEN"
        ) from exc
    except HfHubHTTPError as exc:  # the Hub answered, with an error
        status = exc.response.status_code if exc.response is not None else None
        if status in (401, 403):
            raise HubError(
                f"cannot {action}: the Hub refused it (HTTP {status}: not logged in, or the token cannot write "
                f"to {repo_id}); log in with `hf auth login` or set HF_TOKEN to a token with write access"
            ) from exc
        raise HubError(f"cannot {action}: the Hub answered {_first_line(exc)}") from exc
    except _transport_errors() as exc:  # no answer at all
        raise HubError(
            f"cannot {action}: the Hub at {constants.ENDPOINT} cannot be reached ({_first_line(exc)}); "
            "check the network (or HF_ENDPOINT) and try again"
        ) from exc


def _download(repo_id: str, revision: str | None, repo_type: str) -> Path:
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if not re.match(r"^[\w.-]+/[\w.-]+$", repo_id):
        raise HubError(f"expected a repo id like 'org/name', got {repo_id!r}")
    where = f"{repo_type} {repo_id}" + (f" at revision {revision}" if revision else "")
    not_cached = f"{MANIFEST_FILENAME} of {where} is not in the local cache and the Hub"
    if not constants.HF_HUB_OFFLINE and (why := _unreachable(constants.ENDPOINT)) is not None:
        # With nothing cached, huggingface_hub would retry for ~20 s before saying the same.
        try:
            return Path(
                hf_hub_download(
                    repo_id, MANIFEST_FILENAME, repo_type=repo_type, revision=revision, local_files_only=True
                )
            )
        except LocalEntryNotFoundError:
            raise HubError(
                f"{not_cached} at {constants.ENDPOINT} cannot be reached ({why}): check the network (or "
                "HF_ENDPOINT); once pulled while online, HF_HUB_OFFLINE=1 uses the cached copy"
            ) from None
    try:
        return Path(hf_hub_download(repo_id, MANIFEST_FILENAME, repo_type=repo_type, revision=revision))
    except RepositoryNotFoundError:
        raise HubError(f"no {where} on the Hub (or it is private: log in with `hf auth login`)") from None
    except RevisionNotFoundError:
        raise HubError(f"no revision {revision!r} in {repo_type} {repo_id}") from None
    except LocalEntryNotFoundError:  # a subclass of EntryNotFoundError: caught first
        why = "HF_HUB_OFFLINE=1 is set" if constants.HF_HUB_OFFLINE else "offline"
        raise HubError(f"{not_cached} cannot be reached ({why}): pull it once while online") from None
    except EntryNotFoundError:
        raise HubError(f"{where} has no {MANIFEST_FILENAME}: it is not an openenv-gym env") from None


def _unreachable(endpoint: str) -> str | None:
    """Why one quick request to the Hub got no answer, or ``None`` if it answered (with any status)."""
    from huggingface_hub.utils import get_session

    try:
        get_session().head(endpoint, timeout=_PROBE_TIMEOUT)  # its client: the same proxies and certificates
    except _transport_errors() as exc:
        return _first_line(exc)
    return None


def _run_kwargs(
    manifest: Manifest, run: str, trust_remote_code: bool, provider_kwargs: dict[str, Any], source: str
) -> dict[str, Any]:
    """RemoteEnv's keyword arguments for running ``manifest`` the way ``run`` says."""
    if run not in _RUNS:
        raise ValueError(f"run must be one of {_RUNS}, got {run!r}")
    process_ok = trust_remote_code or not manifest.app_is_code
    if run == "auto":
        run = "process" if process_ok else "docker" if manifest.image else "url" if manifest.space_url else ""
        if not run:
            raise TrustRemoteCodeError(
                f"{source} runs {manifest.app!r}, Python code named by a downloaded manifest; it has no "
                "image or space_url to use instead. Pass trust_remote_code=True to import it in a local "
                "process (its package must be installed)."
            )
    if run == "process":
        if not process_ok:
            raise TrustRemoteCodeError(
                f"running {source} in a local process imports {manifest.app!r}, code named by a downloaded "
                "manifest: pass trust_remote_code=True if you trust it (or run='docker' / run='url')"
            )
        return {"provider": "process", "provider_kwargs": provider_kwargs}
    if run == "docker":
        options = manifest.docker_options()
        if "image" not in options:
            raise ManifestError(f"{source} names no image: it cannot run with run='docker'")
        if "security_opt" in options and not trust_remote_code:
            raise TrustRemoteCodeError(
                f"{source} asks to loosen its container's confinement (security_opt "
                f"{options['security_opt']}): pass trust_remote_code=True if you trust it"
            )
        return {"provider": "docker", "provider_kwargs": {**options, **provider_kwargs}}
    if not manifest.space_url:
        raise ManifestError(f"{source} has no space_url: it cannot run with run='url'")
    # The Space may be a server built with OpenEnv itself: then the spaces come from its schemas.
    return {"base_url": manifest.space_url, "json_schema_fallback": True}
