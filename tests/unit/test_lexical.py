"""Tests for the lexical tokenizer and BM25 index."""

from __future__ import annotations

from memora.recall.lexical import BM25Index, content_words, tokenize


def _index(docs: dict[str, str]) -> BM25Index:
    index = BM25Index()
    for doc_id, text in docs.items():
        index.add(doc_id, text)
    return index


def test_stemming_matches_inflections() -> None:
    assert tokenize("running") == tokenize("runs") == ["run"]
    index = _index({"a": "I went running yesterday", "b": "I like pizza"})
    assert [doc for doc, _ in index.search("how often does she run", 5)] == ["a"]


def test_stopwords_dropped_numbers_kept() -> None:
    assert tokenize("What is the plan for 2023?") == ["plan", "2023"]


def test_chinese_word_matches_across_traditional_and_simplified() -> None:
    index = _index({"home": "我住在高雄", "work": "我在台北工作", "food": "我喜欢吃面"})
    hits = index.search("高雄", 5)
    assert hits and hits[0][0] == "home"
    assert [doc for doc, _ in index.search("驗證", 5)] == []
    index.add("auth", "需要验证身份")
    assert index.search("驗證", 5)[0][0] == "auth"


def test_cjk_bigrams_and_mixed_text() -> None:
    terms = tokenize("我住在高雄 since 2020")
    assert "高雄" in terms
    assert "2020" in terms and "sinc" in terms


def test_removed_doc_not_returned() -> None:
    index = _index({"a": "my dog is called Rex", "b": "my cat is called Tom"})
    index.remove("a")
    assert len(index) == 1
    assert "a" not in index
    assert [doc for doc, _ in index.search("dog Rex", 5)] == []
    index.remove("missing")
    assert len(index) == 1


def test_readding_replaces_text() -> None:
    index = _index({"a": "likes tea"})
    index.add("a", "likes coffee")
    assert len(index) == 1
    assert index.search("tea", 5) == []
    assert index.search("coffee", 5)[0][0] == "a"


def test_ranking_order_obvious_case() -> None:
    index = _index(
        {
            "both": "Caroline adopted a puppy from the shelter",
            "one": "Caroline went hiking",
            "none": "The weather was sunny",
        }
    )
    hits = index.search("Caroline puppy shelter", 10)
    assert [doc for doc, _ in hits] == ["both", "one"]
    assert hits[0][1] > hits[1][1] > 0


def test_rare_term_outweighs_common_term() -> None:
    docs = {f"d{i}": f"we talked about work item {i}" for i in range(20)}
    docs["rare"] = "we talked about kayaking"
    hits = _index(docs).search("kayaking work", 3)
    assert hits[0][0] == "rare"


def test_empty_and_stopword_queries_return_nothing() -> None:
    index = _index({"a": "something here"})
    assert index.search("", 5) == []
    assert index.search("what is the", 5) == []
    assert index.search("something", 0) == []
    assert BM25Index().search("anything", 5) == []


def test_limit_and_scores_helper() -> None:
    index = _index({str(i): f"apple {'apple ' * i}" for i in range(10)})
    hits = index.search("apple", 3)
    assert len(hits) == 3
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    scores = index.scores("apple", ["0", "nope"])
    assert scores["0"] > 0 and scores["nope"] == 0.0
    assert set(index.scores("apple")) == {str(i) for i in range(10)}


def test_content_words_strips_question_words() -> None:
    assert content_words("When did Caroline go to the support group?") == (
        "caroline go support group"
    )
    assert content_words("what is it") == "what is it"
