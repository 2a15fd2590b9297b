"""ServerOptions and ServedEnv: the server's options declared once, and what it serves said explicitly."""

import dataclasses

import pytest

from openenv_gym.cli import build_parser
from openenv_gym.server import EnvServer
from openenv_gym.server.options import COMMAND_LINE, PYTHON, ServerOptions, ServerTimeouts
from openenv_gym.server.served_env import ServedEnv
from tests.testing_env import CounterEnvironment


def _serve_parser():
    commands = next(action for action in build_parser()._actions if action.dest == "command")
    return commands.choices["serve"]


def test_every_flagged_option_is_a_serve_flag_with_its_default():
    """`serve`'s flags are derived from the declaration: each flagged field is one, with the same default."""
    defaults = build_parser().parse_args(["serve", "X"])
    flags = {option for action in _serve_parser()._actions for option in action.option_strings}
    for field in dataclasses.fields(ServerOptions):
        flagged = field.metadata["option"].flag
        assert (f"--{field.name.replace('_', '-')}" in flags) == flagged, field.name
        if flagged:
            assert getattr(defaults, field.name) == field.default, field.name


def test_one_rule_is_worded_for_each_surface():
    """The same rule refuses the same options, naming EnvServer's arguments or serve's flags."""
    options = ServerOptions(accept_pickled_factories=True)
    assert options.problem(PYTHON).startswith("accept_pickled_factories needs a token")
    assert options.problem(COMMAND_LINE).startswith("--accept-pickled-factories needs --token-env VAR")
    assert ServerOptions(max_sessions=0).problem(COMMAND_LINE) == "--max-sessions must be at least 1, got 0"
    assert ServerOptions().problem() is None


def test_env_server_takes_options_and_keywords_alike():
    """EnvServer(options=...) and its keyword arguments set the same things; keywords win."""
    options = ServerOptions(idle_timeout=5.0, send_timeout=None)
    server = EnvServer(CounterEnvironment, options=options, handshake_timeout=2.0)
    assert server.timeouts == ServerTimeouts(idle=5.0, handshake=2.0, send=None)
    assert (server.idle_timeout, server.handshake_timeout, server.send_timeout) == (5.0, 2.0, None)
    with pytest.raises(TypeError):
        EnvServer(CounterEnvironment, no_such_option=1)


def test_served_env_decides_the_default_capacity():
    """A served env that allows no concurrent sessions gets one slot; a plain factory is wrapped."""
    assert EnvServer(ServedEnv(CounterEnvironment, concurrent_sessions=False)).max_sessions == 1
    assert EnvServer(ServedEnv(CounterEnvironment)).max_sessions == 64
    served = ServedEnv.of(CounterEnvironment)
    assert served.concurrent_sessions is CounterEnvironment.SUPPORTS_CONCURRENT_SESSIONS
    assert ServedEnv.of(served) is served and not served.takes_render_mode
