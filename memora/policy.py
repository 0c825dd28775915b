"""The memory policy gate: hard rules that decide whether a candidate may be remembered.

Every candidate passes :func:`apply_memory_policy` before the write path. Hard rules are
plain code and run first, in this order (the first one that fires wins):

1. ``sensitive_data``: credentials, card and ID numbers, "my password is ..." values.
2. ``instruction_like``: text that tries to steer the assistant (prompt injection).
3. ``user_refused``: the user's message says not to remember / store it.
4. ``assistant_generated``: the user's message does not support the candidate, or the
   candidate describes what the assistant said.
5. ``ephemeral``: one-off, this-time-only requests and same-day trivia.
6. ``too_vague``: empty, over-long or content-free text.

An optional model-based :class:`MemoryClassifier` runs only on candidates the hard rules
accepted: it can add rejections, never overrule a hard one. The ``rule`` recorded with a
rejection names the rule that fired and never contains any of the candidate's text.

Library choices:

* ``detect-secrets`` (Yelp) for credentials: its plugins already know the shapes of AWS,
  GitHub, Slack, Stripe, OpenAI, JWT, private-key ... secrets and it runs fully offline.
  ``scan_line`` is used in its ad-hoc mode, where the two high-entropy plugins report every
  word; their hits are therefore re-checked here (length >= 20 and entropy above the
  plugin's own limit). A scan costs well under a millisecond; the settings are global in
  detect-secrets, so each scan runs inside ``default_settings()`` under a lock, and the
  plugin-name mapping and entropy plugins are cached.
* ``python-stdnum`` for number checksums: ``luhn`` (card numbers), ``cn.ric`` (PRC
  resident ID), ``us.ssn`` and ``iban``. The Taiwan ID checksum is small and written here.
* ``opencc`` (``t2s``) folds Traditional Chinese to Simplified once, so every Chinese
  keyword is written once, in Simplified (驗證碼 and 验证码 both match ``验证码``).
* ``snowballstemmer`` for English stems in the support overlap ("prefers" meets "prefer").
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import cache, lru_cache
from typing import Any, Protocol

import snowballstemmer
from stdnum import iban, luhn
from stdnum.cn import ric
from stdnum.us import ssn

from memora.lexical import HAN_CHARS
from memora.limits import MAX_MEMORY_CHARS, MAX_USER_MESSAGE_CHARS
from memora.models import MemoryCandidate, MemoryScope, PolicyRejection, RejectionReason
from memora.validation import has_surrogates

__all__ = [
    "MAX_MEMORY_CHARS",
    "MemoryClassifier",
    "apply_memory_policy",
    "check_candidate",
]

SUPPORT_THRESHOLD = 0.34
"""Minimum share of the candidate's content tokens that must appear in the user message."""

Rule = tuple[str, re.Pattern[str]]


class MemoryClassifier(Protocol):
    """A (usually model-based) second opinion on candidates the hard rules accepted."""

    def classify(self, candidate: MemoryCandidate) -> RejectionReason | None:
        """Return a rejection reason, or ``None`` to accept the candidate."""
        ...


# --------------------------------------------------------------------------- normalisation


@cache
def _converter() -> Any:
    """Return the lazily created OpenCC Traditional-to-Simplified converter (a singleton)."""
    import opencc

    return opencc.OpenCC("t2s")


_CJK_RE = re.compile(f"[{HAN_CHARS}]")


def _normalise(text: str) -> str:
    """Fold width (NFKC), quotes, Traditional Chinese and case for keyword matching.

    Args:
        text: Raw text.

    Returns:
        The text in half-width, Simplified Chinese, lower case.
    """
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    if _CJK_RE.search(text):
        text = _converter().convert(text)
    return text.lower()


def _first_match(text: str, rules: Iterable[Rule]) -> str | None:
    """Return the name of the first rule whose pattern occurs in ``text``."""
    for name, pattern in rules:
        if pattern.search(text):
            return name
    return None


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _word_set(words: str) -> frozenset[str]:
    """A frozenset from a whitespace-separated word list."""
    return frozenset(words.split())


# --------------------------------------------------------------------------- sensitive_data

_ENTROPY_PLUGINS = frozenset({"Base64HighEntropyString", "HexHighEntropyString"})
_MIN_ENTROPY_SECRET_LEN = 20
_detect_secrets_lock = threading.Lock()


@cache
def _secret_type_to_plugin() -> dict[str, Any]:
    """Map detect-secrets' secret types (e.g. "AWS Access Key") to plugin classes."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    return dict(get_mapping_from_secret_type_to_class())


@cache
def _plugin_instance(plugin_class: Any) -> Any:
    """Return a cached default instance of a detect-secrets plugin class."""
    return plugin_class()


def _is_real_secret(plugin_class: Any, value: str | None) -> bool:
    """Drop the ad-hoc mode's word-by-word entropy hits unless they look like a key."""
    if plugin_class.__name__ not in _ENTROPY_PLUGINS:
        return True
    if not value or len(value) < _MIN_ENTROPY_SECRET_LEN:
        return False
    plugin = _plugin_instance(plugin_class)
    return bool(plugin.calculate_shannon_entropy(value) > plugin.entropy_limit)


@lru_cache(maxsize=2048)
def _detect_secrets_hits(text: str) -> tuple[tuple[str, str | None], ...]:
    """Every detect-secrets finding line by line: (``detect-secrets:<Plugin>``, secret value).

    Cached because the same text is checked when the agent proposes it and
    again at commit; the cache lives in this process only, never on disk.
    """
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    mapping = _secret_type_to_plugin()
    hits = []
    with _detect_secrets_lock, default_settings():
        for line in text.splitlines():
            for secret in scan_line(line):
                plugin_class = mapping.get(secret.type)
                if plugin_class is None:
                    continue
                if _is_real_secret(plugin_class, secret.secret_value):
                    hits.append((f"detect-secrets:{plugin_class.__name__}", secret.secret_value))
    return tuple(hits)


def _detect_secrets_rule(text: str) -> str | None:
    """Name the first detect-secrets plugin that fires on ``text``."""
    hits = _detect_secrets_hits(text)
    return hits[0][0] if hits else None


_CARD_RE = re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?![\d.])")


def _card_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds Luhn-valid 13-19 digit numbers (spaces/dashes allowed)."""
    spans = []
    for match in _CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn.is_valid(digits):
            spans.append(match.span())
    return spans


def _has_card_number(text: str) -> bool:
    """True if ``text`` holds a Luhn-valid 13-19 digit number (spaces/dashes allowed)."""
    return bool(_card_spans(text))


_TW_LETTER_CODES = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))
_TW_ID_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][12]\d{8}(?!\d)")
_TW_WEIGHTS = (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1)


def is_valid_tw_id(value: str) -> bool:
    """Check a Taiwan national ID (``[A-Z][12]\\d{8}``) including its checksum.

    The letter maps to a two-digit area code (A=10 ... with I, O, W, Z out of order);
    the eleven digits are weighted 1,9,8,7,6,5,4,3,2,1,1 and must sum to a multiple of 10.

    Args:
        value: Candidate ID, e.g. ``"A123456789"``.

    Returns:
        True if the format and checksum are valid.
    """
    value = value.upper()
    if not re.fullmatch(r"[A-Z][12]\d{8}", value):
        return False
    digits = [int(d) for d in f"{_TW_LETTER_CODES[value[0]]}{value[1:]}"]
    return sum(w * d for w, d in zip(_TW_WEIGHTS, digits, strict=True)) % 10 == 0


_CN_RIC_RE = re.compile(r"(?<![A-Za-z0-9])\d{17}[\dXx](?![A-Za-z0-9])")
_SSN_RE = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_IBAN_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}")


def _has_iban(text: str) -> bool:
    """True if ``text`` holds a valid IBAN (grouped or not); trailing groups are trimmed."""
    for match in _IBAN_RE.finditer(text):
        groups = match.group().split()
        for end in range(len(groups), 0, -1):
            if iban.is_valid("".join(groups[:end])):
                return True
    return False


_ID_RULES: tuple[tuple[str, re.Pattern[str], Callable[[str], bool]], ...] = (
    ("national-id:cn.ric", _CN_RIC_RE, ric.is_valid),
    ("national-id:tw", _TW_ID_RE, is_valid_tw_id),
    ("national-id:us.ssn", _SSN_RE, ssn.is_valid),
    ("iban", _IBAN_RE, _has_iban),
)
"""Identifier rules in the order they are named: a pattern, and its checksum check."""


def _national_id_matches(text: str) -> list[tuple[str, tuple[int, int]]]:
    """Every valid national ID or IBAN in ``text`` as (rule, span), rule by rule."""
    return [
        (rule, match.span())
        for rule, pattern, valid in _ID_RULES
        for match in pattern.finditer(text)
        if valid(match.group())
    ]


def _national_id_rule(text: str) -> str | None:
    """Name the national ID (or IBAN) rule that matches ``text``, if any."""
    matches = _national_id_matches(text)
    return matches[0][0] if matches else None


def _ascii_words(*words: str) -> str:
    """Alternation of English keyword patterns, bounded by non-letters (works next to CJK)."""
    return rf"(?<![a-z])(?:{'|'.join(words)})(?![a-z])"


# Keyword categories, matched on normalised (Simplified, lower-case) text. The "strict" ones
# are secrets in themselves: "my password is X" or "remember my PIN" is enough to reject.
_SECRET_KEYWORDS: dict[str, str] = {
    "verification-code": _ascii_words(
        r"verification[\s_-]?code",
        r"otp",
        r"one[\s-]?time[\s-]?(?:pass)?(?:word|code)",
        r"2fa(?:[\s_-]?code)?",
        r"mfa(?:[\s_-]?code)?",
        r"auth(?:entication)?[\s_-]?code",
        r"security[\s_-]?code",
        r"sms[\s_-]?code",
        r"confirmation[\s_-]?code",
        r"(?:login|log[\s-]?in|sign[\s-]?in)[\s_-]?codes?",
    )
    + r"|验证码|校验码|认证码|动态码|动态密码|确认码|安全码|短信码|简讯码|登录码|登入码",
    "access-code": _ascii_words(
        r"(?:door|gate|garage|keypad|alarm|disarm|lock|locker|safe|entry|building|unlock"
        r"|access|lockbox)(?:[\s_-]+[a-z]+){0,2}?[\s_-]+codes?",
        r"combination",
    )
    + r"|门禁|门锁|开锁|开门码|连线码|连接码|密码锁",
    "password": _ascii_words(r"password", r"passwd", r"pwd", r"passcode", r"passphrase")
    + r"|密码|口令|通行码",
    "pin": _ascii_words(r"pin(?:[\s_-]?(?:code|number))?") + r"|pin码",
    "api-key": _ascii_words(
        r"api[\s_-]?key",
        r"access[\s_-]?key",
        r"secret[\s_-]?key",
        r"private[\s_-]?key",
        r"client[\s_-]?secret",
    )
    + r"|金钥|密钥|私钥",
    "token": _ascii_words(r"(?:access[\s_-]?|auth[\s_-]?|bearer[\s_-]?)?token") + r"|令牌|权杖",
    "recovery-code": _ascii_words(
        r"recovery[\s_-]?codes?",
        r"backup[\s_-]?codes?",
        r"seed[\s_-]?phrase",
        r"mnemonic",
        r"recovery[\s_-]?(?:keys?|words|phrases?)",
        r"seed[\s_-]?words",
    )
    + r"|助记词|恢复码|备用码",
}
_ID_KEYWORDS: dict[str, str] = {
    "secret": _ascii_words(r"secret"),
    "card-number": _ascii_words(
        r"credit[\s_-]?card",
        r"debit[\s_-]?card",
        r"card[\s_-]?(?:number|no)",
        r"cvv",
        r"cvc",
        r"security[\s_-]?digits",
        r"digits\s+on\s+the\s+back",
    )
    + r"|信用卡|金融卡|银行卡|卡号",
    "national-id": _ascii_words(
        r"ssn",
        r"social[\s_-]?security(?:[\s_-]?number)?",
        r"national[\s_-]?id",
        r"id[\s_-]?(?:card[\s_-]?)?(?:number|no)",
        r"tax[\s_-]?id",
        r"driver'?s?[\s_-]?licen[cs]e",
        r"licen[cs]e[\s_-]?(?:number|no)",
        r"medicare|medicaid",
        r"(?:health|medical)[\s_-]?insurance[\s_-]?(?:number|no|id)",
    )
    + r"|身份证|身分证|居民身份|统一编号|税号|驾照|驾驶执照|健保卡|医保卡|社保卡|居留证",
    "bank-account": _ascii_words(
        r"bank[\s_-]?account",
        r"account[\s_-]?(?:number|no)",
        r"routing[\s_-]?number",
        r"iban",
        r"(?:checking|savings|current|brokerage)[\s_-]?account",
    )
    + r"|银行帐号|银行账号|银行帐户|银行账户|帐户号码|账户号码|帐号|账号|帐户|账户",
    "passport": _ascii_words(r"passport") + r"|护照",
    "login": _ascii_words(r"login", r"log[\s-]?in", r"credentials?"),
}

_GAP = (
    r"(?:[\s:=#\"'「『“,]|(?<![a-z])(?:is|was|are|now|number|no\.|code|for\s+[\w.@-]+)(?![a-z])"
    r"|是|为|号码|号|码|字号|数字|就是|设为|改为|改成|换成|了)*?"
)
_DIGIT_VALUE = r"(?:\d[\d -]{2,}\d|[a-z0-9_+/=!@#$%^&*.-]*\d[a-z0-9_+/=!@#$%^&*.-]*)"
_OWNER_EN = r"(?<![a-z])(?:my|our|his|her|their|(?:the\s+)?user'?s?)\s+(?:[a-z0-9.@-]+\s+){0,2}?"
_OWNER_ZH = r"(?:我|使用者|用户|他|她)的?[^\s,。!?]{0,6}?"
_REMEMBER = (
    r"(?:(?<![a-z])(?:remember|save|store|keep|note)\s+(?:the\s+)?(?:user'?s?|my|his|her)\s+"
    r"(?:[a-z0-9]+\s+)?|(?:记住|记下|记得|保存|储存|存下|存起来)(?:使用者|用户|我|他|她)?的?)"
)


def _keyword_rules() -> list[Rule]:
    """Build the keyword + value rules, one group of patterns per category."""
    rules: list[Rule] = []
    for category, keyword in {**_SECRET_KEYWORDS, **_ID_KEYWORDS}.items():
        rule = f"keyword:{category}"
        rules.append((rule, _compile(rf"(?:{keyword}){_GAP}(?P<value>{_DIGIT_VALUE})")))
        rules.append((rule, _compile(rf"(?:{keyword})\s*[:=]\s*(?P<value>[^\s,。]{{4,}})")))
    for category, keyword in _SECRET_KEYWORDS.items():
        rule = f"keyword:{category}"
        rules.append(
            (rule, _compile(rf"{_OWNER_EN}(?:{keyword})\s*(?:is|was|[:=])\s*(?P<value>\S{{3,}})"))
        )
        rules.append(
            (rule, _compile(rf"{_OWNER_ZH}(?:{keyword})(?:是|为|[:=])\s*(?P<value>\S{{2,}})"))
        )
        rules.append((rule, _compile(rf"{_REMEMBER}(?:{keyword})")))
    return rules


_KEYWORD_RULES = _keyword_rules()


_URL_CREDENTIALS_RE = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@", re.IGNORECASE)
"""A URL with a password in it: ``postgres://user:pass@host``."""


