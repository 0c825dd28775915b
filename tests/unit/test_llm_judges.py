from pathlib import Path

import pytest

from memora.api import Memora
from memora.config import load_settings
from memora.models import MemoryCandidate, RejectionReason
from memora.write.classifier import LLMMemoryClassifier
from memora.write.importance import LLMImportanceScorer
from memora.write.policy import apply_memory_policy
from memora.write.reconcile import LLMReconciler, OfflineReconciler, TrainedReconciler
from tests.scripted import ScriptedStructuredModel

PREFERENCE = MemoryCandidate(
    content="I prefer tea to coffee", user_message="I prefer tea to coffee"
)


def test_classifier_adds_a_rejection_but_never_overrules_a_hard_one() -> None:
    model = ScriptedStructuredModel(answer={"store": False, "reason": "ephemeral"})
    classifier = LLMMemoryClassifier(model)
    accepted, rejected = apply_memory_policy([PREFERENCE], classifier)
    assert accepted == [] and rejected[0].reason is RejectionReason.EPHEMERAL
    assert "I prefer tea to coffee" in model.prompts[-1]

    secret = MemoryCandidate(content="My password is hunter2-Xy9!", user_message="my password")
    keeper = LLMMemoryClassifier(ScriptedStructuredModel(answer={"store": True}))
    accepted, rejected = apply_memory_policy([secret], keeper)
    assert accepted == [] and rejected[0].reason is RejectionReason.SENSITIVE_DATA


def test_classifier_outage_rejects_nothing() -> None:
    classifier = LLMMemoryClassifier(ScriptedStructuredModel(fail=True))
    assert classifier.classify(PREFERENCE) is None


def test_llm_importance_and_its_fallback() -> None:
    scored = LLMImportanceScorer(ScriptedStructuredModel(answer={"importance": 5, "kind": "goal"}))
    assert scored.score(PREFERENCE).importance == 5
    broken = LLMImportanceScorer(ScriptedStructuredModel(answer={"importance": 9, "kind": "x"}))
    fallback = broken.score(PREFERENCE)
    assert fallback.kind == "preference" and 1 <= fallback.importance <= 5


@pytest.mark.parametrize(
    ("judge", "with_model", "llm"),
    [
        ("chat_model", True, True),
        ("chat_model", False, False),
        ("rules", True, False),
    ],
)
def test_write_judge_setting_chooses_the_implementations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: str, with_model: bool, llm: bool
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if with_model:
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    else:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    memora = Memora(load_settings(data_dir=tmp_path, write_judge=judge))
    assert isinstance(memora.reconciler, LLMReconciler) is llm
    offline = (OfflineReconciler, TrainedReconciler)
    assert isinstance(memora.reconciler, offline) is not llm
    assert isinstance(memora.importance, LLMImportanceScorer) is llm
    assert isinstance(memora.classifier, LLMMemoryClassifier) is llm
    memora.close()
