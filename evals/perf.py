"""Latency and throughput of the memory core on a synthetic store."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.common import percentile_ms
from evals.synthetic import synthetic_facts, synthetic_queries
from memora.api import Memora
from memora.models import MemorySource, MemoryUnit
from memora.storage.store import new_memory_id


def build_users(
    memora: Memora, users: int, per_user: int, progress: Callable[[int, int], None] | None
) -> float:
    """Bulk-ingest synthetic memories for each user; returns memories per second."""
    start_day = datetime(2025, 1, 1, tzinfo=UTC)
    seconds = 0.0
    for user in range(users):
        units = [
            MemoryUnit(
                id=new_memory_id(),
                user_id=f"user-{user}",
                content=text,
                source=MemorySource(actor="bench"),
                created_at=start_day + timedelta(minutes=number),
                updated_at=start_day + timedelta(minutes=number),
            )
            for number, text in enumerate(synthetic_facts(per_user, seed=user))
        ]
        started = time.perf_counter()
        for chunk in range(0, len(units), 5000):
            memora.ingest(units[chunk : chunk + 5000])
        seconds += time.perf_counter() - started
        if progress:
            progress(user + 1, users)
    return users * per_user / seconds if seconds else 0.0


FORGET_USER_SIZE = 1000
"""Memories of the user whose forgets are timed."""


def time_forgets(memora: Memora, forgets: int = 100) -> list[float]:
    """Seconds per ``forget`` (row, key, vector and audit, file scrubbed) for a user of 1,000."""
    user = "forget-bench"
    units = [
        MemoryUnit(
            id=new_memory_id(), user_id=user, content=text, source=MemorySource(actor="bench")
        )
        for text in synthetic_facts(FORGET_USER_SIZE, seed=4242)
    ]
    memora.ingest(units)
    memora.search(user, "warm-up")
    times = []
    for unit in units[:: FORGET_USER_SIZE // forgets][:forgets]:
        started = time.perf_counter()
        memora.forget(user, unit.id)
        times.append(time.perf_counter() - started)
    return times


def run_perf(
    memora: Memora,
    *,
    users: int = 5,
    per_user: int = 10_000,
    queries: int = 300,
    writes: int = 200,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Build the store, then time searches and full write-path adds for one user."""
    ingest_rate = build_users(memora, users, per_user, progress)
    target = "user-0"
    memora.search(target, "warm-up")  # builds this process's index once
    search_times = []
    for query in synthetic_queries(queries):
        started = time.perf_counter()
        memora.search(target, query)
        search_times.append(time.perf_counter() - started)
    write_times = []
    for text in synthetic_facts(writes, seed=999):
        started = time.perf_counter()
        memora.add(target, f"I recently noticed that {text.lower()}")
        write_times.append(time.perf_counter() - started)
    forget_times = time_forgets(memora)
    return {
        "forget_ms": {
            "user_size": FORGET_USER_SIZE,
            "p50": percentile_ms(forget_times, 50),
            "p95": percentile_ms(forget_times, 95),
        },
        "store_size": users * per_user,
        "user_size": per_user,
        "ingest_per_s": ingest_rate,
        "search_ms": {
            "p50": percentile_ms(search_times, 50),
            "p95": percentile_ms(search_times, 95),
        },
        "write_ms": {"p50": percentile_ms(write_times, 50), "p95": percentile_ms(write_times, 95)},
    }


BIG_USER = "big-user"


def run_big_user(
    memora: Memora, size: int = 50_000, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """One user with ``size`` memories: the first page, cold first searches, a foreign write.

    The cold searches each run in a new process on the same data dir: the first with the
    local copy of the sealed vectors that the ingesting process left, the second with no
    copy (a node's first load of the user), the third with the copy the second one left.
    The foreign write is one memory added by a second library, then the first one's next
    search times how it catches up (a patch from the change log, not a reload).
    """
    start_day = datetime(2025, 1, 1, tzinfo=UTC)
    texts = list(synthetic_facts(size, seed=77))
    for chunk in range(0, size, 5000):
        memora.ingest(
            [
                MemoryUnit(
                    id=new_memory_id(),
                    user_id=BIG_USER,
                    content=text,
                    source=MemorySource(actor="bench"),
                    created_at=start_day + timedelta(seconds=chunk + number),
                    updated_at=start_day + timedelta(seconds=chunk + number),
                )
                for number, text in enumerate(texts[chunk : chunk + 5000])
            ]
        )
        if progress:
            progress(min(chunk + 5000, size), size)
    memora.flush()
    started = time.perf_counter()
    page = memora.list(BIG_USER, limit=100)
    first_page = time.perf_counter() - started
    with_writers_copy = cold_search(memora.settings.data_dir, BIG_USER, "my aunt's garden")
    memora.drop_local_vector_copy(BIG_USER)
    without_copy = cold_search(memora.settings.data_dir, BIG_USER, "my sister's new job")
    with_copy = cold_search(memora.settings.data_dir, BIG_USER, "my brother's old car")
    memora.search(BIG_USER, "warm")
    other = Memora(memora.settings, embeddings=memora.embeddings)
    try:
        other.add(BIG_USER, "I started learning the bandoneon this winter")
        other.flush()
    finally:
        other.close()
    started = time.perf_counter()
    memora.search(BIG_USER, "bandoneon lessons")
    after_foreign_write = time.perf_counter() - started
    started = time.perf_counter()
    memora.search(BIG_USER, "bandoneon lessons")
    warm_search = time.perf_counter() - started
    return {
        "user_size": size,
        "first_page_ms": first_page * 1000,
        "first_page_rows": len(page),
        "first_search_ms": with_copy["first_search_ms"],
        "first_search_cpu_ms": with_copy["first_search_cpu_ms"],
        "first_search_no_local_copy_ms": without_copy["first_search_ms"],
        "first_search_after_ingest_ms": with_writers_copy["first_search_ms"],
        "new_process_open_ms": with_copy["open_ms"],
        "new_process_peak_rss_mib": max(with_copy["peak_rss_mib"], without_copy["peak_rss_mib"]),
        "search_after_foreign_write_ms": after_foreign_write * 1000,
        "warm_search_ms": warm_search * 1000,
    }


def cold_search(data_dir: Path, user_id: str, query: str) -> dict[str, float]:
    """Time one search in a new Python process (see ``evals.cold_search``)."""
    done = subprocess.run(
        [sys.executable, "-m", "evals.cold_search", str(data_dir), user_id, query],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the cold search process failed: {done.stderr.strip()[-500:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
