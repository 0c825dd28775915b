"""The graph for local use (CLI, demo, evaluations): compiled with a SQLite checkpointer."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from graph.builder import RECURSION_LIMIT, builder
from memora.db import StoreError, describe_sqlite_error

CHECKPOINTS_FILE = "checkpoints.sqlite"


@contextmanager
def open_agent(data_dir: Path) -> Iterator[Any]:
    """The graph compiled with a SQLite checkpointer under ``data_dir``, closed on exit.

    Raises:
        StoreError: The data dir or the checkpoint database cannot be used.
    """
    path = data_dir / CHECKPOINTS_FILE
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, timeout=5)
        # A deleted thread's transcript must not linger in free pages.
        conn.execute("PRAGMA secure_delete=ON")
        saver = SqliteSaver(conn)
        saver.setup()
    except OSError as error:
        raise StoreError(f"cannot use data dir {data_dir}: {error}") from None
    except sqlite3.Error as error:
        raise StoreError(describe_sqlite_error(path, error)) from None
    try:
        agent = builder.compile(checkpointer=saver, name="memora")
        yield agent.with_config({"recursion_limit": RECURSION_LIMIT})
    finally:
        conn.close()
