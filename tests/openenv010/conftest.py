"""The scripts of this folder run under OpenEnv 0.10's interpreter (see ``__init__.py``): they import
``openenv`` 0.10, which this suite's interpreter has not (openenv-core 0.3's ``openenv`` is older), so
none is collected, not even for its doctests."""

collect_ignore_glob = ["*.py"]
