"""The trained decisions: what a candidate memory is, where a secret is, how two memories relate.

Each decision is a :class:`~memora.judgement.linear.SoftmaxModel`, or a committee of them, over
the bundled encoder's sentence vectors and a few structural features. Inputs are built here
the same way for training and for use.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from memora.embeddings import shared_wordllama
from memora.judgement.encoder import SentenceEncoder, bundled_encoder
from memora.judgement.features import pair_features, support_features, text_features
from memora.judgement.linear import Decision, load_decision
from memora.judgement.spans import candidate_spans, span_features, spelled_as_digits

log = logging.getLogger(__name__)

WEIGHTS_DIR = Path(__file__).with_name("weights")
_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|[.!?](?=\S))+[.!?。！？]*")
"""A sentence ends at a full stop followed by a space or the end: "44.17.62" is one value."""
_WHOLE = re.compile(r".+", re.DOTALL)

GATE_LABELS = (
    "store",
    "sensitive",
    "instruction",
    "refused",
    "assistant_generated",
    "ephemeral",
    "vague",
)
"""What a candidate memory is, read with the user message it came from."""
SECRET_LABELS = ("clear", "secret")
"""Whether a text (or one span of it) is a way into something."""
RELATION_LABELS = ("distinct", "update", "restatement")
"""How a new memory relates to one stored neighbour."""
RELATION_CONFIRM = 0.4
"""Probability of update + restatement (one fact) below which the trained reconciler undoes a
replacement the rules propose (the values tried: ``RelationThresholds.confirm``); the model
cards' veto figures are read at it."""

Encode = Callable[[list[str]], np.ndarray]


def gate_inputs(encode: Encode, candidates: list[str], messages: list[str]) -> np.ndarray:
    """Rows for the gate: both vectors, their product, and both texts' features."""
    # One encoder call for both columns: the engine's cost is mostly per call on short texts.
    vectors = encode(candidates + messages)
    cand, mess = vectors[: len(candidates)], vectors[len(candidates) :]
    feats = np.stack(
        [
            np.concatenate([text_features(c), text_features(m), support_features(c, m)])
            for c, m in zip(candidates, messages, strict=True)
        ]
    )
    return np.hstack([cand, mess, cand * mess, feats])


def secret_inputs(encode: Encode, texts: list[str]) -> np.ndarray:
    """Rows for the sentence-level secret decision."""
    feats = np.stack([text_features(t) for t in texts])
    return np.hstack([encode(texts), feats])


def relation_inputs(
    encode: Encode,
    pair_encode: Encode,
    olds: list[str],
    news: list[str],
    structure: np.ndarray,
    sentences: list[str] | None = None,
) -> np.ndarray:
    """Rows for the relation decision: the new statement's sentence vector, both statements'
    word vectors (``pair_encode``, WordLlama), their difference and product, surface features,
    and ``structure``, one row per pair of what the rules read in it (token alignment,
    statement structure: ``memora.write.reconcile.pair_structure``).

    A stored statement is read with word vectors only: they cost a fraction of a millisecond,
    where the sentence encoder costs about 20 ms a text, and a write reads several stored
    neighbours. The new statement's sentence vector is the one the gate has just read
    (``sentences``: the new statements as it read them, where they differ from ``news``).
    """
    old, new = pair_encode(olds), pair_encode(news)
    pairs = np.stack(
        [pair_features(o, n, ov, nv) for o, n, ov, nv in zip(olds, news, old, new, strict=True)]
    )
    rows = [encode(sentences or news), old, new, np.abs(old - new), old * new, pairs, structure]
    return np.hstack(rows).astype(np.float32)


