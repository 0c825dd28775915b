"""End-to-end tests of the ``memora`` console script, run as a real subprocess.

Every command runs with ``MEMORA_DATA_DIR`` pointing into ``tmp_path`` and the rest
of the environment inherited. Stores that a test only needs as a starting point are
built in-process through ``memora.api.Memora`` (fast); the command under test always
runs through the console script. Each subprocess pays the chromadb import (~1.5 s),
so commands that do not depend on each other run two at a time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memora.api import Memora
from memora.config import load_settings
from memora.models import MemoryScope, MemorySource, MemoryType, MemoryUnit, utcnow
from tests.integration.test_forgetting import files_containing

MEMORA = Path(sys.executable).parent / "memora"
if not MEMORA.exists():  # e.g. a venv whose python is a symlink elsewhere
    MEMORA = Path(shutil.which("memora") or "memora")

SPEC_KS = {"recall@1", "recall@5", "recall@10", "recall@25", "recall@50"}
Proc = subprocess.CompletedProcess[str]


# -- helpers ---------------------------------------------------------------------


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORA_")}
    env["MEMORA_DATA_DIR"] = str(data_dir)
    env["COLUMNS"] = "250"  # wide enough that tables show whole ids and contents
    env.update(extra)
    return env


def run(
    data_dir: Path,
    *args: str,
    input: str | None = None,
    closed_stdin: bool = False,
    **env: str,
) -> Proc:
    """Run ``memora ARGS`` and return the finished process (text mode)."""
    return subprocess.run(
        [str(MEMORA), *args],
        input=input,
        stdin=subprocess.DEVNULL if closed_stdin else None,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_env(data_dir, **env),
        cwd=data_dir.parent if data_dir.parent.is_dir() else None,  # no stray .env
        timeout=120,
    )


def run_parallel(*calls: tuple[Any, ...] | Callable[[], Proc]) -> list[Proc]:
    """Run independent commands two at a time, results in order.

    Each call is a tuple of ``run`` positional arguments or a no-argument callable.
    """
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda call: call() if callable(call) else run(*call), calls))


def ok(proc: Proc) -> str:
    """Assert a clean exit and return stdout."""
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    return proc.stdout


def one_error_line(proc: Proc) -> str:
    """Assert a non-zero exit with exactly one non-empty stderr line and no traceback."""
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def listed(data_dir: Path, user: str = "default") -> dict[str, dict[str, Any]]:
    """``memories list --json`` as {id: object}."""
    items = json.loads(ok(run(data_dir, "memories", "list", "--json", "--user", user)))
    assert isinstance(items, list)
    return {item["id"]: item for item in items}


def api(data_dir: Path) -> Memora:
    """An in-process Memora on ``data_dir`` for building starting states."""
    return Memora(load_settings(data_dir=data_dir))


def hex_id(name: str) -> str:
    """A memory id of the form Memora issues (32 hex digits), named for the reader."""
    return hashlib.md5(name.encode()).hexdigest()


def unit(uid: str, content: str, user: str = "default", **fields: Any) -> MemoryUnit:
    return MemoryUnit(id=uid, user_id=user, content=content, **fields)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


# -- add, sensitive data, search, list, show, history ------------------------------


def test_add_search_list_show_history_and_sensitive_rejection(data_dir: Path) -> None:
    first = ok(run(data_dir, "memories", "add", "My English level is B1"))
    match = re.search(r"accepted \(create\) id=([0-9a-f]{32})", first)
    assert match, first
    b1 = match.group(1)

    second = ok(run(data_dir, "memories", "add", "My English level is B2"))
    match = re.search(r"accepted \(update\) id=([0-9a-f]{32})", second)
    assert match, second
    b2 = match.group(1)
    assert b2 != b1
    assert f"affected: {b1}" in second

    sensitive, search, listing, show, history, superseded, bad_status = run_parallel(
        (data_dir, "memories", "add", "記住，我的驗證碼是 482913"),
        (data_dir, "memories", "search", "What is my English level?"),
        (data_dir, "memories", "list", "--json"),
        (data_dir, "memories", "show", b2),
        (data_dir, "memories", "history", b2),
        (data_dir, "memories", "list", "--json", "--status", "superseded"),
        (data_dir, "memories", "list", "--status", "bogus"),
    )
    # a verification code is refused and leaves no trace in any file of the store
    assert sensitive.returncode == 1
    assert "rejected: sensitive_data" in sensitive.stdout
    assert "accepted" not in sensitive.stdout
    assert "Traceback" not in sensitive.stderr
    assert (data_dir / "memora.db").is_file()
    assert files_containing(data_dir, [b"482913"]) == []

    # search recalls only the current version
    assert b2 in ok(search)
    assert "My English level is B2" in search.stdout
    assert b1 not in search.stdout

    items = json.loads(ok(listing))
    assert isinstance(items, list) and len(items) == 2  # the rejected one is not stored
    assert all({"id", "content", "status"} <= item.keys() for item in items)
    by_id = {item["id"]: item for item in items}
    assert by_id[b1]["content"] == "My English level is B1"
    assert by_id[b1]["status"] == "superseded"
    assert by_id[b1]["superseded_by"] == b2
    assert by_id[b2]["status"] == "active"
    assert by_id[b2]["supersedes"] == b1

    assert [item["id"] for item in json.loads(ok(superseded))] == [b1]
    assert bad_status.returncode != 0
    assert "Traceback" not in bad_status.stderr
    assert "--status" in bad_status.stderr

    shown = json.loads(ok(show))
    assert shown["id"] == b2
    assert shown["content"] == "My English level is B2"
    assert shown["status"] == "active"

    text = ok(history)
    for memory_id, content in ((b1, "My English level is B1"), (b2, "My English level is B2")):
        assert memory_id in text
        assert content in text
    assert "superseded" in text


# -- forget and user scoping -------------------------------------------------------


def test_forget_asks_and_respects_answers(data_dir: Path) -> None:
    memora = api(data_dir)
    ids = memora.ingest(
        [
            unit("f1", "My bike is red"),
            unit("f2", "My cat is called Miso"),
            unit("f3", "I play the cello"),
        ]
    )
    assert ids == ["f1", "f2", "f3"]

    closed, empty = run_parallel(
        lambda: run(data_dir, "memories", "forget", "f1", closed_stdin=True),
        lambda: run(data_dir, "memories", "forget", "f1", input=""),
    )
    for proc in (closed, empty):
        out = ok(proc)
        assert "My bike is red" in out  # the preview
        assert "kept" in out
        assert "deleted" not in out
    assert set(listed(data_dir)) == {"f1", "f2", "f3"}

    answered, forced, unknown = run_parallel(
        lambda: run(data_dir, "memories", "forget", "f1", input="y\n"),
        (data_dir, "memories", "forget", "f2", "--yes"),
        (data_dir, "memories", "forget", "no-such-id", "--yes"),
    )
    assert "deleted 1 version(s)" in ok(answered)
    assert "deleted 1 version(s)" in ok(forced)
    assert "no memory no-such-id" in one_error_line(unknown)
    assert set(listed(data_dir)) == {"f3"}


def test_user_scoping(data_dir: Path) -> None:
    api(data_dir).ingest([unit("mine", "My passport is blue", user="a")])

    list_b, show_b, forget_b, search_b = run_parallel(
        (data_dir, "memories", "list", "--json", "--user", "b"),
        (data_dir, "memories", "show", "mine", "--user", "b"),
        (data_dir, "memories", "forget", "mine", "--user", "b", "--yes"),
        (data_dir, "memories", "search", "passport", "--user", "b"),
    )
    assert json.loads(ok(list_b)) == []
    assert "no memory mine" in one_error_line(show_b)
    assert "no memory mine" in one_error_line(forget_b)
    assert "My passport is blue" not in ok(search_b)
    assert "no memories found" in search_b.stdout

    still = listed(data_dir, user="a")
    assert list(still) == ["mine"]
    assert still["mine"]["status"] == "active"


# -- export and import -------------------------------------------------------------


def test_export_import_round_trips_every_field(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    memora = api(src)
    now = utcnow()
    b1 = memora.add("default", "My English level is B1", said_at=now - timedelta(days=3))
    b2 = memora.add("default", "My English level is B2", said_at=now - timedelta(days=1))
    assert b2.affected_ids == [b1.memory_id]  # a superseded version with superseded_by
    memora.ingest(
        [
            unit(
                hex_id("rich"),
                "We visited Kyoto and saw the temples",
                memory_type=MemoryType.EPISODIC,
                kind="event",
                scope=MemoryScope.THREAD,
                thread_id="t-7",
                importance=2,
                confidence=0.5,
                source=MemorySource(thread_id="t-7", turn=4, actor="import-test"),
                metadata={"topic": "travel", "tags": ["japan", "temples"], "n": 3},
                created_at=now - timedelta(days=40),
                updated_at=now - timedelta(days=39),
                expires_at=now + timedelta(days=400),
            ),
            unit(hex_id("archived"), "I used to live in Lyon", status="archived", importance=1),
        ]
    )
    memora.touch("default", [hex_id("rich")])  # last_accessed_at and access_count
    export_file = tmp_path / "export.jsonl"

    exported = ok(run(src, "memories", "export", "--out", str(export_file)))
    assert "exported 4 memories" in exported
    assert len(export_file.read_text(encoding="utf-8").splitlines()) == 4
    assert "imported 4 memories" in ok(run(dst, "memories", "import", str(export_file)))

    before, after = listed(src), listed(dst)
    assert set(before) == set(after)
    assert len(before) == 4
    for memory_id, original in before.items():
        copy = after[memory_id]
        assert copy.keys() == original.keys()
        for field_name, value in original.items():
            assert copy[field_name] == value, (memory_id, field_name)
    assert before[hex_id("rich")]["metadata"]["tags"] == ["japan", "temples"]
    assert before[hex_id("rich")]["access_count"] == 1
    assert before[b1.memory_id]["superseded_by"] == b2.memory_id
    assert before[hex_id("archived")]["status"] == "archived"


def test_export_import_keeps_pending_review_items(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    memora = api(src)
    now = utcnow()
    memora.ingest(
        [
            unit(hex_id("old"), "My dog is called Rex", created_at=now - timedelta(hours=2)),
            unit(
                hex_id("new"),
                "My dog is called Max",
                created_at=now - timedelta(hours=1),
                metadata={"review_targets": [hex_id("old")]},
            ),
        ]
    )
    memora.store.mark_review("default", hex_id("new"), True)
    export_file = tmp_path / "export.jsonl"
    ok(run(src, "memories", "export", "--out", str(export_file)))
    assert "imported 2 memories" in ok(run(dst, "memories", "import", str(export_file)))

    out = ok(run(dst, "memories", "review", input="n\n"))
    assert "conflicts with: My dog is called Rex" in out


# -- review and consolidate --------------------------------------------------------


def test_review_accept_and_reject_then_consolidate(data_dir: Path) -> None:
    memora = api(data_dir)
    now = utcnow()
    memora.ingest(
        [
            unit("old1", "I work at Acme as an engineer", created_at=now - timedelta(hours=4)),
            unit("old2", "My dog is called Rex", created_at=now - timedelta(hours=3)),
            unit(
                "new1",
                "I work at Globex as a designer",
                created_at=now - timedelta(hours=2),
                metadata={"review_targets": ["old1"]},
            ),
            unit(
                "new2",
                "My dog is called Max",
                created_at=now - timedelta(hours=1),
                metadata={"review_targets": ["old2"]},
            ),
        ]
    )
    memora.store.mark_review("default", "new1", True)
    memora.store.mark_review("default", "new2", True)
    assert [u.id for u in memora.review_items("default")] == ["new1", "new2"]

    # consolidation material for another user: a duplicate pair and an expired memory
    memora.ingest(
        [
            unit(
                "dup-old",
                "I drink black coffee every morning",
                user="c",
                created_at=now - timedelta(minutes=10),
            ),
            unit(
                "dup-new",
                "I drink black coffee every morning",
                user="c",
                created_at=now - timedelta(minutes=5),
            ),
            unit(
                "gone",
                "My hotel room in Rome is number 12",
                user="c",
                expires_at=now - timedelta(days=1),
            ),
        ]
    )

    review, consolidate = run_parallel(
        lambda: run(data_dir, "memories", "review", input="y\nn\n"),
        (data_dir, "memories", "consolidate", "--user", "c"),
    )
    out = ok(review)
    assert "I work at Globex as a designer" in out
    assert "conflicts with: I work at Acme as an engineer" in out
    assert "conflicts with: My dog is called Rex" in out
    assert out.index("accepted") < out.index("rejected (deleted)")

    assert "merged 1, expired 1, decayed 0" in ok(consolidate)

    again, mine, theirs = run_parallel(
        (data_dir, "memories", "review"),
        (data_dir, "memories", "list", "--json"),
        (data_dir, "memories", "list", "--json", "--user", "c"),
    )
    assert "nothing to review" in ok(again)
    items = {item["id"]: item for item in json.loads(ok(mine))}
    assert set(items) == {"old1", "old2", "new1"}  # the rejected one is deleted
    assert items["old1"]["status"] == "superseded"
    assert items["old1"]["superseded_by"] == "new1"
    assert items["new1"]["status"] == "active"
    assert items["new1"]["supersedes"] == "old1"  # linked as the write path links an update
    assert items["new1"]["needs_review"] is False
    assert items["old2"]["status"] == "active"

    consolidated = {item["id"]: item for item in json.loads(ok(theirs))}
    assert consolidated["dup-old"]["status"] == "superseded"
    assert consolidated["dup-old"]["superseded_by"] == "dup-new"
    assert consolidated["dup-new"]["status"] == "active"
    assert consolidated["gone"]["status"] == "archived"


# -- reindex and embedding model mismatch ------------------------------------------


def test_reindex_and_model_mismatch(data_dir: Path) -> None:
    api(data_dir).ingest(
        [unit("r1", "My favourite fruit is mango"), unit("r2", "I speak Portuguese")]
    )
    assert "re-embedded 2 memories" in ok(run(data_dir, "memories", "reindex"))
    assert "r1" in ok(run(data_dir, "memories", "search", "favourite fruit"))

    with sqlite3.connect(data_dir / "memora.db") as conn:
        conn.execute("UPDATE meta SET value = 'other/model-x' WHERE key = 'embedding_model'")
    mismatch_list, mismatch_search = run_parallel(
        (data_dir, "memories", "list"),
        (data_dir, "memories", "search", "fruit"),
    )
    for proc in (mismatch_list, mismatch_search):
        line = one_error_line(proc)
        assert "memora memories reindex" in line
        assert "other/model-x" in line

    assert "re-embedded 2 memories" in ok(run(data_dir, "memories", "reindex"))
    search, listing = run_parallel(
        (data_dir, "memories", "search", "Which language do I speak?"),
        (data_dir, "memories", "list", "--json"),
    )
    assert "r2" in ok(search)
    assert "I speak Portuguese" in search.stdout
    items = json.loads(ok(listing))
    assert {item["id"] for item in items} == {"r1", "r2"}
    assert {item["embedding_model"] for item in items} != {"other/model-x"}


# -- failures: corrupt, locked, unwritable, invalid setting ------------------------


def test_corrupt_database_fails_cleanly_and_leaves_file_alone(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    garbage = b"this is not a sqlite database\x00\xff" * 300
    (data_dir / "memora.db").write_bytes(garbage)
    proc = run(data_dir, "memories", "list", COLUMNS="40")
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "corrupt" in line
    assert str(data_dir / "memora.db") in line
    assert (data_dir / "memora.db").read_bytes() == garbage  # nothing overwritten


def test_locked_database_fails_cleanly_and_loses_nothing(data_dir: Path) -> None:
    api(data_dir).ingest([unit("k1", "My locker code word is pelican"), unit("k2", "I ski")])
    holder = sqlite3.connect(data_dir / "memora.db", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # held for the whole command (>= its 5 s timeout)
        proc = run(data_dir, "memories", "add", "I collect vinyl records", COLUMNS="40")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    line = one_error_line(proc)
    assert "locked" in line
    assert "accepted" not in proc.stdout

    after = listed(data_dir)
    assert set(after) == {"k1", "k2"}
    assert after["k1"]["content"] == "My locker code word is pelican"


def test_unwritable_data_dir_and_invalid_setting(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a regular file, not a directory\n")
    good_dir = tmp_path / "data"
    unwritable, invalid = run_parallel(
        lambda: run(blocker / "data", "memories", "list", COLUMNS="40"),
        lambda: run(good_dir, "memories", "list", MEMORA_RETRIEVAL_LIMIT="0", COLUMNS="40"),
    )
    line = one_error_line(unwritable)
    assert str(blocker / "data") in line
    assert blocker.read_text() == "a regular file, not a directory\n"

    assert "MEMORA_RETRIEVAL_LIMIT" in one_error_line(invalid)


# -- evaluations on tiny synthetic data ----------------------------------------------


def _locomo_sample(sample_id: str, a: str, b: str, facts: list[tuple[str, str]]) -> dict[str, Any]:
    """One synthetic LoCoMo sample: two sessions of turns and one question per category."""
    turns = [
        {"speaker": a if i % 2 == 0 else b, "dia_id": f"D{1 + i // 4}:{1 + i % 4}", "text": text}
        for i, (text, _) in enumerate(facts)
    ]
    turns[1]["blip_caption"] = "a photo of a small sailing boat"
    conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for session, when in ((1, "1:56 pm on 8 May, 2023"), (2, "10:05 am on 20 June, 2023")):
        conversation[f"session_{session}"] = [t for t in turns if t["dia_id"][1] == str(session)]
        conversation[f"session_{session}_date_time"] = when
    qa = [
        {"question": facts[0][1], "answer": "x", "evidence": ["D1:1"], "category": 4},
        {"question": facts[2][1], "answer": "x", "evidence": ["D1:3; D2:1"], "category": 1},
        {"question": facts[5][1], "answer": "x", "evidence": ["D:2:2"], "category": 2},
        {"question": facts[7][1], "answer": "x", "evidence": ["D2:4"], "category": 3},
        {"question": facts[3][1], "adversarial_answer": "x", "evidence": ["D1:4"], "category": 5},
        {"question": "Unknown evidence only?", "answer": "x", "evidence": ["D9:9"], "category": 4},
    ]
    return {
        "sample_id": sample_id,
        "conversation": conversation,
        "qa": qa,
        "observation": {},
        "session_summary": {},
        "event_summary": {},
    }


def _update_row(facts: list[str], index: int, new: str, question: str, answer: str) -> str:
    return json.dumps(
        {
            "input": question,
            "ground_truth": answer,
            "agent_args": {
                "extra": {
                    "facts": facts,
                    "supporting_fact_indices": [index],
                    "contradicting_fact": f'"{new}"',  # stray quotes, as in the real data
                    "contradicting_answer": answer,
                }
            },
        }
    )


@pytest.fixture(scope="module")
def eval_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Proc, Proc]:
    """`eval locomo --json` and `eval update --json` on tiny synthetic files, run once."""
    tmp_path = tmp_path_factory.mktemp("eval")
    locomo = tmp_path / "locomo_tiny.json"
    locomo.write_text(
        json.dumps(
            [
                _locomo_sample(
                    "conv-x",
                    "Ana",
                    "Ben",
                    [
                        (
                            "I adopted a grey kitten named Pixel last week.",
                            "What's the kitten called?",
                        ),
                        ("I went sailing on the lake on Sunday.", "Where did Ben go sailing?"),
                        ("My sister Clara moved to Lisbon for work.", "Where did Clara move?"),
                        ("I bought new hiking boots yesterday.", "What did Ben buy?"),
                        ("I started a pottery class on Tuesdays.", "What class did Ana start?"),
                        ("We ran the city marathon in June.", "When did they run the marathon?"),
                        ("I read a novel about Mars colonists.", "What novel is Ana reading?"),
                        ("I baked sourdough bread with rye flour.", "What bread did Ben bake?"),
                    ],
                )
            ]
        ),
        encoding="utf-8",
    )
    update = tmp_path / "update_tiny.jsonl"
    facts = [
        "Nora lives in Oslo.",
        "Nora works as a dentist.",
        "Nora's favourite sport is tennis.",
        "Nora owns a green bicycle.",
        "Nora's brother is named Tomas.",
        "Nora speaks Japanese fluently.",
        "Nora drinks oolong tea every evening.",
        "Nora was born in 1988.",
        "Nora plays the violin.",
        "Nora's car is a blue Volvo.",
    ]
    update.write_text(
        _update_row(facts, 0, "Nora lives in Bergen.", "Where does Nora live?", "Bergen")
        + "\n"
        + _update_row(facts, 2, "Nora's favourite sport is squash.", "Nora's sport?", "squash")
        + "\n",
        encoding="utf-8",
    )
    unused = tmp_path / "unused"
    return tuple(  # type: ignore[return-value]
        run_parallel(
            (unused, "eval", "locomo", "--data", str(locomo), "--json"),
            (unused, "eval", "update", "--data", str(update), "--json"),
        )
    )


def _json_out(proc: Proc) -> dict[str, Any]:
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def test_eval_locomo_and_update_json(eval_runs: tuple[Proc, Proc]) -> None:
    locomo_run, update_run = eval_runs
    result = _json_out(locomo_run)
    assert set(result) == {"memora"}
    figures = result["memora"]
    assert {"overall", "by_category", "search_ms", "ingest_per_s"} <= figures.keys()
    assert set(figures["overall"]) == SPEC_KS
    assert set(figures["by_category"]) == {"multi-hop", "temporal", "open-domain", "single-hop"}
    for recalls in [figures["overall"], *figures["by_category"].values()]:
        assert set(recalls) == SPEC_KS
        assert recalls["recall@1"] <= recalls["recall@5"] <= recalls["recall@50"]
    assert figures["overall"]["recall@50"] == 1.0
    assert set(figures["search_ms"]) == {"p50", "p95"}
    assert 0.0 <= figures["search_ms"]["p50"] <= figures["search_ms"]["p95"]
    assert figures["ingest_per_s"] > 0

    result = _json_out(update_run)
    assert set(result) == {"memora"}
    figures = result["memora"]
    assert {"update_win", "answer@1", "stale@5", "collateral_per_row"} <= figures.keys()
    # Both contradictions supersede exactly the fact they contradict.
    assert (figures["update_win"], figures["stale@5"]) == (1.0, 0.0)
    assert figures["collateral_per_row"] == 0.0
    assert figures["rows"] == 2


def test_eval_commands_exit_without_traceback(eval_runs: tuple[Proc, Proc]) -> None:
    for proc in eval_runs:
        assert proc.returncode == 0
        assert "Traceback" not in proc.stderr, proc.stderr


def test_list_pages_the_table_and_streams_the_json(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    memora = api(data_dir)
    start = utcnow() - timedelta(days=1)
    memora.ingest(
        [
            MemoryUnit(
                id=f"p{n:03d}",
                user_id="default",
                content=f"paged note {n:03d}",
                created_at=start + timedelta(seconds=n),
                updated_at=start + timedelta(seconds=n),
            )
            for n in range(250)
        ]
    )
    memora.close()
    first = ok(run(data_dir, "memories", "list", "--page-size", "100"))
    assert "showing 1–100 of 250; --page 2 for more" in first
    assert "paged note 000" in first and "paged note 100" not in first
    last = ok(run(data_dir, "memories", "list", "--page-size", "100", "--page", "3"))
    assert "showing 201–250 of 250" in last and "--page 4" not in last
    assert "paged note 249" in last and "paged note 199" not in last
    listed = json.loads(ok(run(data_dir, "memories", "list", "--json")))
    assert [item["id"] for item in listed] == [f"p{n:03d}" for n in range(250)]


def test_a_truncated_chroma_file_is_reported_in_one_line(data_dir: Path) -> None:
    added = run(data_dir, "memories", "add", "I like green tea", "--user", "a")
    assert added.returncode == 0, added.stderr
    chroma_file = next(data_dir.rglob("chroma.sqlite3"))
    with chroma_file.open("r+b") as handle:
        handle.truncate(20_000)
    searched = run(data_dir, "memories", "search", "tea", "--user", "a")
    assert "Traceback" not in searched.stderr, searched.stderr
    assert "malformed" in searched.stderr or searched.returncode != 0
