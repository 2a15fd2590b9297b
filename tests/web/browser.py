"""The web page's tests' browser: one headless Chromium tab (:class:`Page`) with the waits and checks
the tests share, and servers of a target for it to open."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_gym.server import EnvServer, load_factory
from tests.utils import UNIT, running_server

__all__ = ["CHROMEDRIVER", "CHROMIUM", "Page", "served"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


class Page:
    """One Chromium tab on the page, with the waits and checks the tests share."""

    def __init__(self, driver: Any, downloads: Path) -> None:
        self.driver = driver
        self.downloads = downloads

    def open(self, server: EnvServer, path: str = "/web/") -> None:
        """Load the page (``path``: under /web, a query maybe) and wait until it read /schema and its socket is open."""
        self.driver.get(server.url + path)
        self.wait(lambda: self.script("return document.body.dataset.ready") == "true", "the page to be ready")
        self.wait(lambda: self.state() == "connected", "the page's socket to open")

    def script(self, source: str, *args: Any) -> Any:
        return self.driver.execute_script(source, *args)

    def wait(self, predicate: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout * UNIT
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        banner = self.find("#error-banner").text
        pytest.fail(f"timed out waiting for {what} (error banner: {banner!r})")

    def find(self, selector: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def find_all(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def click(self, testid: str) -> None:
        self.find(f"[data-testid='{testid}']").click()

    def value(self, element_id: str) -> str:
        return self.find(f"#{element_id}").get_attribute("data-value")

    def wait_value(self, element_id: str, expected: Any) -> None:
        self.wait(lambda: self.value(element_id) == str(expected), f"#{element_id} to read {expected}")

    def queued(self) -> int:
        """Steps the page has queued and not yet had answered."""
        return self.script("return window.openenvGymPage.queued")

    def state(self) -> str:
        return self.find("#connection").get_attribute("data-state")

    def records(self) -> list[dict[str, Any]]:
        """The page's history: each transition's event, action and reply data, as the page holds them."""
        return self.script(
            "return window.openenvGymPage.history.records.map(r => ({event: r.event, episode: r.episode,"
            " step: r.step, action: r.action, data: r.data}))"
        )

    def set_seed(self, seed: int) -> None:
        field = self.find("#seed")
        field.clear()
        field.send_keys(str(seed))

    def canvas_ink(self, selector: str = "#frame") -> int:
        """How many pixels of the canvas are neither white nor transparent."""
        return self.script(
            "const c = document.querySelector(arguments[0]); if (c.hidden) return 0;"
            "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
            "for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250)) n++;"
            "return n;",
            selector,
        )

    def download_log(self) -> list[dict[str, Any]]:
        """Click the log's download button and read the JSONL file Chromium saved."""
        for old in self.downloads.iterdir():
            old.unlink()
        self.click("download-log")
        files = self.wait(
            lambda: [f for f in self.downloads.iterdir() if f.suffix == ".jsonl"],
            "the log to download",
        )
        return [json.loads(line) for line in files[0].read_text().splitlines()]

    def assert_clean(self) -> None:
        """No console error, and every request the page made stayed on this machine."""
        errors = [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == []
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
            elif message["method"] == "Network.webSocketCreated":
                urls.append(message["params"]["url"])
        assert urls, "the performance log recorded no request"
        outside = [
            url
            for url in urls
            if urllib.parse.urlsplit(url).scheme not in ("data", "blob")
            and urllib.parse.urlsplit(url).hostname not in LOCAL_HOSTS
        ]
        assert outside == []

    def clear_logs(self) -> None:
        self.driver.get_log("browser")
        self.driver.get_log("performance")


@contextlib.contextmanager
def served(target: str, **kwargs: Any) -> Iterator[EnvServer]:
    with running_server(load_factory(target, **kwargs)) as server:
        yield server
