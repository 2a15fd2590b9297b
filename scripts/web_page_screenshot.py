"""Take docs/web-page.png: the web debug page on CartPole mid-episode, in headless Chromium.

    .venv/bin/python scripts/web_page_screenshot.py [OUT.png]

Three random episodes fill the per-episode plots; a fourth is balanced for 20 steps by a
one-line policy (push the cart towards where the pole leans), clicked on the page's buttons.
Needs Debian's chromium and chromium-driver (scripts/browser.sh) and Selenium (the test extra).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from openenv_gym.providers import ProcessProvider

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs" / "web-page.png")


def wait(driver: webdriver.Chrome, script: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not driver.execute_script(script):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page never got to: {script}")
        time.sleep(0.05)


def main() -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    with ProcessProvider("CartPole-v1") as url:
        driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
        try:
            driver.get(f"{url}/web/")
            wait(driver, "return document.body.dataset.ready === 'true'")
            seed = driver.find_element(By.ID, "seed")
            for episode in range(1, 5):
                seed.clear()
                seed.send_keys(str(episode))
                driver.find_element(By.ID, "reset").click()
                wait(driver, f"return document.getElementById('episode-count').dataset.value === '{episode}'")
                if episode < 4:
                    driver.find_element(By.ID, "random-n").clear()
                    driver.find_element(By.ID, "random-n").send_keys("500")  # stops when the episode ends
                    driver.find_element(By.ID, "random-steps").click()
                    wait(driver, f"return window.openenvGymPage.episodes.length === {episode}")
            for step in range(1, 21):
                angle = driver.execute_script(
                    "return window.openenvGymPage.history.records.at(-1).data.observation.observation[2]"
                )
                driver.find_element(By.ID, f"action-{int(angle > 0)}").click()
                wait(driver, f"return document.getElementById('step-count').dataset.value === '{step}'")
            time.sleep(0.5)  # the last frame's JPEG for the history
            driver.save_screenshot(str(OUT))
        finally:
            driver.quit()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
