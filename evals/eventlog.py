"""Event-log benchmark: repeated events, lists, counters, updates and repeats of one user.

The data is JSON Lines, one case a line::

    {"id": "swim-01", "kind": "events", "facts": ["...", ...], "keep": [0, 1], "drop": [2]}

Each case is a fresh user. Its facts go through the full write path
(``Memora.add``: policy, importance, reconciliation, store) one after another,
one day apart. Afterwards every ``keep`` fact must be active and no ``drop``
fact may remain active as a separate memory. A fact counts as active when an
active memory has its text as the write path stores it (relative dates such as
"this year" are resolved against the day it was said, exactly as for any
memory). Active memories are matched as a multiset: each ``keep`` fact claims
one memory with its text first, and a ``drop`` fact is stale only if another
memory with its text is left, so an exact repeat counts once.

Figures per file and per kind: distinct_kept (share of ``keep`` facts active),
wrongly_superseded (``keep`` facts not active), stale (``drop`` facts still
active), plus the write path's actions and the cases that failed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.common import json_object_line
from memora.api import Memora
from memora.errors import InvalidInput
from memora.models import MemorySource, MemoryStatus
from memora.text.dates import resolve_relative_dates

KINDS = ("events", "lists", "counters", "updates", "repeats", "mixed")
"""The case kinds the data format defines, in the order tables show them."""
_KEYS = {"id", "kind", "facts", "keep", "drop"}
_T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
_ACTOR = "eval-eventlog"


class EventlogDataError(InvalidInput):
    """A line of the event-log data file is malformed (the message names the line)."""


@dataclass(frozen=True)
class EventlogCase:
    """One labelled sequence of facts about one user."""

    id: str
    """The case's name in the data file."""
    kind: str
    """One of ``KINDS``."""
    facts: list[str]
    """Memory sentences, added in this order."""
    keep: list[int]
    """Indices of facts that must be active at the end."""
    drop: list[int]
    """Indices of facts that must not remain active as a separate memory."""


def _parse_line(number: int, text: str) -> EventlogCase:
    def fail(problem: str) -> EventlogDataError:
        return EventlogDataError(f"line {number}: {problem}")

    row = json_object_line(number, text, sorted(_KEYS), EventlogDataError)
    if row["kind"] not in KINDS:
        raise fail(f"kind {row['kind']!r} is not one of {', '.join(KINDS)}")
    facts = row["facts"]
    if not isinstance(facts, list) or not facts or not all(isinstance(f, str) for f in facts):
        raise fail("facts must be a non-empty list of strings")
    indices: list[int] = []
    for key in ("keep", "drop"):
        value = row[key]
        if not isinstance(value, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in value
        ):
            raise fail(f"{key} must be a list of integers")
        indices += value
    if sorted(indices) != list(range(len(facts))):
        raise fail("every fact index must be in exactly one of keep / drop")
    return EventlogCase(str(row["id"]), row["kind"], facts, list(row["keep"]), list(row["drop"]))


def load_cases(path: Path) -> list[EventlogCase]:
    """Read and check the cases.

    Raises:
        EventlogDataError: The file cannot be read as UTF-8 text, holds no cases, or a
            line is malformed (the message names the file and the first bad line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise EventlogDataError(f"{path}: cannot read ({error})") from None
    cases = []
    try:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                cases.append(_parse_line(number, line))
    except EventlogDataError as error:
        raise EventlogDataError(f"{path}: {error}") from None
    if not cases:
        raise EventlogDataError(f"{path}: no cases")
    return cases


@dataclass(frozen=True)
class CaseResult:
    """What one case left active."""

    case: EventlogCase
    missing: list[int]
    """``keep`` facts not active at the end (wrongly superseded, skipped or refused)."""
    stale: list[int]
    """``drop`` facts still active as a separate memory."""
    actions: Counter[str]
    """The write path's action per fact (``rejected`` when the policy refused it)."""


def run_case(memora: Memora, case: EventlogCase, user_id: str) -> CaseResult:
    """Add the case's facts one day apart, then compare the active memories with the labels."""
    actions: Counter[str] = Counter()
    stored_as: list[str] = []
    for day, fact in enumerate(case.facts):
        said_at = _T0 + timedelta(days=day)
        outcome = memora.add(
            user_id,
            fact,
            source=MemorySource(actor=_ACTOR),
            reason="useful_future_context",
            said_at=said_at,
        )
        actions[outcome.action.value if outcome.action else "rejected"] += 1
        stored_as.append(resolve_relative_dates(fact.strip(), said_at)[0])
    left = Counter(unit.content for unit in memora.list(user_id, MemoryStatus.ACTIVE))
    missing = []
    for index in case.keep:
        if left[stored_as[index]] > 0:
            left[stored_as[index]] -= 1
        else:
            missing.append(index)
    stale = []
    for index in case.drop:
        if left[stored_as[index]] > 0:
            left[stored_as[index]] -= 1
            stale.append(index)
    return CaseResult(case, missing, stale, actions)


def _figures(results: list[CaseResult]) -> dict[str, Any]:
    keep = sum(len(r.case.keep) for r in results)
    drop = sum(len(r.case.drop) for r in results)
    missing = sum(len(r.missing) for r in results)
    return {
        "cases": len(results),
        "cases_passed": sum(1 for r in results if not r.missing and not r.stale),
        "keep_facts": keep,
        "drop_facts": drop,
        "distinct_kept": (keep - missing) / keep if keep else 1.0,
        "wrongly_superseded": missing,
        "stale": sum(len(r.stale) for r in results),
    }


def score(results: list[CaseResult]) -> dict[str, Any]:
    """The file's figures, the same per kind, the write path's actions and the failed cases."""
    summary = _figures(results)
    summary["by_kind"] = {
        kind: _figures([r for r in results if r.case.kind == kind])
        for kind in KINDS
        if any(r.case.kind == kind for r in results)
    }
    summary["actions"] = dict(sum((r.actions for r in results), Counter()))
    summary["failures"] = [
        {"id": r.case.id, "kind": r.case.kind, "missing": r.missing, "stale": r.stale}
        for r in results
        if r.missing or r.stale
    ]
    return summary


def run_eventlog(
    memora: Memora, path: Path, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Run every case of ``path`` as its own user of ``memora``; return the figures."""
    cases = load_cases(path)
    results = []
    for number, case in enumerate(cases, start=1):
        results.append(run_case(memora, case, f"eventlog-{number}"))
        if progress:
            progress(number, len(cases))
    return score(results)
