"""The graph `langgraph dev` serves: compiled without a checkpointer (the server brings its own).

Runs save their checkpoints as ``graph.builder.durability_for`` says, as local runs
do, instead of the server's default of saving after every step: the server keeps
every checkpoint it saves, so a step-by-step history of a new turn would keep its
text from before ``redact_transcript`` cut its secrets out.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graph.builder import RECURSION_LIMIT, builder, durability_for
from graph.runtime_records import refresh_from_a_run
from memora.redaction import install_log_redaction
from nodes.other_threads import after_blanking

install_log_redaction()
# A forget rewrites checkpoints; the runtime's own copies of the threads follow here.
after_blanking(refresh_from_a_run)


def _with_durability(input: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs = {**kwargs, "durability": durability_for(input)}
    # The older spelling of the same choice; the graph refuses both at once.
    kwargs.pop("checkpoint_during", None)
    return kwargs


class ServedGraph(CompiledStateGraph):
    """The compiled graph, saving a new turn only when it ends or pauses."""

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return super().astream(input, config, **_with_durability(input, kwargs))

    def astream_events(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return super().astream_events(input, config, **_with_durability(input, kwargs))


_compiled = builder.compile(name="memora").with_config({"recursion_limit": RECURSION_LIMIT})
graph = ServedGraph(**{k: v for k, v in _compiled.__dict__.items() if k != "__orig_class__"})
