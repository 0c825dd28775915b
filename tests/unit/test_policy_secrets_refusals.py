"""Secrets (door and alarm codes, login + password pairs, 密碼 variants) and refusals."""

from __future__ import annotations

import pytest

from memora.models import MemoryCandidate, RejectionReason
from memora.redaction import MARK, redact
from memora.write.policy import check_candidate, sensitive_spans

SECRETS = [
    ("The door code to my apartment is 7391", "The door code to my apartment is 7391"),
    ("User's door code is 7391", "remember my door code is 7391"),
    ("User's alarm code is 0420", "our alarm code: 0420"),
    ("User's gate code is 1234#", "the gate code for our building is 1234#"),
    ("User's garage keypad code is 5566", "garage keypad code 5566"),
    (
        "My gmail login is alice@example.com / Tr0ub4dor&3",
        "My gmail login is alice@example.com / Tr0ub4dor&3",
    ),
    (
        "User's Netflix login: bob@mail.com, password hunter22",
        "netflix login: bob@mail.com, password hunter22",
    ),
    (
        "User's username is sam_k and password is Blue!Sky99",
        "my username is sam_k and password is Blue!Sky99",
    ),
    (
        "alice@example.com:Tr0ub4dor&3 is the user's work account",
        "alice@example.com:Tr0ub4dor&3 is my work account",
    ),
    ("使用者的密碼是 abcdefg", "我的密碼是 abcdefg"),
    ("使用者的 WiFi 密碼是 sunshine88", "家裡 WiFi 密碼是 sunshine88"),
    ("使用者的提款卡密碼是 4821", "我的提款卡密碼是4821"),
    ("使用者的密码：qwerty", "密码：qwerty"),
    ("使用者的口令是 open-sesame-7", "口令是 open-sesame-7"),
    ("使用者家的大門密碼是 2580", "我家大門密碼 2580"),
    ("使用者的帳號 alice01 密碼 pass1234", "帳號 alice01 密碼 pass1234"),
    ("使用者的門禁卡密碼是 9999", "门禁密码是9999"),
    ("User's safe combination is 12-34-56", "the combination to my safe is 12-34-56"),
    ("User's locker combo is 10-20-30", "my locker combo is 10-20-30"),
    ("The user's phone unlock code is 8642", "phone unlock code 8642"),
    ("User's bank PIN is 4821", "PIN for my bank card is 4821"),
    ("User's card security code is 512", "card security code: 512"),
    ("使用者信用卡背面三碼是 382", "我信用卡背面三碼是 382"),
]
LOOK = [
    ("User uses 1Password as their password manager", "I use 1Password as my password manager"),
    ("User changes their passwords every 3 months", "I change my passwords every 3 months"),
    ("User's postcode is 10115", "my postcode is 10115"),
    ("User works at door number 12 on Main Street", "I work at door number 12 on Main Street"),
    ("User's login name on the forum is CatLover", "my login name on the forum is CatLover"),
    ("User forgot their Gmail password last week", "I forgot my Gmail password last week"),
    ("使用者忘記了密碼", "我忘記密碼了"),
    ("User's gym opens at 6am", "my gym opens at 6am"),
    ("User's email is alice@example.com", "my email is alice@example.com"),
    ("User logs in to work at 9:00 every day", "I log in to work at 9:00 every day"),
    ("User is three digits into the code puzzle", "I'm three digits into the code puzzle"),
]
REFUSE = [
    ("User has diabetes", "I have diabetes but please don't keep any record of it"),
    ("User has diabetes", "I have diabetes. I don't want any record of that kept."),
    ("User has diabetes", "I'd like you to not keep a record of my diabetes"),
    ("User has diabetes", "I have diabetes - no records please"),
    ("User has diabetes", "Can you not remember that I have diabetes?"),
    ("User has diabetes", "I have diabetes, but forget I said that"),
    ("User has diabetes", "Off the record: I have diabetes"),
    ("User has diabetes", "I have diabetes. Please don't commit this to memory."),
    ("User has diabetes", "I have diabetes; don't make a note of it anywhere"),
    ("User has diabetes", "This stays between us: I have diabetes"),
    ("User has diabetes", "I have diabetes, not something I want remembered"),
    ("User has diabetes", "I have diabetes. Don't log it."),
    ("User has diabetes", "I have diabetes — keep this to yourself, don't save it"),
    ("User has diabetes", "I have diabetes but I don't want that stored anywhere"),
    ("User has diabetes", "Just so you know (not for your memory): I have diabetes"),
    ("User has diabetes", "I have diabetes. Please keep no record of this."),
    ("User has diabetes", "I have diabetes; without saving it, what should I eat?"),
    ("User has diabetes", "I have diabetes, don't write it down"),
    ("User has diabetes", "I have diabetes — this is private, don't retain it"),
    ("User has diabetes", "Do not record that I have diabetes"),
    ("User has diabetes", "I have diabetes but I'd prefer you didn't keep that"),
    ("User has diabetes", "I have diabetes. Erase that from your memory after this chat."),
    ("使用者有糖尿病", "我有糖尿病，不要記下來"),
    ("使用者有糖尿病", "我有糖尿病，這個不要留紀錄"),
    ("使用者有糖尿病", "我有糖尿病，但別存起來"),
    ("使用者有糖尿病", "我有糖尿病，不用記錄"),
    ("使用者有糖尿病", "我有糖尿病，這件事不要被記住"),
    ("使用者有糖尿病", "我有糖尿病，忘了我剛剛說的"),
    ("使用者有糖尿病", "我有糖尿病，就當我沒講"),
    ("使用者有糖尿病", "我有糖尿病，請不要保存任何紀錄"),
    ("使用者有糖尿病", "我有糖尿病，我不想被記住這件事"),
    ("使用者有糖尿病", "我有糖尿病，這個別寫進記憶"),
    ("使用者有糖尿病", "私下跟你說，我有糖尿病，別記"),
    ("使用者有糖尿病", "我有糖尿病。不要有任何紀錄。"),
    ("使用者有糖尿病", "我有糖尿病，不需要記住"),
    ("使用者有糖尿病", "我有糖尿病，聽過就好，不用記"),
    ("使用者有糖尿病", "我有糖尿病，不要放到記憶裡"),
    ("使用者有糖尿病", "我有糖尿病，這是隱私別存檔"),
    ("使用者有糖尿病", "我有糖尿病，别保留记录"),
    ("使用者有糖尿病", "我有糖尿病，不要把這件事記起來"),
]
KEEP = [
    ("User's birthday is May 3", "Don't forget my birthday is May 3"),
    ("User keeps a record of their runs", "I keep a record of my runs"),
    ("User never forgets a face", "I never forget a face"),
    ("User's doctor said not to skip insulin", "my doctor said not to skip insulin"),
    ("使用者記得媽媽的生日是五月三日", "我記得媽媽的生日是五月三日"),
    ("使用者不喜歡被記者採訪", "我不喜歡被記者採訪"),
]


