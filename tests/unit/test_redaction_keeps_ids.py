"""A value kept from redaction (Memora's own memory id) stays whole, even when an echo or a
trained span would cut into it."""

from __future__ import annotations

from memora.redaction import MARK, redact, sensitive_values

MEMORY_ID = "81589b93f15b42fa98dea2c679a7980f"


def test_an_echo_that_cuts_into_a_kept_id_leaves_the_id_whole() -> None:
    text = f"Delete memory {MEMORY_ID}? The code 98dea2c679a7980f opens the shed."
    cleaned = redact(text, also=["98dea2c679a7980f"], keep=frozenset({MEMORY_ID}))
    assert MEMORY_ID in cleaned.text
    assert cleaned.text.endswith(f"The code {MARK} opens the shed.")


def test_a_detected_value_inside_a_kept_id_is_not_chased() -> None:
    assert sensitive_values(f"id {MEMORY_ID}", frozenset({MEMORY_ID})) == []
