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

Memories come back quoted in a data frame (``memora.spotlight``); the replies unquote them.
Some rules are kept as data in ``offline_model_rules.toml``, each with its examples.
Anything else gets a plain answer saying what this model can and cannot do. Like a
real model, it only *proposes* tool calls: the application validates them, applies
the memory policy and asks for approval. Every reply carries :data:`OFFLINE_MARKER`
so a user can always tell no real language model answered.
"""

from __future__ import annotations

import json
import re
import tomllib
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from memora.lexical import HAN_CHARS, tokenize
from memora.limits import MAX_MEMORY_CHARS, MAX_MEMORY_ID_CHARS, MAX_QUERY_CHARS, MAX_REASON_CHARS
from memora.spotlight import unquote

RULES_FILE = "offline_model_rules.toml"
"""The rules kept as data, beside this module, each with the examples it must (not) match."""

OFFLINE_MARKER = "[offline model]"
"""Prefix of every reply, in every language: the user must see no real LLM answered."""

MAX_TOOL_RESULTS = 4
"""After this many tool results in one turn, answer instead of calling another tool."""

SEARCH = "search_memory"
REMEMBER = "remember_memory"
FORGET = "request_forget_memory"

# The tools' argument limits, only used to correct arguments after an error.
_STRING_LIMITS: dict[str, int] = {
    "content": MAX_MEMORY_CHARS,
    "query": MAX_QUERY_CHARS,
    "reason": MAX_REASON_CHARS,
    "memory_id": MAX_MEMORY_ID_CHARS,
}
_ALLOWED_ARGS: dict[str, frozenset[str]] = {
    SEARCH: frozenset({"query"}),
    REMEMBER: frozenset({"content", "memory_type", "reason"}),
    FORGET: frozenset({"memory_id", "reason"}),
}

_STREAM_WORDS_PER_CHUNK = 3
_STREAM_MAX_PIECE = 8


# --------------------------------------------------------------------------- text helpers

_CJK_RE = re.compile(f"[{HAN_CHARS}]")
_PUNCT = " \t\r\n,，.。:：;；!！?？、~～…\"'“”「」『』"


@cache
def _t2s() -> Any:
    """The OpenCC Traditional-to-Simplified converter, created once on first use."""
    import opencc

    return opencc.OpenCC("t2s")


def _normalise(text: str) -> str:
    """Simplified Chinese, lower case, straight apostrophes: the form rules match on."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    if _CJK_RE.search(text):
        text = _t2s().convert(text)
    return text.lower()


@dataclass(frozen=True)
class _Text:
    """The user's words and their normalised form, kept character-aligned.

    Rules match on ``norm`` (one script, lower case), but what the model passes to a
    tool must be the user's own words (Traditional stays Traditional), so every cut
    is applied to both strings at the same positions.
    """

    original: str
    norm: str

    @classmethod
    def of(cls, text: str) -> _Text:
        """Pair ``text`` with its normalised form.

        Args:
            text: The user's words.

        Returns:
            The pair; if normalising changed the length, alignment is impossible and
            both sides hold the normalised text.
        """
        norm = _normalise(text)
        if len(norm) != len(text):
            return cls(norm, norm)
        return cls(text, norm)

    def slice(self, start: int, end: int | None = None) -> _Text:
        """Both strings cut to ``[start:end]``."""
        return _Text(self.original[start:end], self.norm[start:end])

    def cut(self, pattern: re.Pattern[str]) -> _Text:
        """Remove every match of ``pattern`` (found in ``norm``) from both strings."""
        original, norm, last = [], [], 0
        for match in pattern.finditer(self.norm):
            original.append(self.original[last : match.start()])
            norm.append(self.norm[last : match.start()])
            last = match.end()
        original.append(self.original[last:])
        norm.append(self.norm[last:])
        return _Text("".join(original), "".join(norm))

    def strip(self) -> _Text:
        """Trim spaces and punctuation at both ends."""
        stripped = self.norm.lstrip(_PUNCT)
        start = len(self.norm) - len(stripped)
        end = start + len(stripped.rstrip(_PUNCT))
        return self.slice(start, end)

    def squeeze(self) -> _Text:
        """Collapse runs of spaces left behind by cuts, then strip."""
        return self.cut(re.compile(r"(?<= ) +")).strip()


def _sentences(text: _Text) -> list[_Text]:
    """Split into sentences; a dot counts only before a space so "Node.js" survives."""
    pattern = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？\n]|$)", re.S)
    return [
        text.slice(m.start(), m.end())
        for m in pattern.finditer(text.norm)
        if m.group().strip(_PUNCT)
    ]


# --------------------------------------------------------------------------- language


