"""A forgotten memory's words leave the audit: queries that returned it or named it.

A search that found nothing still says what it looked for, so the files are
scanned for the memory's distinctive words after the forget, and after an erase.
"""

from __future__ import annotations

from pathlib import Path

from memora.api import Memora
from memora.audit import REDACTED
from memora.text.naming import distinctive_terms, names_any
from tests.conftest import Backend, tables_containing
from tests.integration.test_forgetting import files_containing

SECRET_FACT = "My ex-husband Chen Wei lives in Taichung"
NEEDLES = [b"Chen Wei", b"chen wei", b"Taichung", b"taichung", b"husband"]


def _queries(memora: Memora, user_id: str) -> list[str | None]:
    return [entry.query for entry in memora.audit.entries(user_id, limit=-1)]


def test_the_naming_rule_keeps_common_words_and_finds_distinctive_ones() -> None:
    terms = distinctive_terms(SECRET_FACT)
    assert names_any("Where does Chen Wei live?", terms)
    assert names_any("taichung", terms)
    assert not names_any("What do you remember about my favourite things?", terms)
    assert names_any("高雄的天氣", distinctive_terms("我住在高雄"))
    assert not names_any("我住在哪裡", distinctive_terms("我住在高雄"))


def _held(root: Path, backend: Backend, needles: list[bytes]) -> list[str]:
    """Files under the data dir, and on Postgres tables with a live row, holding a needle."""
    held = files_containing(root, needles)
    if backend.database_url is not None:
        held += [t for n in needles for t in tables_containing(backend.database_url, n.decode())]
    return held


def test_queries_naming_a_forgotten_memory_leave_the_audit_found_or_not(
    tmp_path: Path, backend: Backend
) -> None:
    root = tmp_path / "data"
    memora = Memora(backend.settings(root))
    # Words no other test uses: the process's heap holds other tests' texts, and Chroma can
    # write stray heap bytes into its files (README, "One file Memora cannot keep clean").
    memora.add("alice", "My favourite tea is Qimen hongcha")
    memora.add("bob", "My neighbour Chen Wei fixes bikes")
    # Asked before the memory existed, and with a bar nothing clears: both found nothing.
    memora.search("alice", "Where does Chen Wei live?")
    memory_id = memora.add("alice", SECRET_FACT).memory_id or ""
    assert memora.search("alice", "my ex-husband in Taichung", min_score=0.999) == []
    found = memora.search("alice", "Who lives in Taichung?")
    assert memory_id in [hit.memory.id for hit in found]
    memora.search("alice", "my Qimen tea")
    memora.search("bob", "Chen Wei")
    # The control: the audit held them (on Postgres sealed: no table holds them plain).
    assert "Who lives in Taichung?" in _queries(memora, "alice")
    assert (_held(root, backend, NEEDLES) != []) is (backend.database_url is None)

    assert memora.forget("alice", memory_id) == [memory_id]
    queries = _queries(memora, "alice")
    assert queries.count(REDACTED) == 3
    assert "my Qimen tea" in queries  # a query that does not name it stays
    assert "Chen Wei" in _queries(memora, "bob")  # another user's audit is theirs
    memora.forget("bob", memora.list("bob")[0].id)
    assert _held(root, backend, NEEDLES) == []

    memora.search("alice", "Qimen hongcha")
    memora.erase_user("alice")
    assert _held(root, backend, [b"Qimen", b"hongcha"]) == []
    memora.close()
