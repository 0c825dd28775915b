"""The offline chat model: a deterministic, rules-based ``BaseChatModel``.

It is the default when no ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set, so the
whole product (graph, CLI, server) runs with no key and no network. It does not
generate language; it recognises a few kinds of request in English and Chinese
(Traditional and Simplified) and maps them onto the memory tools:

* explicit remember requests ("remember that ...", "請記住...") ->
  ``remember_memory(reason="explicit_request")``;
* first-person statements of a durable fact or preference ("I prefer ...",
  "我住在高雄") -> ``remember_memory(reason="useful_future_context")``;
* recall requests ("what do you know about me", "你記得我...嗎") and questions about the
  user's own facts ("who is my favourite composer?", 「我最喜歡的作曲家是誰？」) ->
  ``search_memory``, then an answer that quotes the memories that answer the question, or
  says plainly that none does;
* forget requests ("forget that I ...", "不要再記得...") -> ``search_memory`` and then
  ``request_forget_memory`` with the exact id that was found.

Memories come back quoted in a data frame (``agent.spotlight``); the replies unquote them.
Some rules are kept as data in ``rules.toml``, each with its examples.
Anything else gets a plain answer saying what this model can and cannot do. Like a
real model, it only *proposes* tool calls: the application validates them, applies
the memory policy and asks for approval. Every reply carries :data:`OFFLINE_MARKER`
so a user can always tell no real language model answered.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent.messages import text_of
from agent.offline.intents import Intent, classify
from agent.offline.replies import Step, chat_reply, current_turn, describe, unavailable
from agent.offline.text import Lang
from agent.tool_schemas import (
    REMEMBER_MEMORY,
    REQUEST_FORGET_MEMORY,
    SEARCH_MEMORY,
    argument_names,
    string_limits,
)

OFFLINE_MARKER = "[offline model]"
"""Prefix of every reply, in every language: the user must see no real LLM answered."""

MAX_TOOL_RESULTS = 4
"""After this many tool results in one turn, answer instead of calling another tool."""


_STREAM_WORDS_PER_CHUNK = 3
_STREAM_MAX_PIECE = 8


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class _Decision:
    """The next message: exactly one tool call, or a final text."""

    text: str = ""
    tool: str | None = None
    args: dict[str, Any] | None = None


def _call(tool: str, args: dict[str, Any], tools: frozenset[str], lang: Lang) -> _Decision:
    """A tool call if the tool was bound; otherwise say it is unavailable."""
    if tool not in tools:
        return _Decision(text=unavailable(tool, lang))
    return _Decision(tool=tool, args=args)


def _first_action(intent: Intent, tools: frozenset[str], lang: Lang) -> _Decision:
    if intent.kind == "remember":
        args = {"content": intent.text, "memory_type": intent.memory_type, "reason": intent.reason}
        return _call(REMEMBER_MEMORY, args, tools, lang)
    if intent.kind == "recall":
        query = intent.text or lang.say(
            "the user's preferences, facts and goals", "使用者的偏好、背景與目標"
        )
        return _call(SEARCH_MEMORY, {"query": query}, tools, lang)
    if intent.kind == "forget":
        return _call(SEARCH_MEMORY, {"query": intent.text}, tools, lang)
    return _Decision(text=chat_reply(intent, lang))


def _corrected(step: Step) -> dict[str, Any] | None:
    """Arguments fixed after an ``ok: false`` observation, or None if nothing can be fixed.

    Only mechanical fixes: drop unknown keys, cut strings to their limits and replace
    invalid enum values; a wrong memory id cannot be guessed.
    """
    allowed = (
        argument_names(step.name)
        if step.name in (SEARCH_MEMORY, REMEMBER_MEMORY, REQUEST_FORGET_MEMORY)
        else None
    )
    args = {k: v for k, v in step.args.items() if allowed is None or k in allowed}
    for key, limit in string_limits().items():
        if isinstance(args.get(key), str) and len(args[key]) > limit:
            args[key] = args[key][:limit].rstrip()
    if step.name == REMEMBER_MEMORY:
        if args.get("memory_type") not in ("semantic", "episodic"):
            args["memory_type"] = "semantic"
        if args.get("reason") not in ("explicit_request", "useful_future_context"):
            args["reason"] = "useful_future_context"
    return args if args != step.args else None


def _after_error(
    step: Step, steps: list[Step], intent: Intent, tools: frozenset[str], lang: Lang
) -> _Decision:
    """Retry a failed call once with corrected arguments, else explain the error."""
    failures = sum(1 for s in steps if s.name == step.name and s.observation and not s.ok)
    fixed = _corrected(step)
    if failures == 1 and fixed is not None and step.name in tools:
        return _Decision(tool=step.name, args=fixed)
    return _Decision(text=describe(step, intent, lang))


def _forget_reason(message: str, lang: Lang) -> str:
    quote = message.strip()[:200]
    return lang.say(
        f'The user explicitly asked to forget it: "{quote}"',
        f"使用者明確要求移除這筆記憶：「{quote}」",
    )


def _after_search(
    step: Step, message: str, intent: Intent, tools: frozenset[str], lang: Lang
) -> _Decision:
    """A forget request goes on to the best match's exact id; recall just answers."""
    memories = [m for m in step.result.get("memories") or [] if isinstance(m, dict)]
    if intent.kind != "forget" or not memories:
        return _Decision(text=describe(step, intent, lang))
    if REQUEST_FORGET_MEMORY not in tools:
        return _Decision(
            text=describe(step, intent, lang) + "\n" + unavailable(REQUEST_FORGET_MEMORY, lang)
        )
    # The retrieval policy returns results best first, so the first id is the best match.
    args = {"memory_id": str(memories[0].get("memory_id", "")), "reason": ""}
    args["reason"] = _forget_reason(message, lang)[: string_limits()["reason"]]
    return _Decision(tool=REQUEST_FORGET_MEMORY, args=args)


