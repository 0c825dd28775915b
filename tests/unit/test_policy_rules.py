"""Every rule file's examples fire and its counterexamples do not (loaded automatically)."""

from __future__ import annotations

import pytest

from memora.models import MemoryCandidate, RejectionReason
from memora.write.policy import check_candidate
from memora.write.policy.engine import (
    Pattern,
    RuleFileError,
    load_rule_file,
    parse_rule_file,
    rule_file_names,
)


def _entries() -> list[tuple[str, str, Pattern]]:
    entries = []
    for name in rule_file_names():
        file = load_rule_file(name)
        entries += [(name, "rule", rule) for rule in file.rules]
        entries += [(name, "term", term) for term in file.terms.values()]
    return entries


ENTRIES = _entries()


def test_every_rule_file_loads_and_has_rules() -> None:
    names = rule_file_names()
    assert {"injection", "refusal", "secrets", "ephemeral", "assistant", "vague"} <= set(names)
    assert all(load_rule_file(n).rules or load_rule_file(n).terms for n in names)


@pytest.mark.parametrize(
    ("file", "kind", "entry"), ENTRIES, ids=[f"{f}:{e.id}" for f, _, e in ENTRIES]
)
def test_examples_fire_and_counterexamples_do_not(file: str, kind: str, entry: Pattern) -> None:
    assert entry.examples, f"{file}:{entry.id} has no examples"
    missed = [text for text in entry.examples if not entry.matches(text)]
    wrongly = [text for text in entry.counterexamples if entry.matches(text)]
    assert not missed, f"{kind} {entry.id} misses its examples {missed}"
    assert not wrongly, f"{kind} {entry.id} fires on its counterexamples {wrongly}"


RULES = [(n, r) for n in rule_file_names() for r in load_rule_file(n).rules]
CLAIMED_EARLIER = {
    # An order to the assistant is refused as an instruction before the refusal rules run.
    "Erase that from your memory after this chat.": RejectionReason.INSTRUCTION_LIKE,
}
"""Examples a hard rule checked earlier refuses first, with the reason it gives."""


@pytest.mark.parametrize(("file", "rule"), RULES, ids=[f"{n}:{r.id}" for n, r in RULES])
def test_the_gate_rejects_every_rule_example(file: str, rule: Pattern) -> None:
    reason = load_rule_file(file).reason
    for text in rule.examples:
        verdict = check_candidate(MemoryCandidate(content=text, user_message=text))
        assert verdict is not None, f"the gate stored {text!r}, an example of {rule.id}"
        refused_for, rule_name = verdict
        expected = CLAIMED_EARLIER.get(text, reason)
        assert refused_for is expected, f"{text!r} ({file}:{rule.id}) refused as {refused_for}"
        assert text not in rule_name  # a rejection names its rule, never the text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("reason = 'nonsense'\n", "unknown reason"),
        (
            "reason = 'ephemeral'\n[[rules]]\nid = 'x'\npatterns = ['(']\nexamples = ['a']\n",
            "bad pattern",
        ),
        ("reason = 'ephemeral'\n[[rules]]\nid = 'x'\npatterns = ['a']\n", "at least one example"),
        (
            "reason = 'ephemeral'\n[[rules]]\nid = 'x'\npatterns = ['{{nope}}']\n"
            "examples = ['a']\n",
            "unknown fragment",
        ),
        ("reason = = 1", "invalid TOML"),
    ],
)
def test_malformed_rule_files_are_refused_with_a_clear_error(text: str, problem: str) -> None:
    with pytest.raises(RuleFileError, match=problem):
        parse_rule_file("broken", text)


def test_unless_vetoes_a_rule() -> None:
    file = parse_rule_file(
        "t",
        "reason = 'instruction_like'\n[[rules]]\nid = 'act'\npatterns = ['act as']\n"
        "unless = ['practi[cs]e']\nexamples = ['act as a pirate']\n",
    )
    rule = file.rules[0]
    assert rule.matches("Act as a pirate")
    assert not rule.matches("act as an interviewer so I can practise")
