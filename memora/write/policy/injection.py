"""Text that steers the assistant (the ``instruction_like`` checks).

A memory is about the user. Text that addresses the assistant about its tools,
deletions, approvals, other users, its policies or its prompt, sets a trigger for later,
hands it a persona, fakes markup, or promotes something in every answer is an attempt to
steer it, whoever wrote it. The patterns are in ``rules/injection.toml``; this module
adds what a pattern cannot say: payloads hidden by an encoding are decoded and checked
again by the same rules, and some rules look at sentence or clause structure.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from functools import cache
from urllib.parse import unquote

from memora.models import MemoryCandidate
from memora.text.folding import STOPWORDS, fold, has_han, strip_invisible
from memora.write.policy.engine import RuleFile, load_rule_file
from memora.write.policy.support import support_ratio

_SENTENCE_SPLIT_RE = re.compile(r"[.!?;](?=\s|$)|[。！？；!?\n]")
_LINK_CLAUSE_SPLIT_RE = re.compile(
    r"[,，、]|(?<![a-z])(?:and|but|so|while)(?![a-z])|而且|但是|然后"
)
_PROMO_NAME_RE = re.compile(
    r"(?<![A-Za-z])(?:recommend|promote|advertise|plug|endorse|shill|push|mention)(?:ing)?\s+"
    r"(?:the\s+|a\s+)?[A-Z][\w'&-]*"
)
_QUOTED_RE = re.compile(
    r"(?<![A-Za-z])'((?:[^']|(?<=[A-Za-z])'(?=[A-Za-z])){6,}?)'(?![A-Za-z])"
    r"|\"([^\"]{6,})\"|“([^”]{3,})”|「([^」]{3,})」|『([^』]{3,})』|<!--(.*?)-->|‘([^’]{6,})’"
    r"|<([a-z]+)[^>]*>([^<]{6,})</",
    re.DOTALL,
)
_QUOTE_SUPPORT = 0.5
_BASE64_RE = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_MIN_DECODED_LETTERS = 0.8
"""Share of a decoded payload that must be letters, spaces or punctuation to count as text."""


def _file() -> RuleFile:
    return load_rule_file("injection")


def _sentences(text: str) -> list[str]:
    """Split text into sentences without breaking URLs or domain names on their dots."""
    return [s for s in _SENTENCE_SPLIT_RE.split(text) if s.strip()]


@cache
def _zh_promotion_re() -> re.Pattern[str]:
    """A future scope (每次, 以后) then a promotion verb and a third-party object, in Chinese."""
    fragments = _file().fragments
    return re.compile(
        rf"^(?:(?!{fragments['zh_user_wish']}).)*?(?:{fragments['zh_future_scope']})"
        rf"[^。;!?]{{0,16}}?(?:(?:推广|宣传|打广告|带货|导流)|(?:{fragments['zh_promo_verb']})"
        rf"[^。;!?]{{0,10}}?(?:{fragments['zh_third_party']}))"
    )


@cache
def _link_re() -> re.Pattern[str]:
    return re.compile(_file().fragments["url_or_email"], re.IGNORECASE)


def _promotion_rule(content: str) -> str | None:
    """The candidate tells the assistant to promote, attach or recommend third-party things
    in every future answer (a scope word + a promotion verb + a third-party object)."""
    file = _file()
    zh_promo = _zh_promotion_re()
    scope, verb_term = file.term("promo-scope"), file.term("promo-verb")
    third_party, self_subject = file.term("third-party"), file.term("self-subject")
    for sentence in _sentences(unicodedata.normalize("NFKC", content)):
        lower = fold(sentence)
        if zh_promo.search(lower):
            return "injection:zh-promote-always"
        if not scope.search(lower):
            continue
        verb = verb_term.search(lower)
        if verb and self_subject.search(lower[: verb.start()]):
            continue  # "I always include a link to my blog": the user's own habit
        if verb and (third_party.search(lower) or _PROMO_NAME_RE.search(sentence)):
            return "injection:promote-always"
    return None


def _contact_rule(content: str) -> str | None:
    """A URL or e-mail address next to a recommend/share/send/upload/authorise verb.

    The verb must be in the same clause as the address, and a user's own habit ("I post
    recipes on my-site.com") is left alone unless it grants authorisation.
    """
    file = _file()
    link_re = _link_re()
    authorise, contact = file.term("authorise-verb"), file.term("contact-verb")
    self_subject = file.term("self-subject")
    for sentence in _sentences(fold(content)):
        for clause in _LINK_CLAUSE_SPLIT_RE.split(sentence):
            link = link_re.search(clause)
            if not link:
                continue
            rest = clause[: link.start()] + " " + clause[link.end() :]
            if authorise.search(rest):
                return "injection:link-with-action"
            verb = contact.search(rest)
            if verb and not self_subject.search(rest[: verb.start()]):
                return "injection:link-with-action"
    return None


def _quoted_spans(message: str) -> list[str]:
    """Text the user quotes from a page, e-mail or document (empty without a source marker)."""
    text = unicodedata.normalize("NFKC", message)
    marker = _file().term("source-marker").search(fold(text))
    if not marker:
        return []
    spans = [next(g for g in m.groups()[::-1] if g) for m in _QUOTED_RE.finditer(text)]
    if not spans:
        colon = re.search(r"[:：]", text[marker.end() :])
        if colon:
            spans.append(text[marker.end() + colon.end() :])
    return [s for s in spans if s.strip()]


def _quoted_source_rule(candidate: MemoryCandidate) -> str | None:
    """The candidate repeats a claim from text the user quoted out of a page or e-mail.

    What a web page, e-mail or document says is not what the user said; a candidate that
    repeats it is rejected when the quoted text was hidden, or when the candidate carries
    a steering sign (consent or authorisation, sharing, an address, "system", "memory").
    """
    if not candidate.user_message:
        return None
    file = _file()
    hidden = file.term("hidden-marker").search(fold(candidate.user_message)) is not None
    for span in _quoted_spans(candidate.user_message):
        ratio = support_ratio(candidate.content, span)
        if ratio is None or ratio < _QUOTE_SUPPORT:
            continue
        if hidden or file.term("quote-signal").search(fold(candidate.content)):
            return "injection:quoted-source"
    return None


def _looks_like_text(decoded: str) -> bool:
    if len(decoded) < 8 or not decoded.isprintable():
        return False
    wordish = sum(1 for ch in decoded if ch.isalpha() or ch.isspace() or ch in ",.:;!?'-，。")
    return wordish / len(decoded) >= _MIN_DECODED_LETTERS


def _base64_payloads(text: str) -> list[str]:
    """Readable text hidden in base64 runs of ``text``."""
    return [decoded for _, decoded in _base64_pairs(text)]


def _base64_pairs(text: str) -> list[tuple[str, str]]:
    """(run, the text it decodes to) for each base64 run of ``text`` that decodes to text."""
    pairs = []
    for match in _BASE64_RE.finditer(text):
        token = match.group()
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_")
            decoded = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if _looks_like_text(decoded):
            pairs.append((token, decoded))
    return pairs


_SEGMENT_SPLIT_RE = re.compile(r"[:;,.!?\n\"“”「」()（）：；，。！？]+")
_ASCII_WORD_RE = re.compile(r"[a-z']+")
_MIN_STOPWORD_SHARE = 0.2
"""Below this share of stopwords, a run of Latin words does not read as English."""


def _reads_as_english(segment: str) -> bool:
    words = _ASCII_WORD_RE.findall(segment.lower())
    return bool(words) and sum(w in STOPWORDS for w in words) / len(words) >= _MIN_STOPWORD_SHARE


def decoded_forms(text: str) -> list[str]:
    """The ways ``text`` may hide a payload: base64 runs, rot13, reversed, URL-escaped.

    rot13 and reversal are tried on each segment (between punctuation) that does not read
    as English (too few stopwords) or that holds Chinese, so ordinary sentences cost one
    stopword count; each form is then checked by the same rules as plain text.
    """
    forms = _base64_payloads(text)
    for segment in _SEGMENT_SPLIT_RE.split(text):
        if has_han(segment):
            forms.append(segment[::-1])
        elif len(_ASCII_WORD_RE.findall(segment.lower())) >= 2 and not _reads_as_english(segment):
            forms += [codecs.encode(segment, "rot13"), segment[::-1]]
    unescaped = unquote(text)
    if unescaped != text:
        forms.append(unescaped)
    return forms


_MIN_DECODED_WORDS = 3
"""Fewest words a rot13 or reversed segment must decode to before it is read as a payload."""


def decoded_readings(text: str) -> list[str]:
    """``text`` with each payload a decoder shows to be text put back in its place, for the
    trained gate to read: base64 runs that decode to text, Latin segments or quotations that
    read as English once rot13-decoded or reversed (and did not before), URL escapes.

    Unlike :func:`decoded_forms`, only decodings that come out as text are kept, so ordinary
    text in any language yields none and costs the gate no second reading.
    """
    readings = [text.replace(payload[0], payload[1], 1) for payload in _base64_pairs(text)]
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED_RE.finditer(text)]
    for segment in [*_SEGMENT_SPLIT_RE.split(text), *quoted]:
        if len(_ASCII_WORD_RE.findall(segment.lower())) < 2 or _reads_as_english(segment):
            continue
        for form in (codecs.encode(segment, "rot13"), segment[::-1]):
            words = _ASCII_WORD_RE.findall(form.lower())
            if len(words) >= _MIN_DECODED_WORDS and _reads_as_english(form):
                readings.append(text.replace(segment, form, 1))
    unescaped = unquote(text)
    if unescaped != text:
        readings.append(unescaped)
    return readings


def _plain_rule(text: str) -> str | None:
    """The first rule of ``injection.toml`` that fires on ``text`` (without decoding)."""
    return _file().first_rule(fold(text))


def check_encoded_instruction(candidate: MemoryCandidate) -> str | None:
    """An instruction hidden by an encoding (base64, rot13, reversed, URL escapes).

    Runs before the sensitive-data check: a base64 run also looks like a key, but what it
    says is the better reason to refuse it.
    """
    content = strip_invisible(candidate.content)
    if _plain_rule(content):
        return None  # said in plain text: the plain check names the rule
    for form in decoded_forms(content):
        if form != content and _plain_rule(form):
            return "injection:encoded"
    return None


def check_instruction_like(candidate: MemoryCandidate) -> str | None:
    """The candidate steers the assistant (see the module docstring)."""
    content = strip_invisible(candidate.content)
    return (
        _plain_rule(content)
        or _promotion_rule(content)
        or _contact_rule(content)
        or _quoted_source_rule(candidate)
    )
