"""The browser the web page's tests share: one headless Chromium per module, a clean tab per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.web.browser import CHROMEDRIVER, CHROMIUM, Page


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    """One headless Chromium for the module (Debian's, driven by Debian's chromedriver)."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        reason = (
            f"{' and '.join(missing)} missing: `bash scripts/browser.sh` installs Debian's chromium and chromium-driver"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the browser tests: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for Chromium's own sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    # A Service with the driver's path: Selenium Manager never runs, so nothing is downloaded.
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    downloads = tmp_path_factory.mktemp("downloads")
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        yield Page(driver, downloads)
    finally:
        driver.quit()


@pytest.fixture
def page(browser: Page) -> Iterator[Page]:
    """The module's browser, its logs emptied of earlier tests' entries; left on a blank page."""
    browser.clear_logs()
    yield browser
    browser.driver.get("about:blank")  # the page's session closes with it
