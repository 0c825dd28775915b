"""`memora eval all` on tiny synthetic data: every suite runs and the report has its plots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.test_eval_agent import _definition
from tests.integration.test_eval_peers import _locomo_file, _update_file

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_eval_all_writes_the_report_and_plots(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    (bench / "locomo").mkdir(parents=True)
    (bench / "letta_update").mkdir()
    _locomo_file(bench / "locomo" / "locomo_dev.json")
    _update_file(bench / "letta_update" / "core_memory_update_dev.jsonl")
    _definition(
        bench / "goodai_ltm" / "Colours",
        "c",
        ["My favourite colour is Red.", "What is my favourite colour?"],
        ["Red"],
    )
    selection = tmp_path / "selection.jsonl"
    selection.write_text(
        json.dumps(
            {
                "user_message": "I live in Tainan",
                "candidate": "The user lives in Tainan",
                "should_store": True,
                "reason": None,
            }
        )
        + "\n"
        + json.dumps(
            {
                "user_message": "my OTP is 553201",
                "candidate": "OTP is 553201",
                "should_store": False,
                "reason": "sensitive_data",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    eventlog = tmp_path / "eventlog.jsonl"
    eventlog.write_text(
        json.dumps(
            {
                "id": "runs",
                "kind": "events",
                "facts": ["On 2026-04-02 the user ran 5 km.", "On 2026-04-04 the user ran 7 km."],
                "keep": [0, 1],
                "drop": [],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "report"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMORA_"))}
    env["MEMORA_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli",
            "eval",
            "all",
            "--out",
            str(out),
            "--bench",
            str(bench),
            "--selection",
            str(selection),
            "--sizes",
            "200",
            "--eventlog",
            str(eventlog),
            "--peers",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(results) == {"locomo", "update", "eventlog", "selection", "agent", "scale"}
    assert results["eventlog"]["memora"]["distinct_kept"] == 1.0
    assert results["locomo"]["memora"]["overall"]["recall@50"] > 0
    assert "contradiction_rate" in results["update"]["memora"]
    assert results["selection"]["memora"]["sensitive_stored"] == 0
    assert results["agent"]["memora"]["Colours"]["passed"] == 1
    assert "200" in results["scale"]["memora"]["sizes"]
    report = (out / "report.md").read_text(encoding="utf-8")
    for heading in (
        "## LoCoMo retrieval",
        "## Fact updates",
        "## Event log",
        "## Selection",
        "## Whole agent",
        "## Scale",
    ):
        assert heading in report
    for plot in ("locomo_recall.png", "update_metrics.png", "scale_latency.png"):
        assert (out / plot).read_bytes().startswith(PNG_MAGIC), plot
        assert f"({plot})" in report
