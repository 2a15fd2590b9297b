"""The coding agents a harness env runs, and how each is started: its command line for a task, and the
variables that point it at the env's model endpoint (every harness reads its own).

An agent is started in the task's workspace (its working directory) with a home of its own beside it
(``agent_home``: its config, its trajectory file, never graded). To add one, write its
:class:`AgentLaunch` and put it in :data:`AGENTS`.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["AGENTS", "AgentLaunch", "agent_launch", "model_variables"]

#: The key an agent sends: the endpoint takes any, and no real one is ever handed to an agent.
DUMMY_KEY = "openenv-gym"
#: The model name an agent asks for (a trainer's policy answers whatever the name).
POLICY_MODEL = "policy"


@dataclasses.dataclass(frozen=True)
class AgentLaunch:
    """How to start one agent.

    Attributes:
        name: the name ``agent=`` takes.
        argv: the command line for a task's prompt, given the agent's home and its model's base URL
            (``.../v1``, for an agent that reads it from its command line rather than a variable).
        variables: the agent's own variables, given its home (beside :func:`model_variables`).
        install_dirs: the directories the agent is installed in beyond the interpreter's (bound
            read-only into its sandbox).
    """

    name: str
    argv: Callable[[str, Path, str], list[str]]
    variables: Callable[[Path], dict[str, str]] = lambda home: {}
    install_dirs: Callable[[], list[str]] = lambda: []


def model_variables(base_url: str, root_url: str) -> dict[str, str]:
    """The variables that point OpenAI's and Anthropic's SDKs (and litellm, which reads the older
    ``OPENAI_API_BASE``) at the endpoint: ``base_url`` ends in ``/v1``, Anthropic's SDK adds it itself."""
    return {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_BASE": base_url,
        "OPENAI_API_KEY": DUMMY_KEY,
        "ANTHROPIC_BASE_URL": root_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
    }


def _mini_swe_agent_argv(prompt: str, home: Path, base_url: str) -> list[str]:
    # -y: no confirmation of each command; --exit-immediately: no prompt once it submits. The
    # model is litellm's "openai/..." (chat completions at OPENAI_API_BASE); no cost limit, as the
    # endpoint reports none.
    return [
        sys.executable,
        "-m",
        "minisweagent.run.mini",
        "-y",
        "--exit-immediately",
        "--model",
        f"openai/{POLICY_MODEL}",
        "--cost-limit",
        "0",
        "--task",
        prompt,
        "--output",
        str(home / "trajectory.json"),
    ]


def _mini_swe_agent_variables(home: Path) -> dict[str, str]:
    return {
        "MSWEA_CONFIGURED": "true",  # no first-run set-up questions
        "MSWEA_GLOBAL_CONFIG_DIR": str(home),
        "MSWEA_COST_TRACKING": "ignore_errors",  # the policy has no price
        "MSWEA_SILENT_STARTUP": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm would fetch its price list at import
    }


def _npm_command(name: str, package: str) -> Path:
    """The command ``name`` of npm package ``package``, found on ``PATH``, links resolved."""
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not on PATH: npm install -g {package}")
    return Path(found).resolve()


def _npm_install_dirs(name: str, package: str) -> list[str]:
    # .../node_modules/<scope>/<package>/bin/<command>: the whole node_modules (the platform's
    # binary is a package beside it).
    return [str(_npm_command(name, package).parents[3])]


_CODEX = ("codex", "@openai/codex")
_CLAUDE = ("claude", "@anthropic-ai/claude-code")


def _codex_argv(prompt: str, home: Path, base_url: str) -> list[str]:
    # `exec`: one task, no terminal. Codex's own sandbox is off (the env's confines it), and its
    # model comes from a provider of its own whose Responses API (SSE over HTTP: the built-in one
    # also tries a WebSocket) is the endpoint.
    provider = f'{{name = "openenv-gym", base_url = "{base_url}", env_key = "OPENAI_API_KEY", wire_api = "responses"}}'
    return [
        str(_npm_command(*_CODEX)),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-c",
        'model_provider="openenv-gym"',
        "-c",
        f"model_providers.openenv-gym={provider}",
        "--model",
        POLICY_MODEL,
        prompt,
    ]


def _claude_code_argv(prompt: str, home: Path, base_url: str) -> list[str]:
    # -p: one task, printed; its permission prompts off (the env's sandbox confines it).
    return [str(_npm_command(*_CLAUDE)), "-p", "--dangerously-skip-permissions", "--model", POLICY_MODEL, prompt]


def _claude_code_variables(home: Path) -> dict[str, str]:
    return {
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        # It refuses to skip permissions as root unless told it runs in a sandbox, which it does.
        "IS_SANDBOX": "1",
        # Only the model calls the task needs: no telemetry, no error reports, no update checks.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


#: The agents ``agent=`` names.
AGENTS: dict[str, AgentLaunch] = {
    "mini-swe-agent": AgentLaunch("mini-swe-agent", _mini_swe_agent_argv, _mini_swe_agent_variables),
    "codex": AgentLaunch(
        "codex", _codex_argv, lambda home: {"CODEX_HOME": str(home)}, lambda: _npm_install_dirs(*_CODEX)
    ),
    "claude-code": AgentLaunch(
        "claude-code", _claude_code_argv, _claude_code_variables, lambda: _npm_install_dirs(*_CLAUDE)
    ),
}


def agent_launch(name: str) -> AgentLaunch:
    """The launch of agent ``name``.

    Raises:
        ValueError: no such agent; the message lists them.
    """
    try:
        return AGENTS[name]
    except KeyError:
        raise ValueError(f"no agent {name!r}: the harness env runs {sorted(AGENTS)}") from None
