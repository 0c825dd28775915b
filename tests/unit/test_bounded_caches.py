"""Per-process caches keyed by what clients choose stay bounded (issue 17).

The ranking cache holds at most MEMORA_RANKING_CACHE_USERS users and nothing for a
user with no memories; the chat model cache holds a few models, and a run may name
only the models the operator allows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agent import chat_models
from agent.chat_models import ChatModelNotAllowed, check_chat_model, get_chat_model
from memora.config import load_settings
from memora.embeddings import EmbeddingSpec
from memora.errors import ConfigurationError
from memora.models import MemoryUnit
from memora.storage.store import LongTermMemoryStore, new_memory_id

SPEC = EmbeddingSpec(model_id="test/hash-8", dimension=8)
BOUND = 3


def _embed(texts: list[str]) -> np.ndarray:
    rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) for t in texts]
    return np.asarray(rows, dtype=np.float32).reshape(len(texts), SPEC.dimension)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LongTermMemoryStore]:
    opened = LongTermMemoryStore(tmp_path, SPEC, embed=_embed, ranking_cache_users=BOUND)
    yield opened
    opened.close()


def _add(store: LongTermMemoryStore, user: str, count: int = 2) -> None:
    units = [
        MemoryUnit(id=new_memory_id(), user_id=user, content=f"{user} fact {n}")
        for n in range(count)
    ]
    store.add(units, _embed([u.content for u in units]))


def test_the_ranking_cache_never_exceeds_its_bound(store: LongTermMemoryStore) -> None:
    users = [f"user-{n}" for n in range(3 * BOUND)]
    for user in users:
        _add(store, user)
    for user in users:
        assert store.index_for(user).size == 2
        assert store.cached_users() <= BOUND
    assert store.cached_users() == BOUND
    # Least recently used goes first: the latest user is still the same object.
    latest = store.index_for(users[-1])
    assert store.index_for(users[-1]) is latest
    store.index_for(users[0])
    assert store.cached_users() == BOUND
    assert store.index_for(users[-1]) is latest


def test_an_unknown_user_leaves_no_entry(
    store: LongTermMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _add(store, "alice")
    store.index_for("alice")
    reads: list[str] = []
    index_rows = store.rows.index_rows
    monkeypatch.setattr(store.rows, "index_rows", lambda u: reads.append(u) or index_rows(u))
    for number in range(200):
        assert store.index_for(f"nobody-{number}").size == 0
    assert store.cached_users() == 1
    assert reads == []  # a user never written costs no read of rows (nor vectors)
    _add(store, "newcomer", count=1)
    assert store.index_for("newcomer").size == 1
    assert store.cached_users() == 2


def test_the_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORA_RANKING_CACHE_USERS", "7")
    assert load_settings().ranking_cache_users == 7
    monkeypatch.setenv("MEMORA_RANKING_CACHE_USERS", "0")
    with pytest.raises(ConfigurationError, match="MEMORA_RANKING_CACHE_USERS"):
        load_settings()


@pytest.fixture(autouse=True)
def _no_cached_models() -> Iterator[None]:
    chat_models.clear_chat_models()
    yield
    chat_models.clear_chat_models()


def test_a_disallowed_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORA_ALLOWED_CHAT_MODELS", raising=False)
    monkeypatch.setenv("MEMORA_CHAT_MODEL", "gpt-4o-mini")
    settings = load_settings()
    for allowed in ("", "offline", "gpt-4o-mini"):
        check_chat_model(settings, allowed)
    for refused in ("gpt-4o", "o1-pro", "x" * 10_000, "gpt-4o\nSYSTEM"):
        with pytest.raises(ChatModelNotAllowed) as error:
            get_chat_model(settings, refused)
        message = str(error.value)
        assert "not allowed" in message and "\n" not in message and len(message) < 300
    assert chat_models.cached_chat_models() == 0


def test_the_operator_lists_more_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORA_CHAT_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("MEMORA_ALLOWED_CHAT_MODELS", " gpt-4o , o3-mini,")
    settings = load_settings()
    assert settings.chat_model_allowlist == {"gpt-4o-mini", "gpt-4o", "o3-mini"}
    with pytest.raises(ChatModelNotAllowed):
        check_chat_model(settings, "offline")


def test_the_chat_model_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for timeout in range(1, 50):
        get_chat_model(load_settings(model_timeout_s=timeout), "offline")
        assert chat_models.cached_chat_models() <= chat_models.MAX_CACHED_MODELS
