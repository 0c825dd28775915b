"""On Postgres, a process killed while it shreds keys leaves the job for the next one.

A forget deletes a memory's key in the transaction that deletes the memory, and records
the key partition to rewrite there too; a thread key rotation reseals and swaps keys in
one transaction and records the key table. A process SIGKILLed anywhere (here: after
the commit, before the rewrite, the window that matters; and at random moments) leaves
every row readable under a live key, and the next process to open the store (or the
threads) rewrites what was recorded: the deleted keys then leave every file. The scan is
``test_postgres_shredding``'s.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from graph.checkpointed import LatestOnlyPostgresSaver
from memora.api import Memora
from memora.storage.sealed_threads import SealingSerializer, ThreadKeys
from tests.conftest import Backend
from tests.integration.test_forgetting import _bulk
from tests.integration.test_postgres_shredding import (
    FORGOTTEN,
    KEPT,
    _backend,
    _held,
    assert_reads_without,
)

ROOT = Path(__file__).resolve().parents[2]


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.shred_worker", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill(worker: subprocess.Popen[str]) -> str:
    """SIGKILL the worker; what it printed since."""
    worker.send_signal(signal.SIGKILL)
    out, _ = worker.communicate(timeout=30)
    return out


def _forget_args(backend: Backend, memory_id: str) -> list[str]:
    return [
        "forget",
        backend.database_url or "",
        backend.chroma_url or "",
        backend.chroma_collection,
        "alice",
        memory_id,
    ]


def test_a_forget_killed_before_its_rewrite_is_finished_by_the_next_open(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    _bulk(memora, "alice", 100)
    forgotten = memora.add("alice", FORGOTTEN).memory_id or ""
    memora.add("alice", KEPT)
    memora.flush()
    [key] = memora.store.rows.vector_keys("alice", [forgotten]).values()
    memora.close()

    worker = _worker(*_forget_args(backend, forgotten), "--stop-before-rewrite")
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    assert worker.stdout.readline().strip() == "deleted", worker.stderr
    _kill(worker)
    # The crash window is real: the memory is gone, its key still in a file.
    with psycopg.connect(url) as conn:
        left = conn.execute("SELECT count(*) FROM memories WHERE id = %s", (forgotten,))
        assert left.fetchone() == (0,)
        pending = conn.execute("SELECT count(*) FROM pending_rewrites").fetchone()
    assert pending is not None and pending[0] > 0
    assert _held(services, url, [key]) != []

    reopened = Memora(backend.settings(tmp_path / "data"))
    assert _held(services, url, [key, b"Chen Weiqiang"]) == []
    assert_reads_without(reopened, forgotten, 101)
    assert reopened.store.rows.is_tombstoned("alice", forgotten)
    reopened.close()


def test_a_forget_killed_at_any_moment_loses_nothing_else_and_leaves_no_key(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    rng = random.Random(11)
    memora = Memora(backend.settings(tmp_path / "data"))
    _bulk(memora, "alice", 60)
    memora.close()
    for trial in range(3):
        memora = Memora(backend.settings(tmp_path / "data"))
        forgotten = memora.add("alice", f"{FORGOTTEN} (trial {trial})").memory_id or ""
        memora.flush()
        [key] = memora.store.rows.vector_keys("alice", [forgotten]).values()
        memora.close()
        worker = _worker(*_forget_args(backend, forgotten))
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.4))
        _kill(worker)

        reopened = Memora(backend.settings(tmp_path / "data"))
        unit = reopened.get("alice", forgotten)
        if unit is None:  # the forget committed: its key leaves every file
            assert _held(services, url, [key]) == [], f"trial {trial}"
        else:  # it did not: the memory is whole
            assert unit.content == f"{FORGOTTEN} (trial {trial})"
            assert reopened.forget("alice", forgotten) == [forgotten]
            assert _held(services, url, [key]) == [], f"trial {trial}"
        assert len(reopened.list("alice")) == 60
        reopened.close()


def _threads(url: str) -> tuple[LatestOnlyPostgresSaver, psycopg.Connection, psycopg.Connection]:
    conn = psycopg.Connection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=psycopg.rows.dict_row
    )
    keys_conn = psycopg.Connection.connect(url, autocommit=True)
    saver = LatestOnlyPostgresSaver(conn, serde=SealingSerializer(ThreadKeys(keys_conn)))
    saver.setup()
    return saver, conn, keys_conn


def _config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _save(saver: LatestOnlyPostgresSaver, thread: str, text: str) -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": text, "messages": [text, f"{text} again"]}
    checkpoint["channel_versions"] = {"note": 1, "messages": 1}
    versions = {"note": 1, "messages": 1}
    saver.put(_config(thread), checkpoint, {"source": "input", "step": 0}, versions)


def _keys(url: str) -> set[bytes]:
    with psycopg.connect(url) as conn:
        return {bytes(row[0]) for row in conn.execute("SELECT key FROM thread_keys")}


def _every_thread_reads(url: str, threads: dict[str, str]) -> None:
    saver, conn, keys_conn = _threads(url)  # opening finishes a rewrite left pending
    try:
        for thread, text in threads.items():
            saved = saver.get_tuple(_config(thread))
            assert saved is not None, thread
            values = saved.checkpoint["channel_values"]
            assert values["note"] == text and values["messages"] == [text, f"{text} again"]
    finally:
        keys_conn.close()
        conn.close()


def test_a_rotation_killed_anywhere_leaves_every_thread_readable_and_no_old_key(
    request: pytest.FixtureRequest,
) -> None:
    services, _, url = _backend(request)
    threads = {f"thread-{n}": f"Thread {n} talks about Xiaohuzi the cat" for n in range(12)}
    saver, conn, keys_conn = _threads(url)
    for thread, text in threads.items():
        _save(saver, thread, text)
    keys_conn.close()
    conn.close()
    seen = _keys(url)
    assert _held(services, url, list(seen)) != []  # the control: the scan finds the keys

    # Killed after the rotation committed, before the key table's rewrite.
    worker = _worker("rotate", url, *threads, "--stop-before-rewrite")
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    assert worker.stdout.readline().strip() == "deleted", worker.stderr
    _kill(worker)
    current = _keys(url)
    assert current.isdisjoint(seen) and len(current) == len(threads)
    assert _held(services, url, list(seen)) != []  # the old keys wait in the file
    _every_thread_reads(url, threads)
    assert _held(services, url, list(seen)) == []
    seen |= current

    # Killed at random moments of rotations over and over.
    rng = random.Random(3)
    for _ in range(4):
        worker = _worker("rotate", url, *threads)
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.8))
        printed = _kill(worker)
        seen |= {bytes.fromhex(key) for line in printed.splitlines() for key in line.split()}
        _every_thread_reads(url, threads)
        current = _keys(url)
        seen |= current
        assert _held(services, url, list(seen - current)) == []
