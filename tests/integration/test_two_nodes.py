"""Two nodes as one: two data dirs, one Postgres database, one Chroma server.

Each node is a separate ``Memora`` (and, for the concurrent writers, a separate
process) that shares nothing with the other but the two servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memora.api import Memora
from memora.models import MemoryStatus, ReconcileAction
from tests.conftest import Backend, postgres_backend, tables_containing
from tests.integration.test_forgetting import files_containing

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared(request: pytest.FixtureRequest) -> Backend:
    return postgres_backend(request)


@pytest.fixture
def nodes(shared: Backend, tmp_path: Path) -> Iterator[tuple[Memora, Memora]]:
    a = Memora(shared.settings(tmp_path / "node-a"))
    b = Memora(shared.settings(tmp_path / "node-b"))
    yield a, b
    a.close()
    b.close()


def _contents(memora: Memora, user: str, query: str) -> list[str]:
    return [hit.memory.content for hit in memora.search(user, query)]


def test_add_on_one_node_is_found_by_the_other(nodes: tuple[Memora, Memora]) -> None:
    a, b = nodes
    assert _contents(b, "alice", "sourdough starter") == []  # b has built its index
    outcome = a.add("alice", "I keep a sourdough starter named Bubbles")
    assert _contents(b, "alice", "sourdough starter") == [
        "I keep a sourdough starter named Bubbles"
    ]
    assert b.get("alice", outcome.memory_id or "") is not None
    assert b.get("bob", outcome.memory_id or "") is None  # isolation holds across nodes


def test_forget_on_one_node_is_gone_from_the_other_at_once(nodes: tuple[Memora, Memora]) -> None:
    a, b = nodes
    kept = a.add("alice", "My favourite tea is oolong")
    gone = a.add("alice", "My ex-husband Chen Wei lives in Taichung")
    assert "My ex-husband Chen Wei lives in Taichung" in _contents(a, "alice", "Taichung")
    assert b.forget("alice", gone.memory_id or "") == [gone.memory_id]
    assert "My ex-husband Chen Wei lives in Taichung" not in _contents(a, "alice", "Taichung")
    assert a.get("alice", gone.memory_id or "") is None
    assert a.store.is_tombstoned("alice", gone.memory_id or "")
    assert _contents(a, "alice", "favourite tea") == ["My favourite tea is oolong"]
    assert a.forget("alice", gone.memory_id or "") == []  # idempotent from either node
    assert kept.memory_id in {unit.id for unit in b.list("alice")}


def test_an_update_on_one_node_is_seen_as_an_update_on_the_other(
    nodes: tuple[Memora, Memora],
) -> None:
    a, b = nodes
    first = a.add("alice", "使用者的英文程度是 B1")
    assert _contents(b, "alice", "英文程度") == ["使用者的英文程度是 B1"]
    second = b.add("alice", "使用者的英文程度是 B2")
    assert second.action is ReconcileAction.UPDATE and second.affected_ids == [first.memory_id]
    assert _contents(a, "alice", "英文程度") == ["使用者的英文程度是 B2"]
    old = a.get("alice", first.memory_id or "")
    assert old is not None and old.status is MemoryStatus.SUPERSEDED
    history = a.history("alice", second.memory_id or "")
    assert [unit.id for unit in history.chain] == [first.memory_id, second.memory_id]
    assert {entry.decision for entry in history.audit} >= {"accepted"}
    a.set_profile("alice", "language", "Mandarin")
    assert b.get_profile("alice") == {"language": "Mandarin"}


def test_neither_node_keeps_memory_text_in_its_data_dir(
    shared: Backend, nodes: tuple[Memora, Memora], tmp_path: Path
) -> None:
    a, b = nodes
    a.add("alice", "I play the cello in a community orchestra")
    b.add("alice", "My dog is a corgi named Mochi")
    b.set_profile("alice", "nickname", "Tiramisu")
    assert _contents(a, "alice", "corgi")
    assert _contents(b, "alice", "cello")
    a.flush()
    b.flush()
    texts = [b"cello", b"corgi", b"Mochi", b"Tiramisu"]
    for node in ("node-a", "node-b"):
        root = tmp_path / node
        assert not root.exists() or files_containing(root, texts) == []
    # Memory text and profile values are sealed in Postgres too (test_postgres_shredding.py,
    # test_postgres_user_sealing.py), and read back on either node.
    assert tables_containing(shared.database_url or "", "named Mochi") == []
    assert tables_containing(shared.database_url or "", "Tiramisu") == []
    assert a.get_profile("alice") == {"nickname": "Tiramisu"}


def test_the_vector_lock_is_held_across_nodes(nodes: tuple[Memora, Memora]) -> None:
    a, b = nodes
    waited: list[float] = []

    def contend() -> None:
        started = time.monotonic()
        with b.store.rows.vector_lock():
            waited.append(time.monotonic() - started)

    with a.store.rows.vector_lock():
        other = threading.Thread(target=contend)
        other.start()
        time.sleep(0.5)
        assert not waited, "node b took the vector lock while node a held it"
    other.join(timeout=10)
    assert waited and waited[0] >= 0.4


def test_concurrent_writers_on_two_nodes_lose_nothing(shared: Backend, tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMORA_")},
        **shared.env(),
        "PYTHONPATH": str(ROOT),
        "ANONYMIZED_TELEMETRY": "False",
    }
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.add_worker",
                str(tmp_path / f"node-{name}"),
                name,
                "60",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert [report["errors"] for report in reports] == [[], []]
    written = {memory_id for report in reports for memory_id in report["ids"]}
    assert len(written) >= 100, "the write path accepted too few adds for the test to mean much"
    observer = Memora(shared.settings(tmp_path / "observer"))
    stored = {unit.id for unit in observer.list("alice")}
    assert written <= stored
    observer.search("alice", "violin")
    observer.flush()
    assert set(observer.store.vectors.ids_of("alice")) == stored
    assert observer.store.rows.generation("alice") >= len(written)
    observer.close()
    for node in ("node-a", "node-b"):
        root = tmp_path / node
        assert not root.exists() or files_containing(root, [b"alice"]) == []
