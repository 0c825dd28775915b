"""No text of a blind evaluation set is in a training corpus (blind sets are never trained on)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "memora" / "judgement" / "corpora"
BLIND_SETS = sorted((ROOT / "tests" / "data").glob("*blind*.jsonl"))


def _texts(row: Any) -> Iterator[str]:
    """Every string of a row, however the file nests them, that is long enough to identify it."""
    if isinstance(row, str):
        if len(row) >= 24:
            yield " ".join(row.casefold().split())
    elif isinstance(row, dict):
        for value in row.values():
            yield from _texts(value)
    elif isinstance(row, list):
        for value in row:
            yield from _texts(value)


def _file_texts(path: Path) -> set[str]:
    lines = path.read_text("utf-8").splitlines()
    return {text for line in lines if line.strip() for text in _texts(json.loads(line))}


def test_the_blind_sets_are_found() -> None:
    assert len(BLIND_SETS) >= 10
    assert all(_file_texts(path) for path in BLIND_SETS)


def test_no_blind_text_is_in_a_training_corpus() -> None:
    training = set().union(*(_file_texts(path) for path in sorted(CORPORA.glob("*.jsonl"))))
    assert len(training) > 10_000
    shared = {path.name: sorted(_file_texts(path) & training)[:3] for path in BLIND_SETS}
    leaked = {name: texts for name, texts in shared.items() if texts}
    assert not leaked, leaked
