"""Wiring of the Memora agent graph."""

from nodes.state import Context, State

__all__ = ["Context", "State"]