def sentence_pair_inputs(
    base: np.ndarray, old_sentences: np.ndarray, new_sentences: np.ndarray
) -> np.ndarray:
    """Rows for the relation decision that reads both statements' sentence vectors: the
    :func:`relation_inputs` row, the stored statement's sentence vector, the product and
    difference of both, and their cosine."""
    cosine = (old_sentences * new_sentences).sum(axis=1, keepdims=True)
    rows = [
        base,
        old_sentences,
        old_sentences * new_sentences,
        np.abs(old_sentences - new_sentences),
        cosine,
    ]
    return np.hstack(rows).astype(np.float32)


def weights_path(decision: str, encoder_slug: str) -> Path:
    """Where a decision's weights for an encoder live."""
    return WEIGHTS_DIR / f"{decision}.{encoder_slug}.npz"


CHASED_MIN_CHARS = 4
"""Fewest characters of a possible value chased from a sentence cut whole: shorter words the
span decision reads at :attr:`Judgement.SECRET_CHASE` are as often a language's own ("la",
"il", "mon"), and would be cut from every reply of the turn. Numbers are chased at any length."""


@dataclass(frozen=True)
class _SpanReading:
    """What the span decision makes of a sentence (or a pair of them) that holds a secret."""

    cut: list[tuple[int, int]]
    """Where values are cut: the likeliest span, every span read as a value, every number."""
    values: list[tuple[int, int]]
    """The spans the span decision reads as values on their own (not only as the likeliest)."""
    numbers: list[tuple[int, int]]
    """Every number, in digits or in words."""
    possible: list[tuple[int, int]]
    """The spans of at least :attr:`Judgement.SECRET_CHASE` and :data:`CHASED_MIN_CHARS`."""