@dataclass(frozen=True)
class _Lang:
    """The language to answer in: the language of the user's latest message."""

    chinese: bool
    traditional: bool = True

    @classmethod
    def of(cls, text: str) -> _Lang:
        """Guess the reply language.

        Chinese wins when it has at least as many CJK characters as Latin words
        ("請解釋 present perfect。" is a Chinese question about English). Text that
        reads the same in both scripts is answered in Traditional, the spec's script.

        Args:
            text: The user's message.

        Returns:
            The language to reply in.
        """
        cjk = len(_CJK_RE.findall(text))
        words = len(re.findall(r"[A-Za-z]+", text))
        if not cjk or cjk < words:
            return cls(chinese=False)
        # Traditional if converting to Simplified changes it; Simplified if converting to
        # Traditional does; text that reads the same in both is answered in Traditional.
        simplified = _t2s().convert(text) == text and _s2t().convert(text) != text
        return cls(chinese=True, traditional=not simplified)

    def say(self, english: str, chinese: str) -> str:
        """Pick the text for this language; ``chinese`` is written in Traditional."""
        if not self.chinese:
            return english
        return chinese if self.traditional else _t2s().convert(chinese)


@cache
def _s2t() -> Any:
    """The OpenCC Simplified-to-Traditional converter, created once on first use."""
    import opencc

    return opencc.OpenCC("s2t")


# --------------------------------------------------------------------------- intents

IntentKind = Literal["remember", "recall", "forget", "chat", "ask_remember", "ask_forget"]


@dataclass(frozen=True)
class _Intent:
    """What the user's latest message asks for, with the words the tools need."""

    kind: IntentKind
    text: str = ""
    """The memory content (remember) or the search query (recall, forget)."""
    reason: str = "explicit_request"
    memory_type: str = "semantic"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.S)


