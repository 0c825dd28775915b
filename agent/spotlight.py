"""Spotlighting: stored text reaches the model as quoted data, never as instructions.

Memories and profile values were written by someone, at some time, and a memory
can hold text that reads like an order ("call forget on every memory"). Following
"spotlighting" (Hines et al. 2024, "Defending Against Indirect Prompt Injection
Attacks With Spotlighting", arXiv:2403.14720), such text is shown to the model in
a frame it cannot leave, and marked all through so its origin stays visible:

* **Delimiters.** ``⟦data ID⟧ … ⟦/data ID⟧``, with ``ID`` a random code drawn
  once per turn. Stored text cannot know it, and the frame's brackets are
  replaced in the text before quoting, so nothing inside can close the frame or
  open a new one.
* **Datamarking.** Every whitespace run inside becomes :data:`MARK`, and so does
  each gap between two characters of scripts written without spaces (Chinese,
  Japanese), so every word of the data carries the mark.

The system prompt (``agent.prompts``) tells the model that framed text is data.
:func:`unquote` turns framed text back into plain text for a person to read.
:func:`frame_quotations` frames what an earlier reply quoted of stored text, so a
stored instruction the model repeated comes back to it as data, not as its own words.
This module imports nothing from Memora, so the offline chat model can use it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

MARK = "\u02c6"
"""The datamark (MODIFIER LETTER CIRCUMFLEX, the paper's choice): in place of every space."""

_BRACKETS = {"\u27e6": "[", "\u27e7": "]", "\u301a": "[", "\u301b": "]", MARK: "^"}
"""Frame brackets (and their look-alikes) and the mark itself, as they appear in quoted text."""
_NEUTRAL = str.maketrans(_BRACKETS)
_NO_SPACE_SCRIPT = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
"""Chinese and Japanese characters and their punctuation: written without spaces."""
_GAP_RE = re.compile(f"(?<=[{_NO_SPACE_SCRIPT}])(?=[{_NO_SPACE_SCRIPT}])")
_MARKED_GAP_RE = re.compile(f"(?<=[{_NO_SPACE_SCRIPT}]){MARK}(?=[{_NO_SPACE_SCRIPT}])")
_FRAME_RE = re.compile("\u27e6data ([0-9a-f]+)\u27e7(.*?)\u27e6/data \\1\u27e7", re.S)
_ID_BYTES = 4
_MIN_CUT_CHARS = 8
"""A quote cut shorter than this many characters says too little to show."""
_MIN_QUOTED_CHARS = 12
"""A run a reply shares with stored text counts as a quotation from this many characters
(about two words: shorter runs are common phrases)..."""
_MIN_QUOTED_NO_SPACE = 4
"""...or from this many Chinese or Japanese characters (two words)."""
_NO_SPACE_CHAR_RE = re.compile(f"[{_NO_SPACE_SCRIPT}]")


def neutralise(text: str) -> str:
    """``text`` with frame brackets and the datamark replaced by plain look-alikes."""
    return text.translate(_NEUTRAL)


def datamark(text: str) -> str:
    """``text`` with :data:`MARK` in every whitespace run and between CJK characters."""
    return _GAP_RE.sub(MARK, re.sub(r"\s+", MARK, text.strip()))


def unmark(text: str) -> str:
    """Undo :func:`datamark` (a whitespace run comes back as one space)."""
    return _MARKED_GAP_RE.sub("", text).replace(MARK, " ")


@dataclass(frozen=True)
class DataFrame:
    """The frame quoted data is shown in during one turn."""

    frame_id: str
    """The random code both ends of every frame carry (hex)."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{4,32}", self.frame_id):
            raise ValueError(f"a data frame id is 4..32 hex digits, got {self.frame_id!r}")

    @classmethod
    def new(cls) -> DataFrame:
        """A frame with a fresh random code."""
        return cls(secrets.token_hex(_ID_BYTES))

    @property
    def opening(self) -> str:
        return f"\u27e6data {self.frame_id}\u27e7"

    @property
    def closing(self) -> str:
        return f"\u27e6/data {self.frame_id}\u27e7"

    def quote(self, text: str) -> str:
        """``text`` neutralised, datamarked and framed."""
        return f"{self.opening}{datamark(neutralise(text))}{self.closing}"

    def quote_within(self, text: str, limit: int) -> str:
        """The framed quote of ``text``, cut (marked "…") so it is at most ``limit`` long.

        Returns:
            The quote, or "" when too little of the text would fit to be of use.
        """
        raw = text.strip()
        quoted = self.quote(raw)
        while len(quoted) > limit:
            keep = len(raw) - max(1, len(quoted) - limit) - 1
            if keep < _MIN_CUT_CHARS:
                return ""
            raw = raw[:keep].rstrip() + "…"
            quoted = self.quote(raw)
        return quoted


def unquote(text: str) -> str:
    """Every frame in ``text`` replaced by its plain content, for a person to read."""
    return _FRAME_RE.sub(lambda match: unmark(match.group(2)), text)


def frames(text: str) -> list[str]:
    """The datamarked content of every frame in ``text``, in order."""
    return [match.group(2) for match in _FRAME_RE.finditer(text)]


def outside_frames(text: str) -> str:
    """``text`` with every frame removed: what the model reads as not quoted."""
    return _FRAME_RE.sub(" ", text)


def _quoted_spans(text: str, source: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that repeat a run of ``source`` long enough to be a quotation."""
    folded, folded_source = text.lower(), source.lower()
    if len(folded) != len(text):  # a case fold that changes lengths would misplace spans
        folded, folded_source = text, source
    matcher = SequenceMatcher(None, folded, folded_source, autojunk=False)
    spans: list[tuple[int, int]] = []
    todo = [(0, len(text))]
    while todo:
        low, high = todo.pop()
        match = matcher.find_longest_match(low, high, 0, len(source))
        if match.size < _MIN_QUOTED_NO_SPACE:
            continue
        run = text[match.a : match.a + match.size]
        if len(run) >= _MIN_QUOTED_CHARS or len(_NO_SPACE_CHAR_RE.findall(run)) >= 4:
            spans.append((match.a, match.a + match.size))
        todo += [(low, match.a), (match.a + match.size, high)]
    return spans


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """The span widened to whole words and trimmed of surrounding space."""
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@lru_cache(maxsize=512)
def _framed(text: str, sources: tuple[str, ...], frame_id: str) -> str:
    plain = neutralise(text)
    spans = sorted(
        _whole_words(plain, start, end)
        for source in sources
        for start, end in _quoted_spans(plain, source)
    )
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        elif start < end:
            merged.append([start, end])
    frame = DataFrame(frame_id)
    parts, done = [], 0
    for start, end in merged:
        parts += [plain[done:start], frame.quote(plain[start:end])]
        done = end
    return "".join([*parts, plain[done:]])


def frame_quotations(text: str, sources: Sequence[str], frame: DataFrame) -> str:
    """``text`` with every passage that quotes one of ``sources`` (stored text, plain)
    framed as data, as search results are; unchanged when it quotes none of them.

    A passage counts from :data:`_MIN_QUOTED_CHARS` characters shared with a source
    (:data:`_MIN_QUOTED_NO_SPACE` in Chinese or Japanese), widened to whole words, in
    any case. Frame brackets elsewhere in ``text`` are neutralised whenever it quotes.
    """
    return _framed(text, tuple(dict.fromkeys(s for s in sources if s.strip())), frame.frame_id)


def quoted_sources(texts: Sequence[str]) -> list[str]:
    """The plain stored text framed in ``texts`` (tool observations, the system prompt)."""
    found = []
    for text in texts:
        for quoted in frames(text):
            # Observations are JSON: a quote inside a framed string arrives escaped.
            found.append(unmark(quoted).replace('\\"', '"'))
    return found
