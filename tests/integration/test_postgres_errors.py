"""A database that cannot be used is one clear line, with the password left out."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from memora.storage.db import StoreError
from memora.storage.postgres import PostgresDatabase, describe_url
from tests.integration.test_cli import one_error_line, run


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_database_is_one_line_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://memora:s3cret-pw@127.0.0.1:{_closed_port()}/memora"
    line = one_error_line(run(tmp_path / "data", "memories", "list", MEMORA_DATABASE_URL=url))
    assert "cannot reach the database postgresql://memora@127.0.0.1:" in line
    assert "MEMORA_DATABASE_URL" in line and "s3cret-pw" not in line
    assert not (tmp_path / "data" / "memora.db").exists()


def test_a_newer_schema_is_refused(database_url: str) -> None:
    db = PostgresDatabase(database_url)
    try:
        db.ensure_schema("rows", 99, [])
        with pytest.raises(StoreError, match="rows schema version 99, newer than this Memora"):
            db.ensure_schema("rows", 1, [])
    finally:
        db.close()


def test_describe_url_drops_the_password() -> None:
    assert describe_url("postgresql://u:pw@h:6543/d") == "postgresql://u@h:6543/d"
