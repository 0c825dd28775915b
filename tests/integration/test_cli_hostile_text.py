"""User text that looks like Rich markup is shown literally by every command, never parsed.

A memory, profile field or thread id is data: a ``[/]`` in it must neither crash
a table nor restyle the output, and such a memory must be as easy to delete as
any other. Every command runs through the real console script.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.test_cli import api, ok, run, run_parallel, unit

BAND = "My favourite band is called [/] Brackets"
BOLD = "I like [bold]x[/bold] in my notes"
RED = "My cat is named [red]Miso[/red] and a slash \\"
HOSTILE = {"band": BAND, "bold": BOLD, "red": RED}


def _seed(data_dir: Path) -> None:
    memora = api(data_dir)
    memora.ingest([unit(memory_id, content) for memory_id, content in HOSTILE.items()])
    memora.store.update("default", "bold", metadata={"review_targets": ["red"]})
    memora.store.mark_review("default", "bold", True)
    memora.close()


def test_markup_in_memories_is_listed_searched_shown_and_reviewed_literally(
    data_dir: Path,
) -> None:
    _seed(data_dir)
    listing, search, show, history, review = run_parallel(
        (data_dir, "memories", "list"),
        (data_dir, "memories", "search", "favourite band Brackets"),
        (data_dir, "memories", "show", "band"),
        (data_dir, "memories", "history", "red"),
        lambda: run(data_dir, "memories", "review", input="n\n"),
    )
    listed_text = ok(listing)
    for content in HOSTILE.values():
        assert content in listed_text
    assert BAND in ok(search)
    assert "[/]" in ok(show)
    assert RED in ok(history)
    reviewed = ok(review)
    assert BOLD in reviewed
    assert f"conflicts with: {RED}" in reviewed


def test_a_memory_with_markup_is_forgotten_like_any_other(data_dir: Path) -> None:
    _seed(data_dir)
    kept = ok(run(data_dir, "memories", "forget", "bold", input="n\n"))
    # The preview is shown as typed: the tags are visible, not applied.
    assert f"Memory: {BOLD}" in kept
    assert "kept" in kept
    deleted = ok(run(data_dir, "memories", "forget", "band", "--yes"))
    assert BAND in deleted
    assert "deleted 1 version(s)" in deleted
    remaining = ok(run(data_dir, "memories", "list", "--json"))
    assert '"band"' not in remaining
    assert '"bold"' in remaining


def test_markup_in_profile_fields_and_thread_ids_is_shown_literally(data_dir: Path) -> None:
    key, value, thread = "band[/]", "[bold]Brackets[/bold]", "trip[/]planning"
    assert f"{key} set" in ok(run(data_dir, "profile", "set", key, value))
    chat = run(
        data_dir,
        "chat",
        "--thread",
        thread,
        input="/memories\n/profile\nHello there\n/exit\n",
    )
    shown, threads = run_parallel(
        (data_dir, "profile", "show"),
        (data_dir, "threads", "list"),
    )
    assert value in ok(shown)
    assert key in shown.stdout
    chatted = ok(chat)
    assert f"Thread: {thread}" in chatted
    assert f'"{key}": "{value}"' in chatted
    assert thread in ok(threads)


def test_markup_in_memories_survives_the_chat_memories_command(data_dir: Path) -> None:
    _seed(data_dir)
    chatted = ok(run(data_dir, "chat", input="/memories\n/exit\n"))
    # Tables wrap long cells, so compare with whitespace folded.
    folded = re.sub(r"\s+", " ", chatted)
    assert "[/] Brackets" in folded
    assert "[bold]x[/bold]" in folded
