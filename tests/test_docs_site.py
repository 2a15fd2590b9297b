"""The documentation site builds strictly (MkDocs with Material and mkdocstrings): no warning, every
page of the nav, the API reference from the docstrings, and nothing fetched from elsewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.utils import REPO_ROOT, UNIT


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(out)],
        cwd=REPO_ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300 * UNIT,
    )
    assert built.returncode == 0, built.stderr
    return out, built.stderr


def test_the_site_builds_with_no_warning(site):
    _, log = site
    assert "WARNING" not in log and "ERROR" not in log, log


def test_every_guide_and_the_api_reference_are_pages(site):
    out, _ = site
    for page in ("index.html", "gymnasium/index.html", "serving/index.html", "reference/env/index.html"):
        assert (out / page).is_file(), page
    reference = (out / "reference" / "env" / "index.html").read_text()
    assert "RemoteEnv" in reference and "transport" in reference  # the class's docstring, its arguments
    assert "make_sb3_vec_env" in reference  # from wrappers/, which installs inside the package


def test_no_page_loads_anything_from_another_host(site):
    """No web fonts or scripts from a CDN: the site reads offline."""
    out, _ = site
    for page in out.rglob("*.html"):
        text = page.read_text()
        for tag in re.findall(r"<(?:script|link)[^>]*>", text):
            assert "://" not in tag, (page, tag)


def test_sphinx_roles_become_links_or_code(site):
    """The docstrings' ``:class:`~x.Y``` roles are never printed as written: a documented target is a
    link to its entry (on this page or another), any other is its name in code."""
    out, _ = site
    for page in (out / "reference").rglob("*.html"):
        assert not re.search(r":(?:class|func|meth|attr|mod|data|exc):`", page.read_text()), page
    reference = (out / "reference" / "env" / "index.html").read_text()
    assert re.search(r'<a class="autorefs[^"]*"[^>]*href="\.\./errors/#openenv_gym\.errors\.\w+"', reference)
    assert re.search(
        r'<a class="autorefs[^"]*"[^>]*href="#openenv_gym\.env\.RemoteEnv\.\w+"><code>\w+\(\)</code>', reference
    )


def test_a_role_is_rewritten_as_an_optional_reference_in_code():
    from scripts.griffe_sphinx_roles import rewrite_roles

    rewritten = rewrite_roles("See :meth:`step` and :class:`~openenv_gym.env.RemoteEnv`.", "openenv_gym.env.RemoteEnv")
    assert rewritten == (
        'See <autoref identifier="openenv_gym.env.RemoteEnv.step" optional><code>step()</code></autoref> and '
        '<autoref identifier="openenv_gym.env.RemoteEnv" optional><code>RemoteEnv</code></autoref>.'
    )
