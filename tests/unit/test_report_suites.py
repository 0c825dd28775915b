"""`eval all` runs the injection and blind sets it finds beside the development sets."""

from __future__ import annotations

from pathlib import Path

from evals.report import _selection_section, suites


def test_sets_beside_the_development_sets_are_run_when_present(tmp_path: Path) -> None:
    selection = tmp_path / "selection.jsonl"
    eventlog = tmp_path / "eventlog.jsonl"
    (tmp_path / "injection_blind.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "eventlog_blind.jsonl").write_text("", encoding="utf-8")
    found = {
        suite.name: suite.args for suite in suites(tmp_path, selection, "1000", False, eventlog)
    }
    assert found["injection_blind"] == [
        "selection",
        "--data",
        str(tmp_path / "injection_blind.jsonl"),
    ]
    assert found["eventlog_blind"] == ["eventlog", "--data", str(tmp_path / "eventlog_blind.jsonl")]
    assert "selection_blind" not in found and "injection" not in found


def test_a_held_out_section_carries_its_own_title() -> None:
    result = {"memora": {"precision": 0.5, "recall": 1.0, "sensitive_stored": 0, "by_reason": {}}}
    lines = _selection_section(result, "Injection, blind set")
    assert lines[0] == "## Injection, blind set"
