"""Memory quality through the full write path and recall, on real Chroma and SQLite.

Repeated events and lists stay separate memories, the same attribute of the
same subject is superseded, repeats are skipped, an exact query finds its
memory; the chat-model reconciler (a scripted model here) is held to the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.app import app
from evals.eventlog import EventlogCase, EventlogDataError, load_cases, run_case, run_eventlog
from memora.api import Memora
from memora.config import load_settings
from memora.models import MemoryStatus, MemoryUnit, ReconcileAction
from memora.storage.store import new_memory_id
from memora.write.reconcile import LLMReconciler
from tests.scripted import ScriptedByPrompt

EVENTLOG = Path(__file__).parents[1] / "data" / "eventlog.jsonl"
_T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
LIZARDS = [
    "Ziggy",
    "Rango",
    "Pascal",
    "Iggy",
    "Spike",
    "Draco",
    "Nova",
    "Pebble",
    "Mango",
    "Kiwi",
    "Sunny",
    "Blaze",
    "Echo",
    "Jade",
    "Onyx",
    "Rex",
    "Gizmo",
    "Bandit",
    "Tango",
    "Yoshi",
    "Noodle",
    "Pickle",
    "Basil",
    "Cosmo",
    "Luna",
    "Sage",
    "Fig",
    "Olive",
    "Ember",
    "Dusty",
    "Comet",
    "Rusty",
    "Biscuit",
    "Moss",
    "Juniper",
    "Pippin",
    "Zuko",
    "Ash",
    "Clover",
    "Nugget",
]
FACTS = [
    "The user's English level is B1.",
    "The user lives in Porto.",
    "The user has a cat named Miso.",
    "The user is allergic to peanuts.",
    "The user works at Northwind Traders.",
    "The user prefers tea over coffee.",
    "The user's favourite colour is teal.",
    "The user speaks Portuguese.",
    "The user plays the cello.",
    "The user has a daughter named Ingrid.",
    "The user drives a red Mazda.",
    "The user is vegetarian.",
    "The user's sister lives in Melbourne.",
    "The user weighs 82 kg.",
    "The user has read 12 books this month.",
    "The user supports Arsenal.",
    "The user's job title is Senior Analyst.",
    "The user owns a 2018 Toyota Corolla.",
    "The user's partner is named Elias.",
    "The user works remotely on Fridays.",
]


def _add_all(memora: Memora, user: str, texts: list[str], start: int = 0) -> list[Any]:
    return [
        memora.add(user, text, said_at=_T0 + timedelta(days=start + day))
        for day, text in enumerate(texts)
    ]


def _active(memora: Memora, user: str) -> list[str]:
    return [unit.content for unit in memora.list(user, MemoryStatus.ACTIVE)]


def _swims() -> list[str]:
    return [
        f"On 2026-03-{d + 1:02d} the user swam {20 + d} laps at the city pool." for d in range(25)
    ]


def test_twenty_five_swims_stay_twenty_five_memories(memora: Memora) -> None:
    outcomes = _add_all(memora, "u", _swims())
    assert sorted(_active(memora, "u")) == sorted(_swims())
    assert all(o.action is not ReconcileAction.UPDATE for o in outcomes)


def test_forty_lizards_stay_forty_memories(memora: Memora) -> None:
    texts = [f"I keep a pet lizard named {name}" for name in LIZARDS]
    _add_all(memora, "u", texts)
    assert sorted(_active(memora, "u")) == sorted(texts)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("使用者的英文程度是 B1。", "使用者的英文程度是 B2。"),
        ("The user lives in Taipei.", "The user moved to Tainan."),
        ("The user's favourite colour is white.", "The user's favourite colour is blue."),
    ],
)
def test_a_changed_attribute_supersedes(memora: Memora, old: str, new: str) -> None:
    first, second = _add_all(memora, "u", [old, new])
    assert second.action is ReconcileAction.UPDATE and second.affected_ids == [first.memory_id]
    assert _active(memora, "u") == [new]
    chain = memora.history("u", second.memory_id).chain
    assert [unit.content for unit in chain] == [old, new]


def test_readding_the_same_facts_skips_them(memora: Memora) -> None:
    _add_all(memora, "u", FACTS)
    before = memora.count("u", MemoryStatus.ACTIVE)
    again = _add_all(memora, "u", FACTS, start=30)
    assert [o.action for o in again] == [ReconcileAction.SKIP] * len(FACTS)
    assert memora.count("u", MemoryStatus.ACTIVE) == before == len(FACTS)


def test_readding_similar_events_skips_each_one(memora: Memora) -> None:
    # Twenty near-identical memories: the exact one must be among the neighbours judged.
    units = [
        MemoryUnit(
            id=new_memory_id(),
            user_id="u",
            content=text,
            created_at=_T0 + timedelta(days=day),
            updated_at=_T0 + timedelta(days=day),
        )
        for day, text in enumerate(_swims()[:20])
    ]
    ids = memora.ingest(units)
    again = _add_all(memora, "u", _swims()[:20], start=40)
    assert [o.action for o in again] == [ReconcileAction.SKIP] * 20
    assert [o.memory_id for o in again] == ids


def test_each_fact_is_found_first_by_its_exact_text(memora: Memora) -> None:
    ids = [o.memory_id for o in _add_all(memora, "u", FACTS)]
    now = _T0 + timedelta(days=40)
    for memory_id, text in zip(ids, FACTS, strict=True):
        hits = memora.rank_for_evaluation("u", text, 5, now)
        assert hits[0].memory.id == memory_id, text


def test_an_exact_match_is_not_hidden_by_newer_similar_events(memora: Memora) -> None:
    ids = [o.memory_id for o in _add_all(memora, "u", _swims())]
    now = _T0 + timedelta(days=40)
    for memory_id, text in zip(ids, _swims(), strict=True):
        assert memora.rank_for_evaluation("u", text, 5, now)[0].memory.id == memory_id
        assert memory_id in [hit.memory.id for hit in memora.search("u", text, now=now)]


def test_consolidation_merges_no_distinct_events(memora: Memora) -> None:
    _add_all(memora, "u", _swims())
    report = memora.consolidate("u", _T0 + timedelta(days=40))
    assert report.merged == []
    assert memora.count("u", MemoryStatus.ACTIVE) == 25


def test_the_development_event_log_passes(memora: Memora) -> None:
    result = run_eventlog(memora, EVENTLOG)
    assert result["failures"] == []
    assert result["distinct_kept"] == 1.0 and result["stale"] == 0


@pytest.mark.parametrize("case_id", ["d2-032", "d2-067", "d2-078", "d2-080"])
def test_a_replacement_the_decision_reads_as_unsure_keeps_both(
    memora: Memora, case_id: str
) -> None:
    # Another hobby taken up, another hike, another person's pay day: the rules propose to
    # replace the fact before, and the relation decision reads the pair as one fact below
    # RELATION_CONFIRM, so both are kept.
    case = next(c for c in load_cases(EVENTLOG.with_name("eventlog_dev2.jsonl")) if c.id == case_id)
    assert run_case(memora, case, f"user-{case_id}").missing == []


# -- the chat-model reconciler on the same cases ----------------------------------------------

_LISTED = re.compile(r"^(\S+): ", re.MULTILINE)


def _listed_ids(prompt: str) -> list[str]:
    return _LISTED.findall(prompt.split("Existing memories (id: content):", 1)[1])


def _labelled_model(kind: str) -> Callable[[str], dict[str, Any]]:
    """A stand-in model that answers as the case's labels say."""

    def answer(prompt: str) -> dict[str, Any]:
        ids = _listed_ids(prompt)
        if not ids:
            return {"action": "create", "target_ids": []}
        if kind in {"updates", "counters"}:
            return {"action": "update", "target_ids": ids}
        if kind == "repeats":
            return {"action": "skip", "target_ids": ids[:1]}
        return {"action": "keep_both", "target_ids": []}

    return answer


