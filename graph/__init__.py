"""Wiring of the Memora agent graph; the turn contract lives in ``nodes.state``."""

from nodes.state import Context, InputState, OutputState, State, StopReason

__all__ = ["Context", "InputState", "OutputState", "State", "StopReason"]
