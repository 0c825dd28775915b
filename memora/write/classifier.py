"""A chat-model second opinion for the policy gate (structured output).

It runs only on candidates the hard rules accepted and can only add a
rejection: a hard rejection is never overruled, and a failing model call or an
answer that does not fit the schema rejects nothing (the hard rules have already
decided what must never be kept). Its prompt covers the same kinds as the rules:
see ``SELECTION_PROMPT``.
"""

from __future__ import annotations

import logging
import re

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from memora.models import MemoryCandidate, RejectionReason
from memora.write.prompts import SELECTION_PROMPT

logger = logging.getLogger(__name__)


class SelectionVerdict(BaseModel):
    """The model's decision about one candidate."""

    store: bool = Field(description="true to keep the candidate in long-term memory")
    reason: RejectionReason | None = Field(default=None, description="why not, when store is false")


_FENCE_RUN = re.compile(r"<{3,}|>{3,}")
_FENCE_MARKS = str.maketrans({"<": "\u2039", ">": "\u203a"})
"""Angle brackets inside a fenced text, as look-alikes, where three in a row could close it."""


def fenced(text: str) -> str:
    """``text`` as it goes between the prompt's markers: runs of three or more ``<`` or ``>``
    become look-alikes, so no candidate or message can close its fence or open another."""
    return _FENCE_RUN.sub(lambda run: run.group().translate(_FENCE_MARKS), text)


class LLMMemoryClassifier:
    """Implements ``memora.write.policy.MemoryClassifier`` with a chat model.

    ``asked`` counts the candidates put to the model and ``fallbacks`` those it gave no
    usable verdict on (a failed call, or an answer outside the schema), where the hard rules'
    decision stands alone.
    """

    def __init__(self, model: BaseChatModel) -> None:
        self._structured = model.with_structured_output(SelectionVerdict)
        self.asked = 0
        self.fallbacks = 0

    def classify(self, candidate: MemoryCandidate) -> RejectionReason | None:
        """A rejection reason, or None to accept (also when the model fails)."""
        prompt = SELECTION_PROMPT.format(
            user_message=fenced(candidate.user_message or "(not given)"),
            candidate=fenced(candidate.content),
        )
        self.asked += 1
        try:
            verdict = SelectionVerdict.model_validate(self._structured.invoke(prompt))
        except Exception as error:  # the hard rules already ran; a model outage adds nothing
            # The type only: a validation message can quote the model's answer, and with it
            # the candidate.
            logger.warning("selection classifier gave no usable verdict (%s)", type(error).__name__)
            self.fallbacks += 1
            return None
        if verdict.store:
            return None
        return verdict.reason or RejectionReason.TOO_VAGUE
