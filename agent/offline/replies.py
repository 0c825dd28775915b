"""Reading the current turn's tool traffic and saying what happened, in the user's language."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)

from agent.messages import text_of
from agent.offline.intents import Intent
from agent.offline.text import Lang
from agent.spotlight import unquote
from agent.tool_schemas import (
    REMEMBER_MEMORY,
    REQUEST_FORGET_MEMORY,
    SEARCH_MEMORY,
    parse_observation,
)
from memora.recall.lexical import tokenize

# --------------------------------------------------------------------------- the turn


@dataclass
class Step:
    """One tool call of the current turn and, once it ran, its observation."""

    name: str
    args: dict[str, Any]
    observation: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return bool(self.observation and self.observation.get("ok") is True)

    @property
    def result(self) -> dict[str, Any]:
        result = (self.observation or {}).get("result")
        return result if isinstance(result, dict) else {}

    @property
    def error(self) -> str:
        return str((self.observation or {}).get("error") or "unknown error")


def current_turn(messages: Sequence[BaseMessage]) -> tuple[str, list[Step]]:
    """The latest user message and the tool traffic after it.

    Earlier turns are ignored on purpose: their tool calls and observations were
    answered already and must not steer this turn.

    Args:
        messages: The whole model input.

    Returns:
        The user's text and this turn's tool steps in order.
    """
    start = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)),
        None,
    )
    if start is None:
        return "", []
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    for message in messages[start + 1 :]:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                step = Step(call["name"], dict(call.get("args") or {}))
                steps.append(step)
                by_id[call.get("id") or ""] = step
        elif isinstance(message, ToolMessage) and message.tool_call_id in by_id:
            by_id[message.tool_call_id].observation = parse_observation(message.content)
    return text_of(messages[start]), steps


# --------------------------------------------------------------------------- replies

_REJECTION_TEXT: dict[str, tuple[str, str]] = {
    "sensitive_data": ("it looks like sensitive data", "它看起來是敏感資料"),
    "instruction_like": (
        "it looks like an instruction rather than a fact about you",
        "它看起來像是指令，而不是關於你的資訊",
    ),
    "user_refused": ("you said not to store it", "你表示不要儲存它"),
    "assistant_generated": (
        "it is not supported by what you said",
        "它不是你在這則訊息中說的內容",
    ),
    "ephemeral": ("it looks like a one-off, temporary request", "它看起來是一次性的暫時要求"),
    "too_vague": ("it is too vague to be useful later", "它太模糊，之後用不上"),
}


def _quote_list(memories: list[dict[str, Any]]) -> str:
    return "\n".join(f'- "{unquote(str(m.get("content", "")))}"' for m in memories)


def _capabilities(lang: Lang) -> str:
    return lang.say(
        "I am Memora's offline rules-based model (no API key configured). I can remember "
        'things ("remember that ..."), recall them ("what do you know about me?", "who is '
        'my favourite composer?") and forget them ("forget that ..."), but I cannot answer '
        "other requests. Set OPENAI_API_KEY or OPENAI_BASE_URL to use a real model.",
        "我是 Memora 的離線規則模型（未設定 API key），只能處理記住（「請記住…」）、"
        "回想（「你記得我…嗎」、「我最喜歡的作曲家是誰？」）與忘記（「不要再記得…」）的請求，"
        "無法回答其他問題。設定 OPENAI_API_KEY 或 OPENAI_BASE_URL 即可使用真正的模型。",
    )


def chat_reply(intent: Intent, lang: Lang) -> str:
    if intent.kind == "ask_remember":
        return lang.say(
            'What should I remember? Say for example "remember that I prefer short answers".',
            "要記住什麼呢？例如：「請記住，我偏好簡短的回答」。",
        )
    if intent.kind == "ask_forget":
        return lang.say(
            'What should I forget? Say for example "forget that I live in Taipei".',
            "要忘記哪一筆記憶呢？例如：「不要再記得我住在台北」。",
        )
    return _capabilities(lang)


def unavailable(tool: str, lang: Lang) -> str:
    return lang.say(
        f"I would use the {tool} tool for this, but it is not available here.",
        f"這需要 {tool} 工具，但目前無法使用。",
    )


_ANSWER_COVERAGE = 0.6
"""Share of a question's terms a memory must contain to be quoted as its answer."""
_MAX_QUOTED = 3


