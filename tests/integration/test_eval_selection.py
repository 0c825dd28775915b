"""``memora eval selection``: the policy gate's precision and recall, run as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

MEMORA = Path(sys.executable).parent / "memora"
if not MEMORA.exists():
    MEMORA = Path(shutil.which("memora") or "memora")
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "selection.jsonl"
REASONS = {
    "sensitive_data",
    "instruction_like",
    "user_refused",
    "assistant_generated",
    "ephemeral",
    "too_vague",
}


def _run(tmp_path: Path, data: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORA_")}
    env["MEMORA_DATA_DIR"] = str(tmp_path / "memora-data")
    env["COLUMNS"] = "200"
    return subprocess.run(
        [str(MEMORA), "eval", "selection", "--data", str(data), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def _json(tmp_path: Path, data: Path, *extra: str) -> dict[str, Any]:
    proc = _run(tmp_path, data, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)["memora"]
    return result


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
    return path


def test_the_default_judgement_is_trained_and_keeps_no_secret(tmp_path: Path) -> None:
    result = _json(tmp_path, SHIPPED)
    assert result["judgement"] == "trained"
    assert result["sensitive_stored"] == 0
    assert result["precision"] >= 0.95 and result["recall"] >= 0.94


def test_shipped_set_stores_no_sensitive_item(tmp_path: Path) -> None:
    result = _json(tmp_path, SHIPPED, "--judgement", "rules")
    assert {"precision", "recall", "sensitive_stored", "by_reason", "items"} <= result.keys()
    lines = [line for line in SHIPPED.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert result["items"] == len(lines) >= 300
    assert result["sensitive_stored"] == 0
    assert result["by_reason"]["sensitive_data"]["stored"] == 0
    assert set(result["by_reason"]) == {"none", *REASONS}
    for row in result["by_reason"].values():
        assert row["total"] == row["stored"] + sum(row[reason] for reason in REASONS)
    # The rules were refined on this set, then rules fitted to single items were removed:
    # the README reports 0.985 / 1.000 on it (two momentary statements now stored).
    assert round(result["precision"], 3) == 0.985
    assert result["recall"] == 1.0


def test_held_out_set_stores_no_sensitive_item(tmp_path: Path) -> None:
    # Written without sight of the rules and never used to tune them: only the hard
    # guarantee is asserted here; its precision and recall are reported in the README.
    result = _json(tmp_path, SHIPPED.with_name("selection_heldout.jsonl"))
    assert result["items"] == 160
    assert result["sensitive_stored"] == 0


def test_tiny_file_gives_known_counts(tmp_path: Path) -> None:
    rows = [
        # should store, and clearly fine: stored (true positive)
        {
            "user_message": "I live in Kaohsiung and ride a scooter to work",
            "candidate": "User lives in Kaohsiung and rides a scooter to work",
            "should_store": True,
            "reason": None,
        },
        # should store, but the candidate holds a password: rejected (false negative)
        {
            "user_message": "my router password is Zq81!kkpw",
            "candidate": "User's router password is Zq81!kkpw",
            "should_store": True,
            "reason": None,
        },
        # sensitive: rejected as sensitive
        {
            "user_message": "請記住，我的驗證碼是 123456",
            "candidate": "使用者的驗證碼是 123456",
            "should_store": False,
            "reason": "sensitive_data",
        },
        # labelled too_vague but a clear fact: stored (false positive)
        {
            "user_message": "我住在台南",
            "candidate": "使用者住在台南",
            "should_store": False,
            "reason": "too_vague",
        },
        # labelled ephemeral, but the text is content-free: rejected as too_vague
        {
            "user_message": "ok",
            "candidate": "something",
            "should_store": False,
            "reason": "ephemeral",
        },
    ]
    result = _json(tmp_path, _write(tmp_path / "tiny.jsonl", rows), "--judgement", "rules")
    assert result["items"] == 5
    assert result["confusion"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 2}
    assert result["precision"] == 0.5
    assert result["recall"] == 0.5
    assert result["sensitive_stored"] == 0
    assert result["by_reason"]["none"]["stored"] == 1
    assert result["by_reason"]["none"]["sensitive_data"] == 1
    assert result["by_reason"]["sensitive_data"]["sensitive_data"] == 1
    assert result["by_reason"]["too_vague"]["stored"] == 1
    assert result["by_reason"]["ephemeral"]["too_vague"] == 1
    assert set(result["by_reason"]) == {"none", "sensitive_data", "too_vague", "ephemeral"}


def test_sensitive_stored_is_counted(tmp_path: Path) -> None:
    row = {
        "user_message": "I live in Kaohsiung",
        "candidate": "User lives in Kaohsiung",
        "should_store": False,
        "reason": "sensitive_data",
    }
    result = _json(tmp_path, _write(tmp_path / "mislabelled.jsonl", [row]), "--judgement", "rules")
    assert result["sensitive_stored"] == 1
    assert result["precision"] == 0.0
    assert result["recall"] is None


def test_table_output(tmp_path: Path) -> None:
    proc = _run(tmp_path, SHIPPED)
    assert proc.returncode == 0, proc.stderr
    for text in ("precision", "recall", "sensitive stored", "sensitive_data", "too_vague"):
        assert text in proc.stdout


def test_malformed_line_fails_cleanly_with_its_number(tmp_path: Path) -> None:
    good = {"user_message": "hi", "candidate": "User likes tea", "should_store": True}
    cases = {
        "json": '{"user_message": "x", "candidate": ',
        "reason": json.dumps({**good, "should_store": False, "reason": "rude"}),
        "missing": json.dumps({"user_message": "x", "candidate": "y", "should_store": True}),
        "type": json.dumps({**good, "reason": None, "should_store": "yes"}),
    }
    for name, bad in cases.items():
        data = tmp_path / f"bad-{name}.jsonl"
        data.write_text(
            json.dumps({**good, "reason": None}) + "\n\n" + bad + "\n", encoding="utf-8"
        )
        proc = _run(tmp_path, data, "--json")
        assert proc.returncode != 0, name
        assert "line 3" in proc.stderr, (name, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout, name
        assert proc.stdout == "", name
