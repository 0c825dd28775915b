"""graph.runtime_records outside the in-memory runtime: nothing to refresh, and Memora goes on."""

from __future__ import annotations

import logging
import sys
from types import ModuleType, SimpleNamespace

import pytest

from agent.forgotten import Forgotten
from graph.runtime_records import refresh_from_a_run

BLANKED = {"00000000-0000-0000-0000-000000000001": ["Please remember that I play the cello."]}
FORGOTTEN = Forgotten.of(["m1"], ["I play the cello"])


def test_outside_a_server_nothing_is_refreshed_and_nothing_is_said(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delitem(sys.modules, "langgraph_runtime.ops", raising=False)
    with caplog.at_level(logging.WARNING, logger="memora.graph"):
        refresh_from_a_run(BLANKED, FORGOTTEN)
    assert caplog.text == ""


def test_under_another_runtime_the_records_stay_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    other = ModuleType("langgraph_runtime_postgres.ops")
    other.Threads = SimpleNamespace()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langgraph_runtime.ops", other)
    with caplog.at_level(logging.WARNING, logger="memora.graph"):
        refresh_from_a_run(BLANKED, FORGOTTEN)
    assert "is not the in-memory one" in caplog.text
    assert "langgraph_runtime_postgres.ops" in caplog.text
