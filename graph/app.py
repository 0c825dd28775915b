"""The graph `langgraph dev` serves: compiled without a checkpointer (the server brings its own).

A new turn is checkpointed once, when it ends or pauses for approval (the server's
default saves after every step). The server keeps every checkpoint it saves, so a
step-by-step history would keep each turn's text from before ``redact_transcript``
cut its secrets out. Resumes keep the server's own durability: an approval must
survive a crash that comes before its delete.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graph.builder import RECURSION_LIMIT, builder
from memora.redaction import install_log_redaction

install_log_redaction()


def _saved_at_exit(input: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    if isinstance(input, Command):
        return kwargs
    kwargs = {**kwargs, "durability": "exit"}
    kwargs.pop("checkpoint_during", None)
    return kwargs


class ServedGraph(CompiledStateGraph):
    """The compiled graph, saving a new turn only when it ends or pauses."""

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return super().astream(input, config, **_saved_at_exit(input, kwargs))

    def astream_events(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return super().astream_events(input, config, **_saved_at_exit(input, kwargs))


_compiled = builder.compile(name="memora").with_config({"recursion_limit": RECURSION_LIMIT})
graph = ServedGraph(**{k: v for k, v in _compiled.__dict__.items() if k != "__orig_class__"})
