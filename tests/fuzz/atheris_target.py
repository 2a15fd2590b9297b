"""The coverage-guided fuzz target (atheris, libFuzzer's engine) of the protocol and spaces layers.

Every input is one message for one parser: its first byte picks the parser
(:data:`tests.fuzz.wire_properties.TARGETS`, by index; bit 7 set hands the payload over as
bytes, a binary frame, even when it is UTF-8), the rest is the payload. Each parser must raise
only its documented, typed error, and what it accepts must round-trip
(:mod:`tests.fuzz.wire_properties`); anything else is a crash: libFuzzer saves the input as
``crash-<sha1>`` and exits non-zero.

Run it from the repository root (``make fuzz`` runs it for ten minutes)::

    .venv/bin/python -m tests.fuzz.atheris_target -dict=tests/fuzz/wire.dict \
        -max_total_time=600 /tmp/fuzz-corpus tests/fuzz/corpus

libFuzzer writes the inputs it finds to the first folder and reads the seed corpus
(``tests/fuzz/corpus``, made by :mod:`tests.fuzz.make_corpus` from our own encoders) from the
others. A crash file replays with ``.venv/bin/python -m tests.fuzz.atheris_target crash-...``.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str]) -> None:
    """Run libFuzzer with ``argv`` (its flags, corpus folders, or crash files to replay)."""
    import atheris

    # numpy and gymnasium load before instrumenting: only our own code is measured for coverage.
    import gymnasium  # noqa: F401
    import numpy  # noqa: F401

    with atheris.instrument_imports(include=["openenv_gym"]):
        from .wire_properties import one_input

    atheris.Setup(argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
