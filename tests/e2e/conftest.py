"""Attach the `langgraph dev` server log to the report of every failing e2e test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

LOG_TAIL_CHARS = 20_000


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    server = getattr(item, "funcargs", {}).get("server")
    log_path: Path | None = getattr(server, "log_path", None)
    if log_path is None or not log_path.exists():
        return
    text = log_path.read_text(errors="replace")
    report.sections.append((f"langgraph dev log ({log_path})", text[-LOG_TAIL_CHARS:]))
