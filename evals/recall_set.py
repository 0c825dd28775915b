"""Recall on labelled question sets: memories per user, questions, the memories that answer.

The data is JSON Lines, one user a line::

    {"id": "zh-01", "memories": ["...", ...],
     "questions": [{"question": "...", "answers": [3]}, ...]}

Each case's memories are bulk-loaded as one user (no selection, no reconciliation: recall is
what is measured). Each question is searched in that user's memories; recall@k is the share of
its answering memories among the top k, averaged over questions, and hit@k the share of
questions with at least one answering memory there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.common import json_object_line, percentile_ms
from evals.peers import Item, MemorySystem
from memora.errors import InvalidInput

KS = (1, 3, 5, 10)
_KEYS = ["id", "memories", "questions"]
_WHEN = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


class RecallSetDataError(InvalidInput):
    """A line of a recall-set data file is malformed (the message names the line)."""


@dataclass(frozen=True)
class RecallCase:
    """One user's memories and the questions asked of them."""

    id: str
    """The case's name in the data file."""
    memories: list[str]
    """The user's memories, in the order the answers index them."""
    questions: list[tuple[str, set[int]]]
    """Each question with the indices of the memories that answer it."""


def _parse_line(number: int, text: str) -> RecallCase:
    def fail(problem: str) -> RecallSetDataError:
        return RecallSetDataError(f"line {number}: {problem}")

    row = json_object_line(number, text, _KEYS, RecallSetDataError)
    memories = row["memories"]
    if not isinstance(memories, list) or not memories:
        raise fail("memories must be a non-empty list of strings")
    if not all(isinstance(m, str) and m.strip() for m in memories):
        raise fail("memories must be a non-empty list of strings")
    questions: list[tuple[str, set[int]]] = []
    if not isinstance(row["questions"], list) or not row["questions"]:
        raise fail("questions must be a non-empty list")
    for question in row["questions"]:
        if not isinstance(question, dict) or set(question) != {"question", "answers"}:
            raise fail('each question must be {"question": str, "answers": [int, ...]}')
        answers = question["answers"]
        if (
            not isinstance(answers, list)
            or not answers
            or not all(isinstance(i, int) and 0 <= i < len(memories) for i in answers)
        ):
            raise fail(f"answers of {question['question']!r} must index the memories")
        questions.append((str(question["question"]), set(answers)))
    return RecallCase(str(row["id"]), list(memories), questions)


def load_cases(path: Path) -> list[RecallCase]:
    """Read and check the cases.

    Raises:
        RecallSetDataError: The file cannot be read as UTF-8 text, holds no cases, or a line
            is malformed (the message names the file and the first bad line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RecallSetDataError(f"{path}: cannot read ({error})") from None
    try:
        cases = [
            _parse_line(number, line)
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()
        ]
    except RecallSetDataError as error:
        raise RecallSetDataError(f"{path}: {error}") from None
    if not cases:
        raise RecallSetDataError(f"{path}: no cases")
    return cases


def run_recall_set(
    system: MemorySystem, path: Path, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Load every case as its own user of ``system``, ask its questions, return the figures."""
    cases = load_cases(path)
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    hits: dict[int, list[float]] = {k: [] for k in KS}
    latencies: list[float] = []
    total = sum(len(c.questions) for c in cases)
    done = 0
    for number, case in enumerate(cases, start=1):
        user_id = f"recall-{number}"
        system.add_many(
            user_id,
            [Item(key=str(i), text=m, created_at=_WHEN) for i, m in enumerate(case.memories)],
        )
        for question, answers in case.questions:
            started = time.perf_counter()
            ranked = [int(key) for key in system.search(user_id, question, max(KS), _WHEN)]
            latencies.append(time.perf_counter() - started)
            for k in KS:
                found = len(answers & set(ranked[:k]))
                recalls[k].append(found / len(answers))
                hits[k].append(float(found > 0))
            done += 1
            if progress:
                progress(done, total)
    return {
        "cases": len(cases),
        "questions": total,
        "recall": {f"recall@{k}": sum(v) / len(v) for k, v in recalls.items()},
        "hit": {f"hit@{k}": sum(v) / len(v) for k, v in hits.items()},
        "search_ms": {"p50": percentile_ms(latencies, 50), "p95": percentile_ms(latencies, 95)},
    }
