"""Bearer token verification: what proves a user, and the one-line reason for what does not."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from memora.config import load_settings
from memora.errors import ConfigurationError
from memora.identity import InvalidToken, TokenVerifier

SECRET = "unit-test-secret-that-is-long-enough-0123"


def _token(**claims: Any) -> str:
    payload = {"sub": "alice", "exp": int(time.time()) + 60, **claims}
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, SECRET, "HS256")


def _verifier(**settings: Any) -> TokenVerifier:
    return TokenVerifier(load_settings(auth_secret=SECRET, **settings))


def test_a_valid_token_names_its_user() -> None:
    assert _verifier().user_id(f"Bearer {_token()}") == "alice"
    assert _verifier().user_id(f"bearer   {_token(sub='bob')}  ") == "bob"


@pytest.mark.parametrize(
    ("settings", "claims", "reason"),
    [
        ({"auth_audience": "memora"}, {}, "'aud'"),
        ({"auth_audience": "memora"}, {"aud": "other"}, "another audience"),
        ({"auth_issuer": "https://id.example"}, {"iss": "https://evil.example"}, "another issuer"),
        ({}, {"sub": None}, "'sub'"),
        ({}, {"exp": None}, "'exp'"),
        ({}, {"sub": "  "}, "names no user"),
        # The library's user id rule, at auth time: no token names a user it would refuse.
        ({}, {"sub": "a" * 257}, "'sub'.*longer than 256"),
        ({}, {"sub": "ali\x00ce"}, "'sub'.*printable"),
        ({}, {"sub": "alice\nbob"}, "'sub'.*printable"),
        ({}, {"nbf": int(time.time()) + 3600}, "not valid yet"),
        ({}, {"iat": int(time.time()) + 3600}, "not valid yet"),
        ({}, {"exp": int(time.time()) + 10 * 86_400}, "lives longer than 86400 s"),
        (
            {"auth_max_token_lifetime_s": "3600"},
            {"iat": int(time.time()), "exp": int(time.time()) + 7200},
            "lives longer than 3600 s",
        ),
    ],
)
def test_claims_are_checked(settings: dict[str, str], claims: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidToken, match=reason) as refused:
        _verifier(**settings).user_id(f"Bearer {_token(**claims)}")
    assert "\n" not in str(refused.value)


def test_audience_and_issuer_pass_when_they_match() -> None:
    verifier = _verifier(auth_audience="memora", auth_issuer="https://id.example")
    token = _token(aud="memora", iss="https://id.example")
    assert verifier.user_id(f"Bearer {token}") == "alice"


def test_unsigned_and_unknown_algorithms_are_refused() -> None:
    unsigned = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, None, "none")
    for token in (unsigned, jwt.encode({"sub": "a", "exp": 9999999999}, SECRET, "HS512")):
        with pytest.raises(InvalidToken, match="not accepted"):
            _verifier().user_id(f"Bearer {token}")


def test_a_token_is_never_part_of_the_reason() -> None:
    token = _token(exp=int(time.time()) - 5)
    with pytest.raises(InvalidToken) as refused:
        _verifier().user_id(f"Bearer {token}")
    assert token not in str(refused.value) and "expired" in str(refused.value)


def test_an_oversized_header_is_refused_before_decoding() -> None:
    with pytest.raises(InvalidToken, match="too long"):
        _verifier().user_id("Bearer " + "a" * 100_000)


def test_a_short_secret_is_a_config_error_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError, match="MEMORA_AUTH_SECRET.*32 bytes") as refused:
        load_settings(auth_secret="short")
    assert "short" not in str(refused.value).replace("32 bytes", "")
