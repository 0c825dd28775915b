"""Processes opening one new SQLite store at the same moment all open it.

The first to open a new file switches it to the write-ahead log, which needs the file to
itself; SQLite answers the others "database is locked" at once, without waiting out the
busy timeout, so the store waits for the switch itself.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.integration.workers import start_worker

ROUNDS = 20
PROCESSES = 6
SPACING_SECONDS = 0.4


def test_processes_opening_a_new_sqlite_store_at_once_all_open_it(tmp_path: Path) -> None:
    # Far enough ahead that every process has imported the store before the first round.
    start = time.time() + 6
    workers = [
        start_worker(
            "sqlite_open_worker", str(tmp_path), str(start), str(ROUNDS), str(SPACING_SECONDS)
        )
        for _ in range(PROCESSES)
    ]
    outcomes = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err[-2000:]
        outcomes.extend(out.splitlines())
    assert outcomes == ["opened"] * (ROUNDS * PROCESSES)
