"""A real browser for the inspector's tests: Debian's chromium, driven by Playwright.

The browser is the system's (``.ci/run`` installs the ``chromium`` package); Playwright's
own downloads are never used, so nothing is fetched at test time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE = {"width": 390, "height": 844}
"""A phone-sized window: the inspector must be usable there."""


def _install_chromium() -> None:
    """Install Debian's chromium as ``scripts/dev-services`` installs PostgreSQL, so the
    README's test command works on a fresh machine (the package registries are reachable)."""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        return
    for command in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "chromium"]):
        subprocess.run(command, check=False, capture_output=True, timeout=900)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        _install_chromium()
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()
