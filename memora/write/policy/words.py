"""The policy's word lists (``data/words.toml``), loaded once."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from memora.text.folding import STOPWORDS, stem

_WORDS_FILE = Path(__file__).with_name("data") / "words.toml"


@dataclass(frozen=True)
class PolicyWords:
    """Word lists of the support and vagueness checks."""

    stopwords: frozenset[str]
    """English stopwords plus the framing words an extractor adds ("user", ...)."""
    framing_stems: frozenset[str]
    """Stems that phrase a preference ("prefers" vs "like")."""
    zh_framing: re.Pattern[str]
    """Chinese framing words cut out before bigrams are compared."""
    zh_particles: frozenset[str]
    """Chinese particles cut out likewise."""
    zh_synonyms: tuple[tuple[str, str], ...]
    """(everyday word, canonical word), longest first."""
    abbreviations: dict[str, str]
    """Abbreviation -> spelled-out word."""
    generic: frozenset[str]
    """Words that carry no fact of their own."""
    hedges: frozenset[str]
    """Hedge words."""
    broad_nouns: frozenset[str]
    """Category words that name nothing next to a hedge."""


@cache
def policy_words() -> PolicyWords:
    """The word lists, read from ``data/words.toml``."""
    data = tomllib.loads(_WORDS_FILE.read_text(encoding="utf-8"))

    def split(key: str) -> frozenset[str]:
        return frozenset(str(data[key]).split())

    synonyms = sorted(data["zh_synonyms"].items(), key=lambda kv: -len(kv[0]))
    return PolicyWords(
        stopwords=STOPWORDS | split("support_stopwords"),
        framing_stems=frozenset(stem(w) for w in split("framing_verbs")),
        zh_framing=re.compile(str(data["zh_framing"])),
        zh_particles=frozenset(str(data["zh_particles"])),
        zh_synonyms=tuple(synonyms),
        abbreviations=dict(data["abbreviations"]),
        generic=split("generic_words"),
        hedges=split("hedge_words"),
        broad_nouns=split("broad_nouns"),
    )
