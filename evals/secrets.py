"""Secrets benchmark: are secret values refused as memories and cut from what is kept?

The data is JSON Lines, one text a line, with the secret values it holds::

    {"text": "use code 739104 to open the gate", "secret_spans": ["739104"]}

Each text is offered to the gate as a candidate the user said and redacted as a
transcript would be (cut means no secret value is left in the redacted text). A secret
is stored where the gate accepts it; one the gate refuses for another reason than
sensitive data (an instruction to tell others, a momentary request) is not stored, and
is counted apart, since the gate then says the wrong reason. Texts without secrets
measure the cost: clear texts refused as sensitive, and clear texts that redaction changed.
With the ``chat_model`` write judge (:mod:`evals.write_judge`) the chat model judges each
text the hard rules accept, as on the write path; redaction stays the offline one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.write_judge import WriteJudge, resolve_write_judge
from memora.config import get_settings
from memora.judgement import trained_judgement
from memora.models import MemoryCandidate, RejectionReason
from memora.redaction import redact
from memora.write.policy import apply_memory_policy


def load_secrets(path: Path) -> list[tuple[str, list[str]]]:
    """(text, secret values) per line of ``path``."""
    items = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row.get("text"), str) or not isinstance(row.get("secret_spans"), list):
            raise ValueError(f'{path}: line {number}: needs "text" and "secret_spans"')
        items.append((row["text"], [str(span) for span in row["secret_spans"]]))
    return items


def score_secrets(
    items: list[tuple[str, list[str]]],
    progress: Callable[[int, int], None] | None = None,
    judgement: str | None = None,
    write_judge: str | WriteJudge | None = None,
) -> dict[str, Any]:
    """Gate and redaction figures over ``items`` (see the module doc)."""
    judge = trained_judgement(judgement or get_settings().judgement)
    writer = resolve_write_judge(write_judge)
    stored = refused_otherwise = unredacted = secret_texts = 0
    clear_refused = clear_changed = clear_texts = 0
    for done, (text, spans) in enumerate(items, start=1):
        candidate = MemoryCandidate(content=text, user_message=text)
        _, rejected = apply_memory_policy([candidate], writer.classifier, judge=judge)
        refused = bool(rejected) and rejected[0].reason is RejectionReason.SENSITIVE_DATA
        cleaned = redact(text, judge=judge).text
        if spans:
            secret_texts += 1
            stored += not rejected
            refused_otherwise += bool(rejected) and not refused
            unredacted += any(span in cleaned for span in spans)
        else:
            clear_texts += 1
            clear_refused += refused
            clear_changed += cleaned != text
        if progress is not None:
            progress(done, len(items))
    return {
        "items": len(items),
        "judgement": "trained" if judge is not None else "rules",
        **writer.figures(),
        "secret_texts": secret_texts,
        "secrets_stored": stored,
        "secrets_refused_for_another_reason": refused_otherwise,
        "secrets_left_unredacted": unredacted,
        "clear_texts": clear_texts,
        "clear_refused": clear_refused,
        "clear_changed_by_redaction": clear_changed,
    }


def run_secrets(
    path: Path,
    progress: Callable[[int, int], None] | None = None,
    judgement: str | None = None,
    write_judge: str | WriteJudge | None = None,
) -> dict[str, Any]:
    """Load ``path`` and score it (see :func:`score_secrets`)."""
    return score_secrets(load_secrets(path), progress, judgement, write_judge)
