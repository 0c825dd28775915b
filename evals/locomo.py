"""LoCoMo retrieval protocol (../shared/bench/README.md, `locomo-retrieval`)."""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.common import percentile_ms
from evals.peers import Item, MemorySystem
from memora.embeddings import estimate_tokens

KS = (1, 5, 10, 25, 50)
INJECTED = 5
"""Memories one search_memory call gives the agent (the default retrieval limit)."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D\d+:\d+")


@dataclass
class Question:
    """One scored question."""

    user_id: str
    text: str
    category: str
    evidence: set[str]
    now: datetime


@dataclass
class Conversation:
    """One LoCoMo sample turned into memories (keyed by dia_id) and questions."""

    user_id: str
    items: list[Item]
    questions: list[Question] = field(default_factory=list)


def parse_session_time(raw: str) -> datetime:
    """Parse LoCoMo's "1:56 pm on 8 May, 2023" as a UTC time."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    """The memory text of one dialogue turn, with its shared image caption."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def load_conversations(path: Path) -> list[Conversation]:
    """Read a LoCoMo file into conversations, cleaning evidence ids as the protocol says."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    conversations = []
    for sample in samples:
        user_id = str(sample["sample_id"])
        conv = sample["conversation"]
        items: list[Item] = []
        last = None
        for key in sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])
        ):
            when = parse_session_time(conv[f"{key}_date_time"])
            last = when if last is None or when > last else last
            for turn in conv[key]:
                items.append(
                    Item(
                        key=turn["dia_id"],
                        text=turn_text(turn),
                        created_at=when,
                        metadata={"dia_id": turn["dia_id"], "session": int(key[8:])},
                        episodic=True,
                        source="locomo",
                    )
                )
        known = {item.key for item in items}
        conversation = Conversation(user_id, items)
        for qa in sample["qa"]:
            category = CATEGORIES.get(int(qa.get("category", 0)))
            if category is None:
                continue
            raw = " ".join(str(e) for e in qa.get("evidence", [])).replace("D:", "D")
            evidence = {e for e in _EVIDENCE.findall(raw) if e in known}
            if evidence and last is not None:
                conversation.questions.append(
                    Question(user_id, str(qa["question"]), category, evidence, last)
                )
        conversations.append(conversation)
    return conversations


def run_locomo(
    system: MemorySystem, path: Path, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Ingest every conversation into the system, answer every question, return the figures.

    The system returns the dia_ids of its top memories, so any system is scored alike.
    """
    conversations = load_conversations(path)
    ingest_seconds = 0.0
    ingested = 0
    for conversation in conversations:
        started = time.perf_counter()
        system.add_many(conversation.user_id, conversation.items)
        ingest_seconds += time.perf_counter() - started
        ingested += len(conversation.items)
    questions = [q for c in conversations for q in c.questions]
    text_of = {(c.user_id, item.key): item.text for c in conversations for item in c.items}
    recalls: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    precisions: dict[int, list[float]] = defaultdict(list)
    injected_tokens: list[int] = []
    useful_turns = 0
    latencies: list[float] = []
    for number, question in enumerate(questions, start=1):
        started = time.perf_counter()
        ranked = system.search(question.user_id, question.text, max(KS), question.now)
        latencies.append(time.perf_counter() - started)
        for k in KS:
            hits = len(question.evidence & set(ranked[:k]))
            recalls[question.category][k].append(hits / len(question.evidence))
            recalls["overall"][k].append(hits / len(question.evidence))
            precisions[k].append(hits / k)
        injected = ranked[:INJECTED]
        injected_tokens.append(
            estimate_tokens([text_of.get((question.user_id, key), "") for key in injected])
        )
        useful_turns += len(question.evidence & set(injected))
        if progress:
            progress(number, len(questions))

    def means(per_k: dict[int, list[float]]) -> dict[str, float]:
        return {f"recall@{k}": sum(v) / len(v) for k, v in sorted(per_k.items())}

    return {
        "overall": means(recalls["overall"]),
        "by_category": {
            name: means(recalls[name]) for name in CATEGORIES.values() if name in recalls
        },
        "precision": {f"precision@{k}": sum(v) / len(v) for k, v in sorted(precisions.items())},
        "context_tokens": sum(injected_tokens) / len(injected_tokens) if injected_tokens else 0.0,
        "cost_per_useful_recall": (
            sum(injected_tokens) / useful_turns if useful_turns else float("inf")
        ),
        "questions": len(questions),
        "search_ms": {"p50": percentile_ms(latencies, 50), "p95": percentile_ms(latencies, 95)},
        "ingest_per_s": ingested / ingest_seconds if ingest_seconds else 0.0,
        "memories": ingested,
    }