def _decide(messages: Sequence[BaseMessage], tools: frozenset[str]) -> _Decision:
    """The next step of this turn, from the latest user message and its tool traffic.

    Args:
        messages: The model input.
        tools: Names of the bound tools; no other tool is ever called.

    Returns:
        One tool call or the final text (without the offline marker).
    """
    message, steps = current_turn(messages)
    lang = Lang.of(message)
    intent = classify(message)
    if not steps:
        return _first_action(intent, tools, lang)
    last = steps[-1]
    done = sum(1 for s in steps if s.observation is not None)
    if last.observation is None:
        # A call without an observation cannot be judged; do not repeat it blindly.
        return _Decision(text=chat_reply(intent, lang))
    if done >= MAX_TOOL_RESULTS:
        limit = lang.say(
            f"I stopped after {done} tool steps in this turn.",
            f"這一輪已經用了 {done} 次工具，先停在這裡。",
        )
        return _Decision(text=f"{limit} {describe(last, intent, lang)}")
    if not last.ok:
        return _after_error(last, steps, intent, tools, lang)
    if last.name == SEARCH_MEMORY:
        return _after_search(last, message, intent, tools, lang)
    return _Decision(text=describe(last, intent, lang))


# --------------------------------------------------------------------------- the model


def _tool_name(tool: Any) -> str:
    """The name of a tool given as an OpenAI schema, a dict, a BaseTool or a callable."""
    if isinstance(tool, dict):
        if isinstance(tool.get("function"), dict):
            return str(tool["function"]["name"])
        if "name" in tool:
            return str(tool["name"])
    if isinstance(tool, BaseTool):
        return tool.name
    return str(convert_to_openai_tool(tool)["function"]["name"])


def _usage(messages: Sequence[BaseMessage], output: BaseMessage) -> UsageMetadata:
    """Approximate token counts (no tokenizer download needed offline)."""
    input_tokens = count_tokens_approximately(messages)
    output_tokens = count_tokens_approximately([output])
    return UsageMetadata(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


def _stream_pieces(text: str) -> list[str]:
    """Cut a reply into word groups whose concatenation is exactly ``text``.

    Chinese has no spaces, so long space-free runs are cut every few characters.
    """
    words = [w for w in re.split(r"(?<=\s)(?=\S)", text) if w]
    pieces = [
        word[i : i + _STREAM_MAX_PIECE]
        for word in words
        for i in range(0, len(word), _STREAM_MAX_PIECE)
    ]
    size = _STREAM_WORDS_PER_CHUNK
    return ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]


class OfflineChatModel(BaseChatModel):
    """A deterministic, rules-based chat model for running Memora with no key and no network.

    Bind the memory tools with :meth:`bind_tools`; it then proposes at most one tool
    call per message and answers, in the user's language, with what the tools
    returned. Every reply starts with :data:`OFFLINE_MARKER`.

    Example:
        >>> from agent.tools import tool_schemas
        >>> model = OfflineChatModel().bind_tools(tool_schemas())
        >>> model.invoke("Remember that I live in Kaohsiung.").tool_calls[0]["name"]
        'remember_memory'
    """

    tool_names: tuple[str, ...] = ()
    """Names of the bound tools; only these are ever called."""

    @property
    def _llm_type(self) -> str:
        return "memora-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"tool_names": list(self.tool_names)}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a copy that knows the tools' names.

        Args:
            tools: OpenAI tool schemas (as from ``agent.tools.tool_schemas()``), dicts
                with a ``name``, BaseTools, pydantic models or functions.
            tool_choice: Accepted for compatibility; the rules decide.
            **kwargs: Accepted for compatibility (e.g. ``parallel_tool_calls=False``,
                which this model always honours).

        Returns:
            A new model bound to those tools.
        """
        names = tuple(_tool_name(tool) for tool in tools)
        return self.model_copy(update={"tool_names": names})

    def _respond(self, messages: list[BaseMessage]) -> AIMessage:
        """Decide and build the next AIMessage (one tool call, or the marked text)."""
        decision = _decide(messages, frozenset(self.tool_names))
        if decision.tool is not None:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
            message = AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": decision.tool,
                        "args": decision.args or {},
                        "id": call_id,
                        "type": "tool_call",
                    }
                ],
            )
        else:
            message = AIMessage(content=f"{OFFLINE_MARKER} {decision.text}")
        message.usage_metadata = _usage(messages, message)
        message.response_metadata = {"model_name": "memora-offline"}
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Answer in one piece."""
        return ChatResult(generations=[ChatGeneration(message=self._respond(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream the text in word groups; a tool call comes as one chunk.

        Usage is attached to the last chunk only, because chunks add up when merged.
        """
        message = self._respond(messages)
        if message.tool_calls:
            call = message.tool_calls[0]
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"], ensure_ascii=False),
                        "id": call["id"],
                        "index": 0,
                        "type": "tool_call_chunk",
                    }
                ],
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                chunk_position="last",
            )
            yield self._emit(chunk, run_manager)
            return
        pieces = _stream_pieces(text_of(message))
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            chunk = AIMessageChunk(
                content=piece,
                usage_metadata=message.usage_metadata if last else None,
                response_metadata=message.response_metadata if last else {},
                chunk_position="last" if last else None,
            )
            yield self._emit(chunk, run_manager)

    @staticmethod
    def _emit(
        chunk: AIMessageChunk, run_manager: CallbackManagerForLLMRun | None
    ) -> ChatGenerationChunk:
        generation = ChatGenerationChunk(message=chunk)
        if run_manager:
            run_manager.on_llm_new_token(text_of(chunk), chunk=generation)
        return generation
