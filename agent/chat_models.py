"""Chat model factory: ChatOpenAI when configured, else the offline rules-based model.

Models are built lazily, so importing the graph needs no key. A run may choose
its model: ``"offline"`` for the rules-based model, a model name for ChatOpenAI,
or ``""`` for what the settings and environment configure.
"""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

from memora.config import Settings
from memora.write.chat_judge import openai_chat_model, uses_openai

OFFLINE = "offline"
"""The model choice that selects the offline rules-based model whatever is configured."""


def _is_offline(choice: str) -> bool:
    return choice == OFFLINE or (not choice and not uses_openai())


def describe_model(settings: Settings, choice: str = "") -> str:
    """A one-line description of the chat model in use, for users to see."""
    if choice == OFFLINE:
        return "the offline rules-based model"
    if _is_offline(choice):
        return "the offline rules-based model (no OPENAI_API_KEY or OPENAI_BASE_URL set)"
    where = os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
    return f"{choice or settings.chat_model} via {where}"


def make_chat_model(settings: Settings, choice: str = "") -> BaseChatModel:
    """Build the chat model for ``choice`` (see the module doc), not yet bound to tools."""
    if not _is_offline(choice):
        return openai_chat_model(settings, choice)
    from agent.offline.model import OfflineChatModel

    return OfflineChatModel()


_models: dict[tuple[object, ...], BaseChatModel] = {}


def get_chat_model(settings: Settings, choice: str = "") -> BaseChatModel:
    """The process-wide chat model for these settings, this environment and ``choice``."""
    key = (
        choice,
        settings.chat_model,
        settings.model_timeout_s,
        settings.model_max_retries,
        os.environ.get("OPENAI_BASE_URL"),
        bool(os.environ.get("OPENAI_API_KEY")),
    )
    if key not in _models:
        _models[key] = make_chat_model(settings, choice)
    return _models[key]


def clear_chat_models() -> None:
    """Forget every cached model, so the next run builds from the current environment."""
    _models.clear()
