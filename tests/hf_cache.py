"""A Hugging Face cache laid out on disk as ``hf_hub_download`` leaves it, for tests without network.

Set ``HF_HOME`` to the folder and ``HF_HUB_OFFLINE=1`` in a fresh interpreter (huggingface_hub
reads both at import), and the real download path finds these files.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["seed_hf_cache"]

_FOLDERS = {"model": "models", "dataset": "datasets", "space": "spaces"}


def seed_hf_cache(home: Path, repo_type: str, repo_id: str, files: dict[str, dict[str, str]], main: str) -> None:
    """Put ``files`` (commit -> {path in repo: text}) of ``repo_id`` in the cache; ``main`` is the main branch."""
    repo = home / "hub" / f"{_FOLDERS[repo_type]}--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(main)
    for commit, contents in files.items():
        for path, text in contents.items():
            target = repo / "snapshots" / commit / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
