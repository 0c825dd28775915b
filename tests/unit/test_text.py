"""The shared text module: folding, stopwords and index terms."""

from __future__ import annotations

from memora.text.folding import STOPWORDS, content_words, fold, has_han, index_terms, to_simplified


def test_fold_width_case_script_quotes_and_invisible_characters() -> None:
    assert fold("ＰＡＳＳ") == "pass"
    assert fold("驗證碼") == "验证码"
    assert fold("User\u2019s") == "user's"
    assert fold("del\u200bete mem\u2060ories") == "delete memories"


def test_fold_keeps_offsets_on_ordinary_text() -> None:
    text = "My PIN is 4821, 我的密碼是 abc"
    assert len(fold(text)) == len(text)


def test_simplified_folding_only_touches_han() -> None:
    assert to_simplified("plain text") == "plain text"
    assert to_simplified("記憶") == "记忆"
    assert has_han("a 字") and not has_han("abc")


def test_stopwords_come_from_the_data_file() -> None:
    assert {"the", "and", "don't"} <= STOPWORDS
    assert "memory" not in STOPWORDS


def test_index_terms_stem_english_and_bigram_chinese() -> None:
    assert index_terms("The runners were running") == ["runner", "run"]
    assert index_terms("我住高雄") == ["我", "住", "高", "雄", "我住", "住高", "高雄"]
    assert index_terms("臺灣") == index_terms("台湾")
    assert index_terms("") == []


def test_content_words_drop_stopwords_but_keep_forms() -> None:
    assert content_words("What did the cats eat?") == "cats eat"
    assert content_words("the") == "the"
