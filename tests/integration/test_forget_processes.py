"""No resurrection: several processes, and a process killed while it forgets."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from memora.api import Memora
from tests.conftest import Backend

SQLITE = Backend("sqlite")

ROOT = Path(__file__).resolve().parents[2]


def _worker(
    data_dir: Path, name: str, *args: str, backend: Backend = SQLITE
) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        **backend.env(),
        "PYTHONPATH": str(ROOT),
        "ANONYMIZED_TELEMETRY": "False",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.forget_worker", str(data_dir), name, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _vectors_without_memory(
    data_dir: Path, backend: Backend = SQLITE
) -> tuple[set[str], set[str], Memora]:
    """Chroma's ids for alice that have no memory, read before anything loads her index."""
    memora = Memora(backend.settings(data_dir))
    live = {unit.id for unit in memora.store.rows.list("alice")}
    in_chroma = set(memora.store.vectors.ids_of("alice"))
    return in_chroma - live, live, memora


def test_three_processes_never_write_a_forgotten_memorys_vector(
    tmp_path: Path, backend: Backend
) -> None:
    """On Postgres the three are three nodes: own data dirs, one database, one Chroma server."""
    workers = [
        _worker(tmp_path / f"data{n}", f"w{n}", "40", backend=backend)
        if backend.database_url
        else _worker(tmp_path / "data", f"w{n}", "40")
        for n in range(3)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err[-3000:]
    strays, live, memora = _vectors_without_memory(tmp_path / "data", backend)
    forgotten = {f"w{n}-{i}" for n in range(3) for i in range(40)} - live
    assert len(forgotten) > 20, "the workers forgot too little for the test to mean anything"
    assert strays == set()
    assert memora.store.rows.vector_keys("alice", sorted(forgotten)) == {}
    memora.search("alice", "box")
    memora.flush()
    assert set(memora.store.vectors.ids_of("alice")) == live
    memora.close()


def test_a_kill_during_forget_leaves_no_vector_behind(tmp_path: Path, backend: Backend) -> None:
    rng = random.Random(5)
    for trial in range(5):
        data_dir = tmp_path / f"data{trial}"
        user_backend = backend
        if backend.database_url:  # one database for all trials; a Chroma collection each
            user_backend = Backend(
                "postgres",
                backend.database_url,
                backend.chroma_url,
                f"{backend.chroma_collection}_{trial}",
            )
        worker = _worker(data_dir, f"k{trial}", "0", "--forget-all", backend=user_backend)
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        strays, live, memora = _vectors_without_memory(data_dir, user_backend)
        # Whatever the kill left in Chroma can no longer be unsealed: its key went with the row.
        assert memora.store.rows.vector_keys("alice", sorted(strays)) == {}
        memora.search("alice", "note")  # loading the user sweeps the strays
        memora.flush()
        assert set(memora.store.vectors.ids_of("alice")) == live
        memora.close()
