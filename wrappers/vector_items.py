"""One sub-env's part of a vector env's batched values: its observation, action or info."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["info_of", "item_of"]


def item_of(batch: Any, index: int) -> Any:
    """Sub-env ``index``'s part of a batched value (an array, a tuple of them, or dicts of them)."""
    if isinstance(batch, dict):
        return {key: item_of(value, index) for key, value in batch.items()}
    if isinstance(batch, tuple) and not isinstance(batch[0], str):
        return tuple(item_of(value, index) for value in batch)
    return batch[index]


def info_of(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env ``index``'s info out of a vector env's (Gymnasium's ``key``/``_key`` mask layout),
    without the autoreset's ``final_obs``/``final_info``; numpy scalars as Python numbers."""
    found: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        mask = infos.get(f"_{key}")
        if mask is not None and not mask[index]:
            continue
        item = info_of(value, index) if isinstance(value, dict) else value[index]
        found[key] = item.item() if isinstance(item, np.generic) else item
    return found
