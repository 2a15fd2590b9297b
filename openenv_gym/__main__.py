"""``python -m openenv_gym``: the same commands as the ``openenv-gym`` console script."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main()