# "Don't forget that ..." is a request to remember, so it is checked before "forget".
_KEEP_RE = _rx(
    r"(?<![a-z])(?:please\s+)?(?:don't|do\s+not|never)\s+forget(?:\s+(?:that|this|about))?"
    r"\s*[:,]?|(?:请|麻烦你?)?(?:不要|别|千万别|不可以)忘(?:记|了|掉)?(?:了)?[:：,，]?"
)
_REMEMBER_RE = _rx(
    r"(?<![a-z])(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?"
    r"(?:(?:i\s+want|i'd\s+like)\s+you\s+to\s+)?"
    # "I remember ..." / "I don't remember ..." are statements, not requests.
    r"(?<!\bi\s)(?<!\bstill\s)(?<!n't\s)(?<!\bnot\s)(?<!\bnever\s)"
    r"(?:remember|memori[sz]e|note\s+down|make\s+a\s+note(?:\s+of)?|keep\s+in\s+mind"
    r"|take\s+note)"
    r"(?:\s+(?:that|this|the\s+fact\s+that))?(?![a-z])\s*(?:for\s+me)?\s*[:,]?"
    r"|(?:请你?|麻烦你?|可以|你要|帮我|帮忙)*(?<!^我)(?<![^帮]我)(?:记住|记得|记下来|记下|记一下|牢记)"
    r"(?:这件事|这一点|这点|这个|一下)?[:：,，]?"
)
_FORGET_RE = _rx(
    r"(?<![a-z])(?<!\bi\s)(?<!\bi'll\s)(?<!\bdid\syou\s)(?<!\bdon't\s)(?:please\s+)?"
    r"(?:forget|unremember)(?![a-z])(?:\s+(?:about|that|the\s+fact\s+that"
    r"|what\s+i\s+(?:said|told\s+you|mentioned)(?:\s+about)?))*"
    r"|(?<![a-z])(?<!\bi\s)(?:please\s+)?(?:don't|do\s+not|stop|no\s+longer)\s+"
    r"(?:remember(?:ing)?|keep(?:ing)?|stor(?:e|ing)|sav(?:e|ing))(?![a-z])"
    r"(?:\s+(?:that|this|the\s+fact\s+that))?"
    r"|(?<![a-z])(?:please\s+)?(?:delete|remove|erase|wipe|clear)(?![a-z])"
    r"(?:\s+(?:the|my|your|any|that|this))?(?:\s+(?:memory|memories|note|record))?"
    r"(?:\s+(?:about|of|that|on|saying))?"
    r"|(?:请你?|麻烦你?|帮我|可以)*(?:不要|别|不用|不必|无须|请勿)再?(?:记得|记住|记着|保留|存)"
    r"|(?:^|[,，。!！\s]|请|帮我|麻烦你?|可以|就)(?:忘记|忘掉|忘了)"
    r"|(?:请|帮我|麻烦你?)?(?:删除|删掉|移除|清除|抹除)(?:掉)?"
)
_FORGET_DELETE_NEEDS_RE = _rx(
    r"记忆|记录|资料|(?<![a-z])(?:memory|memories|records?|that|fact|what\s+i\s+said)(?![a-z])"
)
_FORGET_TOPIC_NOISE = _rx(
    r"(?<![a-z])(?:from\s+(?:your\s+)?memory|please|thanks?(?:\s+you)?|forever|anymore"
    r"|any\s+more)(?![a-z])|(?:关于|有关)|(?:的|这笔|那笔|这条|那条|这段)?(?:记忆|记录|资料)"
    r"|这件事|吧|谢谢|(?<![a-z])(?:it|this|that|everything)(?![a-z])"
)
_RECALL_RE = _rx(
    r"(?<![a-z])(?:tell\s+me\s+)?what\s+(?:do\s+)?you\s+(?:know|remember|recall)"
    r"(?:\s+(?:about|of|on))?"
    r"|(?<![a-z])(?:do|did)\s+you\s+(?:still\s+)?(?:remember|recall)(?:\s+(?:that|what|if))?"
    r"|(?<![a-z])(?:can|could)\s+you\s+recall"
    r"|(?<![a-z])do\s+you\s+know\s+(?=my\b|where\s+i|what\s+i|when\s+i|who\s+i|how\s+i|if\s+i)"
    r"|(?<![a-z])(?:based\s+on|according\s+to|given|from)\s+what\s+i(?:'ve)?\s+"
    r"(?:told\s+you|said|mentioned|shared)(?:\s+(?:before|earlier|previously|about))*"
    r"|(?<![a-z])(?:as|like)\s+i\s+(?:told\s+you|said|mentioned)(?:\s+(?:before|earlier))?"
    r"|(?<![a-z])what\s+(?:have|did)\s+i\s+(?:told|tell|said|say|mention(?:ed)?)"
    r"(?:\s+you)?(?:\s+(?:about|before|earlier))*"
    r"|(?<![a-z])remind\s+me\s+(?:of|about|what)"
    r"|(?<![a-z])(?:that|which)\s+i(?:'ve|\s+have)?\s+(?:given|told|shared\s+with|mentioned\s+to)"
    r"\s+you(?![a-z])"
    r"|^(?:what(?:'s|\s+is|\s+are|\s+was)|where\s+do|who\s+is)\s+(?=my\b|i\s)"
    r"|你(?:还|是否|有没有)?记(?:得|住)(?:了)?(?=.*(?:吗|么|嘛|没有|[?？]))"
    r"|你(?:还)?记不记得"
    r"|(?:依照|根据|按照|基于|依据|参考)?我(?:以前|之前|过去|上次|曾经|先前|早先)"
    r"(?:有)?(?:提过|说过|讲过|告诉过你|提到过?|分享过)的?"
    r"|你(?:知道|了解)(?:关于)?我"
    r"|关于我你(?:知道|记得)(?:些)?什么"
)
_SAID_RE = _rx(
    r"(?<![a-z])(?:did|have|had)\s+i\s+(?:ever\s+)?(?:say|said|tell|told|mention(?:ed)?"
    r"|share(?:d)?)(?:\s+(?:to|with)?\s*you)?(?:\s+(?:that|before|earlier))*(?![a-z])"
)
"""How a question points at something the user said before ("what exam did I say ...")."""
_FIRST_PERSON_RE = _rx(r"(?<![a-z])(?:i|i'm|i've|i'd|my|me|mine|myself)(?![a-z])|我(?!们)")
_QUERY_NOISE = _rx(
    r"(?<![a-z])(?:what's|who's|where's|when's|my|me|i|i'm|mine|myself|what|where|when|which"
    r"|who|how|is|are|am|was|were|do|does|did|please|again|still|about|the|a|an)(?![a-z])"
    r"|(?<![a-z])(?:for|to|in|at|on|with)(?=\s*[?.!]*\s*$)"
    r"|什么时候|何时|几时|什么|哪里|哪儿|哪些|哪个|哪|怎么样|怎么|如何|为什么|是不是|是谁|谁"
    r"|以前|之前|过去|曾经|(?:吗|呢|嘛|么)(?=\s*[?？]?\s*$)|^我的|^我"
)
_CLAUSE_RE = _rx(r"[,，;；]")

