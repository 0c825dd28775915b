"""A process killed while it shreds keys on Postgres (for ``test_postgres_kill_shredding``).

usage: python -m tests.integration.shred_worker forget DATABASE_URL CHROMA_URL COLLECTION
           USER MEMORY_ID [--stop-before-rewrite]
       python -m tests.integration.shred_worker rotate DATABASE_URL THREAD...
           [--stop-before-rewrite]

``forget`` forgets one memory; ``rotate`` rotates these threads' keys over and over, printing
each round's keys (hex) once committed. With ``--stop-before-rewrite`` the worker prints
``deleted`` once the deletion or rotation has committed and then waits, before the key
table's rewrite, to be killed there.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

import psycopg

from memora.storage import sealed_threads
from memora.storage.postgres import PostgresDatabase


def _stop_before_rewrite() -> None:
    """Every key table rewrite announces itself and waits to be killed."""

    def waiting(*_: Any, **__: Any) -> bool:
        print("deleted", flush=True)
        while True:
            time.sleep(1)

    original = PostgresDatabase.rewrite

    def rows_rewrite(self: PostgresDatabase, *tables: str) -> bool:
        if any(table.startswith("vector_keys_") for table in tables):
            return waiting()
        return original(self, *tables)

    PostgresDatabase.rewrite = rows_rewrite  # type: ignore[method-assign]
    sealed_threads.ThreadKeys._rewrite = waiting  # type: ignore[method-assign]


def forget(url: str, chroma: str, collection: str, user: str, memory_id: str) -> None:
    from memora.api import Memora
    from memora.config import load_settings

    settings = load_settings(
        data_dir=Path(mkdtemp()), database_url=url, chroma_url=chroma, chroma_collection=collection
    )
    memora = Memora(settings)
    print("ready", flush=True)
    memora.forget(user, memory_id)
    memora.close()


def rotate(url: str, threads: list[str]) -> None:
    conn = psycopg.Connection.connect(url, autocommit=True)
    keys = sealed_threads.ThreadKeys(conn)
    serde = sealed_threads.SealingSerializer(keys)
    print("ready", flush=True)
    while True:
        serde.rotate(threads)
        with psycopg.connect(url) as reader:
            rows = reader.execute("SELECT key FROM thread_keys").fetchall()
        print(" ".join(bytes(row[0]).hex() for row in rows), flush=True)


def main() -> None:
    args = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    if "--stop-before-rewrite" in sys.argv:
        _stop_before_rewrite()
    if args[0] == "forget":
        forget(*args[1:6])
    else:
        rotate(args[1], args[2:])


if __name__ == "__main__":
    main()
