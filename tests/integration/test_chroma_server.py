"""The store against a real Chroma server (`chroma run`) instead of the on-disk client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from memora.api import Memora
from memora.config import load_settings

CHROMA = str(Path(sys.executable).with_name("chroma"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def chroma_url(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log = (tmp_path / "chroma.log").open("w")
    server = subprocess.Popen(
        [
            CHROMA,
            "run",
            "--path",
            str(tmp_path / "server"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(
                        "chroma run did not start: " + (tmp_path / "chroma.log").read_text()
                    )
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_memories_live_in_the_chroma_server(chroma_url: str, tmp_path: Path) -> None:
    writer = Memora(load_settings(data_dir=tmp_path / "a", chroma_url=chroma_url))
    outcome = writer.add("alice", "I keep a sourdough starter named Bubbles")
    writer.close()
    assert not (tmp_path / "a" / "chroma").exists()  # no on-disk vector store was made
    reader = Memora(load_settings(data_dir=tmp_path / "a", chroma_url=chroma_url))
    hits = reader.search("alice", "sourdough starter")
    assert [hit.memory.id for hit in hits] == [outcome.memory_id]
    vectors = reader.store.collection.get(ids=[outcome.memory_id], include=["embeddings"])
    assert len(vectors["ids"]) == 1 and len(vectors["embeddings"][0]) == 256
    assert reader.forget("alice", outcome.memory_id or "")
    assert reader.store.collection.get(ids=[outcome.memory_id])["ids"] == []
    reader.close()
