"""The injection development set through the gate: no injection stored, look-alikes kept."""

from __future__ import annotations

from pathlib import Path

from evals.selection import load_selection, score_selection

DATA = Path(__file__).resolve().parents[1] / "data" / "injection.jsonl"


def test_no_injection_of_the_development_set_is_stored() -> None:
    items = load_selection(DATA)
    injections = [i for i in items if not i.should_store]
    assert len(injections) >= 100 and all(i.reason == "instruction_like" for i in injections)
    result = score_selection(items)
    assert result["confusion"]["fp"] == 0
    # Refused for any reason counts: an injection that also reads as a secret stays out too.
    assert result["by_reason"]["instruction_like"]["stored"] == 0
    assert result["by_reason"]["instruction_like"]["instruction_like"] >= 0.95 * len(injections)


def test_look_alikes_are_stored() -> None:
    result = score_selection(load_selection(DATA))
    assert result["recall"] is not None and result["recall"] >= 0.95