_LEAD = (
    r"^(?:(?:also|btw|by\s+the\s+way|fyi|actually|oh|and|so|well|hi|hello|hey|ok|okay)"
    r"[,\s]+)*"
)
_ROLE_NOUN = r"[a-z]+(?:er|or|ist|ian|ant|ent|eur)"
_KIN = r"(?:dog|cat|pet|son|daughter|kid|child|children|brother|sister|wife|husband|partner)s?"
_NOT_SUBJECTS = (
    r"(?!(?:this|that|it|there|here|which|what|who|he|she|they|these|those|you|we|nothing"
    r"|everything|something|anything|where|how|why|when|one|today|tomorrow|yesterday"
    r"|tonight|now)(?![\w'-]))"
)
"""Words that open "X is my Y" without naming a value of the user's ("Today is my birthday")."""
_FINITE = r"(?:is|are|was|were|has|have|had|changed|became|remains|stays)(?![a-z])"
"""Verbs that state what something of the user's is; modals ("would be") state nothing yet."""
_EN_STATEMENT_RE = _rx(
    _LEAD + r"(?:"
    r"i(?:'d|\s+would)?\s+(?:\w+ly\s+)?(?:prefer|like|love|enjoy|hate|dislike|adore)(?![a-z])"
    r"|i\s+(?:don't|do\s+not)\s+(?:like|enjoy|eat|drink|use)(?![a-z])"
    r"|my\s+(?!question|problem|point|issue|answer|guess|bad|apologies|pleasure)"
    r"(?:[\w'-]+\s+){0,3}?"
    + _FINITE
    + r"|the\s+[\w'-]+(?:\s+[\w'-]+){0,2}\s+of\s+my\s+(?:[\w'-]+\s+){0,3}?(?:is|are|was)(?![a-z])"
    r"|" + _NOT_SUBJECTS + r"[\w'-]+(?:\s+[\w'-]+){0,3}\s+(?:is|are|was)\s+my\s+[\w'-]+"
    r"|i\s+(?:\w+ly\s+)?(?:live|lived|grew\s+up|was\s+born|work|study|teach|use|speak|own|code"
    r"|write|develop)(?![a-z])"
    r"|i\s+have\s+(?:a|an|one|two|three|\d+)\s+" + _KIN + r"(?![a-z])"
    r"|i(?:'m|\s+am)\s+(?:currently\s+|now\s+|also\s+|still\s+)?(?:working\s+on|building"
    r"|developing|writing|learning|studying|preparing\s+for|planning\s+to|based\s+in|from"
    r"|living\s+in|allergic\s+to|vegetarian|vegan|married|retired)(?![a-z])"
    r"|i(?:'m|\s+am)\s+(?:an?\s+)?(?:[\w-]+\s+)?" + _ROLE_NOUN + r"(?![a-z])"
    r"|i\s+(?:plan|intend|aim|hope)\s+to(?![a-z])"
    r"|i\s+(?:always|usually|never|often|mostly|normally|generally)\s+[a-z]+"
    r")"
)
_ZH_STATEMENT_RE = _rx(
    r"^(?:另外|还有|对了|顺便说一下|顺便|嗨|你好|哈啰|其实)?[,，\s]*"
    r"(?:我(?:平时|平常|通常|一般|比较|最|很|非常|也|还|都|一直|现在|目前|最近|真的)*"
    r"(?:喜欢|喜爱|爱|讨厌|不喜欢|偏好|偏爱|习惯|住在|住|来自|在[^，,。]{1,10}(?:工作|上班|上学|读书)"
    r"|是(?!说|不是)|叫|正在|在(?:开发|做|写|学|准备|研究)|预计|计划|打算"
    r"|想要?(?:学|考|成为|准备)|准备|学习|会说|对[^，,。]{1,10}过敏|吃素|用|使用|养了?"
    r"|有(?:一只|一个|两个|两只|个|只)|的目标是|目标是)"
    r"|我的(?!问题|意思)[^，,。？?]{1,12}?(?:是|为|大概是|大约是))"
)
_EN_QUESTION_RE = _rx(
    r"\?\s*$|^(?:what|where|when|why|how|who|which|do|does|did|can|could|would|should|is|are"
    r"|am|will|have|has)(?![a-z])"
)
_ZH_QUESTION_RE = _rx(
    r"[?？]|(?:吗|呢|嘛)\s*[。.]?\s*$|什么|哪|怎么|为什么|如何|是不是|能不能|可不可以|有没有"
)
_PAST_TIME_RE = _rx(
    r"(?<![a-z])(?:yesterday|today|last\s+(?:night|week|weekend|month|year|monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday)|\d+\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|on\s+\d{1,2}(?:st|nd|rd|th)?\s+[a-z]+|on\s+[a-z]+\s+\d{1,2}(?:st|nd|rd|th)?)(?![a-z])"
    r"|昨天|前天|今天|上周|上星期|上礼拜|上个月|去年|前年|\d+月\d+[日号]"
)
_PAST_VERB_RE = _rx(
    r"(?<![a-z])(?:[a-z]+ed|went|took|got|passed|met|had|was|were|did|won|lost|bought|saw"
    r"|began|left|came|made|gave|ran|wrote|flew|sold|moved)(?![a-z])|了|过"
)
_CLEAN_LEAD_RE = _rx(r"^(?:ok(?:ay)?|hi|hey|hello|好的?|嗨|哈啰|对了)[,，\s!！]*")


# --------------------------------------------------------------------------- rules as data


@cache
def _rule(name: str) -> re.Pattern[str]:
    """One rule of ``offline_model_rules.toml``: its patterns joined into one regex."""
    with resources.files("memora").joinpath(RULES_FILE).open("rb") as handle:
        rule = tomllib.load(handle)[name]
    return _rx("|".join(f"(?:{pattern})" for pattern in rule["patterns"]))


