"""The agent's wiring: nodes, and the routing functions between them."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import START, StateGraph
from langgraph.types import Command, Durability

from memora.config import MAX_AGENT_STEPS_LIMIT
from nodes.approve_forget import approve_forget, next_unanswered
from nodes.assemble_context import assemble_context
from nodes.call_model import call_model
from nodes.commit_memory import commit_memory
from nodes.delete_memory import delete_memory
from nodes.execute_tool import execute_tool
from nodes.finish import finish
from nodes.redact_transcript import redact_transcript
from nodes.state import Context, InputState, OutputState, State, StopReason

RECURSION_LIMIT = 2 * MAX_AGENT_STEPS_LIMIT + 10
"""A hard backstop above any step limit: two super-steps per tool step plus the fixed path."""


def durability_for(payload: Any) -> Durability:
    """How a run saves its checkpoints, locally and on the server alike.

    A new turn is saved once, when it ends or pauses for approval, so no
    intermediate copy of the turn (with text the turn's end redacts) reaches
    the disk, and a turn costs one write. A resume is saved after every step:
    an approval must survive a crash that comes before its delete.
    """
    return "sync" if isinstance(payload, Command) else "exit"


def route_after_context(state: State) -> Literal["call_model", "finish"]:
    """A run by someone other than the thread's owner goes straight to finish, which refuses it."""
    return "finish" if state.refused_user_id else "call_model"


def route_after_model(state: State) -> Literal["execute_tool", "commit_memory", "finish"]:
    """A final answer is committed; any other stop ends the turn; otherwise run the tool."""
    if state.stop_reason == StopReason.FINAL_ANSWER:
        return "commit_memory"
    return "finish" if state.stop_reason else "execute_tool"


def route_after_tool(state: State) -> Literal["call_model", "finish"]:
    """A crashed handler ends the turn with tool_error; otherwise back to the model."""
    return "finish" if state.stop_reason == StopReason.TOOL_ERROR else "call_model"


def route_after_redaction(state: State) -> Literal["approve_forget", "__end__"]:
    """After a final answer the deletions still await approval; any other stop is done.

    A final answer is redacted before the approval pause, so the paused
    checkpoint (kept as long as the user takes to answer) holds no secret either.
    """
    return "approve_forget" if state.stop_reason == StopReason.FINAL_ANSWER else "__end__"


def route_after_finish(state: State) -> Literal["redact_transcript", "__end__"]:
    """A final answer was redacted before approval; any other stop is redacted now."""
    return "__end__" if state.stop_reason == StopReason.FINAL_ANSWER else "redact_transcript"


def route_after_approval(state: State) -> Literal["approve_forget", "delete_memory", "finish"]:
    """The next question while one waits for its answer; then delete only what was approved."""
    if next_unanswered(state) is not None:
        return "approve_forget"
    return "delete_memory" if state.approved_forget_ids else "finish"


builder = StateGraph(
    State, context_schema=Context, input_schema=InputState, output_schema=OutputState
)
builder.add_node(assemble_context)
builder.add_node(call_model)
builder.add_node(execute_tool)
builder.add_node(commit_memory)
builder.add_node(approve_forget)
builder.add_node(delete_memory)
builder.add_node(finish)
builder.add_node(redact_transcript)
builder.add_edge(START, "assemble_context")
builder.add_conditional_edges("assemble_context", route_after_context)
builder.add_conditional_edges("call_model", route_after_model)
builder.add_conditional_edges("execute_tool", route_after_tool)
builder.add_edge("commit_memory", "redact_transcript")
builder.add_conditional_edges("redact_transcript", route_after_redaction)
builder.add_conditional_edges("approve_forget", route_after_approval)
builder.add_edge("delete_memory", "finish")
builder.add_conditional_edges("finish", route_after_finish)
