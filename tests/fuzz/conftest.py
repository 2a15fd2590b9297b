"""The hypothesis profile of the fuzz tests: deterministic and bounded, so CI runs the same
examples every time; no deadline (this suite runs on slow, noisy machines) and no example
database (hypothesis still caches the code's constants in ``.hypothesis/``, which git ignores)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci")
