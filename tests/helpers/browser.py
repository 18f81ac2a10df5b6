"""Headless Chromium for the tests that look at a page as a reader would (Debian: chromium)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "chromium not installed (apt-get install chromium chromium-driver)"


def chromium(url: str, profile: Path, *extra: str, width: int = 1280, height: int = 900) -> str:
    """Run headless Chromium on ``url`` with ``extra`` flags (``--dump-dom``, ``--screenshot=...``).

    Offline and quiet: no network services, a fresh profile, 5 s of virtual time for scripts
    to run. Returns what Chromium printed (the DOM, with ``--dump-dom``).
    """
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--virtual-time-budget=5000", f"--window-size={width},{height}"]
    done = subprocess.run([CHROMIUM, *flags, *extra, url], capture_output=True, text=True, timeout=120)
    return done.stdout