def _answers(memories: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    """The memories that answer a question about ``topic``, best first (at most three).

    A memory answers when it holds most of the topic's terms (stems, and Chinese
    characters and character pairs): "dog's name" is answered by "The user's dog's
    name is Rex", not by a memory about a cat.
    """
    wanted = set(tokenize(topic))
    if not wanted:
        return memories[:_MAX_QUOTED]
    found = []
    for memory in memories:
        terms = set(tokenize(unquote(str(memory.get("content", "")))))
        if len(wanted & terms) >= _ANSWER_COVERAGE * len(wanted):
            found.append(memory)
    return found[:_MAX_QUOTED]


def _describe_recall(memories: list[dict[str, Any]], topic: str, lang: Lang) -> str:
    """Quote what answers the user's question, or say plainly that nothing does."""
    answers = _answers(memories, topic)
    if answers:
        return lang.say("From what you told me:\n", "根據你之前告訴我的：\n") + _quote_list(answers)
    return lang.say(
        f'I found nothing in your memory about "{topic}". The closest memories I have:\n',
        f"我的記憶中沒有關於「{topic}」的內容。最接近的是：\n",
    ) + _quote_list(memories[:_MAX_QUOTED])


def _describe_search(step: Step, intent: Intent, lang: Lang) -> str:
    memories = [m for m in step.result.get("memories") or [] if isinstance(m, dict)]
    query = str(step.args.get("query", ""))
    if memories and intent.kind == "recall" and intent.text:
        return _describe_recall(memories, intent.text, lang)
    if memories:
        return lang.say("Here is what I found in your memory:\n", "我在你的記憶中找到：\n") + (
            _quote_list(memories)
        )
    if intent.kind == "forget":
        return lang.say(
            f'I could not find a memory matching "{query}", so there is nothing to forget.',
            f"我找不到符合「{query}」的記憶，所以沒有需要刪除的內容。",
        )
    return lang.say(
        f'I could not find anything in your memory about "{query}".',
        f"我在你的記憶中找不到關於「{query}」的內容。",
    )


def _describe_remember(step: Step, lang: Lang) -> str:
    content = str(step.args.get("content", ""))
    status = step.result.get("status")
    if status == "accepted_for_commit":
        return lang.say(
            f'OK, I will remember that: "{content}" (it is stored once this turn completes).',
            f"好，我會記住：「{content}」（這一輪對話完成後才會寫入長期記憶）。",
        )
    if status == "rejected":
        reason = str(step.result.get("reason", ""))
        english, chinese = _REJECTION_TEXT.get(reason, (reason, reason))
        return lang.say(
            f"I did not store that, because {english} ({reason}).",
            f"這筆資料沒有被儲存，因為{chinese}（{reason}）。",
        )
    return lang.say(
        f"The memory tool answered: {json.dumps(step.result, ensure_ascii=False)}",
        f"記憶工具回覆：{json.dumps(step.result, ensure_ascii=False)}",
    )


def _describe_forget(step: Step, lang: Lang) -> str:
    if step.result.get("status") == "pending_approval":
        preview = unquote(str(step.result.get("preview", "")))
        return lang.say(
            f'I found this memory: "{preview}". I asked to delete it, but confirmation is '
            "still required: nothing is deleted until you approve.",
            f"我找到這筆記憶：「{preview}」，刪除前需要你的確認；在你同意之前不會刪除。",
        )
    return lang.say(
        f"The forget request answered: {json.dumps(step.result, ensure_ascii=False)}",
        f"刪除請求回覆：{json.dumps(step.result, ensure_ascii=False)}",
    )


def describe(step: Step, intent: Intent, lang: Lang) -> str:
    """What one finished tool step means for the user, in their language."""
    if not step.ok:
        return lang.say(
            f"The {step.name} tool reported an error: {step.error}",
            f"工具 {step.name} 回報錯誤：{step.error}",
        )
    if step.name == SEARCH_MEMORY:
        return _describe_search(step, intent, lang)
    if step.name == REMEMBER_MEMORY:
        return _describe_remember(step, lang)
    if step.name == REQUEST_FORGET_MEMORY:
        return _describe_forget(step, lang)
    return lang.say(
        f"The {step.name} tool returned: {json.dumps(step.result, ensure_ascii=False)}",
        f"工具 {step.name} 回傳：{json.dumps(step.result, ensure_ascii=False)}",
    )
