"""`memora eval locomo|update|scale --peers` on tiny synthetic data, in seconds.

The peers (mem0, LangGraph's store as LangMem searches it) come from the
optional ``bench`` extra, which CI installs: when they import, their entries
must hold real figures with the same fields as Memora's; when they do not,
an ``{"error": …}`` entry that says how to install them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

SYSTEMS = {"memora", "mem0", "langgraph_store"}
KS = {f"recall@{k}" for k in (1, 5, 10, 25, 50)}
_IMPORTABLE = {
    "mem0": importlib.util.find_spec("mem0") is not None,
    "langgraph_store": importlib.util.find_spec("langmem") is not None,
}


def _memora_command() -> list[str]:
    script = Path(sys.executable).with_name("memora")
    if script.exists():
        return [str(script)]
    found = shutil.which("memora")
    return [found] if found else [sys.executable, "-m", "cli"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ANONYMIZED_TELEMETRY": "False",
        "MEM0_TELEMETRY": "False",
        "OPENAI_API_KEY": "",
    }
    return subprocess.run(
        [*_memora_command(), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )


def _locomo_file(path: Path) -> Path:
    """Two tiny conversations in LoCoMo's format (../shared/bench/README.md)."""
    samples = []
    for number, (a, b, lines) in enumerate(
        [
            (
                "Ana",
                "Ben",
                [
                    "I adopted a grey kitten named Pixel last week.",
                    "I went sailing on the lake on Sunday.",
                    "My sister Clara moved to Lisbon for work.",
                    "Sounds great!",
                    "I started a pottery class on Tuesdays.",
                    # The same speaker says the same words twice, as conversations do.
                    "Sounds great!",
                ],
            ),
            (
                "Chen",
                "Dara",
                [
                    "I planted tomatoes on the balcony.",
                    "My new job is at a bakery downtown.",
                    "I am learning to play the cello.",
                    "We visited Osaka for the cherry blossoms.",
                    "My dog Biscuit hates thunderstorms.",
                    "I finished reading a novel about Mars.",
                ],
            ),
        ]
    ):
        turns = [
            {
                "speaker": a if i % 2 == 0 else b,
                "dia_id": f"D{1 + i // 3}:{1 + i % 3}",
                "text": text,
            }
            for i, text in enumerate(lines)
        ]
        turns[1]["blip_caption"] = "a photo of a small boat"
        conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        for session, when in ((1, "1:56 pm on 8 May, 2023"), (2, "10:05 am on 20 June, 2023")):
            conversation[f"session_{session}"] = [
                t for t in turns if t["dia_id"].startswith(f"D{session}:")
            ]
            conversation[f"session_{session}_date_time"] = when
        qa = [
            {
                "question": f"What did {a} say first?",
                "answer": "x",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where was the trip?",
                "answer": "x",
                "evidence": ["D1:3; D2:1"],
                "category": 1,
            },
            {"question": "When was it?", "answer": "x", "evidence": ["D:2:2"], "category": 2},
            {
                "question": "What might they enjoy?",
                "answer": "x",
                "evidence": ["D2:3"],
                "category": 3,
            },
            {"question": "Adversarial?", "evidence": ["D1:2"], "category": 5},
        ]
        samples.append(
            {
                "sample_id": f"conv-{number}",
                "conversation": conversation,
                "qa": qa,
                "observation": {},
                "session_summary": {},
                "event_summary": {},
            }
        )
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def _update_file(path: Path) -> Path:
    """Two rows in the Letta core-memory-update format."""
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
    rows = [
        (0, "Nora lives in Bergen.", "Where does Nora live?", "Bergen"),
        (2, "Nora's favourite sport is squash.", "What is Nora's favourite sport?", "squash"),
    ]
    path.write_text(
        "".join(
            json.dumps(
                {
                    "input": question,
                    "ground_truth": answer,
                    "agent_args": {
                        "extra": {
                            "facts": facts,
                            "supporting_fact_indices": [index],
                            "contradicting_fact": f'"{new}"',
                            "contradicting_answer": answer,
                        }
                    },
                }
            )
            + "\n"
            for index, new, question, answer in rows
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The three commands with --peers --json, run once, in parallel."""
    tmp = tmp_path_factory.mktemp("peers")
    commands = {
        "locomo": ("eval", "locomo", "--data", str(_locomo_file(tmp / "locomo.json"))),
        "update": ("eval", "update", "--data", str(_update_file(tmp / "update.jsonl"))),
        "scale": ("eval", "scale", "--sizes", "200"),
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {
            name: pool.submit(_run, *args, "--peers", "--json") for name, args in commands.items()
        }
    results = {}
    for name, future in futures.items():
        proc = future.result()
        assert proc.returncode == 0, f"{name}: rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        results[name] = json.loads(proc.stdout)
    return results


def _check_peer_entry(name: str, entry: dict[str, Any]) -> bool:
    """True when the entry holds figures; an error entry is only allowed when not installed."""
    if _IMPORTABLE.get(name, True):
        assert "error" not in entry, f"{name} is installed but did not run: {entry}"
        return True
    assert set(entry) == {"error"}
    assert "pip install -e .[bench]" in entry["error"]
    return False


def test_locomo_peers_have_the_same_fields(runs: dict[str, dict[str, Any]]) -> None:
    result = runs["locomo"]
    assert set(result) == SYSTEMS
    memora = result["memora"]
    for name, entry in result.items():
        if not _check_peer_entry(name, entry):
            continue
        assert set(entry) == set(memora)
        assert set(entry["overall"]) == KS
        assert set(entry["by_category"]) == set(memora["by_category"])
        assert entry["questions"] == memora["questions"] == 8
        assert entry["memories"] == memora["memories"] == 12
        for recalls in [entry["overall"], *entry["by_category"].values()]:
            assert recalls["recall@1"] <= recalls["recall@5"] <= recalls["recall@50"]
        # Six memories per user: the top 50 hold every one, so the keys map back to dia_ids.
        assert entry["overall"]["recall@50"] == 1.0
        assert 0.0 < entry["search_ms"]["p50"] <= entry["search_ms"]["p95"]
        assert entry["ingest_per_s"] > 0


def test_update_peers_have_the_same_fields(runs: dict[str, dict[str, Any]]) -> None:
    result = runs["update"]
    assert set(result) == SYSTEMS
    fields = set(result["memora"])
    assert {"update_win", "answer@1", "stale@5", "collateral_per_row", "rows"} <= fields
    for name, entry in result.items():
        if not _check_peer_entry(name, entry):
            continue
        assert set(entry) == fields
        assert entry["rows"] == 2
        if name == "memora":
            # Both contradictions supersede the old fact and touch no other.
            assert (entry["update_win"], entry["answer@1"]) == (1.0, 1.0)
            assert (entry["stale@5"], entry["collateral_per_row"]) == (0.0, 0.0)
        else:
            # No reconciliation offline: every old fact stays active (and ranks in the top
            # 5 of 11 for its own question), none is collateral.
            assert entry["stale@5"] == 1.0 and entry["contradiction_rate"] == 1.0
            assert entry["collateral_per_row"] == 0.0
    peers = [result[name] for name in ("mem0", "langgraph_store") if _IMPORTABLE[name]]
    if len(peers) == 2:
        # The same embedder and an exact cosine search: the same ranking, the same figures.
        assert peers[0] == peers[1]


def test_scale_has_the_documented_keys(runs: dict[str, dict[str, Any]]) -> None:
    result = runs["scale"]
    assert set(result) == SYSTEMS
    for name, entry in result.items():
        if not _check_peer_entry(name, entry):
            continue
        figures = entry["sizes"]["200"]
        assert "error" not in figures, figures
        assert {"search_ms", "write_ms", "ingest_per_s", "rss_mb", "disk_mb"} <= set(figures)
        for key in ("search_ms", "write_ms"):
            assert set(figures[key]) == {"p50", "p95"}
            assert 0.0 < figures[key]["p50"] <= figures[key]["p95"]
        assert figures["ingest_per_s"] > 0
        assert figures["rss_mb"] > 10
        assert figures["memories"] == 200
        if name == "langgraph_store":
            assert figures["disk_mb"] == 0.0
        else:
            assert figures["disk_mb"] > 0.0


def test_a_peer_that_is_not_installed_gets_an_error_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.evals import run_systems
    from evals.locomo import run_locomo

    monkeypatch.setitem(sys.modules, "mem0", None)  # import mem0 now raises ImportError
    monkeypatch.setitem(sys.modules, "langmem", None)
    results = run_systems(
        run_locomo, _locomo_file(tmp_path / "locomo.json"), None, True, "questions", True
    )
    assert set(results) == SYSTEMS
    assert "error" not in results["memora"]
    for name in ("mem0", "langgraph_store"):
        assert set(results[name]) == {"error"}
        assert "not installed" in results[name]["error"]
        assert "pip install -e .[bench]" in results[name]["error"]


@pytest.mark.skipif(not _IMPORTABLE["langgraph_store"], reason="langmem not installed")
def test_langgraph_store_takes_a_batch_that_repeats_a_text() -> None:
    from datetime import UTC, datetime

    from evals.peers import Item, LangGraphStoreSystem, bench_embeddings, unique_text_batches

    now = datetime(2023, 5, 8, tzinfo=UTC)
    items = [
        Item("D1:1", "Ana: Sounds great!", now),
        Item("D1:2", "Ben: I planted tomatoes.", now),
        Item("D1:3", "Ana: Sounds great!", now),
    ]
    assert [[i.key for i in b] for b in unique_text_batches(items, 10)] == [
        ["D1:1", "D1:2"],
        ["D1:3"],
    ]
    assert [[i.key for i in b] for b in unique_text_batches(items, 1)] == [
        ["D1:1"],
        ["D1:2"],
        ["D1:3"],
    ]
    store = LangGraphStoreSystem(bench_embeddings())
    store.add_many("conv", items)
    assert set(store.search("conv", "sounds great", 3)) == {"D1:1", "D1:2", "D1:3"}
    assert store.search("conv", "sounds great", 2)[0] in {"D1:1", "D1:3"}
    assert store.content("conv", "D1:3") == "Ana: Sounds great!"