def _careless_model(prompt: str) -> dict[str, Any]:
    """Supersedes the nearest memory, whatever the candidate says."""
    ids = _listed_ids(prompt)
    return {"action": "update", "target_ids": ids[:1]} if ids else {"action": "create"}


@pytest.fixture
def chat_judged(data_dir: Path) -> Iterator[Callable[[Callable[[str], dict[str, Any]]], Memora]]:
    opened: list[Memora] = []

    def open_with(script: Callable[[str], dict[str, Any]]) -> Memora:
        memora = Memora(
            load_settings(data_dir=data_dir / str(len(opened))),
            reconciler=LLMReconciler(ScriptedByPrompt(script=script)),
        )
        opened.append(memora)
        return memora

    yield open_with
    for memora in opened:
        memora.close()


def _cases(*kinds: str) -> list[EventlogCase]:
    return [case for case in load_cases(EVENTLOG) if case.kind in kinds]


def test_llm_decisions_from_the_labels_give_the_labelled_end_state(
    chat_judged: Callable[[Callable[[str], dict[str, Any]]], Memora],
) -> None:
    for number, case in enumerate(_cases("events", "lists", "counters", "updates", "repeats")):
        memora = chat_judged(_labelled_model(case.kind))
        result = run_case(memora, case, f"case-{number}")
        assert (result.missing, result.stale) == ([], []), case.id


def test_a_careless_model_cannot_supersede_distinct_events_or_instances(
    chat_judged: Callable[[Callable[[str], dict[str, Any]]], Memora],
) -> None:
    memora = chat_judged(_careless_model)
    for number, case in enumerate(_cases("events", "lists")):
        assert run_case(memora, case, f"case-{number}").missing == [], case.id
    _add_all(memora, "swimmer", _swims())
    assert memora.count("swimmer", MemoryStatus.ACTIVE) == 25
    _add_all(
        memora, "learner", ["The user's English level is B1.", "The user's English level is B2."]
    )
    assert _active(memora, "learner") == ["The user's English level is B2."]


def test_malformed_model_output_loses_nothing(
    chat_judged: Callable[[Callable[[str], dict[str, Any]]], Memora],
) -> None:
    memora = chat_judged(lambda prompt: {"action": "obliterate", "target_ids": 7})
    first, second = _add_all(memora, "u", _swims()[:2])
    assert second.action is ReconcileAction.REVIEW
    assert sorted(_active(memora, "u")) == sorted(_swims()[:2])
    flagged = {unit.id for unit in memora.review_items("u")}
    assert flagged == {first.memory_id, second.memory_id}


def test_eventlog_data_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good = '{"id": "a", "kind": "events", "facts": ["x", "y"], "keep": [0, 1], "drop": []}'
    bad.write_text(
        good + "\n" + '{"id": "b", "kind": "events", "facts": ["x"], "keep": [0, 1], "drop": []}\n',
        encoding="utf-8",
    )
    with pytest.raises(EventlogDataError, match="line 2: every fact index"):
        load_cases(bad)
    result = CliRunner().invoke(app, ["eval", "eventlog", "--data", str(bad)])
    assert result.exit_code == 2
    assert "line 2" in result.output and "Traceback" not in result.output
