"""The graph `langgraph dev` serves: compiled without a checkpointer (the server brings its own)."""

from __future__ import annotations

from graph.builder import RECURSION_LIMIT, builder
from memora.redaction import install_log_redaction

install_log_redaction()

graph = builder.compile(name="memora").with_config({"recursion_limit": RECURSION_LIMIT})
