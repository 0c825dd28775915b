"""A scripted chat model for structured-output tests (tests only; it says so in its type)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedStructuredModel(BaseChatModel):
    """Answers every structured-output call with ``answer`` as the tool call's arguments."""

    answer: dict[str, Any] | None = None
    fail: bool = False
    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-for-tests"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        # Structured output goes through tool calling; the schema name is the tool name.
        self._tool_name = tools[0].__name__
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(str(messages[-1].content))
        if self.fail:
            raise ConnectionError("scripted outage")
        call = {"name": self._tool_name, "args": self.answer or {}, "id": "c1", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


class ScriptedByPrompt(ScriptedStructuredModel):
    """Answers each structured-output call with ``script(prompt)``: a model reading its prompt."""

    script: Callable[[str], dict[str, Any]]

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        self.prompts.append(prompt)
        answer = self.script(prompt)
        call = {"name": self._tool_name, "args": answer, "id": "c1", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


class ScriptedToolCaller(BaseChatModel):
    """A tool-calling chat model whose next message is ``script(messages)``: a model that
    reads the conversation, tool results included, and decides (tests only)."""

    script: Callable[[list[BaseMessage]], AIMessage]
    seen: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-for-tests"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])