_CAPITALISED_RE = re.compile(r"(?<![\w'-])[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}")
_PRONOUNS = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine"})


def _stated_name(sentence: _Text) -> str | None:
    """The name a sentence gives the user (rule ``naming``), or None.

    The name is the first capitalised run that does not open the sentence, or the
    opening word itself when "is" follows it ("Abigail is my name").
    """
    text = sentence.strip()
    if lead := re.match(_LEAD, text.norm):
        text = text.slice(lead.end())
    if not _rule("naming").search(text.norm):
        return None
    for match in _CAPITALISED_RE.finditer(text.original):
        words = match.group().split()
        if match.start() == 0 and not re.match(r"\s+is(?![\w'-])", text.original[match.end() :]):
            words = words[1:]  # capitalised because it opens the sentence
        words = [word for word in words if word.lower() not in _PRONOUNS]
        if words:
            return " ".join(words)
    return None


_INVERTED_RE = _rx(
    r"^" + _NOT_SUBJECTS + r"(?P<value>[\w'-]+(?:\s+[\w'-]+){0,3})\s+(?P<verb>is|are)\s+"
    r"(?P<slot>my\s+[\w'-]+(?:\s+[\w'-]+){0,3})\s*[.!]*\s*$"
)
"""An inverted copula, "Bach is my favourite composer": said again as "my ... is Bach"."""


def _statement_form(sentence: _Text) -> _Text:
    """One fact, one phrasing, so a later value reconciles as an update of the earlier one.

    A sentence naming the user becomes "My name is NAME."; an inverted copula ("Bach
    is my favourite composer") is turned around ("my favourite composer is Bach");
    any other sentence stays as it is.
    """
    if name := _stated_name(sentence):
        return _Text.of(f"My name is {name}.")
    text = sentence.strip()
    if lead := re.match(_LEAD, text.norm):
        text = text.slice(lead.end())
    if match := _INVERTED_RE.match(text.norm):
        part = {g: text.slice(*match.span(g)).original for g in ("value", "verb", "slot")}
        return _Text.of(f"{part['slot']} {part['verb']} {part['value']}.")
    return sentence


def _first_match(text: _Text, pattern: re.Pattern[str]) -> re.Match[str] | None:
    return pattern.search(text.norm)


def _without(text: _Text, match: re.Match[str]) -> _Text:
    """The text with one match removed, joining what was before and after it."""
    before, after = text.slice(0, match.start()), text.slice(match.end())
    joined = _Text(before.original + " " + after.original, before.norm + " " + after.norm)
    return joined.cut(_CLEAN_LEAD_RE).squeeze()


def _is_question(sentence: _Text) -> bool:
    norm = sentence.norm.strip()
    return bool(_EN_QUESTION_RE.search(norm) or _ZH_QUESTION_RE.search(norm))


def _memory_type(content: _Text) -> str:
    """``episodic`` for a dated past event, else ``semantic`` (facts, plans, preferences)."""
    if _PAST_TIME_RE.search(content.norm) and _PAST_VERB_RE.search(content.norm):
        return "episodic"
    return "semantic"


def _remember_intent(content: _Text, reason: str) -> _Intent:
    if not content.norm.strip(_PUNCT):
        return _Intent("ask_remember")
    return _Intent(
        "remember",
        text=_as_memory(content.original),
        reason=reason,
        memory_type=_memory_type(content),
    )


def _topic_query(rest: _Text, noise: re.Pattern[str]) -> str:
    """The first clause of ``rest`` that still has words once request phrasing is cut."""
    for clause in _split_clauses(rest):
        cleaned = clause.strip().cut(noise).squeeze()
        if cleaned.norm.strip(_PUNCT):
            return cleaned.original[: _STRING_LIMITS["query"]]
    return ""


