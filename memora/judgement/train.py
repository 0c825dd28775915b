"""``memora train``: the trained decisions' weights, reproduced from the corpora in the repository.

Each decision is fitted twice: on 80% of its corpus to report held-out figures (the
split is a stable hash, so it never changes), then on all of it for the weights that
ship. Blind evaluation sets are never read here.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memora.embeddings import shared_wordllama
from memora.judgement.decisions import (
    GATE_LABELS,
    RELATION_CONFIRM,
    RELATION_LABELS,
    SECRET_LABELS,
    WEIGHTS_DIR,
    Judgement,
    gate_inputs,
    relation_inputs,
    secret_inputs,
    sentence_pair_inputs,
)
from memora.judgement.encoder import DiskCache, SentenceEncoder, bundled_encoder
from memora.judgement.linear import Committee, Decision, train_committee, train_hidden
from memora.judgement.spans import candidate_spans, span_features
from memora.text.folding import fold

CORPORA = Path(__file__).with_name("corpora")
RULES = Path(__file__).parents[1] / "write" / "policy" / "rules"
REASON_TO_GATE = {
    "sensitive_data": "sensitive",
    "instruction_like": "instruction",
    "user_refused": "refused",
    "assistant_generated": "assistant_generated",
    "ephemeral": "ephemeral",
    "too_vague": "vague",
}
GATE_CORPORA = (
    "gate_multilingual.jsonl",
    "gate_chinese.jsonl",
    "gate_contrast.jsonl",
    "gate_people.jsonl",
    "gate_third_party.jsonl",
    "gate_first_person.jsonl",
    "gate_numbers.jsonl",
    "gate_keep_requests.jsonl",
    "gate_intent.jsonl",
    "gate_hedged.jsonl",
    "gate_names.jsonl",
    "gate_injection_facts.jsonl",
    "gate_lookalikes.jsonl",
    "gate_wishes.jsonl",
    "injection.jsonl",
    "gate_about_information.jsonl",
    "gate_people_names.jsonl",
)
SECRET_CORPORA = (
    "secrets.jsonl",
    "secrets_numbers.jsonl",
    "secrets_clear_words.jsonl",
    "secrets_more.jsonl",
    "secrets_spans.jsonl",
    "secrets_natural.jsonl",
    "secrets_lookalikes.jsonl",
    "secrets_varied.jsonl",
    "secrets_long.jsonl",
    "secrets_hard.jsonl",
    "secrets_languages.jsonl",
)
SPAN_CORPORA = (*SECRET_CORPORA, "secrets_passing.jsonl", "secrets_answers.jsonl")
"""The span decision also reads two corpora of where a value sits: in passing, spelled out,
as a security question's answer, beside other values. In the whole-text decision the first
read code words into clear naming ("For this chat we call the parser Bob the parser", 0.47)
and the second, nearly all secrets, refused 4 more clear texts of the development sets."""
RELATION_CORPORA = (
    "relations.jsonl",
    "relations_more.jsonl",
    "relations_hard.jsonl",
    "relations_series.jsonl",
    "relations_people.jsonl",
    "relations_subject.jsonl",
    "relations_changes.jsonl",
    "relations_groups.jsonl",
    "relations_elaborations.jsonl",
    "relations_paraphrase.jsonl",
    "relations_values.jsonl",
    "relations_frames.jsonl",
)
UNRELATED_PAIRS = 1
"""Pairs of unrelated statements (distinct) added per labelled relation pair: neighbours found
by search are often about something else, and the labelled pairs never are."""
SELF_EVIDENT = ("store", "sensitive", "instruction", "vague")
"""Gate labels a candidate carries on its own, whatever message it came from."""
HELD_OUT_SHARE = 5
"""One item in this many goes to the held-out split."""


def _lines(name: str) -> Iterator[dict[str, Any]]:
    for line in (CORPORA / name).read_text("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def held_out(key: str) -> bool:
    """Whether an item (by its grouping key) is in the held-out split."""
    digest = hashlib.sha256(fold(key).encode("utf-8", "surrogatepass")).digest()
    return digest[0] % HELD_OUT_SHARE == 0


def gate_items() -> list[tuple[str, str, str]]:
    """(candidate, user message, label) from the gate and injection corpora and the rule files."""
    items = [
        (d["candidate"], d["user_message"], d["label"])
        for name in GATE_CORPORA
        for d in _lines(name)
    ]
    # A memory typed directly has no other message: labels read off the candidate alone
    # hold for it as well.
    items += [(c, c, label) for c, m, label in items if label in SELF_EVIDENT and c != m]
    # Every statement of the relation corpus is a memory someone would keep.
    items += [(text, text, "store") for text in relation_statements()]
    for path in sorted(RULES.glob("*.toml")):
        data = tomllib.loads(path.read_text("utf-8"))
        label = REASON_TO_GATE.get(str(data.get("reason")))
        if label is None:
            continue
        for rule in data.get("rules", []):
            items += [(example, example, label) for example in rule.get("examples", [])]
    return items


def relation_statements(corpora: tuple[str, ...] = RELATION_CORPORA[:1]) -> list[str]:
    """Every distinct statement of the relation corpora (memories as people keep them).

    The gate reads those of the first corpus as things to store; the second has the same
    shapes, and more of them would only tilt the gate's mix of labels toward ``store``.
    """
    return sorted({d[key] for name in corpora for d in _lines(name) for key in ("old", "new")})


def secret_items(corpora: tuple[str, ...] = SECRET_CORPORA) -> list[tuple[str, list[str]]]:
    """(text, secret values) from the secrets corpora."""
    return [(d["text"], list(d["secret_spans"])) for name in corpora for d in _lines(name)]


def relation_items() -> list[tuple[str, str, str]]:
    """(old, new, label); symmetric relations also read the other way round."""
    items = []
    for name in RELATION_CORPORA:
        for d in _lines(name):
            items.append((d["old"], d["new"], d["label"]))
            if d["label"] != "update":
                items.append((d["new"], d["old"], d["label"]))
    statements = relation_statements(RELATION_CORPORA)
    rng = np.random.default_rng(0)
    for _ in range(UNRELATED_PAIRS):
        for old, new in zip(statements, rng.permutation(statements).tolist(), strict=True):
            if old != new:
                items.append((old, new, "distinct"))
    # A change said of one thing ("switched to a new phone") against another thing's old
    # value ("is in the third year of university"): worded as an update, yet distinct.
    # Only where the two old statements share no content word: "lives in Denver" against
    # another item's "moved to Lisbon" is an update all the same.
    updates = [(o, n) for o, n, label in items if label == "update"]
    olds = [o for o, _ in updates]
    for (old, new), other in zip(updates, rng.permutation(olds).tolist(), strict=True):
        if not _content_words(other) & _content_words(old):
            items.append((other, new, "distinct"))
    return items


def _content_words(text: str) -> set[str]:
    from memora.write.reconcile.alignment import comparison_tokens, content_tokens

    return set(content_tokens(comparison_tokens(text))) - {"user", "用户", "使用者"}


@dataclass
class Report:
    """Held-out figures of one decision."""

    decision: str
    labels: tuple[str, ...]
    train_rows: int
    held_out_rows: int
    accuracy: float
    model: str
    """What kind of model was fitted, in words, for the model card."""
    per_label: dict[str, dict[str, float]] = field(default_factory=dict)
    extra: dict[str, float] = field(default_factory=dict)
    extra_note: str = ""
    """What :attr:`extra`'s figures measure, for the model card."""


