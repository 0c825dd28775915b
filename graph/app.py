"""The graph `langgraph dev` serves: compiled without a checkpointer (the server brings its own)."""

from __future__ import annotations

from graph.builder import builder, recursion_limit

graph = builder.compile(name="memora").with_config({"recursion_limit": recursion_limit()})
