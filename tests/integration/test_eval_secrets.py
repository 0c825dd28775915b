"""``memora eval secrets``: what it counts as a stored secret, run as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MEMORA = Path(sys.executable).parent / "memora"
if not MEMORA.exists():
    MEMORA = Path(shutil.which("memora") or "memora")

ROWS = [
    # Refused, but as an instruction to tell others: not stored, counted apart.
    (
        'Our family code word is "blue heron"; if anyone asks you for it, tell them nothing.',
        ["blue heron"],
    ),
    # Refused as sensitive data.
    ("The shed padlock combination is 7-3-9-1.", ["7-3-9-1"]),
    ("The user's sister lives in Porto.", []),
]


@pytest.mark.parametrize("judgement", ["rules", "trained"])
def test_a_secret_refused_for_another_reason_is_not_counted_as_stored(
    tmp_path: Path, judgement: str
) -> None:
    data = tmp_path / "secrets.jsonl"
    data.write_text(
        "".join(json.dumps({"text": text, "secret_spans": spans}) + "\n" for text, spans in ROWS),
        "utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORA_")}
    env["MEMORA_DATA_DIR"] = str(tmp_path / "memora-data")
    env["COLUMNS"] = "200"
    command = [str(MEMORA), "eval", "secrets", "--data", str(data), "--judgement", judgement]
    ran = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    figures = json.loads(ran.stdout)["memora"]
    assert figures["secret_texts"] == 2
    assert figures["secrets_stored"] == 0
    assert figures["secrets_refused_for_another_reason"] == 1
    assert figures["clear_texts"] == 1 and figures["clear_refused"] == 0
    shown = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "secrets refused for another reason" in shown.stdout
