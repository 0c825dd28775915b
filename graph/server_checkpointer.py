"""The checkpointer a served deployment uses when its threads live in Postgres.

``langgraph.postgres.json`` names :func:`postgres_checkpointer` as its
``checkpointer.path``; the LangGraph server (``langgraph dev`` as much as a
self-hosted one) opens it once at startup and keeps every thread, checkpoint
and pending approval in the database at ``MEMORA_DATABASE_URL``, beside the
memories, so any replica can resume any thread.

Its values are sealed per thread as ``memora chat``'s are
(``memora.storage.sealed_threads``): deleting a thread destroys its key, and a forget
that blanks a thread gives it a new one (``nodes.other_threads``), so what Postgres
leaves of the old values in its files is ciphertext without a key. Unlike ``memora
chat``'s, the server's threads keep their history (time travel, ``threads.get_history``)
until a forget prunes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from memora.config import get_settings
from memora.errors import ConfigurationError
from memora.storage.sealed_threads import SealingSerializer, ThreadKeys, as_sealed_blobs


class SealedAsyncPostgresSaver(AsyncPostgresSaver):
    """LangGraph's ``AsyncPostgresSaver`` with every value sealed under its thread's key.

    The keys live on a sync connection of their own (``ThreadKeys``, shared with ``memora
    chat``); each save, and each read of one thread, looks its key up in a worker thread,
    so the event loop never waits on it.
    """

    serde: SealingSerializer

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        wrapped, versions = as_sealed_blobs(checkpoint, new_versions)
        async with self.serde.asealing_for(str(config["configurable"]["thread_id"])):
            return await super().aput(config, wrapped, metadata, versions)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        async with self.serde.asealing_for(str(config["configurable"]["thread_id"])):
            await super().aput_writes(config, writes, task_id, task_path)

    async def aget_tuple(self, config: Any) -> Any:
        await self._cache_key(config)
        return await super().aget_tuple(config)

    async def alist(
        self, config: Any, *, filter: Any = None, before: Any = None, limit: Any = None
    ) -> AsyncIterator[Any]:
        await self._cache_key(config)
        async for item in super().alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def _cache_key(self, config: Any) -> None:
        """Look the thread's key (without a thread, every key) up in a worker thread: the
        saver opens values on its event loop, where a lookup would wait while a key table
        rewrite holds the keys' connection."""
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        wanted = None if thread_id is None else str(thread_id)
        await asyncio.to_thread(self.serde.keys.cache_current, wanted)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread and destroy its key (``ThreadKeys.destroy``): what Postgres
        keeps of its rows in free space is then ciphertext without a key."""
        await super().adelete_thread(thread_id)
        await asyncio.to_thread(self.serde.keys.destroy, [str(thread_id)])


def _keys_connection(url: str) -> psycopg.Connection[Any]:
    """The keys' own connection: the saver's is async, and busy while the serde runs."""
    return psycopg.Connection.connect(url, autocommit=True, connect_timeout=10)


@asynccontextmanager
async def postgres_checkpointer() -> AsyncIterator[AsyncPostgresSaver]:
    """The sealed Postgres checkpointer on ``MEMORA_DATABASE_URL``, tables created once.

    Raises:
        ConfigurationError: ``MEMORA_DATABASE_URL`` is not set.
    """
    url = get_settings().database_url
    if not url:
        raise ConfigurationError(
            "langgraph.postgres.json needs MEMORA_DATABASE_URL (a postgresql:// URL)"
        )
    keys_conn = await asyncio.to_thread(_keys_connection, url)
    try:
        keys = await asyncio.to_thread(ThreadKeys, keys_conn)
        serde = SealingSerializer(keys)
        async with SealedAsyncPostgresSaver.from_conn_string(url, serde=serde) as saver:
            await saver.setup()
            yield saver
    finally:
        await asyncio.to_thread(keys_conn.close)