class Judgement:
    """The trained decisions for one encoder; a decision without weights is ``None``."""

    GATE_SENSITIVE = 0.5
    """Gate probability of ``sensitive`` above which a candidate is refused as sensitive. The
    secret decision reads the same text with a hidden layer of its own, so the gate's reading
    need not be trusted below even odds: on the development set ``secrets_dev3`` 0.5 instead
    of 0.3 refused 22 instead of 30 of 120 clear texts and stored no more secrets (2 of 180);
    the development selection set gave the same figures both ways."""
    SECRET_SUPPORT = 0.1
    """Secret-decision probability (:meth:`secret_reading`: of the whole text, a sentence or a
    pair) that must back the gate's `sensitive` reading for it to refuse: the gate's reading
    also fires on talk about passwords and on numbers that open nothing. Letting a gate
    reading of 0.95 or more refuse alone found no secret more on the development sets
    (``secrets_dev3`` 4 of 180 stored, ``secrets_dev4`` 8 of 150, either way) and refused 2
    and 6 more clear texts (9 against 7 of 120, 28 against 22 of 150). Of 0.1 and 0.2 there:
    0.2 stored one secret more of ``secrets_dev4`` for one clear text fewer. (Those figures
    were measured with the whole text's reading alone backing the gate; with its sentences
    and pairs too, ``secrets_dev4`` stored 7 instead of 8 and refused 25 clear texts
    instead of 22.)"""
    STORE_ODDS = 1.5
    """How much likelier ``store`` is taken to be than the corpora's mix says when ranking the
    gate's labels: the corpora hold more refusals per fact than conversations do. Chosen on the
    development selection and injection sets, where 1.5 balanced precision and recall best of
    1, 1.5, 2 and 3; the sensitive threshold reads the model's own probability."""
    INSTRUCTION = 0.85
    """Gate probability of ``instruction`` needed to refuse a candidate as one."""
    SECRET_TEXT = 0.3
    """Sentence probability above which a text holds a secret. On the corpora's held-out split
    0.3 instead of 0.5 found 97.6% of secret texts instead of 96.1%, for 88 clear texts of 3,122
    flagged instead of 48; on the development set ``secrets_dev3`` one secret fewer was stored
    (2 of 180) for two more clear texts refused (30 of 120)."""
    SECRET_CHASE = 0.05
    """Span probability from which a word of a sentence cut whole (no span read as a value) is
    chased through the rest of the turn, where the model may repeat it. Of the 37 sentences
    the development sets ``secrets_dev3`` and ``secrets_dev4`` cut whole, the 22 values in
    them were among the words chased at 0.02 / 0.05 / 0.1 for 22 / 20 / 16, with 96 / 70 / 52
    words chased in all (before :data:`CHASED_MIN_CHARS`)."""
    SECRET_SPAN = 0.3
    """Span probability above which a value is cut from a transcript, beside each flagged
    sentence's likeliest span. On the corpora's held-out split, 0.3 instead of 0.5 cut every
    value of 88.2% of secret texts instead of 86.5%, for 0.20 wrong cuts a text instead of 0.13."""

    def __init__(self, encoder: SentenceEncoder, weights_dir: Path = WEIGHTS_DIR) -> None:
        self.encoder = encoder

        def load(decision: str) -> Decision | None:
            path = weights_dir / f"{decision}.{encoder.slug}.npz"
            if not path.exists():
                log.warning("no %s weights for encoder %s", decision, encoder.encoder_id)
                return None
            return load_decision(path)

        self.gate_model = load("gate")
        self.secret_model = load("secret")
        self.span_model = load("secret_span")
        self.relation_model = load("relation")
        self.sentence_pair_model = load("relation_sentences")

    def gate(self, candidate: str, message: str) -> dict[str, float]:
        """Probability of each gate label for one candidate and its user message."""
        if self.gate_model is None:
            return {}
        row = self.gate_model.probabilities(
            gate_inputs(self.encoder.encode, [candidate], [message])
        )[0]
        return dict(zip(self.gate_model.labels, row.tolist(), strict=True))

    def sentence_vector(self, text: str) -> np.ndarray | None:
        """``text``'s sentence vector, to keep with a memory for :meth:`relation` to read
        later; None where no decision reads it. The gate has read the text just before, so
        this costs no encoding."""
        if self.sentence_pair_model is None:
            return None
        return self.encoder.encode([text])[0]

    def relation(
        self,
        olds: list[str],
        new: str,
        structure: np.ndarray,
        said_as: str | None = None,
        stored: Sequence[np.ndarray | None] | None = None,
    ) -> np.ndarray | None:
        """(len(olds), 3) probabilities of distinct / update / restatement of ``new`` against
        each stored text (``structure``: a row per pair, as :func:`relation_inputs` reads),
        or None without relation weights. ``said_as``: ``new`` as the gate read it, so its
        sentence vector is not computed again. ``stored``: each stored text's sentence
        vector as kept when it was written (:meth:`sentence_vector`), or None. A pair with
        one is read by both decisions, averaged: the one that reads both sentence vectors
        is alone too sure of pairs about one person (a scientist's award read as a new value
        of her field at 0.99). Its weight in the average, tried on the development files
        (event log dev 2: distinct kept / wrongly superseded / stale; Letta's dev file:
        collateral per row): 1 gave 0.982 / 5 / 21 and 0.050; 0.67 gave 0.978 / 6 / 23 and
        0.013; 0.5 gives 0.975 / 7 / 20 and 0.015 (the word vectors alone: 0.968 / 9 / 22
        and 0.015). WordLlama loads when a pair is first read."""
        if self.relation_model is None or not olds:
            return None
        said = said_as or new
        rows = relation_inputs(
            self.encoder.encode,
            shared_wordllama().embed_array,
            olds,
            [new] * len(olds),
            structure,
            [said] * len(olds),
        )
        read = self.relation_model.probabilities(rows)
        width = self.encoder.model.spec.dimension
        both = [
            i
            for i, vector in enumerate(stored or [])
            if vector is not None and vector.shape == (width,)
        ]
        if self.sentence_pair_model is not None and both:
            olds_read = np.stack([stored[i] for i in both])  # type: ignore[index,misc]
            news_read = np.repeat(self.encoder.encode([said]), len(both), axis=0)
            both_read = self.sentence_pair_model.probabilities(
                sentence_pair_inputs(rows[both], olds_read, news_read)
            )
            read[both] = (read[both] + both_read) / 2.0
        return read

    def secret_probability(self, texts: list[str]) -> np.ndarray:
        """Probability that each text holds a secret value: the likelier of the text as
        written and, where it spells digits out in words, of the text with them in digits (a
        code read out is the same code)."""
        if self.secret_model is None or not texts:
            return np.zeros(len(texts))
        read = self.secret_model.probabilities(secret_inputs(self.encoder.encode, texts))[:, 1]
        spelled = {i: s for i, t in enumerate(texts) if (s := spelled_as_digits(t)) is not None}
        if spelled:
            rows = secret_inputs(self.encoder.encode, list(spelled.values()))
            at = list(spelled)
            read[at] = np.maximum(read[at], self.secret_model.probabilities(rows)[:, 1])
        return read

    @staticmethod
    def sentences(text: str) -> list[re.Match[str]]:
        """The sentences of ``text``, as the secret decision reads them."""
        return [m for m in _SENTENCE.finditer(text) if m.group(0).strip()]

    def secret_sentences(self, text: str) -> list[re.Match[str]]:
        """The sentences of ``text`` that hold a secret value (a pair of them, or the whole
        text, where only read together do they hold one).

        The context naming what a value opens is often in the sentence before it ("Garage
        keypad changed. New one: 44.17.62"), so a sentence is also read together with the one
        before it when that one holds no value itself.
        """
        if self.secret_model is None or self.span_model is None or not text.strip():
            return []
        sentences = self.sentences(text)
        alone, paired = self._sentence_readings(text, sentences)
        flagged_alone = alone >= self.SECRET_TEXT
        # A pair only flags a sentence whose predecessor is not flagged alone: after
        # "My PIN is 4821." the pair holds that PIN, not a value of the next sentence. The
        # value of a flagged pair may sit in either sentence ("Code: 604917. Don't share
        # it."), so the pair is read for it as a whole.
        flagged: list[re.Match[str]] = []
        for i, match in enumerate(sentences):
            if flagged_alone[i]:
                flagged.append(match)
            elif i > 0 and not flagged_alone[i - 1] and paired[i - 1] >= self.SECRET_TEXT:
                pair = _WHOLE.fullmatch(text, sentences[i - 1].start(), match.end())
                flagged.append(pair or match)
        if flagged or len(sentences) < 2:
            return flagged
        # The gate refuses a text whose whole reading holds a secret, so redaction cuts in it
        # too, even where no sentence or pair holds the secret on its own.
        whole = _WHOLE.fullmatch(text)
        if whole is not None and self.secret_probability([text])[0] >= self.SECRET_TEXT:
            return [whole]
        return []

    def secret_reading(self, text: str, whole: float | None = None) -> float:
        """The likeliest of ``text`` holding a secret as a whole, in one of its sentences, or
        in one read with the sentence before it: a value is diluted by a long text around it.
        ``whole``: the whole text's reading where the caller has it already."""
        if self.secret_model is None or not text.strip():
            return 0.0
        if whole is None:
            whole = float(self.secret_probability([text])[0])
        sentences = self.sentences(text)
        if len(sentences) < 2:
            return whole
        alone, paired = self._sentence_readings(text, sentences)
        return max(whole, float(alone.max()), float(paired.max()))

    def _sentence_readings(
        self, text: str, sentences: list[re.Match[str]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The secret probability of each sentence alone (0 for one word after the first
        sentence), and of each read with the one before."""
        with_previous = [
            text[sentences[i - 1].start() : m.end()] for i, m in enumerate(sentences) if i
        ]
        probabilities = self.secret_probability([m.group(0) for m in sentences] + with_previous)
        # One word after a sentence is read only with that sentence: alone it has no context
        # to be a secret in, and an abbreviation's stop ("... is Dr. Quillfeather") makes a
        # name such a "sentence".
        readable_alone = [i == 0 or len(m.group(0).split()) > 1 for i, m in enumerate(sentences)]
        alone = np.where(readable_alone, probabilities[: len(sentences)], 0.0)
        return alone, probabilities[len(sentences) :]

    def secret_value_spans(self, text: str) -> list[tuple[int, int]]:
        """Where the secret values of ``text`` are: every span the span decision cuts in each
        of its :meth:`secret_sentences`, at least the likeliest one, and every number; where the
        span decision reads no value in a flagged sentence, the values it reads in the next
        sentence (unless that one is flagged itself) read with it, or, where it reads none
        there either, that whole sentence (and inside it, to be chased through the turn, its
        numbers and the words it reads as possible values)."""
        found: set[tuple[int, int]] = set()
        flagged = self.secret_sentences(text)
        sentences = self.sentences(text)
        for match in flagged:
            reading = self._value_spans(match.group(0), match.start())
            if reading.values:
                found.update(reading.cut)
                continue
            after = next((m for m in sentences if m.start() >= match.end()), None)
            told_after: list[tuple[int, int]] = []
            if after is not None and not any(f.start() <= after.start() < f.end() for f in flagged):
                # "The gate code changed!! New one is #5520*": a sentence can name what a
                # value opens and leave the value to the next one. Only what the span
                # decision reads as a value is taken there: the next sentence's other numbers
                # ("back at 6") are not the secret's, and cut values are chased through the
                # rest of the turn.
                pair = self._value_spans(text[match.start() : after.end()], match.start())
                told_after = [span for span in pair.values if span[0] >= after.start()]
            if told_after:
                found.update(reading.cut + told_after)
            else:
                # The sentence holds a secret and the span decision cannot say which words
                # are the value ("the answer to the security question is ...", a one-word
                # answer): the sentence goes whole, as where it offers no candidate at all.
                # Its numbers are kept as spans too (inside the whole one, they cut nothing
                # more here) so that a turn chases them: the model words the sentence its own
                # way but repeats the code. So are the words the span decision reads as
                # possible values ("goldfish" 0.11, "Bubbles" 0.11): its likeliest word alone
                # may be "the", cut from every reply of the turn.
                found.add((match.start(), match.end()))
                found.update(reading.numbers + reading.possible)
        return sorted(found)

    def value_spans(self, sentence: str, offset: int = 0) -> list[tuple[int, int]]:
        """Where the values of a sentence that holds a secret are (``offset``: where the
        sentence starts in its text): every span the span decision cuts, at least the
        likeliest one, and every number."""
        return self._value_spans(sentence, offset).cut

    def _value_spans(self, sentence: str, offset: int) -> _SpanReading:
        assert self.span_model is not None
        spans = candidate_spans(sentence)
        if not spans:
            whole = (offset, offset + len(sentence))
            return _SpanReading(cut=[whole], values=[], numbers=[], possible=[])
        rows = np.stack([span_features(sentence, span) for span in spans])
        probs = self.span_model.probabilities(rows)[:, 1]
        confident = {i for i, p in enumerate(probs) if p >= self.SECRET_SPAN}
        # In a sentence that holds a secret, a number the span decision passed over may still
        # be the value: cutting a room number with a code costs less than keeping the code.
        numbers = {i for i, span in enumerate(spans) if span.numeric}

        def located(chosen: set[int]) -> list[tuple[int, int]]:
            return [(offset + spans[i].start, offset + spans[i].end) for i in sorted(chosen)]

        possible = {
            i
            for i, p in enumerate(probs)
            if p >= self.SECRET_CHASE and spans[i].end - spans[i].start >= CHASED_MIN_CHARS
        }
        return _SpanReading(
            cut=located({int(probs.argmax())} | confident | numbers),
            values=located(confident),
            numbers=located(numbers),
            possible=located(possible),
        )


@cache
def judgement() -> Judgement:
    """The process-wide trained decisions over the bundled encoder."""
    return Judgement(bundled_encoder())
