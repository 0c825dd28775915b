"""Selection benchmark: precision and recall of the memory policy gate on labelled candidates.

The data is JSON Lines, one labelled candidate a line::

    {"user_message": "...", "candidate": "...", "should_store": true, "reason": null}

``reason`` is ``null`` when ``should_store`` is true, and otherwise one of the gate's
rejection reasons (:class:`memora.models.RejectionReason`). Every candidate is built as
``MemoryCandidate(content=candidate, user_message=user_message)`` and passed through
:func:`memora.write.policy.apply_memory_policy`, with the chat model as its classifier when
the write judge is ``chat_model`` (:mod:`evals.write_judge`). The positive class is "stored".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.common import json_object_line
from evals.write_judge import WriteJudge, resolve_write_judge
from memora.config import get_settings
from memora.errors import InvalidInput
from memora.judgement import trained_judgement
from memora.models import MemoryCandidate, RejectionReason
from memora.write.policy import apply_memory_policy

STORED = "stored"
"""Predicted-outcome key for a candidate the gate accepted."""
NONE_REASON = "none"
"""True-reason key for items that should be stored (``reason: null``)."""
REASONS: tuple[str, ...] = tuple(reason.value for reason in RejectionReason)
_KEYS = ("user_message", "candidate", "should_store", "reason")


class SelectionDataError(InvalidInput):
    """A line of the selection data file is malformed (the message names the line)."""


@dataclass(frozen=True)
class SelectionItem:
    """One labelled candidate memory."""

    line: int
    user_message: str
    candidate: str
    should_store: bool
    reason: str | None


def _parse_line(number: int, text: str) -> SelectionItem:
    def fail(problem: str) -> SelectionDataError:
        return SelectionDataError(f"line {number}: {problem}")

    row = json_object_line(number, text, _KEYS, SelectionDataError)
    for key in ("user_message", "candidate"):
        if not isinstance(row[key], str):
            raise fail(f'"{key}" must be a string')
    should_store, reason = row["should_store"], row["reason"]
    if not isinstance(should_store, bool):
        raise fail('"should_store" must be true or false')
    if reason is not None and reason not in REASONS:
        raise fail(f'"reason" must be null or one of {", ".join(REASONS)}; got {reason!r}')
    if should_store and reason is not None:
        raise fail('"reason" must be null when "should_store" is true')
    if not should_store and reason is None:
        raise fail('"reason" is required when "should_store" is false')
    return SelectionItem(number, row["user_message"], row["candidate"], should_store, reason)


def load_selection(path: Path) -> list[SelectionItem]:
    """Read and validate a selection data file.

    Args:
        path: JSON Lines file; blank lines are skipped.

    Returns:
        The items in file order.

    Raises:
        SelectionDataError: a line is not a well-formed item (the message gives its number),
            or the file cannot be read as UTF-8 text or holds no items.
    """
    items: list[SelectionItem] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SelectionDataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as error:
        raise SelectionDataError(f"{path}: cannot read ({error})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            items.append(_parse_line(number, line))
    if not items:
        raise SelectionDataError(f"{path}: no items")
    return items


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def score_selection(
    items: list[SelectionItem],
    progress: Callable[[int, int], None] | None = None,
    judgement: str | None = None,
    write_judge: str | WriteJudge | None = None,
) -> dict[str, Any]:
    """Run the policy gate over ``items`` and score it.

    Args:
        items: Labelled candidates.
        progress: Optional ``(done, total)`` callback.
        judgement: "trained" or "rules" (default: the settings' ``judgement``).
        write_judge: "rules" or "chat_model" (default: the settings' ``write_judge``).

    Returns:
        ``items``, ``judgement``, the write judge's figures (:meth:`WriteJudge.figures`),
        ``precision`` and ``recall`` of storing (``None`` when undefined),
        ``sensitive_stored`` (sensitive items the gate let through), ``confusion``
        (tp/fp/fn/tn) and ``by_reason``: for each true reason (``"none"`` for items
        that should be stored) the count of items stored and rejected with each
        predicted reason, plus ``total``.
    """
    by_reason: dict[str, dict[str, int]] = {
        key: {"total": 0, STORED: 0, **dict.fromkeys(REASONS, 0)} for key in (NONE_REASON, *REASONS)
    }
    tp = fp = fn = tn = 0
    judge = trained_judgement(judgement or get_settings().judgement)
    writer = resolve_write_judge(write_judge)
    for done, item in enumerate(items, start=1):
        candidate = MemoryCandidate(content=item.candidate, user_message=item.user_message)
        accepted, rejected = apply_memory_policy([candidate], writer.classifier, judge=judge)
        predicted = STORED if accepted else rejected[0].reason.value
        row = by_reason[item.reason or NONE_REASON]
        row["total"] += 1
        row[predicted] += 1
        stored = predicted == STORED
        if stored and item.should_store:
            tp += 1
        elif stored:
            fp += 1
        elif item.should_store:
            fn += 1
        else:
            tn += 1
        if progress is not None:
            progress(done, len(items))
    return {
        "items": len(items),
        "judgement": "trained" if judge is not None else "rules",
        **writer.figures(),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "sensitive_stored": by_reason[RejectionReason.SENSITIVE_DATA.value][STORED],
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "by_reason": {key: row for key, row in by_reason.items() if row["total"]},
    }


def run_selection(
    path: Path,
    progress: Callable[[int, int], None] | None = None,
    judgement: str | None = None,
    write_judge: str | WriteJudge | None = None,
) -> dict[str, Any]:
    """Load ``path`` and score the policy gate on it (see :func:`score_selection`)."""
    return score_selection(load_selection(path), progress, judgement, write_judge)