@lru_cache(maxsize=4096)
def _sensitive_rule(text: str) -> str | None:
    """Name the sensitive-data rule that fires on ``text``, or ``None``.

    Cached (in this process only) because a turn's texts are checked when a tool
    runs, at commit and again when the turn's transcript is redacted.
    """
    return _value_rule(text) or (
        _first_match(_normalise(text), _KEYWORD_RULES) if text.strip() else None
    )


def _value_rule(text: str) -> str | None:
    """The detectors that recognise a value by its own shape (keys, cards, IDs, credentials)."""
    if not text.strip():
        return None
    width_folded = unicodedata.normalize("NFKC", text)
    rule = _detect_secrets_rule(width_folded)
    if rule:
        return rule
    if _has_card_number(width_folded):
        return "luhn-card-number"
    rule = _national_id_rule(width_folded)
    if rule:
        return rule
    if _URL_CREDENTIALS_RE.search(width_folded):
        return "url-credentials"
    return None


def is_sensitive(text: str) -> bool:
    """Whether any sensitive-data detector fires on ``text``."""
    return _sensitive_rule(text) is not None


def holds_secret_shaped_value(text: str) -> bool:
    """Whether a detector that needs no keyword (a key, card, ID, credential) fires."""
    return _value_rule(text) is not None


_SECRET_CHARS_RE = re.compile(r"[A-Za-z0-9_+/=!@#$%^&*.:-]+")


@lru_cache(maxsize=1024)
def _cached_spans(text: str) -> tuple[tuple[int, int], ...] | None:
    spans = _find_spans(text)
    return tuple(spans) if spans is not None else None


def sensitive_spans(text: str) -> list[tuple[int, int]] | None:
    """Where the sensitive values in ``text`` are, as (start, end) offsets.

    Returns:
        The spans (possibly overlapping), or None when a detector fires on text
        whose folded form does not line up with it character for character, so
        no span can be placed.
    """
    spans = _cached_spans(text)
    return list(spans) if spans is not None else None


def _find_spans(text: str) -> list[tuple[int, int]] | None:
    """The uncached work of :func:`sensitive_spans`."""
    folded = unicodedata.normalize("NFKC", text)
    normalised = _normalise(text)
    if len(folded) != len(text) or len(normalised) != len(text):
        return None if is_sensitive(text) else []
    spans: list[tuple[int, int]] = [
        (m.start(), m.end())
        for _, value in _detect_secrets_hits(folded)
        if value
        for m in re.finditer(re.escape(value), folded)
    ]
    spans += _card_spans(folded)
    spans += [span for _, span in _national_id_matches(folded)]
    spans += [m.span() for m in _URL_CREDENTIALS_RE.finditer(folded)]
    for _, pattern in _KEYWORD_RULES:
        for match in pattern.finditer(normalised):
            if "value" in pattern.groupindex and match.group("value"):
                start, end = match.span("value")
                # "是 482913。另外…": the value is the code, not the words after it.
                leading = _SECRET_CHARS_RE.match(text, start)
                spans.append((start, leading.end() if leading else end))
    return spans


def _check_sensitive(candidate: MemoryCandidate) -> str | None:
    """Sensitive values in the content, or a content that refers to a secret the user gave.

    "記住使用者的驗證碼" holds no code itself, but if the user's message held one the
    candidate is about that secret and is rejected too.
    """
    rule = _sensitive_rule(candidate.content)
    if rule or not candidate.user_message:
        return rule
    message_rule = _sensitive_rule(candidate.user_message)
    if message_rule and _mentions_secret_keyword(candidate.content):
        return f"user-message:{message_rule}"
    return None


_ANY_SECRET_KEYWORD = _compile("|".join({**_SECRET_KEYWORDS, **_ID_KEYWORDS}.values()))


def _mentions_secret_keyword(text: str) -> bool:
    return bool(_ANY_SECRET_KEYWORD.search(_normalise(text)))


# --------------------------------------------------------------------------- instruction_like

_INSTRUCTION_TARGETS = (
    r"(?:instructions?|rules|guidelines|prompts?|directives|polic(?:y|ies)|constraints"
    r"|guardrails|programming|system\s+prompt)"
)
_INSTRUCTION_QUALIFIERS = (
    r"(?:all|any|the|your|my|of|previous|prior|earlier|above|preceding|former|existing"
    r"|original|system|safety|other|these|those)"
)
_ZH_INSTRUCTION_TARGETS = r"(?:指令|指示|规则|提示词?|设定|限制|规范|命令|要求|约束|内容)"
_ASSISTANT_EN = r"(?:the\s+)?(?:ai\s+)?(?:assistants?|ai|bots?|chatbots?|memora|model|agent)"
_ZH_ASSISTANT = r"(?:助理|助手|(?<![a-z])ai|机器人|模型|memora)"
_ZH_USER_WISH = r"希望|想要|想|偏好|喜欢|要求|习惯|请求"
"""Chinese verbs that make what follows the user's own wish, not an order to the assistant."""
_SAFETY_TARGETS = (
    r"(?:content|safety)\s+(?:filters?|polic(?:y|ies)|guidelines|checks?|rules|warnings?"
    r"|restrictions)|(?:filters|guardrails|safeguards)"
)

_INSTRUCTION_RULES: list[Rule] = [
    (
        "injection:ignore-instructions",
        _compile(
            rf"(?<![a-z])(?:ignore|disregard|forget|override|bypass)\s+(?:{_INSTRUCTION_QUALIFIERS}"
            rf"\s+)+{_INSTRUCTION_TARGETS}"
        ),
    ),
    (
        "injection:disregard",
        _compile(r"(?<![a-z])disregard\s+(?:everything|all|anything|the\s+above|what|that|this)"),
    ),
    (
        "injection:system-prompt",
        _compile(
            r"system\s+(?:prompt|message|instructions?)|developer\s+(?:message|mode)|jailbreak"
            r"|(?<![a-z])dan\s+mode|<\|?\s*(?:system|im_start)|\[(?:system|inst)\]"
            r"|#{2,}\s*(?:system|instruction)"
        ),
    ),
    (
        "injection:you-must",
        _compile(
            r"(?<![a-z])you\s+(?:must|shall|are\s+required\s+to|are\s+obligated\s+to)(?![a-z])"
            r"|(?<![a-z])you\s+(?:have\s+to|need\s+to|should)\s+(?:always|never)(?![a-z])"
        ),
    ),
    (
        "injection:from-now-on",
        _compile(
            r"(?<![a-z])from\s+now\s+on[,\s]+(?:you|respond|answer|reply|always|never|only|ignore"
            r"|act|behave|speak|say|call|obey|follow)(?![a-z])"
        ),
    ),
    (
        "injection:identity",
        _compile(
            r"(?<![a-z])(?:you\s+are\s+(?:now|no\s+longer)|you're\s+(?:now|no\s+longer)"
            r"|pretend\s+(?:to\s+be|you\s+are|you're)|act\s+as|roleplay\s+as"
            r"|your\s+(?:new\s+)?(?:name|role|identity)\s+is)(?![a-z])"
        ),
    ),
    (
        "injection:permissions",
        _compile(
            r"(?<![a-z])(?:(?:grant|give)\s+(?:me|the\s+user|user)\s+(?:\w+\s+)?(?:access|permissions?"
            r"|privileges?|admin)|(?:the\s+)?user\s+is\s+(?:an?\s+)?(?:admin|administrator|root"
            r"|superuser)|(?:admin|root|sudo|god)\s+(?:mode|access|privileges?)"
            r"|no\s+(?:restrictions|limits|filters)|without\s+(?:any\s+)?(?:restrictions|filters"
            r"|limits)|unrestricted)(?![a-z])"
        ),
    ),
    (
        "injection:reveal",
        _compile(
            r"(?<![a-z])(?:reveal|print|show|leak|output|repeat)\s+(?:your|the)\s+(?:system\s+)?"
            r"(?:prompt|instructions|rules|configuration)"
        ),
    ),
    (
        "injection:when-recalled",
        _compile(
            r"(?<![a-z])when(?:ever)?\s+you\s+(?:see|read|recall|retrieve|load)\s+this(?![a-z])"
        ),
    ),
    (
        "injection:zh-ignore-instructions",
        _compile(
            r"(?:忽略|无视|忘记|忘掉|不要理会|别理|绕过|覆盖|跳过)掉?你?"
            r"(?:之前|以前|先前|上面|上述|以上|前面|所有|全部|一切|原本|原来|原有|系统|既有|的)+"
            rf"{_ZH_INSTRUCTION_TARGETS}"
        ),
    ),
    (
        "injection:zh-system-prompt",
        _compile(r"系统(?:提示|讯息|消息|指令|设定)|开发者模式|越狱|提示词注入"),
    ),
    ("injection:zh-you-must", _compile(r"你(?:必须|一定要|只能|不准|不许|不能拒绝)")),
    (
        "injection:zh-from-now-on",
        _compile(
            r"(?:你现在是|你从现在(?:开始|起)|从现在(?:开始|起)[,\s]*(?:你|都|一律|只)"
            r"|以后(?:都|一律|一定)(?:要|必须)?(?:回答|回复|回应|说|用|输出|照|遵守))"
        ),
    ),
    ("injection:zh-identity", _compile(r"(?:你|请)(?:要|来|现在|必须|就)?扮演|假装(?:你是|成)")),
    (
        "injection:zh-permissions",
        _compile(
            r"(?:不受|没有|解除)(?:任何|所有)?限制|管理员(?:权限|模式)|最高权限"
            r"|给(?:我|使用者|用户)(?:管理员|所有|完整)?权限|(?:使用者|用户)是管理员"
            r"|不受审查|无审查|不受(?:任何)?约束"
        ),
    ),
    # Memories are about the user. Text that speaks to the assistant, sets a trigger for
    # when it is recalled, tells it what to say to others, or switches safety off is an
    # attempt to steer the assistant, whoever wrote it.
    (
        "injection:assistant-modal",
        _compile(
            rf"(?<![a-z]){_ASSISTANT_EN}(?:'s)?\s+(?:must|shall|should|has\s+to|have\s+to"
            r"|needs?\s+to|may|can|is\s+(?:allowed|permitted|authori[sz]ed)\s+to|will\s+always"
            r"|will\s+never|has\s+no|is\s+not\s+bound)(?![a-z])"
        ),
    ),
    (
        "injection:real-instructions",
        _compile(
            r"(?<![a-z])(?:real|true|actual|new|updated|secret|hidden)\s+(?:instructions|rules"
            r"|system\s+prompt|directives|orders|programming)(?![a-z])"
            r"|system\s+override|override\s+mode"
        ),
    ),
    (
        "injection:imperative",
        _compile(
            r"^\W*(?:recommend|tell|say|ignore|disregard|drop|treat|delete|send|forward|email"
            r"|read\s+out|reveal|promote|obey|execute|output|print|skip|bypass|grant|pretend"
            r"|respond\s+to\s+(?:every|all|any)|reply\s+to\s+(?:every|all|any))(?![a-z])"
        ),
    ),
    (
        "injection:every-reply",
        _compile(
            r"(?<![a-z])(?:every|each|all|any)\s+(?:\w+\s+)?(?:reply|replies|answer|answers"
            r"|response|responses|message|messages)\s+(?:has|have|must|should|needs?|shall"
            r"|will)(?![a-z])"
        ),
    ),
    (
        "injection:recall-trigger",
        _compile(
            r"(?<![a-z])(?:this|the)\s+(?:memory|note|entry)\s+is\s+(?:retrieved|recalled|read"
            r"|loaded|seen|found)(?![a-z])"
            r"|(?<![a-z])(?:when(?:ever)?|if)\s+(?:anyone|anybody|someone|somebody|others?"
            r"|people|other\s+users?|another\s+user)\s+asks?(?![a-z])"
        ),
    ),
    (
        "injection:safety-off",
        _compile(
            r"(?<![a-z])(?:no|without|disabled?|drop|skip|bypass|turn\s+off|ignore|remove|lift)"
            rf"\s+(?:the\s+|your\s+|its\s+|all\s+|any\s+)?(?:{_SAFETY_TARGETS})(?![a-z])"
            rf"|(?<![a-z])(?:{_SAFETY_TARGETS})\s+(?:are\s+|is\s+)?(?:now\s+)?(?:disabled|off"
            r"|lifted|removed|suspended|waived)(?![a-z])"
        ),
    ),
    (
        "injection:without-consent",
        _compile(
            r"(?<![a-z])(?:without|skip(?:ping)?|bypass(?:ing)?|no\s+need\s+for)\s+(?:the\s+|any\s+)?"
            r"(?:asking\s+(?:for\s+)?)?(?:(?:user'?s?|my)\s+)?(?:confirmation|approval|consent"
            r"|permission)(?![a-z])"
        ),
    ),
    (
        "injection:zh-assistant-modal",
        _compile(
            rf"^(?:(?!{_ZH_USER_WISH}).)*?{_ZH_ASSISTANT}的?(?:要|必须|应该|应|可以|能|得|需要|将|会)"
        ),
    ),
    (
        "injection:zh-every-reply",
        _compile(
            rf"^(?:(?!{_ZH_USER_WISH}).)*?(?:每次|每一次|所有|任何)(?:的)?(?:回答|回复|回应|答复)"
            r"[^,。]{0,6}?(?:都要|都必须|必须|一律|都得)"
        ),
    ),
    (
        "injection:zh-recall-trigger",
        _compile(
            r"(?:这|此)(?:条|则|段|个|笔)?记忆"
            r"|(?:有人|不管谁|无论谁|任何人|别人|其他人)(?:问|问起|问到|提到)"
        ),
    ),
    (
        "injection:zh-safety-off",
        _compile(
            r"(?:跳过|关闭|取消|不加|不要加|不用加|去掉|解除|绕过|忽略)(?:所有|任何|全部)?的?"
            r"(?:安全|内容)(?:检查|提醒|审查|过滤|限制|警告|规则)"
        ),
    ),
    (
        "injection:zh-without-consent",
        _compile(
            r"(?:不经|未经|无需|无须|不需要?|不用|跳过)(?:过)?(?:用户|使用者|我|本人)?的?"
            r"(?:同意|确认|批准|许可|授权)"
        ),
    ),
    (
        "injection:zh-new-identity",
        _compile(rf"(?:{_ZH_ASSISTANT}|你)的?新?(?:身份|名字|角色)(?:是|为|改为)"),
    ),
    (
        "injection:zh-reveal",
        _compile(r"(?:透露|泄露|显示|输出|告诉我)你?的?(?:系统)?(?:提示词|指令|设定|规则)"),
    ),
]


# Structural steering signs (added after a held-out evaluation). None of them needs an
# "ignore previous instructions" phrase: a memory is about the user, so text that sets the
# assistant's future behaviour towards third parties, strips its refusals or safety notes,
# hands it a new persona, or repeats what a quoted page or email claims is rejected.

_URL_OR_EMAIL = (
    r"(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|(?<![\w@.])[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|ly|co|ai|app|dev|ru|cn|xyz|info"
    r"|biz|me|site|shop|store|link|top|gg|tv|us|uk|de|jp|tw|hk|online|club|live)(?:/\S*)?(?![a-z])"
)
_URL_OR_EMAIL_RE = _compile(_URL_OR_EMAIL)
_FUTURE_SCOPE_EN = (
    r"(?<![a-z])(?:(?:every|each|all|any)\s+(?:(?:of\s+)?(?:your|the|my|its|future|new|single)\s+)?(?:\w+\s+)?"
    r"(?:answers?|repl(?:y|ies)|responses?|messages?|chats?|conversations?|sessions?|outputs?"
    r"|recommendations?|suggestions?|posts?|emails?|turns?)"
    r"|always|whenever|every\s+(?:single\s+)?time|each\s+time|from\s+now\s+on|going\s+forward"
    r"|(?:in|for)\s+(?:all\s+)?(?:future|later|upcoming)\s+(?:\w+\s+)?(?:chats?|conversations?"
    r"|answers?|replies|responses|sessions?))(?![a-z])"
)
_PROMO_VERB_EN = (
    r"(?<![a-z])(?:(?<!i\s)(?<!we\s)(?:recommend|promot[e]|advertis[e]|plug|endors[e]|shill|push"
    r"|mention|suggest)(?:ing)?|(?:link|attach|includ(?:e|ing)|append|add|insert|paste|drop)"
    r"(?:ing)?|(?:end|finish|close|sign\s+off)(?:ing)?\s+(?:\w+\s+){0,3}?with|(?:direct|send|point|refer|redirect)(?:ing)?\s+(?:\w+\s+)?to)"
    r"(?![a-z])"
)
_THIRD_PARTY_EN = (
    rf"{_URL_OR_EMAIL}"
    r"|(?<![a-z])(?:links?|urls?|coupons?|discount(?:\s+codes?)?|promo(?:tional)?\s+codes?"
    r"|referral|affiliate|sponsors?|sponsored|ads?|adverts?|advertisements?|banners?|brand|brands"
    r"|products?)(?![a-z])(?!\s+to\s+(?:the\s+)?(?:sources?|references?|docs|documentation"
    r"|citations?|original))"
    r"|(?<![a-z])(?:our|my|their|his|her|the\s+user'?s?|this|that|a\s+certain)\s+(?:\w+\s+)?"
    r"(?:shop|store|business|company|site|website|app|service|channel|course|newsletter"
    r"|restaurant|bakery|cafe|clinic|agency|firm|podcast|book|brand|product)s?(?![a-z])"
)
_PROMO_NAME_RE = re.compile(
    r"(?<![A-Za-z])(?:recommend|promote|advertise|plug|endorse|shill|push|mention)(?:ing)?\s+"
    r"(?:the\s+|a\s+)?[A-Z][\w'&-]*"
)
_PROMO_SCOPE_RE = _compile(_FUTURE_SCOPE_EN)
_PROMO_VERB_RE = _compile(_PROMO_VERB_EN)
_THIRD_PARTY_RE = _compile(_THIRD_PARTY_EN)
_ZH_FUTURE_SCOPE = (
    r"每次|每一次|每个|每一个|每段|每则|每篇|每条|每次都|所有|任何|全部|以后|之后|今后|往后|将来"
    r"|永远|一律|总是|始终|每当|都"
)
_ZH_PROMO_VERB = (
    r"推荐|推介|推广|宣传|打广告|广告|带货|附上|附加|附|加上|带上|放上|贴上|提到|提及|导流|引导"
)
_ZH_THIRD_PARTY = (
    r"链接|连结|网址|网站|官网|优惠码|折扣码|推荐码|邀请码|优惠|品牌|产品|商品|店|公司|频道|课程"
    r"|我们家|我家|自家|本店|这家|那家|厂商|赞助|[a-z]{2,}"
)
_ZH_PROMO_RE = re.compile(
    rf"^(?:(?!{_ZH_USER_WISH}).)*?(?:{_ZH_FUTURE_SCOPE})[^。;!?]{{0,16}}?"
    rf"(?:(?:推广|宣传|打广告|带货|导流)|(?:{_ZH_PROMO_VERB})[^。;!?]{{0,10}}?(?:{_ZH_THIRD_PARTY}))"
)
_SENTENCE_SPLIT_RE = re.compile(r"[.!?;](?=\s|$)|[。！？；!?\n]")


def _sentences(text: str) -> list[str]:
    """Split text into sentences without breaking URLs or domain names on their dots."""
    return [s for s in _SENTENCE_SPLIT_RE.split(text) if s.strip()]


def _promotion_rule(content: str) -> str | None:
    """The candidate tells the assistant to promote, attach or recommend third-party things
    in every future answer (a scope word + a promotion verb + a third-party object)."""
    for sentence in _sentences(unicodedata.normalize("NFKC", content)):
        lower = _normalise(sentence)
        if _ZH_PROMO_RE.search(lower):
            return "injection:zh-promote-always"
        if not _PROMO_SCOPE_RE.search(lower):
            continue
        verb = _PROMO_VERB_RE.search(lower)
        if verb and _SELF_SUBJECT_RE.search(lower[: verb.start()]):
            continue  # "I always include a link to my blog": the user's own habit
        if verb and (_THIRD_PARTY_RE.search(lower) or _PROMO_NAME_RE.search(sentence)):
            return "injection:promote-always"
    return None


_STEERING_RULES: list[Rule] = [
    (
        "injection:never-refuse",
        _compile(
            r"(?<![a-z])(?<!i\s)(?<!we\s)(?<!they\s)(?<!he\s)(?<!she\s)(?:never|don'?t|do\s+not"
            r"|must\s+not|mustn'?t|should\s+not|shouldn'?t|cannot|can'?t|won'?t|will\s+not|stop"
            r"|no\s+longer|without|not\s+allowed\s+to)\s+(?:ever\s+)?(?:refus(?:e|ing)|declin(?:e|ing)"
            r"|say(?:ing)?\s+no)(?![a-z])(?!\s+(?:dessert|food|drinks?|coffee|tea|invitations?|gifts?))"
            r"|(?<![a-z])(?:answer|respond\s+to|reply\s+to|comply\s+with|help\s+with|fulfil+)\s+"
            r"(?:absolutely\s+)?(?:anything|everything|any\s+(?:question|request|prompt|query|topic)s?"
            r"|all\s+(?:questions|requests|prompts))\s*(?:,|\.|$|without|no\s+matter|whatever)"
        ),
    ),
    (
        "injection:no-safety-notes",
        _compile(
            r"(?<![a-z])(?<!i\s)(?:never|don'?t|do\s+not|no\s+need\s+to|stop|without|skip|omit"
            r"|leave\s+out|drop|avoid|must\s+not|should\s+not|shouldn'?t)\s+(?:ever\s+)?"
            r"(?:mention(?:ing)?|add(?:ing)?|includ(?:e|ing)|giv(?:e|ing)|show(?:ing)?|talk(?:ing)?"
            r"\s+about|bring(?:ing)?\s+up|rais(?:e|ing)|warn(?:ing)?\s+about|the\s+|any\s+)*\s*"
            r"(?:any\s+|the\s+)?(?:safety|risks?|dangers?|side\s+effects?|warnings?|disclaimers?"
            r"|caveats?|health\s+(?:warnings?|risks?|advice)|legal\s+(?:warnings?|issues|risks))"
            r"(?![a-z])"
            r"|(?<![a-z])no\s+(?:more\s+)?(?:disclaimers|warnings|caveats|safety\s+(?:notes|warnings"
            r"|reminders|lectures))(?![a-z])"
        ),
    ),
    (
        "injection:obey-anyone",
        _compile(
            r"(?<![a-z])(?:obey|comply\s+with|follow|carry\s+out|execute|do)\s+(?:whatever|anything"
            r"|everything|any|all|every)\s+(?:(?:other|future|new|later)\s+)?(?:users?|one|anyone"
            r"|anybody|people|person|requests?|instructions?|commands?|orders?|messages?|they"
            r"|someone|somebody)(?:'s)?(?:\s+(?:asks?|says?|wants?|tells?|requests?|instructions?"
            r"|commands?|orders?))?(?![a-z])"
            r"|(?<![a-z])(?:obey|follow)\s+(?:other|future|new|later)\s+users?(?![a-z])"
        ),
    ),
    (
        "injection:persona",
        _compile(
            r"(?:^|[,;:(]\s*|(?<![a-z'])(?:the|your|this)\s+)(?:ai\s+)?(?:assistant|ai|bot|chatbot"
            r"|memora|model|agent)\s+(?:is|will\s+be|shall\s+be|becomes|has\s+become)\s+(?:now\s+"
            r"|actually\s+|really\s+|henceforth\s+)?(?:called|named|known\s+as|an?\s+(?:\w+\s+)?"
            r"(?:ai|bot|assistant|model|persona|character|version|mode)|[a-z]+bot|[a-z]+gpt"
            r"|unrestricted|uncensored|unfiltered|jailbroken|free\s+(?:from|of))(?![a-z])"
            r"|(?<![a-z])(?:you\s+are|you're|you\s+will\s+be)\s+(?:now\s+|actually\s+)?(?:called"
            r"|named|an?\s+(?:\w+\s+)?(?:ai|bot|assistant|model|chatbot)|[a-z]+bot|[a-z]+gpt)(?![a-z])"
            r"|(?<![a-z])(?:uncensored|unfiltered|jailbroken|amoral|unaligned)\s+(?:\w+\s+)?"
            r"(?:ai|assistant|model|bot|mode|version|persona)(?![a-z])"
            r"|(?<![a-z])(?:ai|assistant|model|bot|mode|version|persona)\s+(?:with(?:out)?|free\s+of"
            r"|has\s+no)\s+(?:any\s+)?(?:rules|limits|limitations|boundaries|ethics|morals|censorship"
            r"|restrictions)(?![a-z])"
        ),
    ),
    (
        "injection:memory-update",
        _compile(
            r"(?<![a-z])(?:memory|profile|context)\s+(?:update|override|injection|patch)(?![a-z])"
            r"|(?<![a-z])update\s+(?:to\s+)?(?:your|the|assistant'?s?)\s+(?:memory|memories|profile)"
            r"|(?<![a-z])(?:admin|administrator|developer|system|operator|moderator)\s+(?:note|notice"
            r"|override|directive|command|update|announcement|authori[sz]ation)(?![a-z])"
            r"|(?<![a-z])(?:has|have|already)\s+(?:been\s+)?(?:authori[sz]ed|granted\s+permission"
            r"|pre-?approved)\s+(?:the\s+)?(?:assistant|ai|you|memora|us|them)(?![a-z])"
        ),
    ),
    (
        "injection:share-with-third-party",
        _compile(
            r"(?<![a-z])(?:authori[sz]\w*|consent\w*|agree[sd]?|agreed|permission|permits?"
            r"|permitted|allow(?:s|ed)?|approved?|opted\s+in)\s+(?:\w+\s+){0,5}?(?:shar|send|sent"
            r"|forward|transfer|disclos|upload|export|releas|provid|giv|pass|sell|sold)\w*\s+"
            r"(?:\w+\s+){0,6}?(?:to|with)\s+(?:\w+\s+){0,2}?(?:third[\s-]part(?:y|ies)|partners?"
            r"|advertisers?|marketers?|vendors?|sponsors?|affiliates?|anyone|anybody|external"
            r"|outside|other\s+(?:companies|services|users)|any\s+\w+)(?![a-z])"
        ),
    ),
    (
        "injection:zh-never-refuse",
        _compile(
            r"(?<!我)(?<!他)(?<!她)(?:不要|别|不准|不许|不得|不能|不可以|不可|永远不|绝不|永不|禁止)"
            r"(?:再)?(?:拒绝|说不)"
            r"|(?:什么|任何)(?:问题|要求|事|请求)?都(?:要|可以|能|得|必须|会)?(?:回答|照做|答应|满足)"
        ),
    ),
    (
        "injection:zh-no-safety-notes",
        _compile(
            r"(?:不要|别|不用|不必|无需|无须|不需要|不准|不许|省略|略过|拿掉|不再)"
            r"(?:提到?|提及|提醒|说明|讲|给|加上?|附上?|写|标注|显示)(?:任何)?的?"
            r"(?:安全|风险|副作用|危险|免责|警告|注意事项)"
            r"|(?:不要|别|不用|不必|无需|无须|不需要|不准|不许|省略|略过|拿掉|不再|不加|没有)"
            r"(?:任何)?的?(?:安全|风险|副作用|危险|免责)(?:提醒|警告|声明|提示|说明|事项)"
        ),
    ),
    (
        "injection:zh-obey-anyone",
        _compile(
            r"(?:听从|服从|遵从|照做|遵守|执行|照着做)(?:任何|所有|每个|其他|别的|之后|以后|未来)"
            r"(?:的)?(?:人|用户|使用者|请求|指令|命令|要求)"
            r"|(?:任何人|谁|别人|其他(?:人|用户|使用者))(?:说|要求|叫你|让你)什么(?:就|都)"
        ),
    ),
    (
        "injection:zh-persona",
        _compile(
            r"(?:^|[,;:(\s])(?:这个|本)?(?:助理|助手|(?<![a-z])ai|机器人|模型|memora)\s*"
            r"(?:现在|从现在起|以后|其实)?(?:叫做?|名叫|名字是|的名字是|改名为|是一个|是个|就是|变成)"
            r"|无限制(?:的)?\s*(?:ai|助理|助手|模式|版本|机器人|模型)|(?:无审查|无过滤|越狱)(?:的)?\s*"
            r"(?:ai|助理|助手|模式|版本|机器人|模型)"
        ),
    ),
    (
        "injection:zh-memory-update",
        _compile(
            r"记忆(?:更新|覆盖|注入)|更新(?:你的|助理的|助手的)?记忆|(?:管理员|开发者|系统|官方)"
            r"(?:通知|公告|备注|指示|授权|覆盖|更新)"
            r"|(?:授权|同意|允许|许可)[^。;]{0,12}?(?:分享|共享|提供|发送|寄|转寄|转发|上传|公开|透露"
            r"|交给|传给|卖给)[^。;]{0,12}?(?:第三方|合作伙伴|厂商|广告商|任何人|其他人|外部)"
        ),
    ),
]

_CONTACT_VERB_RE = _compile(
    r"(?<![a-z])(?:recommend|promot|advertis|suggest|shar|send|sent|forward|e-?mail|mail|upload"
    r"|post|submit|transfer|export|sync|report|authori[sz]|consent|allow|grant|permit|visit"
    r"|click|direct|redirect|link|cc|bcc|notif|contact|leak|cop(?:y|ied)|pass|deliver)\w*"
    r"|推荐|推广|分享|共享|发送|发到|发给|寄到|寄给|转寄|转发|上传|提交|授权|同意|允许|传给|传到|抄送"
    r"|点击|访问|前往|联系|通知|交给|提供给"
)


_AUTHORISE_VERB_RE = _compile(
    r"(?<![a-z])(?:authori[sz]|consent|allow|grant|permit|approv)\w*|授权|同意|允许|许可"
)
_SELF_SUBJECT_RE = _compile(
    r"(?<![a-z])(?:i|we|user|users|the\s+user|they|he|she)\s+(?:\w+\s+)?$|(?:我|我们|用户|使用者)\S{0,2}$"
)
"""The user (or someone named) is the subject of the verb that follows: a habit, not an order."""
_LINK_CLAUSE_SPLIT_RE = re.compile(
    r"[,，、]|(?<![a-z])(?:and|but|so|while)(?![a-z])|而且|但是|然后"
)


def _contact_rule(content: str) -> str | None:
    """A URL or e-mail address next to a recommend/share/send/upload/authorise verb.

    The verb must be in the same clause as the address, and a user's own habit ("I post
    recipes on my-site.com") is left alone unless it grants authorisation.
    """
    text = _normalise(content)
    for sentence in _sentences(text):
        for clause in _LINK_CLAUSE_SPLIT_RE.split(sentence):
            link = _URL_OR_EMAIL_RE.search(clause)
            if not link:
                continue
            rest = clause[: link.start()] + " " + clause[link.end() :]
            if _AUTHORISE_VERB_RE.search(rest):
                return "injection:link-with-action"
            verb = _CONTACT_VERB_RE.search(rest)
            if verb and not _SELF_SUBJECT_RE.search(rest[: verb.start()]):
                return "injection:link-with-action"
    return None


_SOURCE_MARKER_RE = _compile(
    r"(?<![a-z])(?:web\s*pages?|websites?|site|page|e-?mails?|inbox|newsletter|pdf|document|doc"
    r"|file|article|post|comment|review|forum|blog|tweet|screenshot|flyer|html|source\s+code"
    r"|pasted|copied|copy-?pasted|forwarded|found\s+(?:this|it)"
    r"|hidden|invisible|white\s+text|small\s+print|fine\s+print)(?![a-z])"
    r"|<!--|网页|网站|页面|邮件|电邮|信件|来信|文件|文档|文章|贴文|帖子|留言|评论|论坛|部落格|博客|截图"
    r"|传单|复制|贴上|贴过来|粘贴|转发|隐藏|原始码|源代码|写着|写道|上面说|里面说"
)
_HIDDEN_MARKER_RE = _compile(
    r"<!--|(?<![a-z])(?:hidden|invisible|white\s+text|display\s*:\s*none|font-size\s*:\s*0)"
    r"(?![a-z])|隐藏|看不见|看不到的?文字|白色文字"
)
_QUOTED_RE = re.compile(
    r"(?<![A-Za-z])'((?:[^']|(?<=[A-Za-z])'(?=[A-Za-z])){6,}?)'(?![A-Za-z])"
    r"|\"([^\"]{6,})\"|“([^”]{3,})”|「([^」]{3,})」|『([^』]{3,})』|<!--(.*?)-->|‘([^’]{6,})’"
    r"|<([a-z]+)[^>]*>([^<]{6,})</",
    re.DOTALL,
)
_QUOTE_SIGNAL_RE = _compile(
    rf"{_URL_OR_EMAIL}"
    r"|(?<![a-z])(?:authori[sz]|consent|permission|permitted|allowed|approv|agreed|opt(?:ed)?[\s-]in"
    r"|shar(?:e|ed|es|ing)|send|sent|forward|upload|disclos|export|transfer|grant|access|override"
    r"|memory|memories|system|admin|developer|verified|trusted|instruction|assistant|ai"
    r"|recommend|promot|priority|privileg)"
    r"|授权|同意|允许|许可|批准|分享|共享|提供给|发送|寄|转寄|转发|上传|公开|透露|覆盖|记忆|系统|管理员"
    r"|开发者|验证|信任|指令|助理|助手|推荐|权限|优先"
)
_QUOTE_SUPPORT = 0.5


def _quoted_spans(message: str) -> list[str]:
    """Text the user quotes from a page, e-mail or document (empty without a source marker)."""
    text = unicodedata.normalize("NFKC", message)
    if not _SOURCE_MARKER_RE.search(_normalise(text)):
        return []
    spans = [next(g for g in m.groups()[::-1] if g) for m in _QUOTED_RE.finditer(text)]
    if not spans:
        marker = _SOURCE_MARKER_RE.search(_normalise(text))
        start = marker.end() if marker else 0
        colon = re.search(r"[:：]", text[start:])
        if colon:
            spans.append(text[start + colon.end() :])
    return [s for s in spans if s.strip()]


def _quoted_source_rule(candidate: MemoryCandidate) -> str | None:
    """The candidate repeats a claim from text the user quoted out of a page or e-mail.

    What a web page, e-mail or document says is not what the user said; a candidate that
    repeats it is rejected when the quoted text was hidden, or when the candidate carries
    a steering sign (consent or authorisation, sharing, an address, "system", "memory").
    """
    if not candidate.user_message:
        return None
    hidden = bool(_HIDDEN_MARKER_RE.search(_normalise(candidate.user_message)))
    for span in _quoted_spans(candidate.user_message):
        ratio = support_ratio(candidate.content, span)
        if ratio is None or ratio < _QUOTE_SUPPORT:
            continue
        if hidden or _QUOTE_SIGNAL_RE.search(_normalise(candidate.content)):
            return "injection:quoted-source"
    return None


# --------------------------------------------------------------------------- user_refused

_EN_STORE_VERBS = (
    r"(?:remember|save|store|memori[sz]e|record|log|retain|persist|file|track"
    r"|keep\s+(?:this|that|it|them)\s+(?:in\s+(?:mind|memory)|on\s+(?:file|record)|anywhere|around"
    r"|saved|stored)|keep\s+(?:this|that|it|them)(?=\s*(?:[.,!?;)]|$|please|ok|okay|thanks))"
    r"|(?:keep|make|take|leave)\s+(?:any\s+|a\s+)?(?:notes?|records?|logs?|track|copy|copies)"
    r"\s+(?:of|about|on)|(?:hold|hang)\s+on\s*to"
    r"|(?:write|note|jot|put|take|mark|type)\s+(?:(?:this|that|it|them|any\s+of\s+(?:this|that))\s+)?"
    r"down|note\s+(?:this|that|it)|make\s+(?:a\s+)?note|take\s+note"
    r"|(?:put|add|write|save|store)\s+(?:this|that|it)\s+(?:in|into|to|on)\s+(?:your\s+|my\s+|the\s+)?"
    r"(?:notes?|memory|memories|profile|records?|files?|logs?))"
)
"""Ways to keep something: the verbs a refusal negates ("don't keep a note of that")."""
_REFUSAL_RULES: list[Rule] = [
    (
        "refusal:dont-remember",
        _compile(
            r"(?:^|[.!?,;:()\n\u2013\u2014-]\s*|(?<![a-z])(?:please|pls|but|and|so|just|oh|ok|okay"
            r"|that)\s+)"
            rf"(?:don'?t|do\s+not|never)\s+(?:ever\s+)?{_EN_STORE_VERBS}(?![a-z])"
        ),
    ),
    (
        "refusal:no-need",
        _compile(
            r"(?<![a-z])(?:no\s+need\s+to|you\s+don'?t\s+(?:need|have)\s+to|there'?s\s+no\s+need\s+to"
            rf"|you\s+do\s+not\s+(?:need|have)\s+to)\s+{_EN_STORE_VERBS}(?![a-z])"
        ),
    ),
    (
        "refusal:dont-want-stored",
        _compile(
            r"(?<![a-z])(?:don'?t|do\s+not)\s+want\s+(?:you|memora|it|this|that|the\s+assistant)\s+"
            r"(?:to\s+)?(?:remember|save|store|record|be\s+(?:saved|stored|remembered|recorded))"
        ),
    ),
    (
        "refusal:rather-not",
        _compile(
            r"(?<![a-z])(?:i'?d|i\s+would)\s+(?:rather|prefer)\s+(?:(?:that\s+|if\s+)?you|it|this"
            r"|that)\s+(?:not|didn'?t|don'?t|wasn'?t|weren'?t)\s+(?:be\s+)?(?:remember|save|store"
            r"|record|keep|memori[sz]e|kept|saved|stored|recorded|remembered)"
        ),
    ),
    (
        "refusal:keep-out",
        _compile(
            r"(?<![a-z])(?:keep|leave)\s+(?:this|that|it)\s+out\s+of\s+(?:your\s+|my\s+|the\s+)?"
            r"(?:long[\s-]?term\s+)?(?:memory|memories|notes|records?|files?|profile)"
            r"|(?<![a-z])not\s+for\s+(?:your|the)\s+(?:notes|memory|memories|records?|files?)"
        ),
    ),
    (
        "refusal:forget-that",
        _compile(
            r"(?<!don't\s)(?<!dont\s)(?<!do\snot\s)(?<!never\s)(?<!not\s)(?<!let\sme\s)"
            r"(?<!to\s)(?<!i\s)(?<!i'll\s)(?<!won't\s)(?<![a-z])forget\s+(?:(?:that|what)\s+i\s+(?:just\s+)?(?:said|told\s+you|mentioned|wrote)"
            r"|i\s+said\s+(?:that|this|it)|about\s+(?:that|this|it)|this|that|it)(?![a-z])"
        ),
    ),
    (
        "refusal:off-the-record",
        _compile(
            r"(?<![a-z])(?:off\s+the\s+record|not\s+for\s+(?:the\s+)?record"
            r"|keep\s+(?:this|it|that)\s+between\s+us)(?![a-z])"
        ),
    ),
    (
        "refusal:not-in-memory",
        _compile(
            r"(?<![a-z])(?:don'?t|do\s+not|never)\s+(?:add|put)\s+(?:this|that|it)\s+(?:to|in|into)\s+"
            r"(?:your\s+|my\s+)?(?:memory|memories|notes|profile)"
        ),
    ),
    (
        "refusal:not-to-be-kept",
        _compile(
            r"(?<![a-z])(?:this|that|it|these|those)\s+(?:doesn'?t|does\s+not|don'?t|do\s+not"
            r"|shouldn'?t|should\s+not|mustn'?t|must\s+not|needn'?t|need\s+not|isn'?t|is\s+not)"
            r"\s+(?:need\s+to\s+)?(?:be\s+|to\s+be\s+|get\s+|going\s+(?:to\s+be\s+|in))?(?:saved"
            r"|stored|remembered|recorded|noted|logged|kept|written\s+down|memori[sz]ed|filed"
            r"|tracked|for\s+(?:your|the)\s+(?:notes|memory|records?))(?![a-z])"
            r"|(?<![a-z])not\s+(?:worth|something\s+(?:to|you\s+need\s+to|worth))\s+(?:remembering"
            r"|saving|storing|noting|recording|keeping|logging|writing\s+down|remember|save|store"
            r"|note|record|keep|log|write\s+down)(?![a-z])"
        ),
    ),
    (
        "refusal:between-us",
        _compile(
            r"(?<![a-z])(?:keep|keeping|kept|stays?|staying|remains?|just|strictly|only|is|it'?s"
            r"|that'?s|this'?s)\s+(?:\w+\s+)?between\s+(?:us|you\s+and\s+me|ourselves"
            r"|the\s+two\s+of\s+us)(?![a-z])"
            r"|(?:^|[.!?,;:]\s*)between\s+(?:you\s+and\s+me|us|ourselves)\s*[,:]"
            r"|(?<![a-z])(?:in\s+(?:strict\s+)?confidence|strictly\s+confidential|(?:this|that|it)"
            r"(?:'s|\s+is)\s+(?:private|confidential|a\s+secret))(?![a-z])"
        ),
    ),
    (
        "refusal:zh-between-us",
        _compile(
            r"(?:我们|咱们|你我)俩?之间(?:的(?:秘密|事|话)|说说|知道就好|就好)|(?:只有)?你知道就好"
            r"|天知地知|(?:帮我|替我|请|要|给我)保密|保密(?:喔|哦|啊|呀|吧|一下|就好)?(?:$|[,。!?])"
        ),
    ),
    (
        "refusal:zh-dont-remember",
        _compile(
            r"(?<!我)(?:不要|别|不用|不必|不需要|无须|毋须|请勿|勿|不准|不许|用不着|没必要|甭|不需)再?"
            r"(?:帮我|替我|给我)?"
            r"(?:记住|记得|记下|记录|记在|记到|记进|记|存档|存|保存|储存|写下|写进|写入|写到|写在|抄下"
            r"|放进|加进|加入|留[着著]|留下|留存|保留|留底|留档|备注|登记|归档|收录"
            r"|留(?=$|[,。!?;、了啊喔哦吧呀啦]))"
        ),
    ),
    (
        "refusal:zh-dont-want-stored",
        _compile(
            r"不(?:希望|想|要|想要)(?:让|被)?(?:你|memora|助理|助手|它)再?(?:记|存|保存|记录|留)"
        ),
    ),
    (
        "refusal:zh-forget-that",
        _compile(
            r"忘(?:掉|记)我?(?:刚才|刚刚|之前|前面)?(?:说|讲|提)(?:的|过的)|当我没说|就当没说过?"
        ),
    ),
]


# --------------------------------------------------------------------------- assistant_generated

_ASSISTANT_RULES: list[Rule] = [
    (
        "assistant:attribution",
        _compile(
            r"(?<![a-z])(?:assistant|ai|bot|chatbot|model|memora|gpt|chatgpt|llm)(?:'s)?\s+"
            r"(?:has\s+|had\s+)?(?:suggested|recommended|proposed|said|told|thinks|believes|generated"
            r"|created|wrote|advised|explained|concluded|decided|assumed|guessed|inferred)(?![a-z])"
            r"|(?<![a-z])(?:suggested|recommended|proposed|generated|written)\s+by\s+(?:the\s+)?"
            r"(?:assistant|ai|bot|memora|model)(?![a-z])"
        ),
    ),
    (
        "assistant:zh-attribution",
        _compile(
            r"(?:助理|助手|(?<![a-z])ai|机器人|模型|memora|chatgpt|gpt)(?:之前|刚才|已经|曾)?"
            r"(?:建议|推荐|提议|提出|说|认为|觉得|生成|产生|写|整理|推测|猜测|判断)"
        ),
    ),
]

_STEMMER = snowballstemmer.stemmer("english")
_STOPWORDS = _word_set("""
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not of off on once only or other our ours out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours also i'm i'll i've i'd it's don't s t
    user users user's memora learner person
    under below sub over above less fewer around approximately approx roughly nearly almost
""")
"""English stopwords plus the framing words an extractor adds ("user", ...)."""
_FRAMING_VERBS = frozenset(
    _STEMMER.stemWord(w)
    for w in _word_set("prefer like love want wish plan dislike hate enjoy need favour favor")
)
"""Stems that phrase a preference; ignored when measuring support ("prefers" vs "like")."""
_EN_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_YEAR_RE = re.compile(r"(?:19|20)\d\d")
_ZH_FRAMING_RE = re.compile(
    r"使用者|用户|该用户|这位使用者|学习者|我|你|他|她|偏好|喜欢|希望|想要|讨厌|不喜欢|打算|计划"
)
_ZH_SYNONYMS = (
    ("爸妈", "父母"),
    ("爸爸", "父亲"),
    ("老爸", "父亲"),
    ("妈妈", "母亲"),
    ("老妈", "母亲"),
    ("老婆", "妻子"),
    ("太太", "妻子"),
    ("老公", "丈夫"),
    ("使用", "用"),
    ("男朋友", "男友"),
    ("女朋友", "女友"),
    ("小孩", "孩子"),
    ("宝宝", "孩子"),
    ("儿女", "子女"),
    ("爸", "父亲"),
    ("妈", "母亲"),
)
"""Everyday and formal words for the same thing (an extractor writes 父母 for 爸媽)."""
_ZH_PARTICLES = frozenset("的了是在和与及也都很吗呢吧啊呀要会把被就还又")


def _english_tokens(text: str) -> list[str]:
    """Lower-case English content words of normalised text, without stopwords."""
    tokens = (t.removesuffix("'s") for t in _EN_TOKEN_RE.findall(text))
    return [t for t in tokens if t not in _STOPWORDS]


def _cjk_runs(text: str) -> list[str]:
    """Chinese runs of normalised text with framing words and particles cut out."""
    text = _ZH_FRAMING_RE.sub(" ", text)
    for word, canonical in _ZH_SYNONYMS:
        text = text.replace(word, canonical)
    text = "".join(" " if ch in _ZH_PARTICLES else ch for ch in text)
    return re.findall(f"[{HAN_CHARS}]+", text)


_ABBREVIATIONS = {
    **{
        m[:3]: m
        for m in _word_set("""january february march april may june july august
    september october november december monday tuesday wednesday thursday friday saturday
    sunday""")
    },
    "sept": "september",
    "tues": "tuesday",
    "thur": "thursday",
    "thurs": "thursday",
    "h": "hour",
    "hr": "hour",
    "hrs": "hour",
    "min": "minute",
    "mins": "minute",
    "sec": "second",
    "secs": "second",
    "wk": "week",
    "wks": "week",
    "mo": "month",
    "mos": "month",
    "yr": "year",
    "yrs": "year",
    "km": "kilometre",
    "kg": "kilogram",
    "lb": "pound",
    "lbs": "pound",
    "k": "thousand",
}
"""Month, weekday and unit abbreviations an extractor spells out ("Sept" -> "September")."""
_NUMBER_UNIT_RE = re.compile(r"(\d+)(?:st|nd|rd|th)?([a-z]*)")


def _canonical_tokens(tokens: Iterable[str]) -> Iterator[str]:
    """Spell out abbreviations and number words; split "4h" into "4" and "hour"."""
    for token in tokens:
        match = _NUMBER_UNIT_RE.fullmatch(token)
        if match:
            yield match.group(1)
            if match.group(2):
                yield _ABBREVIATIONS.get(match.group(2), match.group(2))
        elif token in _NUMBER_WORDS:
            yield str(_NUMBER_WORDS[token])
        else:
            yield _ABBREVIATIONS.get(token, token)


def _support_tokens(text: str) -> set[str]:
    """Content tokens for the overlap test: English stems and Chinese character bigrams."""
    words = _canonical_tokens(_english_tokens(text))
    stems = {_STEMMER.stemWord(t) for t in words if not _YEAR_RE.fullmatch(t)}
    tokens = stems - _FRAMING_VERBS
    for run in _cjk_runs(text):
        tokens.update(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
    return tokens


def _mostly_chinese(text: str) -> bool:
    """True if CJK characters outnumber Latin letters (the text's dominant script)."""
    cjk = len(_CJK_RE.findall(text))
    latin = len(re.findall(r"[a-z]", text))
    return cjk > latin


def support_ratio(content: str, user_message: str) -> float | None:
    """Share of the candidate's content tokens that also occur in the user's message.

    Args:
        content: Candidate content.
        user_message: The message the candidate came from.

    Returns:
        A ratio in [0, 1], or ``None`` when it cannot be measured lexically (no content
        tokens, or the two texts are written in different scripts).
    """
    content_n, message_n = _normalise(content), _normalise(user_message)
    if _mostly_chinese(content_n) != _mostly_chinese(message_n):
        return None
    candidate_tokens = _support_tokens(content_n)
    if not candidate_tokens:
        return None
    message_tokens = _support_tokens(message_n)
    message_tokens |= _initialisms(_english_tokens(content_n), _english_tokens(message_n))
    supported = sum(1 for token in candidate_tokens if _token_supported(token, message_tokens))
    return supported / len(candidate_tokens)


_MIN_SHARED_PREFIX = 4


def _token_supported(token: str, message_tokens: set[str]) -> bool:
    """The token occurs in the message, or (English) one word shortens the other ("intro",
    "JS" for "JavaScript")."""
    if token in message_tokens:
        return True
    if not token.isascii() or not token.isalpha():
        return False
    return any(
        other.isascii() and (_abbreviates(token, other) or _abbreviates(other, token))
        for other in message_tokens
    )


_MAX_ABBREVIATION = 5


def _abbreviates(short: str, long: str) -> bool:
    """``short`` shortens ``long``: a prefix of 4+ letters ("intro"), or a 2-5 letter
    initialism whose letters occur in order in a much longer word ("js", "javascript")."""
    if len(short) >= len(long) or not short.isalpha():
        return False
    if len(short) >= _MIN_SHARED_PREFIX and long.startswith(short):
        return True
    if not 2 <= len(short) <= _MAX_ABBREVIATION or short[0] != long[0]:
        return False
    if len(long) < len(short) + 3:
        return False
    rest = iter(long[1:])
    return all(ch in rest for ch in short[1:])


def _initialisms(content_words: list[str], message_words: Iterable[str]) -> set[str]:
    """Content stems spelled by a message initialism ("ML" -> "machine learning")."""
    found: set[str] = set()
    for short in message_words:
        if not (2 <= len(short) <= _MAX_ABBREVIATION and short.isalpha()):
            continue
        for i in range(len(content_words) - len(short) + 1):
            run = content_words[i : i + len(short)]
            if "".join(w[0] for w in run) == short:
                found.update(_STEMMER.stemWord(w) for w in run)
    return found


def _check_assistant_attribution(candidate: MemoryCandidate) -> str | None:
    """The candidate says the assistant suggested, said or decided it."""
    return _first_match(_normalise(candidate.content), _ASSISTANT_RULES)


_NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six")
        + ("seven", "eight", "nine", "ten", "eleven", "twelve")
    )
}
_ZH_NUMERALS = dict(
    zip("零一二两三四五六七八九十", (0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10), strict=True)
)
_SPECIFIC_RE = re.compile(r"\d+(?:[.,]\d+)*|(?<![A-Za-z])[A-Z][A-Za-z0-9]*[a-z0-9][A-Za-z0-9]*")
"""Numbers and capitalised names (``Mochi``, ``A7C``): the details an assistant makes up."""


def _numbers_said(text: str) -> set[str]:
    """Digit strings of ``text`` plus the numbers it spells out (two, 两, 十)."""
    said = {m.replace(",", "") for m in re.findall(r"\d+(?:[.,]\d+)*", text)}
    said.update(str(n) for w, n in _NUMBER_WORDS.items() if re.search(rf"\b{w}\b", text))
    said.update(str(n) for ch, n in _ZH_NUMERALS.items() if ch in text)
    return said


def _unsupported_specific(content: str, user_message: str) -> bool:
    """True if the candidate names a number or a capitalised name the user never wrote.

    Years are skipped (a relative date is resolved to one), as is the first word of each
    sentence (capitalised by grammar) and the framing word "User".
    """
    message = unicodedata.normalize("NFKC", user_message)
    message_lower = message.lower()
    numbers = _numbers_said(message_lower)
    message_words = list(_canonical_tokens(_EN_TOKEN_RE.findall(message_lower)))
    stems = {_STEMMER.stemWord(t) for t in message_words}
    text = unicodedata.normalize("NFKC", content)
    stems |= _initialisms(_EN_TOKEN_RE.findall(text.lower()), message_words)
    for match in _SPECIFIC_RE.finditer(text):
        token = match.group()
        before = text[: match.start()].rstrip()
        if token[0].isdigit():
            value = token.replace(",", "")
            if _YEAR_RE.fullmatch(value) or value in numbers:
                continue
            return True
        if not before or before[-1] in ".!?;:。！？；：" or token.lower() in {"user", "users"}:
            continue
        lower = token.lower()
        if lower in message_lower or _STEMMER.stemWord(lower) in stems:
            continue
        if lower.isalpha() and any(
            _abbreviates(lower, w) or _abbreviates(w, lower) for w in message_words
        ):
            continue
        return True
    return False


_CHOICE_RE = _compile(
    r"(?<![a-z])(?:or|vs\.?|versus|between|compare|comparing|recommend|suggest|should\s+i)(?![a-z])"
    r"|还是|或是|或者|哪(?:个|一个|种|款|家|本)|比较|对比|推荐|建议|该不该|要不要|[?？]|吗"
)
"""The user weighs options or asks for advice."""
_DECISION_RE = _compile(
    r"(?<![a-z])(?:decided|decides|chose|chosen|chooses|picked|selected|opted|went\s+with|bought"
    r"|purchased|ordered|booked|signed\s+up|owns|settled\s+on)(?![a-z])"
    r"|决定|选择了?|选了|买了|购买了?|订了|报名了|入手|是.{0,6}的忠实"
)
"""A decision or purchase asserted by the candidate."""


_FIRST_PERSON_RE = _compile(
    r"(?<![a-z])(?:i|i'm|im|i've|i'd|i'll|me|my|mine|myself|we|we're|our|ours|us)(?![a-z])"
    r"|我|咱|俺"
)
_QUESTION_RE = _compile(
    r"[?？]|^\W*(?:what|what's|whats|who|where|when|why|how|which|is|are|can|could|does|do|did"
    r"|should|would|will|tell\s+me|explain)(?![a-z])|吗|什么|哪|怎么|如何|多少|几|为什么|是否"
)
_PLAN_RE = _compile(
    r"(?<![a-z])(?:plan(?:s|ning|ned)?|going\s+to|will|intends?|intending|trips?|travel\w*"
    r"|visit\w*|mov(?:e|es|ing)\s+to|wants?\s+to|hop(?:es|ing)\s+to|aims?|preparing"
    r"|considering|thinking\s+(?:of|about)|interested|learning|studying|applying|attending"
    r"|relocat\w*)(?![a-z])"
    r"|打算|计划|准备|要去|想去|会去|旅行|旅游|出游|搬|考虑|有兴趣|感兴趣|想学|在学|申请|报考"
)
"""A claim about the user's plans, intentions or current pursuits."""
_PLAN_CLAIM_RE = _compile(
    r"(?<![a-z])(?:(?:plans?|planning|planned|intends?|intending|decided|decides|going)\s+to"
    r"|will)\s+([a-z]+)(?:\s+(?:the|a|an|his|her|their|its|some|to|on|in|for|with)){0,2}"
    r"(?:\s+([a-z]+))?"
)


def _unsupported_plan(content: str, message: str) -> str | None:
    """A plan, decision or pursuit the message does not state.

    A question that says nothing about the asker ("what's the capital of X?") supports no
    claim about the user's plans; and a stated plan needs its action or object in the
    message ("plans to withhold rent" from a request to draft a letter does not).
    """
    content_n, message_n = _normalise(content), _normalise(message)
    claims_plan = _PLAN_RE.search(content_n) or _DECISION_RE.search(content_n)
    if (
        claims_plan
        and _QUESTION_RE.search(message_n)
        and not _FIRST_PERSON_RE.search(message_n)
        and not _PLAN_RE.search(message_n)
    ):
        return "assistant:question-not-plan"
    message_tokens = _support_tokens(message_n)
    for match in _PLAN_CLAIM_RE.finditer(content_n):
        words = [w for w in match.groups() if w and w not in _STOPWORDS]
        if words and not any(
            _token_supported(stem, message_tokens) for stem in _support_tokens(" ".join(words))
        ):
            return "assistant:unsupported-plan"
    return None


def _check_assistant_support(candidate: MemoryCandidate) -> str | None:
    """The user's message does not support the candidate.

    Three lexical signs: too few of the candidate's content words occur in the message;
    the candidate names a number or capitalised name the user never wrote; or the user
    weighed options (a question, "X or Y", 还是) and the candidate states a decision.
    """
    if candidate.user_message is None:
        return None
    content, message = candidate.content, candidate.user_message
    ratio = support_ratio(content, message)
    if ratio is not None and ratio < SUPPORT_THRESHOLD:
        return "assistant:low-support"
    if _mostly_chinese(_normalise(content)) != _mostly_chinese(_normalise(message)):
        # Written in another script: names are translated, but numbers stay numbers.
        said = _numbers_said(unicodedata.normalize("NFKC", message).lower())
        for number in re.findall(r"\d+(?:[.,]\d+)*", unicodedata.normalize("NFKC", content)):
            value = number.replace(",", "")
            if not _YEAR_RE.fullmatch(value) and value not in said:
                return "assistant:unsupported-detail"
        return None
    if _unsupported_specific(content, message):
        return "assistant:unsupported-detail"
    message_n, content_n = _normalise(message), _normalise(content)
    if (
        _CHOICE_RE.search(message_n)
        and _DECISION_RE.search(content_n)
        and not _DECISION_RE.search(message_n)
    ):
        return "assistant:unmade-choice"
    return _unsupported_plan(content, message)


# --------------------------------------------------------------------------- ephemeral

_EN_TODAY = r"(?:today|tonight|this\s+(?:morning|afternoon|evening)|tomorrow)"
_EN_EVENT = (
    r"(?:meeting|appointment|call|lunch|dinner|class|interview|flight|dentist|doctor|deadline)"
)
_EN_CLOCK = r"(?:\d{1,2}(?::\d{2})?\s*(?:am|pm|o'clock)|at\s+\d{1,2}:\d{2})"
_ZH_TODAY = r"(?:今天|今晚|今早|今日|明天|明早|待会儿?|等一下|等下)"
_ZH_EVENT = (
    r"(?:[0-9零一二两三四五六七八九十]+点|开会|会议|约会|面试|上课|吃饭|聚餐|看医生|看牙医|航班)"
)

_EPHEMERAL_RULES: list[Rule] = [
    (
        "ephemeral:this-time",
        _compile(
            r"(?<![a-z])(?:(?:just|only)\s+this\s+time|this\s+time\s+only|for\s+this\s+time"
            r"|this\s+time\s*,|this\s+time\s+(?:please|just|use|answer|respond|reply|give|make"
            r"|keep|write|explain|skip))(?![a-z])"
            r"|(?<![a-z])(?:answer|respond|reply|explain|write|use|give|keep\s+it|make\s+it)"
            r"(?![a-z])[^.!?\n]{0,40}(?<![a-z])this\s+time(?![a-z])"
        ),
    ),
    (
        "ephemeral:for-now",
        _compile(
            r"(?<![a-z])(?:just\s+for\s+now|for\s+now|right\s+now|temporarily|for\s+the\s+moment"
            r"|for\s+the\s+next\s+(?:few\s+)?(?:minutes?|hours?))(?![a-z])"
        ),
    ),
    (
        "ephemeral:this-answer",
        _compile(
            r"(?<![a-z])(?:for|in)\s+this\s+(?:answer|question|reply|response|conversation|chat"
            r"|exercise|task|one)(?![a-z])"
        ),
    ),
    (
        "ephemeral:today-only",
        _compile(
            r"(?<![a-z])(?:today\s+only|only\s+today|just\s+today|just\s+for\s+today)(?![a-z])"
        ),
    ),
    (
        "ephemeral:same-day-event",
        _compile(
            rf"(?<![a-z]){_EN_TODAY}(?![a-z])[^.!?\n]{{0,30}}(?:{_EN_CLOCK}|{_EN_EVENT})"
            rf"|(?<![a-z])(?:{_EN_CLOCK}|{_EN_EVENT})[^.!?\n]{{0,30}}(?<![a-z]){_EN_TODAY}(?![a-z])"
        ),
    ),
    (
        "ephemeral:zh-this-time",
        _compile(
            r"(?:这次|这一次|这回|本次)(?:先|就|只|请|用|帮|回答|不用|不要)|(?:只有|就|仅此)这一?次"
            r"|这一题|这题|本题"
        ),
    ),
    ("ephemeral:zh-for-now", _compile(r"暂时|目前先|先这样|今天(?:先|就|只|请|用|帮)|只限今天")),
    ("ephemeral:zh-same-day-event", _compile(rf"{_ZH_TODAY}[^,。!?]{{0,10}}?{_ZH_EVENT}")),
    (
        "ephemeral:this-item",
        _compile(
            r"(?<![a-z])(?:for|in|with)\s+this\s+(?:[a-z]+\s+)?(?:letter|email|e-mail|essay|message"
            r"|post|document|doc|draft|report|translation|list|table|summary|paragraph|sentence"
            r"|script|function|homework|assignment|sheet|slide|slides|page)(?![a-z])"
            r"|(?<![a-z])(?:make|do|write|format|turn)\s+this\s+one(?![a-z])"
        ),
    ),
    (
        "ephemeral:at-the-moment",
        _compile(
            r"(?<![a-z])(?:at\s+the\s+moment|while\s+we\s+(?:chat|talk|speak)|as\s+we\s+speak"
            r"|at\s+this\s+moment)(?![a-z])"
        ),
    ),
    (
        "ephemeral:doing-now",
        _compile(
            r"(?<![a-z])(?:i'?m|i\s+am|(?:the\s+)?user\s+is|they\s+are|he\s+is|she\s+is)\s+"
            r"(?:currently\s+|now\s+|just\s+|still\s+)?(?:sitting|waiting|eating|drinking|standing"
            r"|lying|queu(?:e)?ing|stuck|heading|walking|driving|riding|boarding|having\s+(?:lunch"
            r"|dinner|breakfast|a\s+(?:coffee|snack|break))|on\s+(?:the|a|my|their)\s+(?:bus|train"
            r"|subway|metro|tube|way|plane|flight|break|lunch\s+break)|at\s+the\s+(?:airport"
            r"|gate|station|bus\s+stop))(?![a-z])"
        ),
    ),
    (
        "ephemeral:state-now",
        _compile(
            r"(?<![a-z])(?:tired|sleepy|hungry|thirsty|busy|exhausted|bored|stressed|sick|hungover"
            r"|in\s+a\s+(?:hurry|rush))\s+(?:today|tonight|right\s+now|now|this\s+(?:morning"
            r"|afternoon|evening))(?![a-z])"
            r"|(?<![a-z])(?:battery|charge)\s+(?:is\s+)?(?:at\s+\d+\s*%|(?:almost\s+|nearly\s+)?"
            r"(?:low|dying|dead|empty|flat))"
            r"|(?<![a-z])(?:it'?s|it\s+is)\s+(?:\w+\s+)?(?:raining|snowing|pouring|storming|hailing)"
            r"(?![a-z])"
        ),
    ),
    (
        "ephemeral:zh-right-now",
        _compile(
            r"(?:现在|此刻|这会儿)(?:有点|好(?:饿|累|困|渴|忙|冷|热)|要去|正要)"
            r"|(?:等一下|等下|待会儿?|一会儿|晚点)(?:要|就|得|还|有|去|会)"
            r"|刚刚?(?:喝|吃|到|下班|起床|睡醒|回家|看完|洗完)"
            r"|(?:正)?在(?:排队|等车|等公车|等公交|等人|等餐)"
            r"|在(?:捷运|地铁|公车|公交|火车|高铁|飞机|车|路)上"
            r"|(?:今晚|今天晚上|今天|今早)(?:要|在|得|又)?(?:加班|熬夜|值班)"
            r"|这(?:封|篇|段|份|一段)(?:信|邮件|信件|文章|文字|报告|简历|履历|讯息|消息)"
        ),
    ),
]


# A temporary physical or emotional state, or what the user is doing right now, is not a
# durable fact unless a durable marker says it keeps happening ("chronic", "always", 长期).
_DURABLE_RE = _compile(
    r"(?<![a-z])(?:always|usually|often|frequently|regularly|constantly|generally|normally"
    r"|typically|chronic(?:ally)?|every\s+(?:day|night|morning|evening|afternoon|week|time)"
    r"|most\s+(?:days|nights|mornings|evenings|of\s+the\s+time)|all\s+the\s+time|tends?\s+to"
    r"|for\s+(?:years|months|weeks|a\s+long\s+time)|since\s+(?:\d{4}|childhood|birth)|easily"
    r"|gets?|lately|these\s+days|whenever|when|if|tired\s+of|sick\s+of|bored\s+(?:of|with|by)"
    r"|condition|disorder|diagnosed)(?![a-z])"
    r"|一直|经常|常常|时常|总是|长期|慢性|每天|每晚|每次|老是|习惯|向来|平常|通常|平时|多年|从小|容易"
    r"|常|每当|最近|一到|只要|觉得.{0,8}无聊"
)
_TRANSIENT_STATE_RE = _compile(
    r"(?<![a-z])(?:hungry|starving|famished|thirsty|sleepy|drowsy|hungover|bored)(?![a-z])"
    r"(?!\s+(?:for|to|of|with|by))"
    r"|(?<![a-z])(?:has|have|having|got|with)\s+(?:a\s+|an\s+)(?:\w+\s+)?(?:headache|hangover"
    r"|stomach\s*ache|toothache|migraine|cold|fever|sore\s+throat)(?![a-z])"
    r"(?=\s*(?:$|[,.;:!?)]|and|but|so|today|tonight|right|rn|at|this|now|again))"
    r"|(?<![a-z])(?:in|into)\s+(?:a\s+)?(?:(?:bad|good|great|terrible|foul|awful|grumpy|weird)"
    r"\s+mood|meeting|call|hurry|rush|lecture)(?![a-z])(?!\s+(?:cent(?:er|re)s?|hours?|rooms?))"
    r"|(?<![a-z])on\s+(?:a|the)\s+(?:call|phone|zoom)(?![a-z])"
    r"|(?:好|很|太|超|有点|肚子|快)饿|饿(?:了|死|扁|坏)|口渴|渴了|好渴|很渴|困了|好困|很困|想睡|犯困|宿醉|心情(?:不好|很差|差|不错|很好|好|低落|不佳)"
    r"|(?:在|正在)(?:开会|洗澡|吃饭|午休|通话|打电话)|开会中|会议中|头痛|头疼|肚子痛|胃痛"
)
_TIMED_STATE_RE = _compile(
    r"(?<![a-z])(?:tired|exhausted|busy|stressed|sad|upset|angry|anxious|nervous|down|sick"
    r"|unwell|ill|excited|happy|frustrated|annoyed|grumpy|cranky|overwhelmed|sore|cold|hot"
    r"|freezing|lonely|worried|jet[\s-]?lagged|not\s+feeling\s+well|feeling\s+off|low\s+on"
    r"\s+energy|(?:at|in)\s+(?:the\s+)?(?:gym|office|work|class|store|supermarket|mall|cinema"
    r"|hospital|doctor'?s?|dentist|library|cafe))(?![a-z])"
    r"|累|忙|烦|无聊|不舒服|难过|生气|紧张|焦虑|沮丧|感冒|发烧|好冷|很冷|好热|很热|开心|兴奋|郁闷|不爽"
    r"|疲倦|疲惫|没精神|没力气|头晕"
)
_NOW_RE = _compile(
    r"(?<![a-z])(?:today|tonight|right\s+now|rn|atm|at\s+the\s+(?:moment|minute)"
    r"|this\s+(?:morning|afternoon|evening)|just\s+now|at\s+this\s+point)(?![a-z])"
    r"|现在|此刻|这会儿|今天|今晚|今早|今日|刚才|刚刚|这时候|此时"
)


def _clauses(text: str) -> list[str]:
    return [
        c for c in re.split(r"[.!?;,，。！？；\n]|(?<![a-z])(?:but|and|so)(?![a-z])", text) if c
    ]


def _transient_state_rule(candidate: MemoryCandidate) -> str | None:
    """The candidate reports a passing state (hungry, in a meeting, 心情不好 today)."""
    content = _normalise(candidate.content)
    if _DURABLE_RE.search(content):
        return None
    if _TRANSIENT_STATE_RE.search(content):
        return "ephemeral:transient-state"
    if not _TIMED_STATE_RE.search(content):
        return None
    for text in _texts(candidate):
        for clause in _clauses(text):
            if (
                _TIMED_STATE_RE.search(clause)
                and _NOW_RE.search(clause)
                and not _DURABLE_RE.search(clause)
            ):
                return "ephemeral:state-today"
    return None


# --------------------------------------------------------------------------- too_vague

_GENERIC_WORDS = _word_set("""
    good great nice better best fine ok okay helpful useful answer answers response responses
    reply replies thing things stuff something anything everything nothing lot lots way ways
    info information help like likes liked prefer prefers want wants love loves enjoy enjoys
    really much many well one ones kind sort
    say says said tell tells told mention mentions mentioned think thinks thought feel feels
    felt find finds found know knows knew accept accepts accepted care cares cared do does did
    doing done get gets got have has had thing's opinion opinions thoughts idea ideas feeling
    feelings view views interesting cool fun complicated different differently usual same
    sometimes someone somebody people others day days time times stuff whatever maybe
""")
"""Words that carry no fact of their own ("User said ok", "User has opinions")."""
_ZH_GENERIC_RE = re.compile(
    r"喜欢|偏好|想要|希望|好的|很好|好|不错|有用|回答|回复|答案|东西|事情|事|一些|这个|那个|这件|那件"
    r"|某些|什么|一切|所有"
    r"|觉得|感觉|认为|表示|说过|说|还好|还行|还可以|一般般|就那样|那样|这样|那种|这种|有趣|有意思"
    r"|有道理|想法|看法|意见|有点|随便|无所谓|看情况|情况|某人|某个|有人|又来了|来了|最近|怎么说"
    r"|就是|总之|反正|嗯|蛮|挺|真的|差不多|有时候|有时|偶尔|某(?:些|种|件|样|方面)?|一点|有些"
    r"|之类的?|什么的|各种|方面|状况|样子|视情况|而定|看心情|不一定|说不准|不好说|取决于?|都行"
    r"|都可以|会|啦|吧|呢|哦"
)
_HEDGE_RE = _compile(
    r"(?<![a-z])(?:some|certain|various|whatever|whichever|kind\s+of|sort\s+of|kinda|sorta|a\s+few"
    r"|several|somehow|somewhat|depends?|depending|stuff|things?|something)(?![a-z])"
    r"|某|一些|有些|有点|差不多|什么|各种|之类|看情况|视情况|不一定"
)
"""Hedges and placeholders: with one of them, a broad category word names nothing."""
_HEDGE_WORDS = _word_set("""
    whatever whichever somehow somewhat somewhere certain various kinda sorta depends depend
    depending lately recently nowadays currently generally basically mostly pretty quite
    """)
_BROAD_NOUNS = _word_set("""
    music food foods movies movie films film shows show books book games game sports sport
    places place people activities activity hobbies hobby topics topic subjects subject
    issues issue problems problem reasons reason plans plan changes change projects project
    art genre genres styles style types type kinds life preference preferences taste tastes
    choice choices situation situations circumstances matters matter area areas field fields
    aspects aspect parts part things stuff work job health mood week weekend family school
    relationship relationships study studies
    """)
_ZH_BROAD_RE = re.compile(
    r"音乐|歌|食物|吃的|电影|书|游戏|运动|地方|活动|兴趣|爱好|话题|问题|计划|变化|生活|类型|风格|口味"
    r"|选择|方面|领域|部分|东西|事情?|人"
)
_MIN_CONTENT_UNITS = 2
_MIN_INFORMATIVE_CJK = 2
_FRAMED_RE = re.compile(r"(?<![a-z])(?:user'?s?|i|i'm|my)(?![a-z])|使用者|用户|我")
"""A subject frame: with one, a single informative word is a whole fact ("User is vegan")."""


def _check_too_vague(content: str) -> str | None:
    """Empty, over-long, pronoun-only or generic-only content.

    English counts content words; Chinese counts about one unit per two characters.
    """
    if not content.strip():
        return "vague:empty"
    if len(content) > MAX_MEMORY_CHARS:
        return "vague:max-length"
    text = _normalise(content)
    words = _english_tokens(text)
    cjk_chars = len(_CJK_RE.findall(text))
    hedged = bool(_HEDGE_RE.search(text))
    informative_words = [
        w
        for w in words
        if w not in _GENERIC_WORDS and w not in _HEDGE_WORDS and not (hedged and w in _BROAD_NOUNS)
    ]
    zh_text = _ZH_GENERIC_RE.sub(" ", text)
    if hedged:
        zh_text = _ZH_BROAD_RE.sub(" ", zh_text)
    informative_cjk = "".join(_cjk_runs(zh_text))
    units = len(words) + cjk_chars / 2
    if units < _MIN_CONTENT_UNITS and not (
        units >= 1 and informative_words and _FRAMED_RE.search(text)
    ):
        return "vague:too-short"
    if not informative_words and len(informative_cjk) < _MIN_INFORMATIVE_CJK:
        return "vague:no-content-words"
    return None


# --------------------------------------------------------------------------- the gate


def _texts(candidate: MemoryCandidate) -> Iterator[str]:
    """The candidate's content and, when given, its user message, both normalised."""
    yield _normalise(candidate.content)
    if candidate.user_message:
        yield _normalise(candidate.user_message)


def _first_in_texts(candidate: MemoryCandidate, rules: list[Rule]) -> str | None:
    for text in _texts(candidate):
        rule = _first_match(text, rules)
        if rule:
            return rule
    return None


def _check_instruction_like(candidate: MemoryCandidate) -> str | None:
    text = _normalise(candidate.content)
    return (
        _first_match(text, _INSTRUCTION_RULES)
        or _first_match(text, _STEERING_RULES)
        or _promotion_rule(candidate.content)
        or _contact_rule(candidate.content)
        or _quoted_source_rule(candidate)
    )


def _check_user_refused(candidate: MemoryCandidate) -> str | None:
    return _first_in_texts(candidate, _REFUSAL_RULES)


def _check_ephemeral(candidate: MemoryCandidate) -> str | None:
    return _first_in_texts(candidate, _EPHEMERAL_RULES) or _transient_state_rule(candidate)


def _check_vague_candidate(candidate: MemoryCandidate) -> str | None:
    return _check_too_vague(candidate.content)


_HARD_RULES: tuple[tuple[RejectionReason, Callable[[MemoryCandidate], str | None]], ...] = (
    (RejectionReason.SENSITIVE_DATA, _check_sensitive),
    (RejectionReason.INSTRUCTION_LIKE, _check_instruction_like),
    (RejectionReason.USER_REFUSED, _check_user_refused),
    (RejectionReason.ASSISTANT_GENERATED, _check_assistant_attribution),
    (RejectionReason.EPHEMERAL, _check_ephemeral),
    (RejectionReason.TOO_VAGUE, _check_vague_candidate),
    (RejectionReason.ASSISTANT_GENERATED, _check_assistant_support),
)
"""The hard rules in their fixed order; the first that fires decides the reason."""


def check_candidate(candidate: MemoryCandidate) -> tuple[RejectionReason, str] | None:
    """Apply the hard rules to one candidate.

    Args:
        candidate: The proposed memory (with the user's message when available).

    Returns:
        ``(reason, rule_name)`` for the first rule that fires, or ``None`` if accepted.
        ``rule_name`` never contains any of the candidate's text.
    """
    # Before every other rule: their regexes cost seconds on a megabyte of text,
    # and text that is not valid UTF-8 can be neither judged nor stored.
    if len(candidate.content) > MAX_MEMORY_CHARS:
        return RejectionReason.TOO_VAGUE, "vague:max-length"
    message = candidate.user_message or ""
    if len(message) > MAX_USER_MESSAGE_CHARS:
        return RejectionReason.TOO_VAGUE, "vague:source-too-long"
    if has_surrogates(candidate.content) or has_surrogates(message):
        return RejectionReason.TOO_VAGUE, "vague:not-utf8"
    for reason, check in _HARD_RULES:
        if reason is RejectionReason.EPHEMERAL and candidate.scope is MemoryScope.THREAD:
            continue  # "for this chat" is exactly what a thread-scoped memory is for
        rule = check(candidate)
        if rule:
            return reason, rule
    return None


def apply_memory_policy(
    candidates: Iterable[MemoryCandidate],
    classifier: MemoryClassifier | None = None,
) -> tuple[list[MemoryCandidate], list[PolicyRejection]]:
    """Split candidates into accepted ones and rejections.

    Hard rules run first; the classifier (if any) only sees candidates they accepted, so it
    can add a rejection but never overturn a hard one.

    Args:
        candidates: Proposed memories.
        classifier: Optional second opinion, e.g. a model with structured output.

    Returns:
        ``(accepted, rejected)``, each in input order.
    """
    accepted: list[MemoryCandidate] = []
    rejected: list[PolicyRejection] = []
    for candidate in candidates:
        verdict = check_candidate(candidate)
        if verdict is None and classifier is not None:
            reason = classifier.classify(candidate)
            if reason is not None:
                verdict = RejectionReason(reason), f"classifier:{type(classifier).__name__}"
        if verdict is None:
            accepted.append(candidate)
        else:
            reason, rule = verdict
            rejected.append(PolicyRejection(candidate=candidate, reason=reason, rule=rule))
    return accepted, rejected
