"""Upkeep on the vector writer's thread waits for a pause in activity, or for a flush."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from memora.storage import vectors
from memora.storage.vectors import VectorWriter


def _writer() -> VectorWriter:
    return VectorWriter(lambda units, matrix: None, max_delay_s=0.01)


def test_upkeep_waits_while_searches_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "UPKEEP_IDLE_S", 1.0)
    writer = _writer()
    ran = threading.Event()
    writer.note_activity()
    writer.run_later(ran.set)
    busy_until = time.monotonic() + 2.0
    while time.monotonic() < busy_until:
        writer.note_activity()
        writer.submit([], np.zeros((0, 4), dtype=np.float32))
        time.sleep(0.02)
        assert not ran.is_set(), "upkeep ran while the store was busy"
    assert ran.wait(timeout=5.0), "upkeep never ran after activity stopped"


def test_a_flush_runs_pending_upkeep_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "UPKEEP_IDLE_S", 60.0)
    writer = _writer()
    done: list[str] = []
    writer.run_later(lambda: done.append("swept"))
    started = time.monotonic()
    writer.flush()
    assert done == ["swept"]
    assert time.monotonic() - started < 5.0


def test_failing_upkeep_is_logged_and_later_upkeep_still_runs() -> None:
    writer = _writer()
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("chroma went away")

    writer.run_later(fail)
    writer.run_later(lambda: done.append("second"))
    writer.flush()
    assert done == ["second"]
