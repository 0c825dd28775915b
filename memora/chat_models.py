"""Chat model factory: ChatOpenAI when configured, else the offline rules-based model.

Models are built lazily, so importing the graph needs no key.
"""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

from memora.config import Settings


def uses_openai() -> bool:
    """Whether an OpenAI key or an OpenAI-compatible base URL is configured."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


def describe_model(settings: Settings) -> str:
    """A one-line description of the chat model in use, for users to see."""
    if uses_openai():
        where = os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
        return f"{settings.chat_model} via {where}"
    return "the offline rules-based model (no OPENAI_API_KEY or OPENAI_BASE_URL set)"


def make_chat_model(settings: Settings) -> BaseChatModel:
    """Build the configured chat model (not yet bound to tools)."""
    if uses_openai():
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=settings.chat_model,
            timeout=settings.model_timeout_s,
            max_retries=settings.model_max_retries,
            api_key=os.environ.get("OPENAI_API_KEY") or "unused",  # type: ignore[arg-type]
            stream_usage=True,
        )
    from memora.offline_model import OfflineChatModel

    return OfflineChatModel()


_models: dict[tuple[object, ...], BaseChatModel] = {}


def get_chat_model(settings: Settings) -> BaseChatModel:
    """The process-wide chat model for these settings and this environment."""
    key = (
        settings.chat_model,
        settings.model_timeout_s,
        settings.model_max_retries,
        os.environ.get("OPENAI_BASE_URL"),
        bool(os.environ.get("OPENAI_API_KEY")),
    )
    if key not in _models:
        _models[key] = make_chat_model(settings)
    return _models[key]