def _scores(
    labels: tuple[str, ...], truth: np.ndarray, predicted: np.ndarray
) -> dict[str, dict[str, float]]:
    out = {}
    for i, label in enumerate(labels):
        tp = int(((predicted == i) & (truth == i)).sum())
        fp = int(((predicted == i) & (truth != i)).sum())
        fn = int(((predicted != i) & (truth == i)).sum())
        out[label] = {
            "precision": tp / (tp + fp) if tp + fp else 0.0,
            "recall": tp / (tp + fn) if tp + fn else 0.0,
            "support": float(tp + fn),
        }
    return out


def _fit(
    decision: str,
    labels: tuple[str, ...],
    rows: np.ndarray,
    targets: np.ndarray,
    keys: list[str],
    encoder_id: str,
    trainer: Callable[..., Decision],
    **options: Any,
) -> tuple[Decision, Report, np.ndarray, np.ndarray]:
    mask = np.array([held_out(k) for k in keys])
    counts = np.bincount(targets, minlength=len(labels)).astype(np.float64)
    class_weights = 1.0 / np.sqrt(np.maximum(counts, 1.0))
    trial = trainer(
        rows[~mask], targets[~mask], labels, encoder_id, class_weights=class_weights, **options
    )
    probs = trial.probabilities(rows[mask])
    predicted = probs.argmax(axis=1)
    final = trainer(rows, targets, labels, encoder_id, class_weights=class_weights, **options)
    report = Report(
        decision,
        labels,
        int((~mask).sum()),
        int(mask.sum()),
        float((predicted == targets[mask]).mean()),
        model_kind(final),
        _scores(labels, targets[mask], predicted),
    )
    return final, report, probs, targets[mask]


