"""Open a local HTML file in a real headless Chromium (Debian `chromium` + `chromium-driver`).

    python -m tests.helpers.browser runs/NAME/report.html docs/report.png   # a screenshot

Returns the screenshot, the browser console's errors and the images that failed to load.
Chromium starts with a fresh profile and no background network traffic, so the page
gets nothing it does not carry itself.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync")


def chromium_paths() -> tuple[str | None, str | None]:
    return shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")


@dataclass
class Page:
    screenshot: bytes
    console_errors: list[str]
    broken_images: list[str]
    image_count: int
    section_ids: list[str]


def open_page(path: str | Path, width: int = 1280, height: int = 1600) -> Page:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = chromium_paths()
    if not (browser and driver_path):
        raise RuntimeError("chromium and chromedriver are needed: apt-get install chromium chromium-driver")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not try to download a driver
    with tempfile.TemporaryDirectory(prefix="vprl-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        try:
            driver.get(Path(path).resolve().as_uri())
            images = driver.execute_script(
                "return Array.from(document.images).map(i => [i.alt, i.complete && i.naturalWidth > 0]);")
            sections = driver.execute_script("return Array.from(document.querySelectorAll('section')).map(s => s.id);")
            errors = [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            shot = driver.get_screenshot_as_png()
        finally:
            driver.quit()
    return Page(shot, errors, [alt for alt, ok in images if not ok], len(images), sections)


if __name__ == "__main__":
    page = open_page(sys.argv[1])
    Path(sys.argv[2]).write_bytes(page.screenshot)
    print(f"{sys.argv[2]}: {len(page.screenshot)} bytes; console errors: {page.console_errors or 'none'}; "
          f"broken images: {page.broken_images or 'none'}")
