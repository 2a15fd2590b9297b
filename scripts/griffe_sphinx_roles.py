"""A griffe extension: the package's Sphinx roles as links or code in the API reference.

The docstrings cross-reference with Sphinx's roles (``:class:`~openenv_gym.env.RemoteEnv```,
``:meth:`reset```), which help() and IDEs show as written and Markdown would print literally.
Before mkdocstrings renders a docstring, each role becomes its name in code (``~`` keeps the last
part, as in Sphinx; a function or method gains ``()``), wrapped in an *optional* cross-reference
for mkdocs-autorefs: a link where the target is documented on a page of the site, plain code where
it is not (so a reference to an undocumented helper never fails the strict build).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|data|exc|obj|const):`(~?)([^`<]+?)(?:\s*<([^>`]+)>)?`")
CALLABLE_ROLES = {"func", "meth"}


def _role_to_markdown(match: re.Match[str], scope: str) -> str:
    role, tilde, text, explicit_target = match.groups()
    target = (explicit_target or text).strip().lstrip(".")
    shown = text.strip() if explicit_target else (target.rsplit(".", 1)[-1] if tilde else target)
    if role in CALLABLE_ROLES and not shown.endswith(")"):
        shown += "()"
    # A bare name is looked up beside the documented object, as Sphinx looks in the current scope.
    identifier = target if "." in target else f"{scope}.{target}"
    return f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(shown)}</code></autoref>'


def rewrite_roles(docstring: str, scope: str) -> str:
    """``docstring`` with each Sphinx role replaced by an optional cross-reference in code."""
    return ROLE.sub(lambda match: _role_to_markdown(match, scope), docstring)


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring griffe loads."""

    def on_object(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None and not obj.is_alias:
            scope = obj.path if obj.is_class or obj.is_module else (obj.parent.path if obj.parent else obj.path)
            obj.docstring.value = rewrite_roles(obj.docstring.value, scope)
