"""Worker processes for the tests that need a second process: ``python -m`` from the repo root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start_worker(module: str, *args: str) -> subprocess.Popen[str]:
    """Start ``python -m tests.integration.<module> ARGS`` with pipes for its output."""
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.integration.{module}", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
