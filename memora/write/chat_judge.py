"""The configured OpenAI-compatible chat model, for the write path's model-backed judges.

The library never builds the offline rules-based model: that one is the agent's.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from langchain_core.language_models import BaseChatModel

from memora.config import Settings


def uses_openai() -> bool:
    """Whether an OpenAI key or an OpenAI-compatible base URL is configured."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


def openai_chat_model(settings: Settings, model: str = "") -> BaseChatModel:
    """ChatOpenAI for ``model`` (default: the configured one), built when first needed."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model or settings.chat_model,
        timeout=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
        api_key=os.environ.get("OPENAI_API_KEY") or "unused",  # type: ignore[arg-type]
        stream_usage=True,
    )


def write_judge(settings: Settings) -> BaseChatModel | None:
    """The chat model that judges the write path, if the settings ask for one."""
    if settings.write_judge == "chat_model" and uses_openai():
        return openai_chat_model(settings)
    return None


def describe_chat_model(settings: Settings) -> str:
    """Which model judges and where it is served, for a person to read (no credentials)."""
    where = urlsplit(os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com")
    host = where.netloc.rpartition("@")[2]  # a user:password@ in the URL is not shown
    return f"{settings.chat_model} via {urlunsplit(where._replace(netloc=host))}"
