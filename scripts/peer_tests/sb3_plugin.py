"""Stable-Baselines3's own ``tests/test_vec_envs.py`` with :class:`SB3VecEnv` over ``from_env_fns``.

Loaded with ``-p sb3_plugin`` (this folder on ``PYTHONPATH``) while pytest runs SB3's
``tests/test_vec_envs.py`` from SB3's source distribution: the tests are run as they are, with
one more vec env class in their ``VEC_ENV_CLASSES``, :func:`remote_vec_env`:
``SB3VecEnv(RemoteVectorEnv.from_env_fns(env_fns, autoreset_mode="SameStep"))``. ``run.py``
names it in the one line of the test module that lists the classes. See
``scripts/peer_tests/README.md``.
"""

from __future__ import annotations

from typing import Any

from openenv_gym.vector import RemoteVectorEnv
from openenv_gym.wrappers import SB3VecEnv


def remote_vec_env(env_fns: Any, start_method: str | None = None) -> SB3VecEnv:
    """SB3's vec env class signature (``start_method`` is SubprocVecEnv's, and means nothing here)."""
    return SB3VecEnv(RemoteVectorEnv.from_env_fns(env_fns, autoreset_mode="SameStep"))
