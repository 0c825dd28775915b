"""Importance (1..5) and kind of a memory: offline rules, or a chat model.

Both implement ``ImportanceScorer``; the write path calls whichever the
configuration provides. Importance nudges ranking and consolidation, never
whether something is stored (that is the policy gate's job).
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from memora.models import MemoryCandidate, MemoryType
from memora.write.prompts import IMPORTANCE_PROMPT

Kind = Literal["preference", "goal", "constraint", "event", "fact"]

_KIND_PATTERNS: list[tuple[Kind, re.Pattern[str]]] = [
    (
        "constraint",
        re.compile(
            r"\b(never|always|must not|must|cannot|can't|allergic|avoid)\b"
            r"|永遠|絕不|绝不|不能|不可以|過敏|过敏|一定要",
            re.I,
        ),
    ),
    (
        "preference",
        re.compile(
            r"\b(prefer|prefers|preferred|like|likes|love|loves|hate|hates|dislike|dislikes"
            r"|favou?rite|enjoy|enjoys)\b"
            r"|喜歡|喜欢|偏好|討厭|讨厌|最愛|最爱|習慣|习惯",
            re.I,
        ),
    ),
    (
        "goal",
        re.compile(
            r"\b(goal|plan|plans|planning|want to|wants to|aim|hope to|going to"
            r"|will take|preparing)\b"
            r"|目標|目标|計畫|计划|打算|預計|预计|準備|准备|想要",
            re.I,
        ),
    ),
]


class ImportanceScore(BaseModel):
    """A chat model's judgement of one memory."""

    importance: int = Field(ge=1, le=5, description="1 trivial .. 5 essential to remember")
    kind: Kind = Field(description="what sort of memory this is")


class ImportanceScorer(Protocol):
    """Rates a candidate memory."""

    def score(self, candidate: MemoryCandidate) -> ImportanceScore:
        """Return importance and kind for one candidate."""
        ...


def classify_kind(candidate: MemoryCandidate) -> Kind:
    """The kind of a candidate from its wording; episodic memories are events."""
    if candidate.kind in {"preference", "goal", "constraint", "event", "fact"}:
        return candidate.kind  # type: ignore[return-value]
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(candidate.content):
            return kind
    return "event" if candidate.memory_type is MemoryType.EPISODIC else "fact"


class RuleImportanceScorer:
    """Offline scorer: constraints and explicit requests matter most, events least."""

    _BASE: dict[str, int] = {
        "constraint": 4,
        "preference": 4,
        "goal": 4,
        "fact": 3,
        "event": 2,
    }

    def score(self, candidate: MemoryCandidate) -> ImportanceScore:
        """Score by kind, raised by one when the user explicitly asked to remember."""
        kind = classify_kind(candidate)
        importance = self._BASE[kind] + (1 if candidate.reason == "explicit_request" else 0)
        return ImportanceScore(importance=min(5, importance), kind=kind)


class LLMImportanceScorer:
    """Scores with a chat model's structured output; falls back to the rules on bad output."""

    def __init__(self, model: BaseChatModel) -> None:
        self._structured = model.with_structured_output(ImportanceScore)
        self._fallback = RuleImportanceScorer()

    def score(self, candidate: MemoryCandidate) -> ImportanceScore:
        """Ask the model; any failure or invalid answer uses the offline rules."""
        prompt = IMPORTANCE_PROMPT.format(memory=candidate.content)
        try:
            result = self._structured.invoke(prompt)
            return ImportanceScore.model_validate(result)
        except Exception:  # any model or parsing failure: rules still give a usable score
            return self._fallback.score(candidate)
