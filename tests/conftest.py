"""Shared fixtures: a Memora on a temporary data dir with a controllable clock, and the real
servers (Postgres, a Chroma server) for the tests that run on both backends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from memora.api import Memora
from memora.config import Settings, load_settings


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 11, 15, 9, 0, tzinfo=UTC))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def memora(data_dir: Path, clock: Clock) -> Iterator[Memora]:
    instance = Memora(load_settings(data_dir=data_dir), clock=clock)
    yield instance
    instance.close()


# -- real servers: Postgres and a Chroma server -------------------------------------

ROOT = Path(__file__).resolve().parents[1]
DEV_SERVICES = ROOT / "scripts" / "dev-services"


@dataclass(frozen=True)
class Services:
    """A running Postgres and Chroma server the tests may use."""

    database_url: str
    """A database on the server that tests create their own databases from."""
    chroma_url: str
    postgres_data: Path | None
    """The server's data directory, when the tests can read it (for disk scans)."""


def _started_services(root: Path) -> Iterator[Services]:
    """Both servers started by ``scripts/dev-services`` under ``root``, stopped afterwards."""
    env = {**os.environ, "PYTHON": sys.executable}
    started = subprocess.run(
        [str(DEV_SERVICES), "start", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    try:
        if started.returncode != 0:
            pytest.fail(f"scripts/dev-services could not start the servers:\n{started.stderr}")
        values = dict(
            line.removeprefix("export ").split("=", 1)
            for line in started.stdout.splitlines()
            if line.startswith("export ")
        )
        yield Services(
            values["MEMORA_TEST_DATABASE_URL"],
            values["MEMORA_TEST_CHROMA_URL"],
            Path(values["MEMORA_TEST_POSTGRES_DATA"]),
        )
    finally:
        subprocess.run([str(DEV_SERVICES), "stop", str(root)], env=env, timeout=120, check=False)


@pytest.fixture(scope="session")
def services() -> Iterator[Services]:
    """The servers named by ``MEMORA_TEST_DATABASE_URL`` / ``MEMORA_TEST_CHROMA_URL`` (what
    ``.ci/run`` starts), or a Postgres and a Chroma server started here for the session.

    Never skipped: a server that cannot be reached or started fails the tests that need it.
    """
    database_url = os.environ.get("MEMORA_TEST_DATABASE_URL")
    chroma_url = os.environ.get("MEMORA_TEST_CHROMA_URL")
    if database_url and chroma_url:
        data = os.environ.get("MEMORA_TEST_POSTGRES_DATA")
        yield Services(database_url, chroma_url, Path(data) if data else None)
        return
    if os.environ.get("MEMORA_REQUIRE_TEST_SERVERS"):
        pytest.fail("MEMORA_TEST_DATABASE_URL and MEMORA_TEST_CHROMA_URL must be set in CI")
    root = Path(tempfile.mkdtemp(prefix="memora-test-services-"))
    yield from _started_services(root)
    shutil.rmtree(root, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` on the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@pytest.fixture
def database_url(services: Services) -> Iterator[str]:
    """A fresh, empty Postgres database for one test, dropped afterwards."""
    import psycopg

    name = f"memora_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(services.database_url, name)
    finally:
        with psycopg.connect(services.database_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass(frozen=True)
class Backend:
    """Where a test's Memora keeps its rows and vectors."""

    name: str
    """``sqlite`` (files in the data dir) or ``postgres`` (Postgres and a Chroma server)."""
    database_url: str | None = None
    chroma_url: str | None = None
    chroma_collection: str = "memora_memories"

    def settings(self, data_dir: Path, **overrides: Any) -> Settings:
        """Settings for a node with this data dir on this backend."""
        return load_settings(data_dir=data_dir, **self.overrides(), **overrides)

    def overrides(self) -> dict[str, Any]:
        if self.name == "sqlite":  # files only, whatever servers the environment names
            return {"database_url": None, "chroma_url": None}
        return {
            "database_url": self.database_url,
            "chroma_url": self.chroma_url,
            "chroma_collection": self.chroma_collection,
        }

    def env(self) -> dict[str, str]:
        """The same choice as ``MEMORA_*`` variables, for subprocesses."""
        return {
            f"MEMORA_{key.upper()}": str(value)
            for key, value in self.overrides().items()
            if value is not None
        }


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that takes it runs on SQLite files and on Postgres with a Chroma server."""
    if request.param == "sqlite":
        return Backend("sqlite")
    return postgres_backend(request)


def postgres_backend(request: pytest.FixtureRequest) -> Backend:
    """A Postgres backend with a fresh database and its own Chroma collection."""
    services: Services = request.getfixturevalue("services")
    return Backend(
        "postgres",
        request.getfixturevalue("database_url"),
        services.chroma_url,
        f"test_{uuid.uuid4().hex[:16]}",
    )


def tables_containing(database_url: str, needle: str) -> list[str]:
    """Every table of the database with a live row whose text (or bytes) holds ``needle``."""
    import psycopg

    found = []
    with psycopg.connect(database_url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ).fetchall()
        for (table,) in tables:
            # A bytea column (checkpoint blobs, keys) reads as hex in the row's text.
            hit = conn.execute(
                f'SELECT 1 FROM "{table}" AS t WHERE t::text LIKE %s OR t::text LIKE %s LIMIT 1',
                (f"%{needle}%", f"%{needle.encode().hex()}%"),
            ).fetchone()
            if hit:
                found.append(table)
    return found
