"""The graph for local use (CLI, demo, evaluations): compiled with a SQLite checkpointer,
or a Postgres one when the memory database is Postgres (several nodes, one set of threads)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from agent.forgotten import Forgotten
from graph.builder import RECURSION_LIMIT, builder
from memora.storage.db import StoreError, describe_sqlite_error
from memora.storage.postgres import describe_postgres_error
from memora.storage.sealed_threads import SealingSerializer, ThreadKeys, as_sealed_blobs
from nodes.other_threads import blank_in_threads

CHECKPOINTS_FILE = "checkpoints.sqlite"


class LatestOnlySqliteSaver(SqliteSaver):
    """A SQLite checkpointer that keeps only each thread's newest checkpoint and its writes.

    Every checkpoint holds the whole transcript, so keeping them all grows a
    thread quadratically, and an old one would still hold text that a later
    turn redacted. Resuming needs only the newest checkpoint and the writes
    saved against it (a pending approval's interrupt included), so older ones
    are deleted as each new one is saved; ``secure_delete`` zeroes their pages
    and the write-ahead log is truncated, so no copy stays in the file.
    """

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        saved = super().put(config, checkpoint, metadata, new_versions)
        keys = (
            str(saved["configurable"]["thread_id"]),
            saved["configurable"]["checkpoint_ns"],
            saved["configurable"]["checkpoint_id"],
        )
        with self.cursor() as cur:
            cur.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?"
                " AND checkpoint_id < ?",
                keys,
            )
            cur.execute(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ?"
                " AND checkpoint_id < ?",
                keys,
            )
        if _ends_the_run(checkpoint):
            with self.lock:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return saved


class LatestOnlyPostgresSaver(PostgresSaver):
    """A Postgres checkpointer that keeps only each thread's newest checkpoint and its writes.

    For the reasons given in :class:`LatestOnlySqliteSaver`; the pruning is the
    library's own ``prune(strategy="keep_latest")``, which also drops the blobs
    only older checkpoints referenced.

    Every value is sealed under its thread's key (``memora.storage.sealed_threads``),
    text channels included, so deleting a thread destroys its transcript wherever
    Postgres left the bytes.
    """

    serde: SealingSerializer

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        thread_id = str(config["configurable"]["thread_id"])
        with self.serde.sealing_for(thread_id):
            saved = super().put(config, *_sealed(checkpoint, metadata, new_versions))
            # Inside the sealing: a key rotation locks the rows the pruning deletes.
            self.prune([thread_id], strategy="keep_latest")
        return saved

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        with self.serde.sealing_for(str(config["configurable"]["thread_id"])):
            super().put_writes(config, writes, task_id, task_path)

    def delete_threads(self, thread_ids: list[str]) -> None:
        """Delete these threads and destroy their keys (see ``ThreadKeys.destroy``)."""
        for thread_id in thread_ids:
            self.delete_thread(thread_id)
        self.serde.keys.destroy(thread_ids)


def _sealed(checkpoint: Any, metadata: Any, new_versions: Any) -> tuple[Any, Any, Any]:
    wrapped, versions = as_sealed_blobs(checkpoint, new_versions)
    return wrapped, metadata, versions


def _ends_the_run(checkpoint: Any) -> bool:
    """Whether this checkpoint triggers no further node: the run's last one."""
    updated = checkpoint.get("updated_channels") or []
    return not any(str(channel).startswith("branch:to:") for channel in updated)


@contextmanager
def open_agent(data_dir: Path, database_url: str | None = None) -> Iterator[Any]:
    """The graph compiled with a checkpointer, closed on exit: Postgres at ``database_url``
    when given, else SQLite under ``data_dir``.

    Raises:
        StoreError: The data dir or the checkpoint database cannot be used.
    """
    if database_url:
        with _postgres_agent(database_url) as agent:
            yield agent
        return
    path = data_dir / CHECKPOINTS_FILE
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, timeout=5)
        # A deleted thread's transcript must not linger in free pages.
        conn.execute("PRAGMA secure_delete=ON")
        # WAL with NORMAL survives a killed process; only a power cut can lose the last commit.
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = LatestOnlySqliteSaver(conn)
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


@contextmanager
def _postgres_agent(database_url: str) -> Iterator[Any]:
    try:
        conn = psycopg.Connection.connect(
            database_url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=psycopg.rows.dict_row,
            connect_timeout=10,
        )
        # The keys have a connection of their own: the saver holds its connection's
        # lock while the serde runs.
        keys_conn = psycopg.Connection.connect(database_url, autocommit=True, connect_timeout=10)
    except psycopg.Error as error:
        raise StoreError(describe_postgres_error(database_url, error)) from None
    try:
        try:
            keys = ThreadKeys(keys_conn)
            saver = LatestOnlyPostgresSaver(conn, serde=SealingSerializer(keys))
            saver.setup()
        except psycopg.Error as error:
            raise StoreError(describe_postgres_error(database_url, error)) from None
        agent = builder.compile(checkpointer=saver, name="memora")
        yield agent.with_config({"recursion_limit": RECURSION_LIMIT})
    finally:
        keys_conn.close()
        conn.close()


@dataclass(frozen=True)
class ThreadRecord:
    """One conversation thread as its newest checkpoint holds it."""

    thread_id: str
    user_id: str
    """The thread's owner (the user of its first run)."""
    updated: str
    messages: list[Any]


def thread_records(agent: Any) -> list[ThreadRecord]:
    """Every thread the agent's checkpointer keeps, newest checkpoint of each."""
    latest: dict[str, Any] = {}
    for checkpoint in agent.checkpointer.list(None):
        latest.setdefault(checkpoint.config["configurable"]["thread_id"], checkpoint)
    records = []
    for thread_id, checkpoint in latest.items():
        values = checkpoint.checkpoint.get("channel_values", {})
        records.append(
            ThreadRecord(
                thread_id=thread_id,
                user_id=values.get("owner_user_id", ""),
                updated=checkpoint.checkpoint.get("ts", ""),
                messages=list(values.get("messages", [])),
            )
        )
    return records


def delete_threads(agent: Any, thread_ids: list[str]) -> None:
    """Delete these threads' checkpoints and rewrite the file so no page keeps them
    (on Postgres: destroy their keys, VACUUM the checkpoint tables)."""
    if isinstance(agent.checkpointer, LatestOnlyPostgresSaver):
        agent.checkpointer.delete_threads(thread_ids)
    else:
        for thread_id in thread_ids:
            agent.checkpointer.delete_thread(thread_id)
    if isinstance(agent.checkpointer, PostgresSaver):
        conn = agent.checkpointer.conn
        assert isinstance(conn, psycopg.Connection)  # open_agent gives it one autocommit connection
        conn.execute("VACUUM checkpoints, checkpoint_blobs, checkpoint_writes")
    else:
        agent.checkpointer.conn.execute("VACUUM")


def forget_in_threads(agent: Any, user_id: str, ids: list[str], texts: list[str]) -> int:
    """Blank the turns of the user's threads that involved these deleted memories (a
    deletion made outside a chat turn); returns how many threads changed."""
    return len(blank_in_threads(agent.checkpointer, user_id, Forgotten.of(ids, texts)))
