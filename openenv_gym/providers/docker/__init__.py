"""The Docker provider: env servers in locked-down containers (:mod:`.provider`), the images they
run, built offline (:mod:`.images`), the labels that name their owners and the reaper of orphans
(:mod:`.owners`), and the warm pool (:mod:`.pool`). The docker SDK loads only when a container is
made or listed."""

from __future__ import annotations

from .images import ImageBuildError
from .provider import DockerProvider, DockerUnavailableError, docker_client

__all__ = ["DockerProvider", "DockerUnavailableError", "ImageBuildError", "docker_client"]
