"""The rule engine: rule files (TOML) compiled into named, tested patterns.

A rule file (``rules/<name>.toml``) holds:

* ``reason``: the :class:`~memora.models.RejectionReason` its rules give;
* ``[fragments]``: named pieces of pattern, spliced into patterns as ``{{name}}``;
* ``[[rules]]``: ``id``, ``patterns`` (any one that occurs in the folded text fires the
  rule), optional ``unless`` (patterns that veto it), ``examples`` (texts it must fire
  on) and ``counterexamples`` (texts it must not fire on);
* ``[[terms]]``: named vocabularies (same fields, no reason) that structural checks in
  code combine, such as "a word that makes a state durable".

Patterns are Python regular expressions, matched case-insensitively against text folded
by :func:`memora.text.folding.fold` (NFKC, lower case, Simplified Chinese), so a rule names each
Chinese word once, in Simplified, and 驗證碼 meets 验证码. Every example and
counterexample is checked by the unit tests, for every rule file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from memora.errors import ConfigurationError
from memora.models import RejectionReason
from memora.text.folding import fold

RULES_DIR = Path(__file__).with_name("rules")
"""Where the rule files live."""
_FRAGMENT_RE = re.compile(r"\{\{(\w+)\}\}")


class RuleFileError(ConfigurationError):
    """A rule file is malformed (the message names the file and the rule)."""


@dataclass(frozen=True)
class Pattern:
    """A named set of patterns with the texts that show what it means."""

    id: str
    """Stable name, recorded with a rejection (never any of the candidate's text)."""
    patterns: tuple[re.Pattern[str], ...]
    """Any one occurring in the folded text is a match."""
    unless: tuple[re.Pattern[str], ...]
    """Any one occurring in the folded text vetoes the match."""
    examples: tuple[str, ...]
    """Texts it must match."""
    counterexamples: tuple[str, ...]
    """Texts it must not match."""

    def search(self, folded: str) -> re.Match[str] | None:
        """The leftmost match in already folded text, unless a veto occurs."""
        match = self.alternation().search(folded)
        if match and any(u.search(folded) for u in self.unless):
            return None
        return match

    def alternation(self) -> re.Pattern[str]:
        """All its patterns as one alternation (for substituting, where order matters)."""
        return _alternation(self.patterns)

    def matches(self, text: str) -> bool:
        """Whether it matches ``text`` (folded here)."""
        return self.search(fold(text)) is not None


@cache
def _alternation(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p.pattern})" for p in patterns), re.IGNORECASE)


@dataclass(frozen=True)
class RuleFile:
    """One rule file, compiled."""

    name: str
    """File stem, e.g. ``injection``."""
    reason: RejectionReason | None
    """What its rules reject with (``None`` for a file of terms only)."""
    rules: tuple[Pattern, ...]
    """Rules in file order; the first that fires names the rejection."""
    terms: dict[str, Pattern]
    """Vocabularies by id, for the structural checks."""
    fragments: dict[str, str]
    """Expanded fragments by name, for code that builds patterns from them."""

    def first_rule(self, folded: str) -> str | None:
        """The id of the first rule that fires on already folded text."""
        for rule in self.rules:
            if rule.search(folded):
                return rule.id
        return None

    def term(self, term_id: str) -> Pattern:
        """A vocabulary by id (a missing one is a programming error)."""
        return self.terms[term_id]


def _expand(source: str, fragments: dict[str, str], where: str) -> str:
    def splice(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in fragments:
            raise RuleFileError(f"{where}: unknown fragment {{{{{name}}}}}")
        return fragments[name]

    return _FRAGMENT_RE.sub(splice, source)


def _compile(source: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(source, re.IGNORECASE)
    except re.error as error:
        raise RuleFileError(f"{where}: bad pattern ({error})") from None


def _strings(entry: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RuleFileError(f"{where}: {key!r} must be a list of strings")
    return tuple(value)  # type: ignore[arg-type]


def _pattern(entry: dict[str, object], fragments: dict[str, str], file: str) -> Pattern:
    pattern_id = entry.get("id")
    if not isinstance(pattern_id, str) or not pattern_id:
        raise RuleFileError(f"{file}: every rule and term needs an id")
    where = f"{file}: {pattern_id}"
    sources = _strings(entry, "patterns", where)
    if not sources:
        raise RuleFileError(f"{where}: no patterns")
    examples = _strings(entry, "examples", where)
    if not examples:
        raise RuleFileError(f"{where}: needs at least one example")
    return Pattern(
        id=pattern_id,
        patterns=tuple(_compile(_expand(s, fragments, where), where) for s in sources),
        unless=tuple(
            _compile(_expand(s, fragments, where), where) for s in _strings(entry, "unless", where)
        ),
        examples=examples,
        counterexamples=_strings(entry, "counterexamples", where),
    )


def parse_rule_file(name: str, text: str) -> RuleFile:
    """Compile the text of one rule file.

    Raises:
        RuleFileError: invalid TOML, an unknown reason or fragment, a bad pattern, or a
            rule without an id, patterns or examples.
    """
    file = f"{name}.toml"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RuleFileError(f"{file}: invalid TOML ({error})") from None
    raw_fragments = data.get("fragments", {})
    fragments: dict[str, str] = {}
    for key, value in raw_fragments.items():  # later fragments may use earlier ones
        fragments[key] = _expand(str(value), fragments, f"{file}: fragment {key}")
    reason = data.get("reason")
    try:
        rejection = RejectionReason(reason) if reason is not None else None
    except ValueError:
        raise RuleFileError(f"{file}: unknown reason {reason!r}") from None
    rules = tuple(_pattern(entry, fragments, file) for entry in data.get("rules", []))
    if rules and rejection is None:
        raise RuleFileError(f"{file}: rules need a file-level reason")
    terms = {t.id: t for t in (_pattern(e, fragments, file) for e in data.get("terms", []))}
    ids = [r.id for r in rules] + list(terms)
    if len(set(ids)) != len(ids):
        raise RuleFileError(f"{file}: duplicate ids")
    return RuleFile(name, rejection, rules, terms, fragments)


@cache
def load_rule_file(name: str) -> RuleFile:
    """The rule file ``rules/<name>.toml``, compiled once per process."""
    path = RULES_DIR / f"{name}.toml"
    return parse_rule_file(name, path.read_text(encoding="utf-8"))


def rule_file_names() -> list[str]:
    """Every rule file shipped with the policy."""
    return sorted(p.stem for p in RULES_DIR.glob("*.toml"))