def _split_clauses(text: _Text) -> list[_Text]:
    bounds = [0, *(m.end() for m in _CLAUSE_RE.finditer(text.norm)), len(text.norm)]
    return [text.slice(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _classify(message: str) -> _Intent:
    """Decide what the user's latest message asks for.

    Order matters: "don't forget" is a remember request, "do you remember" a recall
    request, and a forget request contains "remember" in "don't remember".

    Args:
        message: The text of the latest user message.

    Returns:
        The intent with the content or query the tools need.
    """
    text = _Text.of(message.strip())
    if match := _first_match(text, _KEEP_RE):
        return _remember_intent(_without(text, match), "explicit_request")
    if (match := _first_match(text, _FORGET_RE)) and _is_forget(text, match):
        query = _topic_query(_without(text, match), _FORGET_TOPIC_NOISE)
        query = _topic_query(_Text.of(query), _QUERY_NOISE) or query
        return _Intent("forget", text=query) if query else _Intent("ask_forget")
    if match := _first_match(text, _RECALL_RE):
        return _Intent("recall", text=_topic_query(_without(text, match), _QUERY_NOISE))
    if match := _first_match(text, _REMEMBER_RE):
        return _remember_intent(_without(text, match), "explicit_request")
    if question := _first_person_question(text):
        topic = _topic_query(question.cut(_SAID_RE), _QUERY_NOISE)
        return _Intent("recall", text=topic)
    plain = (_statement_form(s) for s in _sentences(text) if not _is_question(s))
    statements = [s for s in plain if _is_statement(s)]
    if statements:
        content = " ".join(s.original.strip() for s in statements)
        return _remember_intent(_Text.of(content), "useful_future_context")
    return _Intent("chat")


def _first_person_question(text: _Text) -> _Text | None:
    """The first question about the user's own facts ("who is my favourite composer?").

    A question that mentions the user and does not ask for help or advice (rule
    ``help_request``: "how do I ...", "can you help me ...") can only be answered from
    what the user said before, so it is answered from memory.
    """
    for sentence in _sentences(text):
        norm = sentence.norm.strip()
        if (
            _is_question(sentence)
            and _FIRST_PERSON_RE.search(norm)
            and not _rule("help_request").search(norm)
        ):
            return sentence
    return None


def _is_forget(text: _Text, match: re.Match[str]) -> bool:
    """Delete words only mean "forget" when they are about memory, not e.g. a file."""
    word = match.group()
    if re.search(r"delete|remove|erase|wipe|clear|删|移除|清除|抹除", word):
        return bool(_FORGET_DELETE_NEEDS_RE.search(text.norm[match.start() :]))
    return True


def _is_statement(sentence: _Text) -> bool:
    norm = sentence.norm.strip()
    if _is_question(sentence):
        return False
    return bool(_EN_STATEMENT_RE.search(norm) or _ZH_STATEMENT_RE.search(norm))


# --------------------------------------------------------------------------- first person

_EN_MODALS = frozenset(
    {"can", "could", "will", "would", "should", "shall", "may", "might", "must", "was", "did"}
    | {"had", "used"}
)
_EN_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is"}
_EN_SUBJECT_RE = re.compile(
    r"^(?P<lead>\W*)(?:(?P<my>my)\s+|(?P<iam>i'm|i\s+am)(?![a-z])|(?P<ive>i've)(?![a-z])"
    r"|(?P<ill>i'll)(?![a-z])|(?P<id>i'd)(?![a-z])"
    r"|(?P<neg>i\s+(?:don't|do\s+not))(?![a-z])"
    r"|i\s+(?P<adv>\w+ly\s+|always\s+|never\s+|often\s+|also\s+|still\s+)?(?P<verb>[a-z]+))",
    re.IGNORECASE,
)
_EN_OBJECT_WORDS = [
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "they are"),
    (re.compile(r"\bI was\b", re.IGNORECASE), "they were"),
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bme\b", re.IGNORECASE), "them"),
    (re.compile(r"\bI\b"), "they"),
]


def _conjugate(verb: str) -> str:
    """Third person singular of a first-person verb ("prefer" -> "prefers")."""
    lower = verb.lower()
    if lower in _EN_IRREGULAR:
        return _EN_IRREGULAR[lower]
    if lower in _EN_MODALS or lower.endswith("ed"):
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _english_subject(match: re.Match[str]) -> str:
    """The replacement for a sentence-initial "I ..." / "My ..." (see _EN_SUBJECT_RE)."""
    lead = match.group("lead")
    fixed = {
        "my": "The user's ",
        "iam": "The user is",
        "ive": "The user has",
        "ill": "The user will",
        "id": "The user would",
        "neg": "The user does not",
    }
    for group, replacement in fixed.items():
        if match.group(group):
            return lead + replacement
    adverb = match.group("adv") or ""
    return f"{lead}The user {adverb}{_conjugate(match.group('verb'))}"


_EN_FIRST_MENTION = [
    (re.compile(r"\bmy\b", re.IGNORECASE), "the user's"),
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "the user is"),
    (re.compile(r"\bme\b", re.IGNORECASE), "the user"),
    (re.compile(r"\bI\b"), "the user"),
]
"""A first person that does not open the sentence ("White is my favourite colour")."""


def _third_person(text: str) -> str:
    """The first first-person word as "the user", later ones as they/them/their."""
    found = [(m.start(), m.end(), r) for p, r in _EN_FIRST_MENTION if (m := p.search(text))]
    if not found:
        return text
    start, end, replacement = min(found)
    rest = text[end:]
    for pattern, pronoun in _EN_OBJECT_WORDS:
        rest = pattern.sub(pronoun, rest)
    return text[:start] + replacement + rest


def _english_memory(text: str) -> str:
    """Rewrite a first-person English fact as "The user ..."; other text stays as is."""
    match = _EN_SUBJECT_RE.match(text)
    if match is None:
        return _third_person(text)
    rest = text[match.end() :]
    for pattern, replacement in _EN_OBJECT_WORDS:
        rest = pattern.sub(replacement, rest)
    return _english_subject(match) + rest


