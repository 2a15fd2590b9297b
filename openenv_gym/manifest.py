"""`Manifest`: the ``openenv.yaml`` every env carries, a superset of OpenEnv's.

OpenEnv's fields (``spec_version``, ``name``, ``version``, ``description``, ``type``,
``runtime``, ``app``, ``port``, ``action``, ``observation``) keep their meaning, so OpenEnv's
tools read our manifests. Ours add what a Gymnasium user and the providers need::

    spec_version: 1
    name: cartpole_env
    version: "0.1.0"
    description: "CartPole, served remotely"
    app: CartPole-v1                 # what `openenv-gym serve` runs: a Gymnasium id or module:attr
    port: 8000
    gym_id: openenv/CartPole-v1      # the id it registers as (default: openenv/<name>-v0)
    max_episode_steps: 500
    reward_threshold: 475.0
    reward_range: [0.0, 500.0]
    nondeterministic: false
    spaces: {action: {...}, observation: {...}}   # openenv_gym.spaces' JSON form (else from /schema)
    image: openenv-gym/cartpole:0.1.0              # the Docker image that serves it
    resources: {memory: 512m, cpus: 1, pids: 256}
    network: bridge                  # or none (Unix socket)
    sessions_per_server: 32
    space_url: https://org-cartpole.hf.space
    package: my-envs                 # the pip package that provides `app`, if not a Gymnasium id

A manifest is data: reading one never imports or installs code (see :mod:`openenv_gym.hub`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ManifestError

__all__ = ["Manifest", "ManifestError", "Resources", "load_manifest"]

_GYM_ID = re.compile(r"^(?:[\w:.-]+/)?[\w:.-]+-v\d+$")


class Resources(BaseModel):
    """Container limits an env asks for (the Docker provider's ``memory``, ``cpus``, ...)."""

    model_config = ConfigDict(extra="forbid")

    memory: str | int | None = None
    cpus: float | None = Field(default=None, gt=0)
    pids: int | None = Field(default=None, gt=0)
    open_files: int | None = Field(default=None, gt=0, le=20000)
    scratch: str | None = None


class Manifest(BaseModel):
    """An env's ``openenv.yaml``; unknown keys are kept (OpenEnv may add some)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    # OpenEnv's fields.
    spec_version: int = 1
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][\w.-]*$")
    version: str = "0.1.0"
    description: str = ""
    type: str = "space"
    runtime: str = "openenv-gym"
    app: str = Field(min_length=1)
    port: int = Field(default=8000, ge=1, le=65535)
    action: str | None = None
    observation: str | None = None
    # Ours.
    gym_id: str | None = None
    max_episode_steps: int | None = Field(default=None, gt=0)
    reward_threshold: float | None = None
    reward_range: tuple[float, float] | None = None
    nondeterministic: bool = False
    spaces: dict[str, Any] | None = None
    image: str | None = None
    resources: Resources = Field(default_factory=Resources)
    network: Literal["bridge", "none"] | None = None
    security_opt: list[str] = Field(default_factory=list)
    sessions_per_server: int | None = Field(default=None, gt=0)
    space_url: str | None = Field(default=None, pattern=r"^(https?|wss?)://")
    package: str | None = None

    @field_validator("gym_id")
    @classmethod
    def _gym_id(cls, value: str | None) -> str | None:
        if value is not None and not _GYM_ID.match(value):
            raise ValueError(f"{value!r} is not a Gymnasium id like 'namespace/Name-v0'")
        return value

    @field_validator("spaces")
    @classmethod
    def _spaces(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from .spaces import space_from_json

            missing = {"action", "observation"} - set(value)
            if missing:
                raise ValueError(f"spaces needs both 'action' and 'observation' (missing: {sorted(missing)})")
            for key in ("action", "observation"):
                try:
                    space_from_json(value[key])
                except Exception as exc:  # any decoding error is the manifest's fault
                    raise ValueError(f"spaces.{key} is not a space description: {exc}") from None
        return value

    @property
    def app_is_code(self) -> bool:
        """Whether serving ``app`` imports a module the manifest names.

        Anything with a ``module:`` part does (``pkg.mod:Env``, and also ``pkg.mod:Name-v0``,
        which Gymnasium resolves by importing ``pkg.mod``); only a bare id like ``CartPole-v1``
        names no module.
        """
        return ":" in self.app

    def docker_options(self) -> dict[str, Any]:
        """The Docker provider options this manifest sets: image, resource limits, network, security_opt."""
        options: dict[str, Any] = {
            key: value for key, value in self.resources.model_dump().items() if value is not None
        }
        if self.image:
            options["image"] = self.image
        if self.network:
            options["network"] = self.network
        if self.security_opt:
            options["security_opt"] = list(self.security_opt)
        return options

    def default_gym_id(self) -> str:
        """The id to register when the manifest names none: ``openenv/<Name>-v0``."""
        return self.gym_id or f"openenv/{self.name}-v0"  # the name's pattern already fits an id


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate an ``openenv.yaml``.

    Raises:
        ManifestError: unreadable, not YAML, not a mapping, or a field that does not validate
            (the message names it, e.g. ``max_episode_steps: Input should be greater than 0``).
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path.name} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path.name} must be a mapping of fields, not {type(data).__name__}")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'manifest'}: {error['msg']}" for error in exc.errors()
        )
        raise ManifestError(f"{path.name}: {problems}") from None
