"""Letta core-memory-update protocol (../shared/bench/README.md, `update`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.peers import MemorySystem

TOP_K = 5
FIELDS = (
    "update_win",
    "answer@1",
    "stale@5",
    "collateral_per_row",
    "contradiction_rate",
    "staleness_rate",
)
"""The figures each system gets, in the order tables show them."""
_T0 = datetime(2025, 1, 1, tzinfo=UTC)


def load_rows(path: Path) -> list[dict[str, Any]]:
    """Read the JSON-lines rows."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _strip_quotes(text: str) -> str:
    return text.strip().strip('"').strip("“”").strip()


def score_row(system: MemorySystem, row: dict[str, Any], user_id: str) -> dict[str, float]:
    """Remember the facts, then the contradiction, then query; return the row's figures.

    contradiction_rate: the top 5 holds both the new fact and a fact it contradicts.
    staleness_rate: the share of the top 5 that is outdated: a fact the data says was
    contradicted, or one the system itself no longer holds as current.
    """
    extra = row["agent_args"]["extra"]
    facts: list[str] = extra["facts"]
    contradicted_idx = extra["supporting_fact_indices"]
    contradicted_idx = (
        contradicted_idx if isinstance(contradicted_idx, list) else [contradicted_idx]
    )
    fact_keys: list[str | None] = []
    for number, fact in enumerate(facts):
        written = system.add(user_id, fact, _T0 + timedelta(minutes=number))
        fact_keys.append(written.key if written.new else None)
    new = system.add(
        user_id, _strip_quotes(extra["contradicting_fact"]), _T0 + timedelta(minutes=len(facts))
    )
    ranked = system.search(user_id, row["input"], TOP_K, _T0 + timedelta(minutes=len(facts) + 1))
    contradicted = {fact_keys[i] for i in contradicted_idx if fact_keys[i]}
    new_rank = ranked.index(new.key) if new.key in ranked else None
    stale_ranks = [ranked.index(i) for i in contradicted if i in ranked]
    update_win = new_rank is not None and all(rank > new_rank for rank in stale_ranks)
    answer = str(row["ground_truth"]).lower()
    top = system.content(user_id, ranked[0]) if ranked else None
    answer_at_1 = top is not None and answer in top.lower()
    collateral = 0
    for index, key in enumerate(fact_keys):
        if index in contradicted_idx:
            continue
        if key is None or system.content(user_id, key) is None:
            collateral += 1
    outdated = [
        key for key in ranked if key in contradicted or system.content(user_id, key) is None
    ]
    return {
        "update_win": float(update_win),
        "answer@1": float(answer_at_1),
        "stale@5": float(bool(stale_ranks)),
        "collateral_per_row": float(collateral),
        "contradiction_rate": float(new_rank is not None and bool(stale_ranks)),
        "staleness_rate": len(outdated) / len(ranked) if ranked else 0.0,
    }


def run_update(
    system: MemorySystem, path: Path, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Score every row, each as a fresh user; return the means."""
    rows = load_rows(path)
    totals: dict[str, float] = {}
    for number, row in enumerate(rows, start=1):
        for key, value in score_row(system, row, f"update-row-{number}").items():
            totals[key] = totals.get(key, 0.0) + value
        if progress:
            progress(number, len(rows))
    result: dict[str, Any] = {key: value / len(rows) for key, value in totals.items()}
    result["rows"] = len(rows)
    return result