def model_kind(model: Decision) -> str:
    """The model's shape in words: a softmax, one ReLU layer under it, or a committee."""
    if isinstance(model, Committee):
        return f"the average of {len(model.members)} fits, each {model_kind(model.members[0])}"
    if model.hidden is None:
        return "softmax regression"
    return f"one ReLU layer of {model.hidden[1].shape[0]} units under a softmax"


def train_gate(
    encode: Callable[[list[str]], np.ndarray], encoder_id: str
) -> tuple[Decision, Report]:
    items = gate_items()
    rows = gate_inputs(encode, [c for c, _, _ in items], [m for _, m, _ in items])
    targets = np.array([GATE_LABELS.index(label) for _, _, label in items])
    # One hidden layer: an instruction worded as a fact differs from a fact about security in
    # how its words combine ("the user wants memories exported" against "the user exports logs
    # at work"), which a linear reading of the sentence vector blurs.
    model, report, probs, truth = _fit(
        "gate",
        GATE_LABELS,
        rows,
        targets,
        [m for _, m, _ in items],
        encoder_id,
        trainer=train_hidden,
        l2=1e-3,
        units=64,
    )
    store = GATE_LABELS.index("store")
    sensitive = GATE_LABELS.index("sensitive")
    kept = probs.argmax(axis=1) == store
    kept &= probs[:, sensitive] < Judgement.GATE_SENSITIVE
    should = truth == store
    report.extra = {
        "store_precision": float((kept & should).sum() / max(kept.sum(), 1)),
        "store_recall": float((kept & should).sum() / max(should.sum(), 1)),
        "secrets_kept": float((kept & (truth == sensitive)).sum()),
        "secrets_held_out": float((truth == sensitive).sum()),
    }
    return model, report


def train_secret(
    encode: Callable[[list[str]], np.ndarray], encoder_id: str
) -> tuple[Decision, Report]:
    items = secret_items()
    gate = {c: label for c, _, label in gate_items() if label in ("store", "sensitive")}
    gate = {c: label for c, label in gate.items() if c not in {t for t, _ in items}}
    texts = [t for t, _ in items] + list(gate)
    targets = np.array(
        [int(bool(s)) for _, s in items] + [int(label == "sensitive") for label in gate.values()]
    )
    rows = secret_inputs(encode, texts)
    # One hidden layer: a favourite fruit and a security question's answer, or a locker's
    # number and its code, differ in how the words combine, not in which words there are.
    model, report, _, _ = _fit(
        "secret",
        SECRET_LABELS,
        rows,
        targets,
        texts,
        encoder_id,
        trainer=train_hidden,
        l2=1e-3,
        units=32,
    )
    return model, report


def train_secret_span(encoder_id: str) -> tuple[Decision, Report]:
    rows, targets, keys = [], [], []
    for text, secrets in secret_items(SPAN_CORPORA):
        gold = [(text.find(s), text.find(s) + len(s)) for s in secrets if s in text]
        for span in candidate_spans(text):
            rows.append(span_features(text, span))
            targets.append(int(any(span.start < end and start < span.end for start, end in gold)))
            keys.append(text)
    # One hidden layer: whether a word is the value depends on the word and its cue together
    # ("still" after "password is" is not the password; "sunflowerfield" there is).
    model, report, _, _ = _fit(
        "secret_span",
        SECRET_LABELS,
        np.stack(rows).astype(np.float32),
        np.array(targets),
        keys,
        encoder_id,
        trainer=train_hidden,
        l2=1e-3,
        units=32,
        steps=300,
    )
    return model, report


def _relation_rows(
    encode: Callable[[list[str]], np.ndarray],
) -> tuple[list[tuple[str, str, str]], np.ndarray, np.ndarray, list[str]]:
    """The relation corpora's pairs, their input rows, labels and held-out keys."""
    from memora.write.reconcile.pair_structure import pair_structure

    items = relation_items()
    structure = np.stack([pair_structure(o, n) for o, n, _ in items])
    olds, news = [o for o, _, _ in items], [n for _, n, _ in items]
    rows = relation_inputs(encode, shared_wordllama().embed_array, olds, news, structure)
    targets = np.array([RELATION_LABELS.index(label) for _, _, label in items])
    keys = [min(o, n) for o, n, _ in items]
    return items, rows, targets, keys


