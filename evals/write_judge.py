"""The write judge an offline-gate eval runs with: the gate alone, or the chat model beside it.

``--write-judge chat_model`` (or ``MEMORA_WRITE_JUDGE=chat_model``) puts every candidate the
hard rules accept to the configured chat model (``MEMORA_CHAT_MODEL`` through
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``), as the write path does; the model can add a
rejection, never lift one. An eval asked for the chat model when none is configured stops
rather than print the offline figures under the model's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memora.config import get_settings
from memora.errors import ConfigurationError
from memora.write.chat_judge import describe_chat_model, openai_chat_model, uses_openai
from memora.write.classifier import LLMMemoryClassifier

WRITE_JUDGES = ("rules", "chat_model")


@dataclass
class WriteJudge:
    """What judges beside the offline gate: nothing (``rules``) or a chat model."""

    name: str
    classifier: LLMMemoryClassifier | None = None
    model: str = ""
    """The chat model and where it is served (``""`` for ``rules``)."""

    def figures(self) -> dict[str, Any]:
        """The judge's part of an eval's result: its name and, for a model, what it did (since
        the judge was made: one judge per run)."""
        if self.classifier is None:
            return {"write_judge": self.name}
        return {
            "write_judge": self.name,
            "write_judge_model": self.model,
            "model_asked": self.classifier.asked,
            "model_fallbacks": self.classifier.fallbacks,
        }


def resolve_write_judge(choice: str | WriteJudge | None = None) -> WriteJudge:
    """The judge for ``choice`` ("rules" or "chat_model"; default: ``MEMORA_WRITE_JUDGE``).

    Raises:
        ConfigurationError: an unknown choice, or "chat_model" with no chat model configured.
    """
    if isinstance(choice, WriteJudge):
        return choice
    settings = get_settings()
    name = choice or settings.write_judge
    if name not in WRITE_JUDGES:
        raise ConfigurationError(f"write judge must be one of {', '.join(WRITE_JUDGES)}")
    if name == "rules":
        return WriteJudge(name)
    if not uses_openai():
        raise ConfigurationError(
            "the chat_model write judge needs a chat model: set OPENAI_API_KEY or "
            "OPENAI_BASE_URL (and MEMORA_CHAT_MODEL)"
        )
    model = openai_chat_model(settings)
    return WriteJudge(name, LLMMemoryClassifier(model), describe_chat_model(settings))
