"""GoodAI LTM scripts (Colours, NameList, Shopping) played through the whole agent.

Each test definition (``{script[], is_question[], expected_responses[]}``) is one new
user with one thread: every script line is sent as a user turn through the compiled
graph (offline model, SQLite checkpoints, a temporary data dir), the question too.
Each definition is scored twice:

* by memory: what the agent built.
  Colours: the latest colour of the script is in an ACTIVE memory that the agent
  retrieves for the question (``search`` with the question, and the turn's
  ``used_memory_ids``), and no other colour of the script is still ACTIVE.
  NameList: the supersession chain (``history``) of the active name memory holds
  every name of the script.
* by reply: what the user was told when asking the question.
  Colours: the reply names the latest colour and no other colour of the script.
  NameList: the reply names every name of the script.

Shopping needs arithmetic over the history, so it is not scored offline; only the
definitions are counted.

These are nine short scripts per category, each a handful of template sentences
("My favourite colour is X.", "Refer to me as X."): a smoke test of the whole
agent, not a measure of long-term memory. The definitions carry no filler text
(``token_spacings`` / ``waits`` only say how much the original benchmark puts
between lines), so no filler turns are sent.
"""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from agent.chat_models import OFFLINE
from graph.builder import durability_for
from graph.checkpointed import open_agent
from memora.api import Memora
from memora.config import load_settings
from memora.models import MemoryStatus
from memora.write.reconcile import ReconcileThresholds
from nodes.state import Context

SCORED = ("Colours", "NameList")
SHOPPING_SKIPPED = "needs a real model: arithmetic over the shopping history"
_CATEGORIES = (*SCORED, "Shopping")
# Capitalised words that open a sentence rather than name a value.
_NOT_VALUES = frozenset({"my", "the", "i", "what", "a", "an", "it", "is", "and", "please"})
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")


@dataclass
class Definition:
    """One GoodAI test definition: a script with its question(s) and expected answers."""

    category: str
    name: str
    script: list[str]
    is_question: list[bool]
    expected: list[Any]

    @classmethod
    def load(cls, category: str, path: Path) -> Definition:
        """Read a ``*.def.json`` file."""
        raw = json.loads(path.read_text(encoding="utf-8"))
        script = [str(line) for line in raw["script"]]
        flags = [bool(flag) for flag in raw.get("is_question", [False] * len(script))]
        if len(flags) != len(script):
            raise ValueError(f"{path}: script and is_question differ in length")
        name = path.name.removesuffix(".def.json")
        return cls(category, name, script, flags, list(raw.get("expected_responses", [])))

    @property
    def label(self) -> str:
        return f"{self.category}/{self.name}"

    @property
    def statements(self) -> list[str]:
        return [line for line, q in zip(self.script, self.is_question, strict=True) if not q]


@dataclass
class Turn:
    """What one user turn left behind."""

    text: str
    values: dict[str, Any]
    interrupted: bool = False


@dataclass
class Played:
    """A definition after its script was played: the user and the question turns."""

    definition: Definition
    user_id: str
    questions: list[Turn] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)


def load_definitions(root: Path) -> dict[str, list[Definition]]:
    """The definitions under ``root/<Category>/*.def.json``, by category (sorted by name)."""
    found: dict[str, list[Definition]] = {}
    for category in _CATEGORIES:
        folder = root / category
        paths = sorted(folder.glob("*.def.json")) if folder.is_dir() else []
        found[category] = [Definition.load(category, path) for path in paths]
    return found


def _mentions(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text, re.IGNORECASE) is not None


def stated_values(line: str) -> list[str]:
    """The values a script line states: its capitalised words, except an opening word.

    The first word is a value only when a copula follows it ("White is my favourite
    colour."); otherwise it is capitalised because it opens the sentence ("Refer to
    me as Gary." -> ["Gary"]; "The name of my favourite colour is Purple." ->
    ["Purple"]).
    """
    values = []
    for match in _CAPITALISED.finditer(line):
        word = match.group()
        opening = not line[: match.start()].strip()
        if opening and not re.match(r"\s+(?:is|are)\b", line[match.end() :]):
            continue
        if word.lower() not in _NOT_VALUES:
            values.append(word)
    return values


# --------------------------------------------------------------------------- playing


