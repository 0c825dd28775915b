"""`memora chat`, `memora demo`, `memora profile` and `memora threads` in a real terminal (pty)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

MEMORA = str(Path(sys.executable).with_name("memora"))


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMORA_"))}
    env.update(MEMORA_DATA_DIR=str(data_dir), COLUMNS="200", TERM="dumb", NO_COLOR="1")
    return env


def _spawn(data_dir: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        MEMORA, list(args), env=_env(data_dir), encoding="utf-8", timeout=60, dimensions=(50, 200)
    )
    return child


def _run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMORA, *args],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_chat_remember_forget_with_prompt_and_resume_after_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    chat = _spawn(data, "chat", "--user", "alice")
    chat.expect(r"offline rules-based model")
    chat.expect(r"Thread: ([0-9a-f]{32})")
    thread_id = chat.match.group(1)
    chat.expect("You: ")
    chat.sendline("Please remember that I live in Kaohsiung.")
    chat.expect(r"\[offline model\].*remember")
    chat.expect("You: ")
    chat.sendline("/memories")
    chat.expect("Kaohsiung")
    chat.expect("You: ")
    chat.sendline("/profile set language English")
    chat.expect("profile language set")
    chat.expect("You: ")
    chat.sendline("/profile")
    chat.expect('"language": "English"')
    chat.expect("You: ")
    chat.sendline("Please forget that I live in Kaohsiung.")
    chat.expect("confirmation is still required")
    chat.expect(r"Delete this memory\? \[y/N\]: ")
    # Close the terminal at the prompt: nothing is deleted, the thread stays paused.
    chat.close(force=True)
    assert "Kaohsiung" in _run(data, "memories", "list", "--json", "--user", "alice").stdout

    reopened = _spawn(data, "chat", "--user", "alice", "--thread", thread_id)
    reopened.expect(f"Thread: {thread_id}")
    reopened.expect("Memory: .*Kaohsiung")
    reopened.expect(r"Delete this memory\? \[y/N\]: ")
    # An answer that is not one asks again and deletes nothing meanwhile.
    reopened.sendline("maybe later")
    reopened.expect(r"That answer \(another word\) was not understood, so nothing was deleted")
    reopened.expect("Memory: .*Kaohsiung")
    reopened.expect(r"Delete this memory\? \[y/N\]: ")
    assert "Kaohsiung" in _run(data, "memories", "list", "--json", "--user", "alice").stdout
    reopened.sendline("y")
    reopened.expect("Memory deleted.")
    reopened.expect("You: ")
    reopened.sendline("/exit")
    reopened.expect(pexpect.EOF)
    listed = _run(data, "memories", "list", "--json", "--user", "alice")
    assert "Kaohsiung" not in listed.stdout

    profile = _run(data, "profile", "show", "--user", "alice")
    assert "English" in profile.stdout
    threads = _run(data, "threads", "list")
    assert thread_id in threads.stdout and "alice" in threads.stdout
    deleted = _run(data, "threads", "delete", thread_id, "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert thread_id not in _run(data, "threads", "list").stdout
    checkpoints = (data / "checkpoints.sqlite").read_bytes()
    assert b"Kaohsiung" not in checkpoints


def test_chat_no_answer_keeps_the_memory_and_verbose_shows_steps(tmp_path: Path) -> None:
    data = tmp_path / "data"
    chat = _spawn(data, "chat", "--user", "bob", "--verbose")
    chat.expect("You: ")
    chat.sendline("Please remember that my favourite colour is teal.")
    chat.expect("Action: remember_memory")
    chat.expect("Observation: .*accepted_for_commit")
    chat.expect("You: ")
    assert "Action:" not in chat.before, "the action was printed again after the reply"
    chat.sendline("Please forget that my favourite colour is teal.")
    chat.expect("Action: search_memory")
    chat.expect("Action: request_forget_memory")
    chat.expect(r"Delete this memory\? \[y/N\]: ")
    chat.sendline("")
    chat.expect("kept")
    chat.expect("You: ")
    chat.sendline("/exit")
    chat.expect(pexpect.EOF)
    assert "teal" in _run(data, "memories", "list", "--json", "--user", "bob").stdout


@pytest.mark.parametrize(("flag", "kept"), [("--yes", False), ("--no", True)])
def test_demo_runs_the_scenarios_offline(tmp_path: Path, flag: str, kept: bool) -> None:
    result = _run(tmp_path, "demo", flag, "--data-dir", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "offline rules-based model" in out
    assert all(f"scenario {number}" in out for number in range(1, 7))
    actions = [line.strip() for line in out.splitlines() if line.strip().startswith("Action:")]
    assert len(actions) >= 5
    assert len(actions) == len(set(actions)), "an action was printed more than once"
    assert "這筆資料沒有被儲存，因為它看起來是敏感資料（sensitive_data）。" in out
    assert re.search(r"Delete this memory\? \[y/N\]: [yn]", out)
    assert "Atlas" in out.split("session 2")[-1]  # recalled across sessions
    table = out.split("memories of demo")[-1]
    assert ("IELTS" in table) is kept
    assert "123456" not in table


def test_chat_with_a_corrupt_or_unwritable_store_says_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "checkpoints.sqlite").write_bytes(b"this is not a database" * 100)
    corrupt = subprocess.run(
        [MEMORA, "chat"],
        env=_env(data),
        capture_output=True,
        text=True,
        input="hello\n/exit\n",
        timeout=120,
    )
    assert corrupt.returncode == 2
    assert "Traceback" not in corrupt.stderr
    assert "corrupt" in corrupt.stderr and len(corrupt.stderr.strip().splitlines()) == 1

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    unwritable = subprocess.run(
        [MEMORA, "chat"],
        env=_env(blocker / "data"),
        capture_output=True,
        text=True,
        input="hello\n",
        timeout=120,
    )
    assert unwritable.returncode == 2
    assert "Traceback" not in unwritable.stderr
    assert "a-file" in unwritable.stderr


def test_end_of_input_at_the_approval_prompt_keeps_the_thread_paused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    lines = "Please remember that I live in Kaohsiung.\nPlease forget that I live in Kaohsiung.\n"
    first = subprocess.run(
        [MEMORA, "chat", "--user", "alice"],
        env=_env(data),
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    assert "still awaits your approval" in first.stdout
    thread_id = re.search(r"--thread ([0-9a-f]{32})", first.stdout)
    assert thread_id is not None
    assert "Kaohsiung" in _run(data, "memories", "list", "--json", "--user", "alice").stdout
    again = subprocess.run(
        [MEMORA, "chat", "--user", "alice", "--thread", thread_id.group(1)],
        env=_env(data),
        input="y\n/exit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Memory deleted." in again.stdout, again.stdout
    assert "Kaohsiung" not in _run(data, "memories", "list", "--json", "--user", "alice").stdout
