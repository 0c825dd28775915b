"""`memora memories pending / approve / reject`: the user's side of a deletion request."""

from __future__ import annotations

from pathlib import Path

from memora.api import Memora
from memora.config import load_settings
from memora.integrations import MemoraStore
from tests.integration.test_cli import ok, one_error_line, run

ALICE = ("memories", "alice")


def _requested(data: Path, *texts: str) -> list[str]:
    """Put each text through the store, ask to delete it; the request ids, in order."""
    memora = Memora(load_settings(data_dir=data, database_url=None, chroma_url=None))
    try:
        store = MemoraStore(memora)
        for number, text in enumerate(texts):
            store.put(ALICE, f"k{number}", {"content": text})
            store.delete(ALICE, f"k{number}")
        return [request.id for request in memora.pending_forgets("alice")]
    finally:
        memora.close()


def test_pending_requests_are_approved_or_rejected_from_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "data"
    therapist, cat = _requested(data, "My therapist is Dr. Lin", "My cat is called Mochi")

    shown = ok(run(data, "memories", "pending", "--user", "alice"))
    assert therapist in shown and cat in shown and "Dr. Lin" in shown and "store" in shown
    assert "no deletion requests pending" in ok(run(data, "memories", "pending", "--user", "bob"))

    assert "no deletion request" in one_error_line(
        run(data, "memories", "approve", therapist, "--user", "bob")
    )
    assert "deleted 1 version(s)" in ok(run(data, "memories", "approve", therapist, "-u", "alice"))
    assert "kept" in ok(run(data, "memories", "reject", cat, "--user", "alice"))

    remaining = ok(run(data, "memories", "list", "--user", "alice"))
    assert "Mochi" in remaining and "Dr. Lin" not in remaining
    assert "no deletion requests pending" in ok(run(data, "memories", "pending", "-u", "alice"))
    assert one_error_line(run(data, "memories", "reject", cat, "--user", "alice"))


def test_forget_and_pending_name_every_older_version_that_goes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    memora = Memora(load_settings(data_dir=data, database_url=None, chroma_url=None))
    try:
        first = memora.add("alice", "I live in Lisbon").memory_id or ""
        second = memora.add("alice", "I live in Porto", replaces=first).memory_id or ""
        memora.add("alice", "I live in Braga", replaces=second)
        memora.request_forget("alice", second, reason="wrong", source="store")
    finally:
        memora.close()
    shown = ok(run(data, "memories", "pending", "--user", "alice"))
    assert "older version: I live in Lisbon" in shown and "Braga" not in shown
    said = ok(run(data, "memories", "forget", second, "--user", "alice", "--yes"))
    assert "Also deletes this older version: I live in Lisbon" in said
    assert "deleted 2 version(s)" in said
    assert "Braga" in ok(run(data, "memories", "list", "--user", "alice"))
