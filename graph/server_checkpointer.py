"""The checkpointer a served deployment uses when its threads live in Postgres.

``langgraph.postgres.json`` names :func:`postgres_checkpointer` as its
``checkpointer.path``; the LangGraph server (``langgraph dev`` as much as a
self-hosted one) opens it once at startup and keeps every thread, checkpoint
and pending approval in the database at ``MEMORA_DATABASE_URL``, beside the
memories, so any replica can resume any thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from memora.config import get_settings
from memora.errors import ConfigurationError


@asynccontextmanager
async def postgres_checkpointer() -> AsyncIterator[AsyncPostgresSaver]:
    """LangGraph's own Postgres checkpointer on ``MEMORA_DATABASE_URL``, tables created once.

    Raises:
        ConfigurationError: ``MEMORA_DATABASE_URL`` is not set.
    """
    url = get_settings().database_url
    if not url:
        raise ConfigurationError(
            "langgraph.postgres.json needs MEMORA_DATABASE_URL (a postgresql:// URL)"
        )
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        yield saver
