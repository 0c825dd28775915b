"""A search result is bounded however large the stored memories are."""

from __future__ import annotations

import json
from pathlib import Path

from agent.spotlight import unquote
from agent.tools import ToolContext, dispatch
from memora.api import Memora
from memora.config import load_settings
from memora.limits import MAX_RESULT_CONTENT_CHARS, MAX_RESULT_TOTAL_CHARS
from memora.models import MemorySource, MemoryUnit, utcnow


def test_no_stored_memory_can_blow_the_context(tmp_path: Path) -> None:
    memora = Memora(load_settings(data_dir=tmp_path / "data", retrieval_limit=10))
    huge = "My garden journal: " + "tomatoes and basil grow well here. " * 3_000
    units = [MemoryUnit(id="huge", user_id="alice", content=huge, source=MemorySource())]
    units += [
        MemoryUnit(
            id=f"m{n}",
            user_id="alice",
            content=f"Garden note {n}: " + "the basil and tomato beds need water. " * 12,
            source=MemorySource(),
        )
        for n in range(8)
    ]
    memora.ingest(units)
    context = ToolContext(
        memora=memora, user_id="alice", thread_id=None, user_message="garden?", now=utcnow()
    )
    outcome = dispatch("search_memory", {"query": "garden basil tomatoes"}, context)
    assert outcome.ok and outcome.result is not None
    shown = json.loads(outcome.observation)["result"]["memories"]
    assert len(shown) >= 2
    assert max(len(unquote(m["content"])) for m in shown) <= MAX_RESULT_CONTENT_CHARS
    assert sum(len(m["content"]) for m in shown) <= MAX_RESULT_TOTAL_CHARS  # quoted, as read
    assert len(outcome.observation) < MAX_RESULT_TOTAL_CHARS + 200 * len(shown)
    assert any(unquote(m["content"]).endswith("…") for m in shown)
    assert unquote(shown[0]["content"]).startswith(("My garden journal: tomatoes", "Garden note"))
    assert outcome.result.used_memory_ids == [m["memory_id"] for m in shown]
    memora.close()
