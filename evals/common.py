"""Helpers shared by the evaluation suites."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from memora.api import Memora
from memora.config import get_settings, load_settings
from memora.storage.db import StoreError

BACKENDS = ("sqlite", "postgres")
"""Where an evaluation's scratch store lives: files in its data dir, or the configured
Postgres database and Chroma server (a scratch database and collection on them)."""


def json_object_line(
    number: int, text: str, keys: Iterable[str], error: type[ValueError]
) -> dict[str, Any]:
    """One line of a JSON Lines data file as an object holding ``keys``.

    Raises:
        error: The line is not JSON, not an object, or lacks a key (the message names the
            line and the problem).
    """
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"line {number}: invalid JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise error(f"line {number}: expected a JSON object")
    missing = [key for key in keys if key not in row]
    if missing:
        raise error(f"line {number}: missing key(s): {', '.join(missing)}")
    return row


def percentile_ms(samples_s: list[float], q: float) -> float:
    """The q-th percentile of durations given in seconds, in milliseconds."""
    return float(np.percentile(np.asarray(samples_s) * 1000.0, q)) if samples_s else 0.0


@contextmanager
def scratch_memora(data_dir: Path | None = None, backend: str = "sqlite") -> Iterator[Memora]:
    """A Memora on a fresh data dir (a temporary one unless given) and, for ``postgres``,
    a fresh database and Chroma collection on the configured servers, dropped afterwards."""
    with (
        tempfile.TemporaryDirectory(prefix="memora-eval-") as tmp,
        scratch_servers(backend) as overrides,
    ):
        root = data_dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        memora = Memora(load_settings(data_dir=root, **overrides))
        try:
            yield memora
        finally:
            if backend == "postgres":  # the scratch collection goes with the scratch database
                memora.drop_vector_collection()
            memora.close()


@contextmanager
def scratch_servers(backend: str) -> Iterator[dict[str, Any]]:
    """Settings for a scratch store on ``backend`` (none for ``sqlite``).

    Raises:
        StoreError: ``postgres`` without MEMORA_DATABASE_URL and MEMORA_CHROMA_URL set, or a
            database that cannot be created.
    """
    if backend == "sqlite":  # files only, whatever servers the environment names
        yield {"database_url": None, "chroma_url": None}
        return
    import psycopg

    from memora.storage.postgres import describe_postgres_error

    settings = get_settings()
    if not settings.database_url or not settings.chroma_url:
        raise StoreError("--backend postgres needs MEMORA_DATABASE_URL and MEMORA_CHROMA_URL")
    name = f"memora_eval_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(settings.database_url)
    url = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    try:
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as error:
        raise StoreError(describe_postgres_error(settings.database_url, error)) from None
    try:
        yield {"database_url": url, "chroma_url": settings.chroma_url, "chroma_collection": name}
    finally:
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_mb(memora: Memora) -> float | None:
    """Size of the Postgres database holding the rows, or None on SQLite."""
    url = memora.settings.database_url
    if not url:
        return None
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return float(row[0]) / 1e6 if row else None
