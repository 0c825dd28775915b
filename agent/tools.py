"""The agent's whole action space: tool schemas, handlers and the allowlist dispatcher.

The model chooses a tool and its arguments; everything else happens here:
arguments are validated (pydantic), the memory policy runs, data is scoped to
the user, and anything that changes the store becomes a *pending action* the
graph commits or sends to approval only after a final answer. Chroma's add,
update and delete are never reachable from a tool.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from agent.pending_actions import ForgetAction, PendingAction, RememberAction
from agent.spotlight import DataFrame
from agent.tool_schemas import (
    COUNT_ENGLISH_WORDS,
    REMEMBER_MEMORY,
    REQUEST_FORGET_MEMORY,
    SEARCH_MEMORY,
    CountEnglishWordsArgs,
    RememberMemoryArgs,
    RequestForgetMemoryArgs,
    SearchMemoryArgs,
    ToolArgs,
    failed_observation,
    ok_observation,
)
from memora.api import Memora
from memora.embeddings import estimate_tokens
from memora.limits import (
    MAX_RESULT_CONTENT_CHARS,
    MAX_RESULT_TOTAL_CHARS,
    MAX_TOOL_ARGUMENTS_CHARS,
)
from memora.models import MemoryCandidate, MemoryType
from memora.validation import InvalidInput
from memora.write.policy import apply_memory_policy


class ToolInputError(InvalidInput):
    """Arguments the model can correct; becomes an ``ok: false`` observation."""


@dataclass
class ToolHandlerResult:
    """What a handler returns; only ``data`` reaches the model."""

    data: dict[str, Any]
    token_usage: int = 0
    used_memory_ids: list[str] = field(default_factory=list)
    pending_actions: list[PendingAction] = field(default_factory=list)


@dataclass
class ToolContext:
    """What the application knows and the model does not."""

    memora: Memora
    user_id: str
    thread_id: str | None
    user_message: str
    """The current user message; remember candidates carry it to the policy gate."""
    now: datetime
    retrieval_limit: int | None = None
    """This run's cap on search results (the retrieval policy's cap still applies)."""
    retrieval_min_score: float | None = None
    """This run's relevance threshold (never below the retrieval policy's)."""
    frame: DataFrame = field(default_factory=DataFrame.new)
    """The frame stored text is quoted in for the model (one per turn)."""


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def search_memory(args: SearchMemoryArgs, ctx: ToolContext) -> ToolHandlerResult:
    """Read-only recall with the retrieval policy's limit and threshold.

    Args:
        args: The validated query.
        ctx: The user and clock.

    Returns:
        The memories found, each content quoted in the turn's data frame and cut to
        the result limits; their ids count as used if the turn ends with an answer.
    """
    hits = ctx.memora.search(
        ctx.user_id,
        args.query,
        limit=ctx.retrieval_limit,
        min_score=ctx.retrieval_min_score,
        thread_id=ctx.thread_id,
        now=ctx.now,
    )
    memories = []
    room = MAX_RESULT_TOTAL_CHARS
    for hit in hits:
        content = ctx.frame.quote_within(_clip(hit.memory.content, MAX_RESULT_CONTENT_CHARS), room)
        if not content:
            break
        room -= len(content)
        memories.append(
            {
                "memory_id": hit.memory.id,
                "content": content,
                "memory_type": hit.memory.memory_type.value,
                "importance_score": hit.memory.importance,
                "semantic_similarity": round(hit.semantic_similarity, 4),
            }
        )
    hits = hits[: len(memories)]
    return ToolHandlerResult(
        data={"count": len(memories), "memories": memories},
        token_usage=estimate_tokens([args.query]),
        used_memory_ids=[hit.memory.id for hit in hits],
    )


def remember_memory(args: RememberMemoryArgs, ctx: ToolContext) -> ToolHandlerResult:
    """Run the memory policy now; commit later, only after a final answer.

    Args:
        args: The proposed memory.
        ctx: Supplies the user's message, which the policy needs.

    Returns:
        ``accepted_for_commit`` with a pending action, or ``rejected`` with the reason.
    """
    candidate = MemoryCandidate(
        content=args.content,
        memory_type=MemoryType(args.memory_type),
        user_message=ctx.user_message,
        said_at=ctx.now,
        reason=args.reason,
        thread_id=ctx.thread_id,
    )
    accepted, rejected = apply_memory_policy([candidate], ctx.memora.classifier, ctx.memora.judge)
    if not accepted:
        return ToolHandlerResult(data={"status": "rejected", "reason": rejected[0].reason.value})
    return ToolHandlerResult(
        data={"status": "accepted_for_commit", "memory_type": args.memory_type},
        pending_actions=[RememberAction(candidate=candidate)],
    )


def request_forget_memory(args: RequestForgetMemoryArgs, ctx: ToolContext) -> ToolHandlerResult:
    """Check the id belongs to this user and return a read-only preview; nothing is deleted.

    Args:
        args: The memory id and the reason.
        ctx: The user the id must belong to.

    Returns:
        ``pending_approval`` with the preview (quoted in the turn's data frame) and a
        pending forget action (holding the plain preview a person confirms).

    Raises:
        ToolInputError: The id is unknown or another user's (indistinguishable).
    """
    preview = ctx.memora.preview(ctx.user_id, args.memory_id)
    if preview is None:
        raise ToolInputError("memory not found; search first and use the exact memory_id")
    return ToolHandlerResult(
        data={
            "status": "pending_approval",
            "memory_id": args.memory_id,
            "preview": ctx.frame.quote(preview),
        },
        pending_actions=[
            ForgetAction(
                memory_id=args.memory_id,
                preview=preview,
                reason=args.reason,
                deletes=[
                    {"memory_id": unit.id, "content": unit.content}
                    for unit in ctx.memora.chain(ctx.user_id, args.memory_id)
                ],
            )
        ],
    )


_ENGLISH_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
COUNTING_RULE = "runs of Latin letters; internal apostrophes and hyphens join one word"


def count_english_words(args: CountEnglishWordsArgs, ctx: ToolContext) -> ToolHandlerResult:
    """The seed's example of a tool that has nothing to do with memory.

    Args:
        args: The text.
        ctx: Unused.

    Returns:
        The word count and the rule used.
    """
    count = len(_ENGLISH_WORD.findall(args.text))
    return ToolHandlerResult(data={"word_count": count, "counting_rule": COUNTING_RULE})


@dataclass(frozen=True)
class ToolSpec:
    """One allowlisted tool: its argument model and its handler."""

    args: type[ToolArgs]
    handler: Callable[[Any, ToolContext], ToolHandlerResult]


TOOL_HANDLERS: dict[str, ToolSpec] = {
    SEARCH_MEMORY: ToolSpec(SearchMemoryArgs, search_memory),
    REMEMBER_MEMORY: ToolSpec(RememberMemoryArgs, remember_memory),
    REQUEST_FORGET_MEMORY: ToolSpec(RequestForgetMemoryArgs, request_forget_memory),
    COUNT_ENGLISH_WORDS: ToolSpec(CountEnglishWordsArgs, count_english_words),
}


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI function schemas of the allowlisted tools, for ``bind_tools`` (a fresh copy)."""
    return copy.deepcopy(_tool_schemas())


@functools.cache
def _tool_schemas() -> list[dict[str, Any]]:
    # Building them costs about 3 ms, once per model call otherwise.
    from langchain_core.utils.function_calling import convert_to_openai_tool

    schemas = []
    for name, spec in TOOL_HANDLERS.items():
        schema = convert_to_openai_tool(spec.args)
        schema["function"]["name"] = name
        schema["function"]["description"] = " ".join((spec.args.__doc__ or "").split())
        schema["function"]["parameters"]["additionalProperties"] = False
        schemas.append(schema)
    return schemas


@dataclass
class DispatchResult:
    """The observation for the model and what stays with the application."""

    observation: str
    ok: bool
    result: ToolHandlerResult | None = None


_MAX_LOCATION_CHARS = 80
"""Longest argument name quoted back to the model (an invented key can be any length)."""


def _describe_validation(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = (".".join(str(p) for p in item["loc"]) or "arguments")[:_MAX_LOCATION_CHARS]
        parts.append(f"{where}: {item['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def dispatch(name: str, raw_arguments: Any, ctx: ToolContext) -> DispatchResult:
    """Run one tool call through the allowlist.

    Argument problems (bad JSON, oversized or not valid UTF-8 text, wrong types,
    missing or unknown keys, failed validation, an unknown tool) give an
    ``ok: false`` observation the model can correct. Any other exception
    propagates: the graph stops with ``tool_error``.
    """
    spec = TOOL_HANDLERS.get(name)
    if spec is None:
        error = f"unknown tool {name!r}; allowed: {', '.join(TOOL_HANDLERS)}"
        return DispatchResult(failed_observation(error), ok=False)
    arguments = raw_arguments
    if isinstance(arguments, str):
        if len(arguments) > MAX_TOOL_ARGUMENTS_CHARS:
            message = f"arguments are longer than {MAX_TOOL_ARGUMENTS_CHARS} characters"
            return DispatchResult(failed_observation(message), ok=False)
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as error:
            message = f"arguments are not valid JSON: {error.msg}"
            return DispatchResult(failed_observation(message), ok=False)
        except ValueError:  # Python refuses integers of more than 4300 digits
            message = "arguments hold a number too long to read"
            return DispatchResult(failed_observation(message), ok=False)
        except RecursionError:
            message = "arguments are nested too deeply"
            return DispatchResult(failed_observation(message), ok=False)
    if not isinstance(arguments, dict):
        message = "arguments must be a JSON object"
        return DispatchResult(failed_observation(message), ok=False)
    try:
        args = spec.args.model_validate(arguments)
        result = spec.handler(args, ctx)
    except ValidationError as error:
        message = _describe_validation(error)
        return DispatchResult(failed_observation(message), ok=False)
    except InvalidInput as error:
        return DispatchResult(failed_observation(str(error)), ok=False)
    return DispatchResult(ok_observation(result.data), ok=True, result=result)
