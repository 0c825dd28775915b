"""Reading LangChain messages the same way everywhere in the agent and the graph."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage


def text_of(message: BaseMessage) -> str:
    """A message's text content, whatever its content shape (a string or a list of parts)."""
    content: Any = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )
