"""Sensitive data: values recognised by their shape, and keyword + value pairs.

Library choices:

* ``detect-secrets`` (Yelp) for credentials: its plugins already know the shapes of AWS,
  GitHub, Slack, Stripe, OpenAI, JWT, private-key ... secrets and it runs fully offline.
  ``scan_line`` is used in its ad-hoc mode, where the two high-entropy plugins report every
  word; their hits are therefore re-checked here (length >= 20 and entropy above the
  plugin's own limit). The settings are global in detect-secrets, so each scan runs inside
  ``default_settings()`` under a lock, and the plugin mapping and instances are cached.
* ``python-stdnum`` for number checksums: ``luhn`` (card numbers), ``cn.ric`` (PRC
  resident ID), ``us.ssn`` and ``iban``. The Taiwan ID checksum is small and written here.

The keywords themselves are data (``rules/secrets.toml``); the shapes of a value after a
keyword are the structure below.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from stdnum import iban, luhn
from stdnum.cn import ric
from stdnum.us import ssn

from memora.text.folding import fold, fold_with_origin, nfkc_with_origin
from memora.write.policy.engine import load_rule_file

__all__ = [
    "holds_secret_shaped_value",
    "is_sensitive",
    "is_valid_tw_id",
    "mentions_secret_keyword",
    "sensitive_rule",
    "sensitive_spans",
]

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
def detect_secrets_hits(text: str) -> tuple[tuple[str, str | None], ...]:
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


_CARD_RE = re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?![\d.])")


def card_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds Luhn-valid 13-19 digit numbers (spaces/dashes allowed)."""
    spans = []
    for match in _CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn.is_valid(digits):
            spans.append(match.span())
    return spans


_TW_LETTER_CODES = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))
_TW_ID_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][12]\d{8}(?!\d)")
_TW_WEIGHTS = (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1)


def is_valid_tw_id(value: str) -> bool:
    """Check a Taiwan national ID (``[A-Z][12]\\d{8}``) including its checksum.

    The letter maps to a two-digit area code (A=10 ... with I, O, W, Z out of order);
    the eleven digits are weighted 1,9,8,7,6,5,4,3,2,1,1 and must sum to a multiple of 10.
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


def national_id_matches(text: str) -> list[tuple[str, tuple[int, int]]]:
    """Every valid national ID or IBAN in ``text`` as (rule, span), rule by rule."""
    return [
        (rule, match.span())
        for rule, pattern, valid in _ID_RULES
        for match in pattern.finditer(text)
        if valid(match.group())
    ]


_URL_CREDENTIALS_RE = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@", re.IGNORECASE)
"""A URL with a password in it: ``postgres://user:pass@host``."""

# --------------------------------------------------------------------------- keyword + value

_GAP = (
    r"(?:[\s:=#\"'「『“,]|(?<![a-z])(?:is|was|are|now|number|no\.|code|for\s+[\w.@-]+"
    r"|(?:to|for|of|on|at)\s+(?:my|our|the|his|her|their)\s+[a-z]+)(?![a-z])"
    r"|是|为|号码|号|码|字号|数字|就是|设为|改为|改成|换成|了)*?"
)
"""What may stand between a keyword and its value ("door code to my flat is")."""
_DIGIT_VALUE = r"(?:\d[\d -]{2,}\d|[a-z0-9_+/=!@#$%^&*.-]*\d[a-z0-9_+/=!@#$%^&*.-]*)"
"""A value with a digit in it: a code, a PIN, most passwords."""
_OWNER_EN = r"(?<![a-z])(?:my|our|his|her|their|(?:the\s+)?user'?s?)\s+(?:[a-z0-9.@-]+\s+){0,2}?"
_OWNER_ZH = r"(?:我|使用者|用户|他|她)的?[^\s,。!?]{0,6}?"
_REMEMBER = (
    r"(?:(?<![a-z])(?:remember|save|store|keep|note)\s+(?:the\s+)?(?:user'?s?|my|his|her)\s+"
    r"(?:[a-z0-9]+\s+)?|(?:记住|记下|记得|保存|储存|存下|存起来)(?:使用者|用户|我|他|她)?的?)"
)
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_SECRET_TOKEN = r"(?=[^\s,。]*[\d!@#$%^&*+=])[^\s,。]{6,}"
"""A password-shaped token: six or more characters with a digit or a symbol."""
_CLOSERS = {
    '"': '"”',
    "'": "'’",
    "“": '”"',
    "‘": "’'",
    "„": "“”",
    "«": "»",
    "‹": "›",
    "「": "」",
    "『": "』",
    "(": ")",
    "[": "]",
    "{": "}",
    "<": ">",
}
"""Each opening quote or bracket and the marks that may close it (a typed "…” is one pair)."""
_MAX_QUOTED_CHARS = 64
_QUOTE_BODY = rf"""[^\n"'”’」』»›]{{1,{_MAX_QUOTED_CHARS}}}"""
_QUOTED_AFTER = (
    (r"\s*(?:is|was|是|为|[:=])\s*", r"""\\?["'“‘„«‹「『]"""),
    (r"\s+", r"""\\?["“‘„«‹「『]"""),
    (r"\s*", r"[“„«‹「『]"),
)
"""What may stand between a keyword and a quoted value (however many words: "blue moon 42"),
and the quotes it may open with after it: a plain quote needs a space or "is" before it (a
keyword may end a quote: "wrong PIN" message), an apostrophe needs "is" ("my password 'cause
…"), a curly or CJK quote nothing ("密碼「藍色月亮」")."""


def _keyword_categories() -> list[tuple[str, str, bool]]:
    """(category, keyword alternation, is a secret in itself) from ``secrets.toml``."""
    file = load_rule_file("secrets")
    return [
        (
            term_id.split(":", 1)[1],
            "|".join(p.pattern for p in term.patterns),
            term_id.startswith("secret:"),
        )
        for term_id, term in file.terms.items()
    ]


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


@cache
def keyword_rules() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The keyword + value rules, one group of value shapes per category."""
    rules: list[tuple[str, re.Pattern[str]]] = []
    categories = _keyword_categories()
    for category, keyword, _ in categories:
        rule = f"keyword:{category}"
        rules.append((rule, _compile(rf"(?:{keyword}){_GAP}(?P<value>{_DIGIT_VALUE})")))
        rules.append((rule, _compile(rf"(?:{keyword})\s*[:=]\s*(?P<value>[^\s,。]{{4,}})")))
    for category, keyword, strict in categories:
        if not strict:
            continue
        rule = f"keyword:{category}"
        rules.append(
            (rule, _compile(rf"{_OWNER_EN}(?:{keyword})\s*(?:is|was|[:=])\s*(?P<value>\S{{3,}})"))
        )
        rules.append(
            (rule, _compile(rf"{_OWNER_ZH}(?:{keyword})(?:是|为|[:=])\s*(?P<value>\S{{2,}})"))
        )
        rules.append(
            (rule, _compile(rf"(?:{keyword})\s*(?:is|was|是|为|[:=])\s*(?P<value>{_SECRET_TOKEN})"))
        )
        rules.append((rule, _compile(rf"{_REMEMBER}(?:{keyword})")))
        for gap, opener in _QUOTED_AFTER:
            quoted = rf"(?:{keyword}){gap}(?P<value>{opener}{_QUOTE_BODY})"
            rules.append((rule, _compile(quoted)))
    # A login and its password together: "login is a@b.c / Tr0ub4dor&3", "帳號 x 密碼 y".
    login = next(k for c, k, _ in categories if c == "login")
    password = next(k for c, k, _ in categories if c == "password")
    rules.append(
        (
            "keyword:login-password",
            _compile(
                rf"(?:{login})[^.。\n]{{0,40}}?(?:{_EMAIL}|[\w.-]{{3,}})\s*(?:/|\||,|;|:|\s)\s*"
                rf"(?:(?:and\s+)?(?:the\s+)?(?:{password})\s*(?:is|是|为|[:=])?\s*)?"
                rf"(?P<value>{_SECRET_TOKEN})"
            ),
        )
    )
    rules.append(
        (
            "keyword:login-password",
            _compile(
                rf"{_EMAIL}\s*(?:/|\||:|\s)\s*(?:(?:{password})\s*[:=]?\s*)?"
                rf"(?P<value>{_SECRET_TOKEN})"
            ),
        )
    )
    return tuple(rules)


@cache
def _any_secret_keyword() -> re.Pattern[str]:
    return _compile("|".join(f"(?:{k})" for _, k, _ in _keyword_categories()))


def mentions_secret_keyword(text: str) -> bool:
    """Whether ``text`` names a kind of secret or identifier ("the user's 驗證碼")."""
    return bool(_any_secret_keyword().search(fold(text)))


# --------------------------------------------------------------------------- public


def _value_rule(text: str) -> str | None:
    """The detectors that recognise a value by its own shape (keys, cards, IDs, credentials)."""
    if not text.strip():
        return None
    width_folded = unicodedata.normalize("NFKC", text)
    hits = detect_secrets_hits(width_folded)
    if hits:
        return hits[0][0]
    if card_spans(width_folded):
        return "luhn-card-number"
    ids = national_id_matches(width_folded)
    if ids:
        return ids[0][0]
    if _URL_CREDENTIALS_RE.search(width_folded):
        return "url-credentials"
    return None


REDACTION_MARK = "[redacted: sensitive_data]"
"""What redaction puts where a sensitive value was."""
REDACTION_WHOLE = "[redacted: this text held sensitive data]"
"""What redaction puts for a text whose sensitive value could not be located."""


def redaction_mark_rule(text: str) -> str | None:
    """A text carrying a redaction mark stood beside a secret; remembering it would keep
    the secret's context (and invite the model to fill the gap), so it is refused."""
    return "sensitive:redaction-mark" if "[redacted: " in text else None


@lru_cache(maxsize=4096)
def sensitive_rule(text: str) -> str | None:
    """Name the sensitive-data rule that fires on ``text``, or ``None``.

    Cached (in this process only) because a turn's texts are checked when a tool
    runs, at commit and again when the turn's transcript is redacted.
    """
    rule = _value_rule(text)
    if rule or not text.strip():
        return rule
    folded = fold(text)
    return next((name for name, pattern in keyword_rules() if pattern.search(folded)), None)


def is_sensitive(text: str) -> bool:
    """Whether any sensitive-data detector fires on ``text``."""
    return sensitive_rule(text) is not None


def holds_secret_shaped_value(text: str) -> bool:
    """Whether a detector that needs no keyword (a key, card, ID, credential) fires."""
    return _value_rule(text) is not None


_SECRET_CHARS_RE = re.compile(r"[A-Za-z0-9_+/=!@#$%^&*.:-]")
"""A character a value may end with; other punctuation at its end is the sentence's."""


def _value_bounds(folded: str, start: int, end: int) -> tuple[int, int]:
    """Where a keyword rule's value that the rule matched at ``start:end`` lies. A quoted or
    bracketed value is what stands between its marks (a JSON string's ``\\"`` included), so
    a passphrase of several words goes whole and the marks stay to pair up; a value that runs
    on past its closing mark ("[admin]2024!x") or opens a quote that never closes is a token
    (:func:`_value_end`), as is any other value. A mark just before ``start`` opens the value
    too: a rule's gap may have taken it."""
    start = _after_marks(folded, start)
    opener = start - 1
    if opener < 0 or folded[opener] not in _CLOSERS:
        return start, _value_end(folded, start, end)
    close = _closing_mark(folded, _CLOSERS[folded[opener]], start)
    if close <= start or _continues(folded, close + 1):
        if start < len(folded) and not folded[start].isspace():
            token = opener if close > start else start
            return token, _value_end(folded, token, max(end, start + 1))
        return start, _value_end(folded, start, end)
    return start, close - 1 if folded[close - 1] == "\\" and close - 1 > start else close


def _after_marks(folded: str, start: int) -> int:
    """``start`` moved past an opening mark (and a JSON escape before it) that the rule's value
    began with."""
    at = start + 1 if folded.startswith("\\", start) else start
    if at < len(folded) and folded[at] in _CLOSERS:
        return at + 1
    return start


def _closing_mark(folded: str, closers: str, inside: int) -> int:
    """Where the quote or bracket that closes a value opened just before ``inside`` is, or -1
    where none does within :data:`_MAX_QUOTED_CHARS`, the line and the sentence. An apostrophe
    inside a word ("don't") closes nothing."""
    for at in range(inside, min(len(folded), inside + _MAX_QUOTED_CHARS + 1)):
        char = folded[at]
        if char in closers:
            if char in "'’" and at + 1 < len(folded) and folded[at + 1].isalnum():
                continue
            return at
        if char == "\n" or _SENTENCE_BREAK.match(folded, at):
            return -1
    return -1


_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S|[。！？](?=[^」』”’\"'])")
"""A sentence ending inside what a quote opened: the quote never closed ("is "x7. Also …")."""


def _continues(folded: str, at: int) -> bool:
    """Whether the value goes on at ``at``, after its closing mark ("Ab12"cd34); a wide
    character is the sentence's ("「藍色月亮」好")."""
    if at >= len(folded) or _is_wide(folded[at]):
        return False
    return folded[at].isalnum() or folded[at] in "_+/=!@#$%^&*-"


def _value_end(folded: str, start: int, end: int) -> int:
    """Where a keyword rule's value starting at ``start`` ends: at the first space or wide
    character ("是 482913。另外…": the code, not the words after it), whatever letters it holds
    before ("Müller2024", "café-latte-42"), and without the sentence's punctuation after it
    ("hunter2?"). A value that opens with a wide character keeps the rule's own ``end``."""
    stop = start
    while stop < len(folded) and not folded[stop].isspace() and not _is_wide(folded[stop]):
        stop += 1
    while stop > start + 1 and not (
        folded[stop - 1].isalnum() or _SECRET_CHARS_RE.fullmatch(folded[stop - 1])
    ):
        stop -= 1
    return stop if stop > start else end


def _is_wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


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
    width_folded = unicodedata.normalize("NFKC", text)
    folded = fold(text)
    if len(width_folded) == len(text) and len(folded) == len(text):
        same = list(range(len(text) + 1))
        return _spans_in(width_folded, same, folded, same)
    # An ellipsis, a ligature or a zero-width space changes the length: fold character by
    # character and map each folded character back to the one it came from.
    width_folded, width_origin = nfkc_with_origin(text)
    folded, fold_origin = fold_with_origin(text)
    spans = _spans_in(width_folded, width_origin, folded, fold_origin)
    return spans if spans or not is_sensitive(text) else None


def _spans_in(
    width_folded: str, width_origin: list[int], folded: str, fold_origin: list[int]
) -> list[tuple[int, int]]:
    """The detectors' spans, found in the folded forms and placed in the original text
    through each form's ``origin`` (see :func:`~memora.text.folding.fold_with_origin`)."""
    found: list[tuple[int, int]] = [
        (m.start(), m.end())
        for _, value in detect_secrets_hits(width_folded)
        if value
        for m in re.finditer(re.escape(value), width_folded)
    ]
    found += card_spans(width_folded)
    found += [span for _, span in national_id_matches(width_folded)]
    found += [m.span() for m in _URL_CREDENTIALS_RE.finditer(width_folded)]
    spans = [(width_origin[start], _origin_end(width_origin, end)) for start, end in found]
    for _, pattern in keyword_rules():
        for match in pattern.finditer(folded):
            if "value" in pattern.groupindex and match.group("value"):
                start, end = _value_bounds(folded, match.start("value"), match.end("value"))
                spans.append((fold_origin[start], _origin_end(fold_origin, end)))
    return spans


def _origin_end(origin: list[int], end: int) -> int:
    """Where a span ending at folded offset ``end`` ends in the original text."""
    return origin[end - 1] + 1 if end > 0 else 0
