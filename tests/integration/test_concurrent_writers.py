"""Three long-lived processes writing and searching one user on one data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memora.api import Memora
from tests.conftest import Backend

ROOT = Path(__file__).resolve().parents[2]


def test_three_processes_times_a_hundred_adds_lose_nothing(
    tmp_path: Path, backend: Backend
) -> None:
    """On Postgres the three share the database and the Chroma server, not a data dir."""
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        **backend.env(),
        "PYTHONPATH": str(ROOT),
        "ANONYMIZED_TELEMETRY": "False",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integration.add_worker", str(data_dir), f"p{n}", "100"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=900)
        assert worker.returncode == 0, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert [report["errors"] for report in reports] == [[], [], []]
    written = {memory_id for report in reports for memory_id in report["ids"]}
    assert len(written) >= 250, "the write path accepted too few adds for the test to mean much"
    memora = Memora(backend.settings(data_dir))
    stored = {unit.id for unit in memora.list("alice")}
    assert written <= stored
    memora.search("alice", "violin")
    memora.flush()
    assert set(memora.store.vectors.ids_of("alice")) == stored
    memora.close()
