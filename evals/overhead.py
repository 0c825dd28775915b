"""The graph's own cost per turn, with the offline model, on a store of many memories."""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage

from agent.chat_models import OFFLINE
from evals.common import percentile_ms
from evals.perf import build_users
from graph.builder import durability_for
from graph.checkpointed import open_agent
from memora.api import Memora
from memora.config import load_settings
from nodes.state import Context

TURNS = [
    "What do you know about my sister?",
    "I prefer short answers with one example.",
    "請解釋 present perfect。",
    "Do you remember what I said about dinner?",
    "My favourite city is Porto.",
]


class _ModelTimer(BaseCallbackHandler):
    """Adds up the time spent inside chat model calls."""

    def __init__(self) -> None:
        self.started: dict[Any, float] = {}
        self.total = 0.0

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any
    ) -> None:
        self.started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.total += time.perf_counter() - self.started.pop(run_id, time.perf_counter())


def run_overhead(
    turns: int = 100,
    store_size: int = 10_000,
    progress: Callable[[int, int], None] | None = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Time ``turns`` chat turns through the compiled graph with a SQLite checkpointer."""
    with tempfile.TemporaryDirectory(prefix="memora-overhead-") as tmp:
        root = data_dir or Path(tmp)
        memora = Memora(load_settings(data_dir=root, write_judge="rules"))
        context = Context(user_id="user-0", chat_model=OFFLINE, memora=memora)
        try:
            build_users(memora, 1, store_size, None)
            memora.search("user-0", "warm up")
            totals, graph_only = [], []
            with open_agent(root) as agent:
                thread = uuid.uuid4().hex
                for number in range(turns):
                    timer = _ModelTimer()
                    run_config = {
                        "configurable": {"thread_id": thread, "user_id": "user-0"},
                        "callbacks": [timer],
                    }
                    started = time.perf_counter()
                    payload = {"messages": [HumanMessage(TURNS[number % len(TURNS)])]}
                    agent.invoke(
                        payload, run_config, context=context, durability=durability_for(payload)
                    )
                    elapsed = time.perf_counter() - started
                    totals.append(elapsed)
                    graph_only.append(elapsed - timer.total)
                    if progress:
                        progress(number + 1, turns)
        finally:
            memora.close()
    return {
        "turns": turns,
        "store_size": store_size,
        "turn_ms": {"p50": percentile_ms(totals, 50), "p95": percentile_ms(totals, 95)},
        "graph_ms": {"p50": percentile_ms(graph_only, 50), "p95": percentile_ms(graph_only, 95)},
    }


GROWTH_CHECKPOINTS = (50, 150)
"""Turns after which a thread's data dir is measured (linear growth is a ratio of 3)."""


def run_growth(
    message_chars: int = 300,
    checkpoints: tuple[int, ...] = GROWTH_CHECKPOINTS,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Size of the checkpoint file as one thread grows, with messages of ``message_chars``."""
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="memora-growth-") as tmp:
        root = Path(tmp)
        memora = Memora(load_settings(data_dir=root, write_judge="rules"))
        context = Context(user_id="user-0", chat_model=OFFLINE, memora=memora)
        config = {"configurable": {"thread_id": "growth", "user_id": "user-0"}}
        filler = ("Tell me about the weather in Porto today and tomorrow please. " * 10)[
            :message_chars
        ]
        try:
            with open_agent(root) as agent:
                for number in range(1, max(checkpoints) + 1):
                    payload = {"messages": [HumanMessage(filler)]}
                    agent.invoke(
                        payload, config, context=context, durability=durability_for(payload)
                    )
                    if number in checkpoints:
                        sizes[str(number)] = sum(
                            path.stat().st_size for path in root.glob("checkpoints.sqlite*")
                        )
                    if progress:
                        progress(number, max(checkpoints))
        finally:
            memora.close()
    first, last = str(checkpoints[0]), str(checkpoints[-1])
    return {
        "message_chars": message_chars,
        "checkpoint_bytes": sizes,
        "ratio": sizes[last] / sizes[first] if sizes.get(first) else None,
    }
