"""How each memory system behaves as its store grows (``memora eval scale``).

Each (system, size) runs in its own subprocess so that its resident memory is
its own::

    python -m evals.scale --system memora --size 10000 --out result.json [--backend postgres]

The child builds a store of ``size`` synthetic short facts spread over
``USERS`` users (bulk path: Memora ``ingest``, mem0 its vector store's batch
``insert``, LangGraph store ``batch`` of puts), then for one user times
searches (``synthetic_queries``) and the write path one memory at a time
(Memora the full ``add``: policy, importance, reconciliation, store; mem0
``add(infer=False)``; LangGraph store ``put``), and reports its peak RSS and
the size of its data dir (on Postgres: of the scratch database; the Chroma server's
directory is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.common import BACKENDS, database_mb, percentile_ms
from evals.peers import Item, MemorySystem, PeerUnavailable, open_system
from evals.synthetic import synthetic_facts, synthetic_queries
from memora.storage.db import StoreError

USERS = 10
QUERIES = 200
WRITES = 100
SEARCH_K = 10
BULK_CHUNK = 5000
_T0 = datetime(2025, 1, 1, tzinfo=UTC)

NOTES = {
    "memora": "bulk: ingest; write: full add (policy, importance, reconciliation, store)",
    "mem0": (
        "bulk: its vector store's batch insert with payloads shaped like add's (one add per "
        f"memory would take minutes at 100k); write: add(infer=False) timed on a sample of "
        f"{WRITES}, no extraction or reconciliation (both need a model)"
    ),
    "langgraph_store": "in memory (disk 0); bulk: batch of puts; write: put",
}


def _disk_mb(root: Path | None) -> float:
    if root is None or not root.exists():
        return 0.0
    total = sum(path.stat().st_size for path in root.rglob("*") if path.is_file())
    return total / 1e6


def _rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024.0 if sys.platform != "darwin" else peak / 1024.0 / 1024.0


def measure(system: MemorySystem, size: int, users: int = USERS) -> dict[str, Any]:
    """Build a store of ``size`` memories over ``users`` users, then time it."""
    per_user = max(1, size // users)
    seconds = 0.0
    stored = 0
    for user in range(users):
        items = [
            Item(key=f"u{user}-{number}", text=text, created_at=_T0 + timedelta(minutes=number))
            for number, text in enumerate(synthetic_facts(per_user, seed=user))
        ]
        started = time.perf_counter()
        for chunk in range(0, len(items), BULK_CHUNK):
            system.add_many(f"user-{user}", items[chunk : chunk + BULK_CHUNK])
        seconds += time.perf_counter() - started
        stored += len(items)
    target = "user-0"
    system.search(target, "warm-up", SEARCH_K)  # builds any per-process index once
    now = _T0 + timedelta(days=30)
    search_times = []
    for query in synthetic_queries(QUERIES):
        started = time.perf_counter()
        system.search(target, query, SEARCH_K, now)
        search_times.append(time.perf_counter() - started)
    write_times = []
    for number, text in enumerate(synthetic_facts(WRITES, seed=999)):
        started = time.perf_counter()
        system.add(
            target, f"I recently noticed that {text.lower()}", now + timedelta(minutes=number)
        )
        write_times.append(time.perf_counter() - started)
    return {
        "memories": stored,
        "search_ms": {
            "p50": percentile_ms(search_times, 50),
            "p95": percentile_ms(search_times, 95),
        },
        "write_ms": {"p50": percentile_ms(write_times, 50), "p95": percentile_ms(write_times, 95)},
        "write_sample": WRITES,
        "ingest_per_s": stored / seconds if seconds else 0.0,
        "rss_mb": _rss_mb(),
        "disk_mb": _disk_mb(system.data_dir()),
    }


def run_child(name: str, size: int, backend: str = "sqlite") -> dict[str, Any]:
    """One system, one size, in this process (what the subprocess runs)."""
    with tempfile.TemporaryDirectory(prefix=f"memora-scale-{name}-") as tmp:
        try:
            with open_system(name, Path(tmp) / "data", backend=backend) as system:
                result = measure(system, size)
                memora = getattr(system, "memora", None)
                rows_mb = database_mb(memora) if memora is not None else None
                if rows_mb is not None:
                    result["disk_mb"] = rows_mb
                return result
        except PeerUnavailable as error:
            return {"error": str(error), "unavailable": True}
        except StoreError as error:
            return {"error": str(error), "unavailable": True}


def run_in_subprocess(
    name: str, size: int, timeout_s: float, backend: str = "sqlite"
) -> dict[str, Any]:
    """Run one (system, size) in a fresh interpreter and read its JSON."""
    with tempfile.TemporaryDirectory(prefix="memora-scale-out-") as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "MEM0_TELEMETRY": "False"}
        command = [sys.executable, "-m", "evals.scale", "--system", name]
        command += ["--size", str(size), "--out", str(out), "--backend", backend]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish {size:,} memories within {timeout_s:.0f} s (capped)"}
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
            return {"error": f"subprocess failed (exit {done.returncode}): {tail[0]}"}
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return result


def run_scale(
    systems: list[str],
    sizes: list[int],
    timeout_s: float = 1800.0,
    progress: Callable[[int, int], None] | None = None,
    backend: str = "sqlite",
) -> dict[str, Any]:
    """Every system at every size, each in its own subprocess (Memora on ``backend``).

    A system that cannot run gets ``{"error": why}``; one that fails or times out
    at a size gets that size's error and is not tried at larger sizes.
    """
    results: dict[str, Any] = {}
    total = len(systems) * len(sizes)
    done = 0
    for name in systems:
        per_size: dict[str, Any] = {}
        failed = False
        for size in sizes:
            if failed:
                per_size[str(size)] = {"error": "skipped: a smaller size did not finish"}
            else:
                per_size[str(size)] = run_in_subprocess(name, size, timeout_s, backend)
                failed = "error" in per_size[str(size)]
            done += 1
            if progress:
                progress(done, total)
            if per_size[str(size)].get("unavailable"):
                break
        first = per_size[str(sizes[0])]
        if first.get("unavailable"):  # cannot run at all: one reason for the whole system
            results[name] = {"error": first["error"]}
            done = min(total, done + len(sizes) - len(per_size))
            if progress:
                progress(done, total)
        else:
            results[name] = {"sizes": per_size, "note": NOTES.get(name, "")}
    return results


def growth(result: dict[str, Any]) -> dict[str, float | None]:
    """Each figure at the largest size over the smallest (None where either is missing)."""
    sizes = {int(s): v for s, v in result.get("sizes", {}).items() if "error" not in v}
    if len(sizes) < 2:
        return {}
    small, large = sizes[min(sizes)], sizes[max(sizes)]

    def ratio(get: Callable[[dict[str, Any]], float]) -> float | None:
        low = get(small)
        return get(large) / low if low else None

    return {
        "search_p50": ratio(lambda r: r["search_ms"]["p50"]),
        "search_p95": ratio(lambda r: r["search_ms"]["p95"]),
        "write_p50": ratio(lambda r: r["write_ms"]["p50"]),
        "write_p95": ratio(lambda r: r["write_ms"]["p95"]),
        "ingest_per_s": ratio(lambda r: r["ingest_per_s"]),
        "rss_mb": ratio(lambda r: r["rss_mb"]),
        "disk_mb": ratio(lambda r: r["disk_mb"]),
    }


def main(argv: list[str] | None = None) -> int:
    """Child entry point: measure one system at one size, write JSON to --out."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--system", required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite")
    args = parser.parse_args(argv)
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    result = run_child(args.system, args.size, args.backend)
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
