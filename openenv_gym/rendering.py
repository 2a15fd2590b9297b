"""A remote env's rendering: the render modes its server publishes, and the frames it returns.

A ``render_mode`` is one the server publishes (``/schema["render"]``; they are the env's
``metadata["render_modes"]``): the session's env is made in that mode and ``render()`` returns
its frames (RGB arrays as raw bytes). ``"human"`` raises ``ValueError`` (a window would open on
the server; its ``/web`` page shows the env in a browser instead). A server that publishes none
(OpenEnv's) takes any mode, with one warning per process, and ``render()`` raises.

Every env of this package that renders (:class:`~openenv_gym.env.RemoteEnv`, the vector env of
per-env sessions) judges a ``render_mode`` by :func:`render_metadata` and hands out frames by
:func:`own_frame`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["own_frame", "render_metadata"]

_render_warned = False


def render_metadata(schema: Mapping[str, Any], render_mode: str | None, base_url: str) -> dict[str, Any] | None:
    """``metadata`` for a remote env (or vector env of per-env sessions) rendering in
    ``render_mode``: the server's render modes and fps from ``/schema["render"]``.

    Returns ``None`` when the server publishes none (an OpenEnv server): a ``render_mode`` is
    then accepted, with one warning per process (Stable-Baselines3 asks every env for frames),
    and nothing renders.

    Raises:
        ValueError: ``"human"`` (a window would open on the server: the message points to the
            server's ``/web`` page), or a mode the server lacks.
    """
    global _render_warned
    render = schema.get("render") if isinstance(schema, Mapping) else None
    if not isinstance(render, dict):
        render = {}
    modes = list(render.get("modes") or [])
    if render_mode == "human":
        raise ValueError(
            f"render_mode='human' would open a window on the server; watch the env in a browser at "
            f"{base_url.rstrip('/')}/web instead (served on loopback by default, beyond it with `serve --web`; "
            "or use render_mode='rgb_array': render() returns the frames as arrays, "
            "gymnasium.wrappers.RecordVideo records them)"
        )
    if not modes:
        if render_mode is not None and not _render_warned:
            _render_warned = True
            warnings.warn(
                f"openenv-gym: render_mode={render_mode!r} is accepted, but the server at {base_url} publishes no "
                "render modes: render() raises NotImplementedError (said once per process)",
                UserWarning,
                stacklevel=4,
            )
        return None
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode={render_mode!r}: the server at {base_url} renders {modes}")
    return {"render_modes": [mode for mode in modes if mode != "human"], "render_fps": render.get("fps")}


def own_frame(frame: Any) -> Any:
    """A frame the caller may write to (arrays arrive as read-only views of their message)."""
    if isinstance(frame, list):
        return [own_frame(item) for item in frame]
    import numpy as np  # gymnasium imports it anyway

    return np.array(frame) if isinstance(frame, np.ndarray) else frame