def _chinese_memory(text: str) -> str:
    """Rewrite the subject 我 as 使用者 (the same word in both scripts).

    A later clause's 我 is dropped, as Chinese does once the subject is known, except
    in 我的, which becomes 使用者的.
    """
    text = re.sub(r"^我(?![们們])", "使用者", text, count=1)
    text = re.sub(r"([，,；;]\s*)我的", r"\1使用者的", text)
    return re.sub(r"([，,；;]\s*)我(?![们們的])", r"\1", text)


def _as_memory(content: str) -> str:
    """A self-contained memory in the user's words, first person turned to "The user"."""
    content = content.strip(_PUNCT + "-")
    if _Lang.of(content).chinese:
        content = _chinese_memory(content)
        return content if content.endswith(("。", "！", "!", ".")) else content + "。"
    content = _english_memory(content)
    return content if content.endswith((".", "!")) else content + "."


# --------------------------------------------------------------------------- the turn


@dataclass
class _Step:
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


def _text_of(message: BaseMessage) -> str:
    content: Any = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


def _parse_observation(content: Any) -> dict[str, Any]:
    """The JSON observation of a ToolMessage; anything else is treated as an error."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return {"ok": False, "error": text[:300]}
    if isinstance(data, dict) and "ok" in data:
        return data
    return {"ok": True, "result": data if isinstance(data, dict) else {"value": data}}


def _current_turn(messages: Sequence[BaseMessage]) -> tuple[str, list[_Step]]:
    """The latest user message and the tool traffic after it.

    Earlier turns are ignored on purpose: their tool calls and observations were
    answered already and must not steer this turn (seed 002).

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
    steps: list[_Step] = []
    by_id: dict[str, _Step] = {}
    for message in messages[start + 1 :]:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                step = _Step(call["name"], dict(call.get("args") or {}))
                steps.append(step)
                by_id[call.get("id") or ""] = step
        elif isinstance(message, ToolMessage) and message.tool_call_id in by_id:
            by_id[message.tool_call_id].observation = _parse_observation(message.content)
    return _text_of(messages[start]), steps


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


def _capabilities(lang: _Lang) -> str:
    return lang.say(
        "I am Memora's offline rules-based model (no API key configured). I can remember "
        'things ("remember that ..."), recall them ("what do you know about me?", "who is '
        'my favourite composer?") and forget them ("forget that ..."), but I cannot answer '
        "other requests. Set OPENAI_API_KEY or OPENAI_BASE_URL to use a real model.",
        "我是 Memora 的離線規則模型（未設定 API key），只能處理記住（「請記住…」）、"
        "回想（「你記得我…嗎」、「我最喜歡的作曲家是誰？」）與忘記（「不要再記得…」）的請求，"
        "無法回答其他問題。設定 OPENAI_API_KEY 或 OPENAI_BASE_URL 即可使用真正的模型。",
    )


def _chat_reply(intent: _Intent, lang: _Lang) -> str:
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


def _unavailable(tool: str, lang: _Lang) -> str:
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


def _describe_recall(memories: list[dict[str, Any]], topic: str, lang: _Lang) -> str:
    """Quote what answers the user's question, or say plainly that nothing does."""
    answers = _answers(memories, topic)
    if answers:
        return lang.say("From what you told me:\n", "根據你之前告訴我的：\n") + _quote_list(answers)
    return lang.say(
        f'I found nothing in your memory about "{topic}". The closest memories I have:\n',
        f"我的記憶中沒有關於「{topic}」的內容。最接近的是：\n",
    ) + _quote_list(memories[:_MAX_QUOTED])


def _describe_search(step: _Step, intent: _Intent, lang: _Lang) -> str:
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


def _describe_remember(step: _Step, lang: _Lang) -> str:
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


def _describe_forget(step: _Step, lang: _Lang) -> str:
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


def _describe(step: _Step, intent: _Intent, lang: _Lang) -> str:
    """What one finished tool step means for the user, in their language."""
    if not step.ok:
        return lang.say(
            f"The {step.name} tool reported an error: {step.error}",
            f"工具 {step.name} 回報錯誤：{step.error}",
        )
    if step.name == SEARCH:
        return _describe_search(step, intent, lang)
    if step.name == REMEMBER:
        return _describe_remember(step, lang)
    if step.name == FORGET:
        return _describe_forget(step, lang)
    return lang.say(
        f"The {step.name} tool returned: {json.dumps(step.result, ensure_ascii=False)}",
        f"工具 {step.name} 回傳：{json.dumps(step.result, ensure_ascii=False)}",
    )


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class _Decision:
    """The next message: exactly one tool call, or a final text."""

    text: str = ""
    tool: str | None = None
    args: dict[str, Any] | None = None