def _verdict(content: str, message: str) -> RejectionReason | None:
    verdict = check_candidate(MemoryCandidate(content=content, user_message=message))
    return verdict[0] if verdict else None


@pytest.mark.parametrize(("content", "message"), SECRETS)
def test_secrets_are_sensitive(content: str, message: str) -> None:
    assert _verdict(content, message) is RejectionReason.SENSITIVE_DATA


@pytest.mark.parametrize(("content", "message"), LOOK)
def test_secret_words_without_a_secret_are_kept(content: str, message: str) -> None:
    assert _verdict(content, message) is None


@pytest.mark.parametrize(("content", "message"), REFUSE)
def test_a_request_not_to_keep_it_is_a_refusal(content: str, message: str) -> None:
    assert _verdict(content, message) is RejectionReason.USER_REFUSED


@pytest.mark.parametrize(("content", "message"), KEEP)
def test_remembering_words_that_are_not_refusals_are_kept(content: str, message: str) -> None:
    assert _verdict(content, message) is None


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("The door code to my apartment is 7391", "7391"),
        ("My gmail login is alice@example.com / Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("my username is sam_k and password is Blue!Sky99", "Blue!Sky99"),
        ("我的提款卡密碼是4821", "4821"),
        ("帳號 alice01 密碼 pass1234", "pass1234"),
    ],
)
def test_redaction_cuts_the_new_secret_shapes(text: str, secret: str) -> None:
    spans = sensitive_spans(text)
    assert spans and any(text[a:b] == secret for a, b in spans)
    cleaned = redact(text)
    assert secret not in cleaned.text and MARK in cleaned.text


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        # A value runs on through letters of any alphabet, not only ASCII ones.
        ("my password is Müller2024", f"my password is {MARK}"),
        ("the wifi password is café-latte-42", f"the wifi password is {MARK}"),
        ("password: b@d)Pass", f"password: {MARK}"),
        # It stops at a space, a wide character or the sentence's punctuation.
        ("my password is hunter2? no wait", f"my password is {MARK}? no wait"),
        ("請記住，我的驗證碼是 482913。另外", f"請記住，我的驗證碼是 {MARK}。另外"),
        ("驗證碼482913另外", f"驗證碼{MARK}另外"),
        # A quoted value goes whole, however many words it holds, and its quotes stay.
        ('my wifi password is "sunflower"', f'my wifi password is "{MARK}"'),
        ("the wifi password is 'hunter2'.", f"the wifi password is '{MARK}'."),
        ("my passphrase is 'correct horse battery' ok", f"my passphrase is '{MARK}' ok"),
        ("the door code is “blue moon 42” and", f"the door code is “{MARK}” and"),
        ("password: (hunter2)", f"password: ({MARK})"),
        ("我的密碼是「藍色月亮」", f"我的密碼是「{MARK}」"),
        ("my pin is 'it's-42' ok", f"my pin is '{MARK}' ok"),
        ('my password is "blue moon 42” ok', f'my password is "{MARK}” ok'),
        ("my password is „blue moon 42“ ok", f"my password is „{MARK}“ ok"),
        ("我的密碼「藍色月亮」好", f"我的密碼「{MARK}」好"),
        # A value that runs on past its closing mark is one token, marks and all.
        ("my password is [admin]2024!secret", f"my password is {MARK}"),
        ('wifi password: "Ab12"cd34!xyz', f"wifi password: {MARK}"),
        # A quote that closes only in another sentence never closed.
        (
            'my password is "hunter2. Then Bob said "hi"',
            f'my password is "{MARK} Then Bob said "hi"',
        ),
        # An apostrophe after the keyword opens no value, nor does a keyword ending a quote.
        ("I reset my password 'cause I forgot it", "I reset my password 'cause I forgot it"),
        ("a 'wrong PIN' message on my card", "a 'wrong PIN' message on my card"),
    ],
)
def test_the_rules_place_the_whole_value_and_only_it(text: str, cleaned: str) -> None:
    assert redact(text).text == cleaned
