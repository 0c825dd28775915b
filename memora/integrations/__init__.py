"""Memora behind other frameworks' interfaces: the same library, policy and settings.

``MemoraStore`` is a LangGraph ``BaseStore``; the MCP server lives in ``agent.mcp_server``
(it reuses the agent's tools).
"""

from memora.integrations.langgraph_store import DEFAULT_NAMESPACE, MemoraStore

__all__ = ["DEFAULT_NAMESPACE", "MemoraStore"]
