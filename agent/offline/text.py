"""Text for the offline model: normalised text that keeps its original, sentences, language."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memora.text.folding import count_han, to_simplified, to_traditional

# --------------------------------------------------------------------------- text helpers

PUNCT = " \t\r\n,，.。:：;；!！?？、~～…\"'“”「」『』"


def _normalise(text: str) -> str:
    """Simplified Chinese, lower case, straight apostrophes: the form rules match on."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return to_simplified(text).lower()


@dataclass(frozen=True)
class Text:
    """The user's words and their normalised form, kept character-aligned.

    Rules match on ``norm`` (one script, lower case), but what the model passes to a
    tool must be the user's own words (Traditional stays Traditional), so every cut
    is applied to both strings at the same positions.
    """

    original: str
    norm: str

    @classmethod
    def of(cls, text: str) -> Text:
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

    def slice(self, start: int, end: int | None = None) -> Text:
        """Both strings cut to ``[start:end]``."""
        return Text(self.original[start:end], self.norm[start:end])

    def cut(self, pattern: re.Pattern[str]) -> Text:
        """Remove every match of ``pattern`` (found in ``norm``) from both strings."""
        original, norm, last = [], [], 0
        for match in pattern.finditer(self.norm):
            original.append(self.original[last : match.start()])
            norm.append(self.norm[last : match.start()])
            last = match.end()
        original.append(self.original[last:])
        norm.append(self.norm[last:])
        return Text("".join(original), "".join(norm))

    def strip(self) -> Text:
        """Trim spaces and punctuation at both ends."""
        stripped = self.norm.lstrip(PUNCT)
        start = len(self.norm) - len(stripped)
        end = start + len(stripped.rstrip(PUNCT))
        return self.slice(start, end)

    def squeeze(self) -> Text:
        """Collapse runs of spaces left behind by cuts, then strip."""
        return self.cut(re.compile(r"(?<= ) +")).strip()


def sentences(text: Text) -> list[Text]:
    """Split into sentences; a dot counts only before a space so "Node.js" survives."""
    pattern = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？\n]|$)", re.S)
    return [
        text.slice(m.start(), m.end())
        for m in pattern.finditer(text.norm)
        if m.group().strip(PUNCT)
    ]


# --------------------------------------------------------------------------- language


@dataclass(frozen=True)
class Lang:
    """The language to answer in: the language of the user's latest message."""

    chinese: bool
    traditional: bool = True

    @classmethod
    def of(cls, text: str) -> Lang:
        """Guess the reply language.

        Chinese wins when it has at least as many CJK characters as Latin words
        ("請解釋 present perfect。" is a Chinese question about English). Text that
        reads the same in both scripts is answered in Traditional, the replies' own script.

        Args:
            text: The user's message.

        Returns:
            The language to reply in.
        """
        cjk = count_han(text)
        words = len(re.findall(r"[A-Za-z]+", text))
        if not cjk or cjk < words:
            return cls(chinese=False)
        # Traditional if converting to Simplified changes it; Simplified if converting to
        # Traditional does; text that reads the same in both is answered in Traditional.
        simplified = to_simplified(text) == text and to_traditional(text) != text
        return cls(chinese=True, traditional=not simplified)

    def say(self, english: str, chinese: str) -> str:
        """Pick the text for this language; ``chinese`` is written in Traditional."""
        if not self.chinese:
            return english
        return chinese if self.traditional else to_simplified(chinese)
