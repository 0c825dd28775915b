"""Who a request comes from: signed bearer tokens (JWT) verified with PyJWT.

A token names its user in ``sub``. It must carry ``exp``; ``aud`` and ``iss``
are checked when the settings name them. HS256 tokens are verified with
MEMORA_AUTH_SECRET; RS256/ES256 tokens with the keys MEMORA_AUTH_JWKS_URL serves.
Reasons for a refusal are one line and never contain the token.
"""

from __future__ import annotations

import time
from typing import Any

import jwt

from memora.config import Settings
from memora.errors import InvalidToken
from memora.validation import InvalidInput, validate_user_id

VERIFIED_PERMISSION = "memora:verified-token"
"""The permission the server gives an identity a token proved; the graph trusts only these."""
HMAC_ALGORITHMS = ["HS256"]
JWKS_ALGORITHMS = ["RS256", "ES256"]
MAX_TOKEN_CHARS = 8192
"""Longer headers are refused before any decoding work."""


class TokenVerifier:
    """Checks bearer tokens against the configured secret or JWKS endpoint."""

    def __init__(self, settings: Settings) -> None:
        self._secret = settings.auth_secret.get_secret_value() if settings.auth_secret else None
        self._jwks = jwt.PyJWKClient(settings.auth_jwks_url) if settings.auth_jwks_url else None
        self._audience = settings.auth_audience
        self._issuer = settings.auth_issuer
        self._max_lifetime_s = settings.auth_max_token_lifetime_s

    def user_id(self, authorization: str | None) -> str:
        """The user an ``Authorization: Bearer <JWT>`` header proves.

        Blocking: a JWKS lookup may fetch keys over HTTP.

        Raises:
            InvalidToken: The header is missing, malformed, expired or wrongly signed.
        """
        token = _bearer_token(authorization)
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.DecodeError:
            raise InvalidToken("malformed bearer token") from None
        claims = self._decode(token, algorithm)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise InvalidToken("the token names no user (claim 'sub')")
        try:
            # The library's own rule, so an accepted token's user can always be served.
            return validate_user_id(subject)
        except InvalidInput as error:
            raise InvalidToken(f"the token's user (claim 'sub') is refused: {error}") from None

    def _decode(self, token: str, algorithm: Any) -> dict[str, Any]:
        key: Any
        if algorithm in HMAC_ALGORITHMS and self._secret is not None:
            key, allowed = self._secret, HMAC_ALGORITHMS
        elif algorithm in JWKS_ALGORITHMS and self._jwks is not None:
            try:
                key = self._jwks.get_signing_key_from_jwt(token).key
            except jwt.PyJWKClientConnectionError:
                raise InvalidToken("the signing keys could not be fetched") from None
            except jwt.PyJWKClientError:
                raise InvalidToken("no signing key matches the token") from None
            allowed = JWKS_ALGORITHMS
        else:
            raise InvalidToken(f"tokens signed with {algorithm!r} are not accepted")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=allowed,
                audience=self._audience,
                issuer=self._issuer,
                options={"require": ["exp", "sub"], "verify_aud": self._audience is not None},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.MissingRequiredClaimError as error:
            raise InvalidToken(f"the token lacks the required claim {error.claim!r}") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token is from another issuer") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the token's signature does not verify") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet (claim 'nbf' or 'iat')") from None
        except jwt.InvalidTokenError:
            raise InvalidToken("malformed bearer token") from None
        self._check_lifetime(claims)
        return claims

    def _check_lifetime(self, claims: dict[str, Any]) -> None:
        issued = claims.get("iat")
        start = issued if isinstance(issued, int | float) else time.time()
        if float(claims["exp"]) - start > self._max_lifetime_s:
            raise InvalidToken(
                f"the token lives longer than {self._max_lifetime_s} s"
                " (MEMORA_AUTH_MAX_TOKEN_LIFETIME_S)"
            )


def _bearer_token(authorization: str | None) -> str:
    if not authorization or not authorization.strip():
        raise InvalidToken("missing bearer token (Authorization: Bearer <JWT>)")
    if len(authorization) > MAX_TOKEN_CHARS:
        raise InvalidToken("the Authorization header is too long")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise InvalidToken("the Authorization header must be 'Bearer <JWT>'")
    return token.strip()