def _send(agent: Any, memora: Memora, thread_id: str, user_id: str, text: str) -> Turn:
    """One user turn through the graph (offline model); an unexpected approval is declined."""
    config = {"configurable": {"thread_id": thread_id, "user_id": user_id}}
    context = Context(user_id=user_id, chat_model=OFFLINE, memora=memora)
    payload = {"messages": [HumanMessage(text)]}
    agent.invoke(payload, config, context=context, durability=durability_for(payload))
    interrupted = False
    while any(task.interrupts for task in agent.get_state(config).tasks):
        interrupted = True  # no deletion is expected: keep the memory
        agent.invoke(Command(resume="no"), config, context=context)
    return Turn(text, dict(agent.get_state(config).values), interrupted)


def play(agent: Any, memora: Memora, definition: Definition, tick: Callable[[], None]) -> Played:
    """Send every script line of ``definition`` as one new user's turns in one thread."""
    played = Played(definition, f"goodai-{definition.category}-{uuid.uuid4().hex[:12]}")
    thread_id = uuid.uuid4().hex
    for line, question in zip(definition.script, definition.is_question, strict=True):
        turn = _send(agent, memora, thread_id, played.user_id, line)
        played.turns.append(turn)
        if question:
            played.questions.append(turn)
        tick()
    return played


# --------------------------------------------------------------------------- scoring


def score_colours(played: Played, memora: Memora) -> list[str]:
    """Failure reasons for a Colours definition (empty when it passes)."""
    definition = played.definition
    user = played.user_id
    if not definition.expected or not played.questions:
        return ["the definition has no question or no expected answer"]
    latest = str(definition.expected[0])
    stated = [value for line in definition.statements for value in stated_values(line)]
    others = sorted({v for v in stated if v.lower() != latest.lower()}, key=str.lower)
    question = played.questions[-1]
    retrieved = {hit.memory.id: hit.memory for hit in memora.search(user, question.text)}
    for memory_id in question.values.get("used_memory_ids") or []:
        unit = memora.get(user, memory_id)
        if unit is not None:
            retrieved.setdefault(unit.id, unit)
    active_retrieved = [m for m in retrieved.values() if m.status is MemoryStatus.ACTIVE]
    reasons = []
    if not any(_mentions(m.content, latest) for m in active_retrieved):
        shown = [m.content for m in active_retrieved] or "nothing"
        reasons.append(f"latest colour {latest!r} not in the active memories retrieved: {shown}")
    stale = [
        m.content
        for m in memora.list(user, MemoryStatus.ACTIVE)
        if any(_mentions(m.content, other) for other in others)
    ]
    if stale:
        reasons.append(f"earlier colours still active: {stale}")
    return _with_trace(reasons + _turn_problems(played), played, memora)


def score_names(played: Played, memora: Memora) -> list[str]:
    """Failure reasons for a NameList definition (empty when it passes)."""
    user = played.user_id
    definition = played.definition
    names = [str(name) for name in definition.expected]
    if not names:
        return ["the definition has no expected names"]
    stated = {value for line in definition.statements for value in stated_values(line)}
    active = [
        m
        for m in memora.list(user, MemoryStatus.ACTIVE)
        if any(_mentions(m.content, n) for n in {*names, *stated})
    ]
    if not active:
        return _with_trace(
            ["no active memory names the user", *_turn_problems(played)], played, memora
        )
    best: tuple[list[str], list[str]] | None = None
    for unit in active:
        chain = [m.content for m in memora.chain(user, unit.id)]
        missing = [n for n in names if not any(_mentions(c, n) for c in chain)]
        if best is None or len(missing) < len(best[1]):
            best = (chain, missing)
    assert best is not None
    chain, missing = best
    reasons = []
    if missing:
        reasons.append(
            f"names missing from the name memory's history: {missing}; history: {chain}; "
            f"{len(active)} active name memories"
        )
    return _with_trace(reasons + _turn_problems(played), played, memora)


def reply_problems(played: Played) -> list[str]:
    """Why the reply to the definition's question falls short (empty when it answers).

    Colours: the reply names the latest colour and no other colour of the script.
    NameList: the reply names every expected name.
    """
    definition = played.definition
    if not played.questions:
        return ["the definition has no question"]
    reply = str(played.questions[-1].values.get("reply") or "")
    expected = [str(value) for value in definition.expected]
    missing = [value for value in expected if not _mentions(reply, value)]
    problems = [f"the reply does not name {missing}"] if missing else []
    if definition.category == "Colours":
        stated = {v for line in definition.statements for v in stated_values(line)}
        wrong = sorted(
            {v for v in stated if v.lower() not in {e.lower() for e in expected}}, key=str.lower
        )
        if named := [value for value in wrong if _mentions(reply, value)]:
            problems.append(f"the reply also names earlier colours {named}")
    if problems:
        problems.append(f"it said: {reply!r}")
    return problems