def _call(tool: str, args: dict[str, Any], tools: frozenset[str], lang: _Lang) -> _Decision:
    """A tool call if the tool was bound; otherwise say it is unavailable."""
    if tool not in tools:
        return _Decision(text=_unavailable(tool, lang))
    return _Decision(tool=tool, args=args)


def _first_action(intent: _Intent, tools: frozenset[str], lang: _Lang) -> _Decision:
    if intent.kind == "remember":
        args = {"content": intent.text, "memory_type": intent.memory_type, "reason": intent.reason}
        return _call(REMEMBER, args, tools, lang)
    if intent.kind == "recall":
        query = intent.text or lang.say(
            "the user's preferences, facts and goals", "使用者的偏好、背景與目標"
        )
        return _call(SEARCH, {"query": query}, tools, lang)
    if intent.kind == "forget":
        return _call(SEARCH, {"query": intent.text}, tools, lang)
    return _Decision(text=_chat_reply(intent, lang))


def _corrected(step: _Step) -> dict[str, Any] | None:
    """Arguments fixed after an ``ok: false`` observation, or None if nothing can be fixed.

    Only mechanical fixes: drop unknown keys, cut strings to their limits and replace
    invalid enum values; a wrong memory id cannot be guessed.
    """
    allowed = _ALLOWED_ARGS.get(step.name)
    args = {k: v for k, v in step.args.items() if allowed is None or k in allowed}
    for key, limit in _STRING_LIMITS.items():
        if isinstance(args.get(key), str) and len(args[key]) > limit:
            args[key] = args[key][:limit].rstrip()
    if step.name == REMEMBER:
        if args.get("memory_type") not in ("semantic", "episodic"):
            args["memory_type"] = "semantic"
        if args.get("reason") not in ("explicit_request", "useful_future_context"):
            args["reason"] = "useful_future_context"
    return args if args != step.args else None


def _after_error(
    step: _Step, steps: list[_Step], intent: _Intent, tools: frozenset[str], lang: _Lang
) -> _Decision:
    """Retry a failed call once with corrected arguments, else explain the error."""
    failures = sum(1 for s in steps if s.name == step.name and s.observation and not s.ok)
    fixed = _corrected(step)
    if failures == 1 and fixed is not None and step.name in tools:
        return _Decision(tool=step.name, args=fixed)
    return _Decision(text=_describe(step, intent, lang))


def _forget_reason(message: str, lang: _Lang) -> str:
    quote = message.strip()[:200]
    return lang.say(
        f'The user explicitly asked to forget it: "{quote}"',
        f"使用者明確要求移除這筆記憶：「{quote}」",
    )


def _after_search(
    step: _Step, message: str, intent: _Intent, tools: frozenset[str], lang: _Lang
) -> _Decision:
    """A forget request goes on to the best match's exact id; recall just answers."""
    memories = [m for m in step.result.get("memories") or [] if isinstance(m, dict)]
    if intent.kind != "forget" or not memories:
        return _Decision(text=_describe(step, intent, lang))
    if FORGET not in tools:
        return _Decision(text=_describe(step, intent, lang) + "\n" + _unavailable(FORGET, lang))
    # The retrieval policy returns results best first, so the first id is the best match.
    args = {"memory_id": str(memories[0].get("memory_id", "")), "reason": ""}
    args["reason"] = _forget_reason(message, lang)[: _STRING_LIMITS["reason"]]
    return _Decision(tool=FORGET, args=args)


def _decide(messages: Sequence[BaseMessage], tools: frozenset[str]) -> _Decision:
    """The next step of this turn, from the latest user message and its tool traffic.

    Args:
        messages: The model input.
        tools: Names of the bound tools; no other tool is ever called.

    Returns:
        One tool call or the final text (without the offline marker).
    """
    message, steps = _current_turn(messages)
    lang = _Lang.of(message)
    intent = _classify(message)
    if not steps:
        return _first_action(intent, tools, lang)
    last = steps[-1]
    done = sum(1 for s in steps if s.observation is not None)
    if last.observation is None:
        # A call without an observation cannot be judged; do not repeat it blindly.
        return _Decision(text=_chat_reply(intent, lang))
    if done >= MAX_TOOL_RESULTS:
        limit = lang.say(
            f"I stopped after {done} tool steps in this turn.",
            f"這一輪已經用了 {done} 次工具，先停在這裡。",
        )
        return _Decision(text=f"{limit} {_describe(last, intent, lang)}")
    if not last.ok:
        return _after_error(last, steps, intent, tools, lang)
    if last.name == SEARCH:
        return _after_search(last, message, intent, tools, lang)
    return _Decision(text=_describe(last, intent, lang))


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
        >>> from memora.tools import tool_schemas
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
            tools: OpenAI tool schemas (as from ``memora.tools.tool_schemas()``), dicts
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
        pieces = _stream_pieces(_text_of(message))
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
            run_manager.on_llm_new_token(_text_of(chunk), chunk=generation)
        return generation
