"""The memory policy: a small rule engine, rule files (``rules/*.toml``) and the gate.

Public API (unchanged for callers): :func:`apply_memory_policy`, :func:`check_candidate`,
:class:`MemoryClassifier`, and the sensitive-data detectors redaction shares,
:func:`is_sensitive`, :func:`holds_secret_shaped_value`, :func:`sensitive_spans` and the
trained judgement's :func:`secret_value_spans` and :func:`located_secret_spans`.
"""

from memora.write.policy.gate import (
    HARD_RULES,
    MAX_MEMORY_CHARS,
    MemoryClassifier,
    apply_memory_policy,
    check_candidate,
)
from memora.write.policy.judged import located_secret_spans, secret_value_spans
from memora.write.policy.secrets import (
    holds_secret_shaped_value,
    is_sensitive,
    is_valid_tw_id,
    sensitive_spans,
)
from memora.write.policy.support import SUPPORT_THRESHOLD, support_ratio

__all__ = [
    "HARD_RULES",
    "MAX_MEMORY_CHARS",
    "SUPPORT_THRESHOLD",
    "MemoryClassifier",
    "apply_memory_policy",
    "check_candidate",
    "holds_secret_shaped_value",
    "is_sensitive",
    "is_valid_tw_id",
    "located_secret_spans",
    "secret_value_spans",
    "sensitive_spans",
    "support_ratio",
]
