"""Chat model factory: ChatOpenAI when configured, else the offline rules-based model.

Models are built lazily, so importing the graph needs no key. A run may choose
its model: ``"offline"`` for the rules-based model, a model name for ChatOpenAI,
or ``""`` for what the settings and environment configure. A server's clients
choose that name, so only the operator's allowlist (``MEMORA_CHAT_MODEL`` and
``MEMORA_ALLOWED_CHAT_MODELS``) is accepted, and the built models are kept in a
small LRU cache.
"""

from __future__ import annotations

import os
from collections import OrderedDict

from langchain_core.language_models import BaseChatModel

from memora.config import Settings
from memora.errors import InvalidInput
from memora.write.chat_judge import openai_chat_model, uses_openai

OFFLINE = "offline"
"""The model choice that selects the offline rules-based model whatever is configured."""


MAX_CACHED_MODELS = 8
"""Built chat models kept per process; more choices than this rebuild the oldest."""


class ChatModelNotAllowed(InvalidInput):
    """A run named a chat model outside the operator's allowlist."""


def check_chat_model(settings: Settings, choice: str) -> None:
    """Refuse a run's model choice the settings do not allow ("" is always the configured one).

    Raises:
        ChatModelNotAllowed: One line naming the choice (cut short) and the allowed models.
    """
    if choice and choice not in settings.chat_model_allowlist:
        allowed = ", ".join(sorted(settings.chat_model_allowlist))
        raise ChatModelNotAllowed(
            f"chat model {choice[:80]!r} is not allowed (MEMORA_ALLOWED_CHAT_MODELS); "
            f"choose one of: {allowed}"
        )


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


_models: OrderedDict[tuple[object, ...], BaseChatModel] = OrderedDict()


def get_chat_model(settings: Settings, choice: str = "") -> BaseChatModel:
    """The process-wide chat model for these settings, this environment and ``choice``.

    Raises:
        ChatModelNotAllowed: ``choice`` is not in the settings' allowlist.
    """
    check_chat_model(settings, choice)
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
        while len(_models) > MAX_CACHED_MODELS:
            _models.popitem(last=False)
    _models.move_to_end(key)
    return _models[key]


def cached_chat_models() -> int:
    """How many built chat models this process holds."""
    return len(_models)


def clear_chat_models() -> None:
    """Forget every cached model, so the next run builds from the current environment."""
    _models.clear()
