"""Processes opening one new data dir at the same moment all get the collection.

chromadb creates its own tables on first open without guarding against another process
doing the same ("table collections already exists"); the store serialises the opening.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.integration.workers import start_worker

ROUNDS = 3
PROCESSES = 4


def test_processes_opening_a_new_data_dir_at_once_all_open_it(tmp_path: Path) -> None:
    outcomes = []
    for round_number in range(ROUNDS):
        data_dir = tmp_path / f"round{round_number}"
        # Far enough ahead that every process has imported chromadb before the start.
        start = time.time() + 5
        workers = [
            start_worker("chroma_open_worker", str(data_dir), str(start)) for _ in range(PROCESSES)
        ]
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err[-2000:]
            outcomes.append(out.strip())
    assert outcomes == ["opened"] * (ROUNDS * PROCESSES)
