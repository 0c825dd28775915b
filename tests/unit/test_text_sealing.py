"""Sealed memory text and sealed checkpoint values open only with their own key."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from memora.errors import StoreError
from memora.storage.sealed_threads import SUFFIX, SealedText, SealingSerializer
from memora.storage.sealing import new_key, seal_text, unseal_text

TEXT = "我住在高雄 and my sister Lin Yuting is a nurse"


def test_a_sealed_text_opens_with_its_key_only() -> None:
    key = new_key()
    sealed = seal_text(TEXT, key)
    assert TEXT.encode() not in sealed and b"Lin Yuting" not in sealed
    assert key not in sealed
    assert unseal_text(sealed, key) == TEXT
    with pytest.raises(ValueError, match="does not open"):
        unseal_text(sealed, new_key())
    with pytest.raises(ValueError, match="no key"):
        unseal_text(sealed, None)
    assert seal_text(TEXT, key) != sealed  # a fresh nonce each time


def test_a_text_stored_before_sealing_reads_as_it_is() -> None:
    assert unseal_text(TEXT.encode(), None) == TEXT
    assert unseal_text(TEXT.encode(), new_key()) == TEXT


class _Keys:
    """The two lookups the serde makes, without a database."""

    def __init__(self) -> None:
        self.by_thread: dict[str, tuple[bytes, bytes]] = {}

    def for_thread(self, thread_id: str) -> tuple[bytes, bytes]:
        return self.by_thread.setdefault(thread_id, (new_key()[:16], new_key()))

    def by_id(self, key_id: bytes) -> bytes | None:
        return next((k for i, k in self.by_thread.values() if i == key_id), None)


def test_checkpoint_values_are_sealed_per_thread_and_die_with_the_key() -> None:
    keys = _Keys()
    serde = SealingSerializer(keys)  # type: ignore[arg-type]
    value = {"messages": [TEXT]}
    with serde.sealing_for("t1"):
        kind, blob = serde.dumps_typed(value)
        text_kind, text_blob = serde.dumps_typed(SealedText(TEXT))
    assert kind.endswith(SUFFIX) and b"Lin Yuting" not in blob
    assert serde.loads_typed((kind, blob)) == value
    assert serde.loads_typed((text_kind, text_blob)) == TEXT  # back as a plain str
    legacy = JsonPlusSerializer().dumps_typed(value)
    assert serde.loads_typed(legacy) == value  # saved before sealing
    del keys.by_thread["t1"]
    with pytest.raises(StoreError, match="destroyed"):
        serde.loads_typed((kind, blob))
