"""One owner test for every client that lists a user's threads on a server."""

from __future__ import annotations

from graph.thread_owners import MAX_THREADS, PAGE, next_offset, owned, thread_owner

STAMPED = {"thread_id": "a", "metadata": {"owner": "alice"}, "values": {"owner_user_id": "bob"}}
UNSTAMPED = {"thread_id": "b", "metadata": {}, "values": {"owner_user_id": "alice"}}
NEW = {"thread_id": "c", "metadata": {"owner": "alice"}, "values": None}


def test_with_authentication_the_stamp_decides_and_without_the_state_does() -> None:
    assert thread_owner(STAMPED, authenticated=True) == "alice"
    assert thread_owner(STAMPED, authenticated=False) == "bob"
    assert thread_owner(UNSTAMPED, authenticated=True) is None
    assert thread_owner(NEW, authenticated=False) is None
    threads = [STAMPED, UNSTAMPED, NEW]
    assert [t["thread_id"] for t in owned(threads, "alice", authenticated=True)] == ["a", "c"]
    assert [t["thread_id"] for t in owned(threads, "alice", authenticated=False)] == ["b"]


def test_paging_stops_at_a_short_page_or_the_listing_limit_unless_told_not_to() -> None:
    full = [{}] * PAGE
    assert next_offset(PAGE, full) == PAGE
    assert next_offset(PAGE + 3, full[:3]) is None
    assert next_offset(MAX_THREADS, full) is None
    assert next_offset(MAX_THREADS, full, most=None) == MAX_THREADS
