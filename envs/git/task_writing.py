"""Writing the Git env's tasks (``task_source.py`` and the ``task_source_*`` modules it loads): the
helpers that keep each task's bash scripts readable, and :func:`task`, which adds one to :data:`TASKS`."""

from __future__ import annotations

import re
import shlex
import textwrap
from typing import Any

__all__ = [
    "COMMIT",
    "MAX_TURNS",
    "TASKS",
    "check",
    "lines",
    "log_is",
    "prose",
    "read",
    "run",
    "same",
    "sh",
    "task",
    "text",
    "write",
]

MAX_TURNS = {"easy": 20, "medium": 30, "hard": 40}

#: Every task, in the order the modules wrote them (``task_source.py`` sorts them by level).
TASKS: list[dict[str, Any]] = []


def sh(script: str, **values: str) -> str:
    """A bash script written indented in this file: dedented, then each ``{NAME}`` of ``values`` filled in.

    Filling in after dedenting lets a multi-line value (a file's content in a heredoc) start at column 0.
    """
    script = textwrap.dedent(script).strip("\n") + "\n"
    return re.sub(r"\{([A-Z][A-Z0-9_]*)\}", lambda m: values.get(m.group(1), m.group(0)), script)


def prose(text: str, **blocks: str) -> str:
    """A prompt: paragraphs reflowed to one line each (a list item ``- ...`` to one line of its own);
    a paragraph ``{name}`` becomes ``blocks[name]``, indented as a code block."""
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", textwrap.dedent(text).strip()):
        name = re.fullmatch(r"\{(\w+)\}", paragraph.strip())
        if name:
            paragraphs.append(textwrap.indent(blocks[name.group(1)].strip("\n"), "    "))
        else:
            items = re.split(r"\n\s*(?=- )", paragraph.strip())
            paragraphs.append("\n".join(" ".join(item.split()) for item in items))
    return "\n\n".join(paragraphs)


def text(content: str) -> str:
    """File content written indented in this file."""
    return textwrap.dedent(content).strip("\n") + "\n"


def same(command: str, content: str) -> str:
    """A bash condition: ``command`` prints ``content`` (trailing newlines aside)."""
    return f'[ "$({command})" = "$(cat <<\'EOF\'\n{content.rstrip()}\nEOF\n)" ]'


def lines(*items: str) -> str:
    """A bash word that expands to the items, one a line."""
    return "\"$(printf '%s\\n' " + " ".join(shlex.quote(item) for item in items) + ')"'


def log_is(revisions: str, *subjects: str) -> str:
    """A bash condition: ``git log revisions`` lists exactly these subjects, oldest first."""
    return f'[ "$(git log --reverse --format=%s {revisions})" = {lines(*subjects)} ]'


def run(command: str) -> dict[str, Any]:
    return {"tool": "run", "arguments": {"command": sh(command).rstrip("\n")}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "arguments": {"path": path, "content": content}}


def read(path: str) -> dict[str, Any]:
    return {"tool": "read_file", "arguments": {"path": path}}


def check(name: str, *parts: str) -> dict[str, str]:
    """A check: its script is the parts (each dedented on its own), one after another."""
    return {"name": name, "run": "".join(sh(part) for part in parts)}


def task(
    task_id: str,
    difficulty: str,
    prompt: str,
    setup: str,
    checks: list[dict[str, str]],
    solution: list[dict[str, Any]],
    near_miss: list[dict[str, Any]],
    **values: str,
) -> None:
    """Add a task; ``values`` fill the setup's ``{NAME}`` placeholders, and ``{COMMIT}`` is always :data:`COMMIT`."""
    TASKS.append(
        {
            "task_id": task_id,
            "difficulty": difficulty,
            "prompt": prompt,
            "setup": sh(setup, COMMIT=COMMIT, **values),
            "checks": checks,
            "solution": solution,
            "near_miss": near_miss,
            "max_turns": MAX_TURNS[difficulty],
        }
    )


# A bash function most setups start with: stage everything and commit with the given message.
COMMIT = 'commit() { git add -A && git commit -q -m "$1"; }'
