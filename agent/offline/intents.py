"""What a user message asks for: remember, recall, forget, a question about the user, or chat."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from agent.offline.phrasing import as_memory
from agent.offline.text import PUNCT, Text, sentences
from agent.tool_schemas import (
    string_limits,
)

RULES_FILE = "rules.toml"
"""The rules kept as data, beside this module, each with the examples it must (not) match."""


# --------------------------------------------------------------------------- intents

IntentKind = Literal["remember", "recall", "forget", "chat", "ask_remember", "ask_forget"]


@dataclass(frozen=True)
class Intent:
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
    """One rule of ``rules.toml``: its patterns joined into one regex."""
    with resources.files("agent.offline").joinpath(RULES_FILE).open("rb") as handle:
        rule = tomllib.load(handle)[name]
    return _rx("|".join(f"(?:{pattern})" for pattern in rule["patterns"]))


_CAPITALISED_RE = re.compile(r"(?<![\w'-])[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}")
_PRONOUNS = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine"})


def _stated_name(sentence: Text) -> str | None:
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


def _statement_form(sentence: Text) -> Text:
    """One fact, one phrasing, so a later value reconciles as an update of the earlier one.

    A sentence naming the user becomes "My name is NAME."; an inverted copula ("Bach
    is my favourite composer") is turned around ("my favourite composer is Bach");
    any other sentence stays as it is.
    """
    if name := _stated_name(sentence):
        return Text.of(f"My name is {name}.")
    text = sentence.strip()
    if lead := re.match(_LEAD, text.norm):
        text = text.slice(lead.end())
    if match := _INVERTED_RE.match(text.norm):
        part = {g: text.slice(*match.span(g)).original for g in ("value", "verb", "slot")}
        return Text.of(f"{part['slot']} {part['verb']} {part['value']}.")
    return sentence


def _first_match(text: Text, pattern: re.Pattern[str]) -> re.Match[str] | None:
    return pattern.search(text.norm)


def _without(text: Text, match: re.Match[str]) -> Text:
    """The text with one match removed, joining what was before and after it."""
    before, after = text.slice(0, match.start()), text.slice(match.end())
    joined = Text(before.original + " " + after.original, before.norm + " " + after.norm)
    return joined.cut(_CLEAN_LEAD_RE).squeeze()


def _is_question(sentence: Text) -> bool:
    norm = sentence.norm.strip()
    return bool(_EN_QUESTION_RE.search(norm) or _ZH_QUESTION_RE.search(norm))


def _memory_type(content: Text) -> str:
    """``episodic`` for a dated past event, else ``semantic`` (facts, plans, preferences)."""
    if _PAST_TIME_RE.search(content.norm) and _PAST_VERB_RE.search(content.norm):
        return "episodic"
    return "semantic"


def _remember_intent(content: Text, reason: str) -> Intent:
    if not content.norm.strip(PUNCT):
        return Intent("ask_remember")
    return Intent(
        "remember",
        text=as_memory(content.original),
        reason=reason,
        memory_type=_memory_type(content),
    )


def _topic_query(rest: Text, noise: re.Pattern[str]) -> str:
    """The first clause of ``rest`` that still has words once request phrasing is cut."""
    for clause in _split_clauses(rest):
        cleaned = clause.strip().cut(noise).squeeze()
        if cleaned.norm.strip(PUNCT):
            return cleaned.original[: string_limits()["query"]]
    return ""


def _split_clauses(text: Text) -> list[Text]:
    bounds = [0, *(m.end() for m in _CLAUSE_RE.finditer(text.norm)), len(text.norm)]
    return [text.slice(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def classify(message: str) -> Intent:
    """Decide what the user's latest message asks for.

    Order matters: "don't forget" is a remember request, "do you remember" a recall
    request, and a forget request contains "remember" in "don't remember".

    Args:
        message: The text of the latest user message.

    Returns:
        The intent with the content or query the tools need.
    """
    text = Text.of(message.strip())
    if match := _first_match(text, _KEEP_RE):
        return _remember_intent(_without(text, match), "explicit_request")
    if (match := _first_match(text, _FORGET_RE)) and _is_forget(text, match):
        query = _topic_query(_without(text, match), _FORGET_TOPIC_NOISE)
        query = _topic_query(Text.of(query), _QUERY_NOISE) or query
        return Intent("forget", text=query) if query else Intent("ask_forget")
    if match := _first_match(text, _RECALL_RE):
        return Intent("recall", text=_topic_query(_without(text, match), _QUERY_NOISE))
    if match := _first_match(text, _REMEMBER_RE):
        return _remember_intent(_without(text, match), "explicit_request")
    if question := _first_person_question(text):
        topic = _topic_query(question.cut(_SAID_RE), _QUERY_NOISE)
        return Intent("recall", text=topic)
    plain = (_statement_form(s) for s in sentences(text) if not _is_question(s))
    statements = [s for s in plain if _is_statement(s)]
    if statements:
        content = " ".join(s.original.strip() for s in statements)
        return _remember_intent(Text.of(content), "useful_future_context")
    return Intent("chat")


def _first_person_question(text: Text) -> Text | None:
    """The first question about the user's own facts ("who is my favourite composer?").

    A question that mentions the user and does not ask for help or advice (rule
    ``help_request``: "how do I ...", "can you help me ...") can only be answered from
    what the user said before, so it is answered from memory.
    """
    for sentence in sentences(text):
        norm = sentence.norm.strip()
        if (
            _is_question(sentence)
            and _FIRST_PERSON_RE.search(norm)
            and not _rule("help_request").search(norm)
        ):
            return sentence
    return None


def _is_forget(text: Text, match: re.Match[str]) -> bool:
    """Delete words only mean "forget" when they are about memory, not e.g. a file."""
    word = match.group()
    if re.search(r"delete|remove|erase|wipe|clear|删|移除|清除|抹除", word):
        return bool(_FORGET_DELETE_NEEDS_RE.search(text.norm[match.start() :]))
    return True


def _is_statement(sentence: Text) -> bool:
    norm = sentence.norm.strip()
    if _is_question(sentence):
        return False
    return bool(_EN_STATEMENT_RE.search(norm) or _ZH_STATEMENT_RE.search(norm))
