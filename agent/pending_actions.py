"""Pending actions: what a turn's tools asked to change, held until the turn's final answer.

A remember action is committed through the write path; a forget action goes to a
person for approval. Neither touches the store while the agent is still working,
and both are dropped when the turn ends any other way. Checkpoints keep them as
plain JSON, so any checkpointer's serializer can restore them without knowing
these classes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from memora.models import MemoryCandidate


class RememberAction(BaseModel):
    """A candidate the policy accepted, to run through the write path on a final answer."""

    model_config = ConfigDict(frozen=True)

    type: Literal["remember_memory"] = "remember_memory"
    candidate: MemoryCandidate
    """The proposed memory, with the user message it came from."""


class ForgetAction(BaseModel):
    """A deletion the model requested; it happens only if the user approves it."""

    model_config = ConfigDict(frozen=True)

    type: Literal["forget_memory"] = "forget_memory"
    memory_id: str
    """The memory to delete (with the older versions it replaced)."""
    preview: str
    """What the user is shown when asked to approve."""
    reason: str
    """Why the model asked, shown with the preview."""
    deletes: list[dict[str, str]] = Field(default_factory=list)
    """What the deletion removes, read when it was requested (``memory_id``, ``content``: it
    and the older versions it replaced, oldest first): what the question shows and the most
    the approval deletes. Empty in an action saved before it was kept; then read at asking."""


PendingAction = Annotated[RememberAction | ForgetAction, Field(discriminator="type")]

_ACTION: TypeAdapter[PendingAction] = TypeAdapter(PendingAction)


def as_pending_actions(values: list[Any]) -> list[RememberAction | ForgetAction]:
    """Actions as models, whether they arrive as models or as the JSON a checkpoint holds."""
    return [
        value
        if isinstance(value, RememberAction | ForgetAction)
        else _ACTION.validate_python(value)
        for value in values
    ]


def to_checkpoint(actions: list[RememberAction | ForgetAction]) -> list[dict[str, Any]]:
    """Actions as plain JSON, the form a thread's checkpoint keeps them in."""
    return [action.model_dump(mode="json") for action in actions]
