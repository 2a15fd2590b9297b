"""One seed per sub-env, any of them None, on every vector path, as Gymnasium's vector envs take them."""

from __future__ import annotations

from tests.equivalence import assert_same

from .paths import reference_vector


def test_a_seed_per_sub_env_seeds_each_and_none_carries_on(vector_path, servers, closing):
    """reset(seed=[s0, None, s2]) seeds sub-envs 0 and 2 and lets sub-env 1 carry on its generator, as SyncVectorEnv's."""
    envs = closing(vector_path(servers))
    local = closing(reference_vector())
    assert_same(envs.reset(seed=10), local.reset(seed=10), "seeded")
    assert_same(envs.reset(seed=[3, None, 40]), local.reset(seed=[3, None, 40]), "partly seeded")
    assert_same(envs.reset(seed=[7, 7, 7]), local.reset(seed=[7, 7, 7]), "the same seed for each")