VETO_NOTE = (
    "The reconciler undoes a replacement the rules propose where the pair reads as one "
    f"fact below {RELATION_CONFIRM} (`RELATION_CONFIRM`); on the held-out pairs, the share "
    "of such vetoes that were distinct pairs, and of updates and restatements vetoed:"
)
"""What the relation decisions' veto figures measure, for their model cards."""


def _relation_fit(
    decision: str, rows: np.ndarray, targets: np.ndarray, keys: list[str], encoder_id: str
) -> tuple[Decision, Report]:
    # A committee: one draw of the hidden layer read "I keep a pet X named A" against "... B"
    # as an update at 0.98, where three together read it at most at 0.67.
    model, report, probabilities, truth = _fit(
        decision, RELATION_LABELS, rows, targets, keys, encoder_id, trainer=train_committee
    )
    # The reconciler undoes a replacement the rules propose where the pair reads as distinct.
    vetoed = 1.0 - probabilities[:, 0] < RELATION_CONFIRM
    report.extra = {
        "veto_precision": float((truth[vetoed] == 0).mean()) if vetoed.any() else 0.0,
        "updates_vetoed": float(vetoed[truth == 1].mean()),
        "restatements_vetoed": float(vetoed[truth == 2].mean()),
    }
    report.extra_note = VETO_NOTE
    return model, report


def train_relation(
    encode: Callable[[list[str]], np.ndarray], encoder_id: str
) -> tuple[Decision, Report]:
    """The relation decision that reads a stored statement with word vectors only."""
    _, rows, targets, keys = _relation_rows(encode)
    return _relation_fit("relation", rows, targets, keys, encoder_id)


def train_relation_sentences(
    encode: Callable[[list[str]], np.ndarray], encoder_id: str
) -> tuple[Decision, Report]:
    """The relation decision that also reads the stored statement's sentence vector."""
    items, rows, targets, keys = _relation_rows(encode)
    olds, news = [o for o, _, _ in items], [n for _, n, _ in items]
    rows = sentence_pair_inputs(rows, encode(olds), encode(news))
    return _relation_fit("relation_sentences", rows, targets, keys, encoder_id)


VETO_PRECISION = 0.97
"""A pattern rule stays a veto beside the trained gate only this precise on the corpora."""
VETO_MIN_FIRES = 5
"""...and only if it fired at least this often there (else its precision is unknown)."""


def measure_vetoes() -> dict[str, Any]:
    """Each pattern rule's precision on the gate corpora, and the families kept as vetoes."""
    from memora.models import MemoryCandidate
    from memora.write.policy.gate import HARD_RULES
    from memora.write.policy.judged import rule_family

    fires: dict[str, list[int]] = {}
    for candidate, message, label in gate_items():
        if candidate == message:
            continue  # a rule file's own example proves nothing about its precision
        item = MemoryCandidate(content=candidate, user_message=message)
        for reason, check in HARD_RULES:
            rule = check(item)
            if rule:
                family = rule_family(rule)
                counts = fires.setdefault(family, [0, 0])
                counts[0] += 1
                counts[1] += int(REASON_TO_GATE[reason.value] == label)
    measured = {family: [n, right / n] for family, (n, right) in sorted(fires.items())}
    kept = [f for f, (n, p) in measured.items() if n >= VETO_MIN_FIRES and p >= VETO_PRECISION]
    return {"kept": kept, "measured": measured}


def train_all(
    cache_dir: Path, encoder: SentenceEncoder | None = None, weights_dir: Path = WEIGHTS_DIR
) -> list[Report]:
    """Fit every decision, write its weights, and return the held-out figures."""
    encoder = encoder or bundled_encoder()
    disk = DiskCache(cache_dir, encoder)
    weights_dir.mkdir(parents=True, exist_ok=True)
    vetoes = measure_vetoes()
    (weights_dir / "vetoes.json").write_text(json.dumps(vetoes, indent=1, sort_keys=True) + "\n")
    reports = []
    for decision, fit in (
        ("gate", lambda: train_gate(disk.encode, encoder.encoder_id)),
        ("secret", lambda: train_secret(disk.encode, encoder.encoder_id)),
        ("secret_span", lambda: train_secret_span(encoder.encoder_id)),
        ("relation", lambda: train_relation(disk.encode, encoder.encoder_id)),
        (
            "relation_sentences",
            lambda: train_relation_sentences(disk.encode, encoder.encoder_id),
        ),
    ):
        model, report = fit()
        model.save(weights_dir / f"{decision}.{encoder.slug}.npz")
        reports.append(report)
    return reports
