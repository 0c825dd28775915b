"""Resident memory of one process as users and searches grow (``memora eval memory``).

Not a timed test: it ingests USERS x PER_USER synthetic memories, searches each user
once (every search builds that user's ranking index, so the cache fills up to
MEMORA_RANKING_CACHE_USERS), then searches for UNKNOWN user ids that hold nothing.
After each phase it reads the process's current resident set size (not the peak, so
a bounded cache shows as a flat line) and how many users' indexes are cached.
Searches are not audited here: the audit log is on disk, not in this process.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
from collections.abc import Callable
from typing import Any

from evals.perf import build_users
from memora.api import Memora

QUERY = "what do I like to eat"


def rss_mib() -> float:
    """The current resident set size of this process (Linux ``/proc``; else the peak)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _phase(memora: Memora, name: str, **figures: Any) -> dict[str, Any]:
    gc.collect()
    return {
        "phase": name,
        "rss_mib": round(rss_mib(), 1),
        "cached_users": memora.store.cached_users(),
        **figures,
    }


def run_memory(
    memora: Memora,
    *,
    users: int = 2_000,
    per_user: int = 50,
    unknown: int = 20_000,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Ingest, search every user, search unknown ids; the RSS and cache size after each."""
    phases = [_phase(memora, "opened")]
    build_users(memora, users, per_user, progress)
    phases.append(_phase(memora, "ingested", memories=users * per_user))
    for user in range(users):
        memora.search(f"user-{user}", QUERY, audit=False)
    phases.append(_phase(memora, "searched every user", searches=users))
    for number in range(unknown):
        memora.search(f"unknown-{number}", QUERY, audit=False)
    phases.append(_phase(memora, "searched unknown ids", searches=unknown))
    return {
        "users": users,
        "per_user": per_user,
        "unknown_searches": unknown,
        "cache_bound": memora.settings.ranking_cache_users,
        "phases": phases,
    }
