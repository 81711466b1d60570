"""Headless chromium for the console's browser test and its README screenshot.

Debian's chromium and chromium-driver (``make test`` installs them), never Selenium Manager:
it would download a browser, and these machines have no internet."""

from __future__ import annotations

import shutil

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver


class BrowserMissing(RuntimeError):
    pass


def headless_chromium(width: int = 1400, height: int = 1000) -> WebDriver:
    driver_path, browser = shutil.which("chromedriver"), shutil.which("chromium")
    if not (driver_path and browser):
        raise BrowserMissing(
            "chromium and chromium-driver are missing: `make browser` installs them"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(driver_path), options=options)