def _with_trace(reasons: list[str], played: Played, memora: Memora) -> list[str]:
    """A failure's reasons followed by the write trace that explains them.

    A definition that meets its criteria passes whatever the trace says.
    """
    return [*reasons, *_write_problems(played, memora)] if reasons else []


def _write_problems(played: Played, memora: Memora) -> list[str]:
    """Statements after the first that the write path did not store as an update, and why.

    Each such statement is shown with its decision and the cosine between its memory
    and the previous statement's memory (the offline reconciler compares only
    neighbours at or above its gate).
    """
    gate = ReconcileThresholds().gate
    problems: list[str] = []
    previous = None
    for turn in played.turns:
        if any(turn is question for question in played.questions):
            continue
        outcomes = turn.values.get("commit_outcomes") or []
        stored = [o for o in outcomes if o.get("accepted") and o.get("memory_id")]
        if not outcomes:
            problems.append(f"{turn.text!r} was not remembered")
            continue
        if not stored:
            problems.append(f"{turn.text!r} was rejected: {outcomes[0].get('reason')}")
            continue
        unit = memora.get(played.user_id, str(stored[0]["memory_id"]))
        action = stored[0].get("action")
        if unit is None:
            continue
        if action == "skip" and previous is not None and unit.id == previous.id:
            continue  # the same value again: nothing to update
        if previous is not None and action != "update":
            vectors = memora.embeddings.embed_array([previous.content, unit.content])
            cosine = float(
                np.dot(vectors[0], vectors[1])
                / (np.linalg.norm(vectors[0]) * np.linalg.norm(vectors[1]))
            )
            problems.append(
                f"{turn.text!r} -> {unit.content!r} was a {action}, not an update of "
                f"{previous.content!r} (cosine {cosine:.3f}, reconciler gate {gate})"
            )
        previous = unit
    return problems


def _turn_problems(played: Played) -> list[str]:
    """Turns that did not end normally, or asked to delete something."""
    problems = []
    for turn in played.turns:
        stop = turn.values.get("stop_reason")
        if stop != "final_answer":
            problems.append(f"turn {turn.text!r} stopped with {stop!r}")
        if turn.interrupted:
            problems.append(f"turn {turn.text!r} asked for an unexpected deletion approval")
    return problems


_SCORERS: dict[str, Callable[[Played, Memora], list[str]]] = {
    "Colours": score_colours,
    "NameList": score_names,
}


def _score_category(played: list[Played], memora: Memora) -> dict[str, Any]:
    """Memory and reply pass counts of one category, with each failure's reasons."""
    failures = []
    memory_passed = reply_passed = 0
    for one in played:
        memory = _SCORERS[one.definition.category](one, memora)
        reply = reply_problems(one)
        memory_passed += not memory
        reply_passed += not reply
        if memory or reply:
            failures.append({"definition": one.definition.name, "memory": memory, "reply": reply})
    total = len(played)
    return {
        "passed": memory_passed,
        "pass_rate": memory_passed / total if total else 0.0,
        "reply_passed": reply_passed,
        "reply_pass_rate": reply_passed / total if total else 0.0,
        "total": total,
        "failures": failures,
    }


def run_agent(
    data: Path,
    progress: Callable[[int, int], None] | None = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Play and score the GoodAI definitions under ``data``; Shopping is only counted.

    Args:
        data: A folder holding ``Colours/``, ``NameList/`` and ``Shopping/``.
        progress: Called with (turns done, turns in all) after each turn.
        data_dir: Where to keep the store and checkpoints (default: a temp dir).

    Returns:
        ``{"Colours": {...}, "NameList": {...}, "Shopping": {"skipped", "total"}}``; a
        scored category has ``passed`` / ``pass_rate`` (by memory), ``reply_passed`` /
        ``reply_pass_rate`` (by reply), ``total`` and ``failures`` (``definition``,
        ``memory`` and ``reply`` reasons).
    """
    definitions = load_definitions(data)
    if not any(definitions.values()):
        raise ValueError(f"no *.def.json under {data}/{{{','.join(_CATEGORIES)}}}")
    total_turns = sum(len(d.script) for c in SCORED for d in definitions[c])
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total_turns)

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memora-agent-eval-") as tmp:
        root = data_dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        memora = Memora(load_settings(data_dir=root, write_judge="rules"))
        try:
            with open_agent(root) as agent:
                for category in SCORED:
                    results[category] = _score_category(
                        [play(agent, memora, d, tick) for d in definitions[category]],
                        memora,
                    )
        finally:
            memora.close()
    results["Shopping"] = {"skipped": SHOPPING_SKIPPED, "total": len(definitions["Shopping"])}
    return results
