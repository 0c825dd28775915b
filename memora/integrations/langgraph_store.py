"""``MemoraStore``: Memora as a LangGraph ``BaseStore``, with Memora's guarantees kept.

What differs from a plain store (see README, "Memora as a LangGraph store"):

- a namespace names one user: ``("memories", user_id)`` by default; the placeholder
  ``{user_id}`` in the layout marks which element is the user;
- a value is text: ``{"content": str}`` and optionally ``"memory_type"``
  (``semantic``/``episodic``); any other field is refused, so nothing bypasses the policy;
- ``put`` runs the write path (policy, reconciliation, audit); a refused value raises
  :class:`memora.errors.MemoryRefused` and stores nothing; the stored text may differ
  from the value (relative dates resolved), and a duplicate of an existing memory is
  not stored twice;
- ``put`` under a key already in use updates that memory: the new version supersedes
  the old one, which stays in the history; the key stays the same;
- ``search`` with a query is Memora's hybrid recall within the retrieval policy (its
  limit and relevance threshold cap what is returned);
- ``delete`` records a deletion request the user approves or rejects
  (``memora memories pending``), unless the store was opened with ``direct_deletes``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from memora.api import Memora
from memora.errors import ConfigurationError, InvalidInput, MemoryRefused
from memora.limits import MAX_MEMORY_ID_CHARS
from memora.models import (
    MemoryCandidate,
    MemorySource,
    MemoryStatus,
    MemoryType,
    MemoryUnit,
    RejectionReason,
)
from memora.recall.retrieval import RetrievedMemory
from memora.storage.store import UUID_FORM, is_random_id
from memora.validation import check_identifier, validate_user_id
from memora.write.policy import check_candidate

USER_PLACEHOLDER = "{user_id}"
DEFAULT_NAMESPACE: tuple[str, ...] = ("memories", USER_PLACEHOLDER)
"""The layout of a namespace: LangMem's and the memory-agent template's convention."""
_REFUSED_IN_KEYS = frozenset({RejectionReason.SENSITIVE_DATA, RejectionReason.INSTRUCTION_LIKE})
"""What the policy refuses in a store key; a key is a name, too short to be vague."""
STORE_KEY = "store_key"
"""Metadata field holding the key a memory was put under."""
VALUE_FIELDS = frozenset({"content", "memory_type"})


class MemoraStore(BaseStore):
    """A LangGraph ``BaseStore`` over :class:`memora.api.Memora` (sync and async)."""

    def __init__(
        self,
        memora: Memora | None = None,
        *,
        namespace: tuple[str, ...] = DEFAULT_NAMESPACE,
        direct_deletes: bool = False,
        actor: str = "store",
    ) -> None:
        """Open the store.

        Args:
            memora: The library to use; by default one built from the settings
                (``MEMORA_*`` variables), which the store then owns and closes.
            namespace: The namespace layout; exactly one element is ``{user_id}``.
            direct_deletes: Delete at once on ``delete`` instead of asking the user.
            actor: How writes and requests through this store are labelled in the audit.

        Raises:
            ConfigurationError: The layout has no ``{user_id}`` element, or several.
        """
        if list(namespace).count(USER_PLACEHOLDER) != 1:
            raise ConfigurationError("a MemoraStore namespace needs exactly one '{user_id}'")
        self._owned = memora is None
        self.memora = memora or Memora()
        self.layout = tuple(namespace)
        self.user_element = self.layout.index(USER_PLACEHOLDER)
        self.direct_deletes = direct_deletes
        self.actor = actor

    def close(self) -> None:
        """Close the library if this store opened it."""
        if self._owned:
            self.memora.close()

    # -- BaseStore ------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; the first failure stops the batch."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the library is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInput(f"unsupported store operation {type(op).__name__}")

    # -- namespaces -----------------------------------------------------------

    def namespace_for(self, user_id: str) -> tuple[str, ...]:
        """The namespace of one user's memories."""
        return tuple(user_id if part == USER_PLACEHOLDER else part for part in self.layout)

    def user_of(self, namespace: tuple[str, ...]) -> str:
        """The user a full namespace names.

        Raises:
            InvalidInput: The namespace does not follow the layout.
        """
        namespace = tuple(namespace)
        if len(namespace) != len(self.layout) or not self._fits(namespace):
            raise InvalidInput(f"a MemoraStore namespace looks like {self._shape()}")
        return validate_user_id(namespace[self.user_element])

    def _user_of_prefix(self, prefix: tuple[str, ...]) -> str:
        if len(prefix) <= self.user_element or len(prefix) > len(self.layout):
            raise InvalidInput(f"a MemoraStore search names the user: {self._shape()}")
        if not self._fits(prefix):
            raise InvalidInput(f"a MemoraStore namespace looks like {self._shape()}")
        return validate_user_id(prefix[self.user_element])

    def _fits(self, namespace: tuple[str, ...]) -> bool:
        return all(
            want in (USER_PLACEHOLDER, got)
            for want, got in zip(self.layout, namespace, strict=False)
        )

    def _shape(self) -> str:
        return "(" + ", ".join(repr(part) for part in self.layout) + ")"

    # -- operations -------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        user_id = self.user_of(op.namespace)
        unit = self._resolve(user_id, op.key)
        if unit is None:
            return None
        return Item(namespace=self.namespace_for(user_id), key=_key(unit), **_fields(unit))

    def _put(self, op: PutOp) -> None:
        user_id = self.user_of(op.namespace)
        if op.value is None:
            self._delete(user_id, self._resolve(user_id, op.key))
            return
        content, memory_type = _text_of(op.value)
        existing = self._resolve(user_id, op.key)
        self._check_key(op.key)
        # As with `memora memories add`, the caller stands for the user: the text is its own
        # source; every other rule of the policy applies.
        outcome = self.memora.add(
            user_id,
            content,
            memory_type=memory_type,
            source=MemorySource(actor=self.actor),
            metadata={STORE_KEY: op.key},
            replaces=existing.id if existing else None,
        )
        if not outcome.accepted:
            raise MemoryRefused(outcome.reason or "refused")

    def _check_key(self, key: str) -> None:
        """A key is kept beside the memory and handed back with it, to a model too: it may
        not hold what the policy keeps out of a memory's text.

        Raises:
            MemoryRefused: The key holds a secret or reads as an instruction.
        """
        if is_random_id(key):
            return
        # The rules alone: a trained gate reads most short names as vague or as codes.
        verdict = check_candidate(MemoryCandidate(content=key))
        if verdict and verdict[0] in _REFUSED_IN_KEYS:
            raise MemoryRefused(f"{verdict[0].value} (in the key)")

    def _delete(self, user_id: str, unit: MemoryUnit | None) -> None:
        if unit is None:
            return  # as in every store: deleting what is not there is no error
        if self.direct_deletes:
            self.memora.forget(user_id, unit.id, actor=self.actor)
        else:
            reason = "deleted through the LangGraph store"
            self.memora.request_forget(user_id, unit.id, reason=reason, source=self.actor)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        user_id = self._user_of_prefix(op.namespace_prefix)
        if op.limit < 0 or op.offset < 0:
            raise InvalidInput("a MemoraStore search's limit and offset are not negative")
        if op.query:
            # Memora caps the count at its retrieval policy's limit, whatever is asked.
            hits = self.memora.search(user_id, op.query, limit=op.offset + op.limit)
            found: Iterator[tuple[MemoryUnit, float | None]] = (
                (hit.memory, _score(hit)) for hit in hits
            )
        else:
            found = ((unit, None) for unit in self._active(user_id))
        items = (self._item(user_id, unit, score) for unit, score in found)
        matching = (item for item in items if _matches(item.value, op.filter))
        return list(itertools.islice(matching, op.offset, op.offset + op.limit))

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        namespaces = [self.namespace_for(user) for user in sorted(self.memora.store.users())]
        found = [ns for ns in namespaces if all(_fits_condition(c, ns) for c in conditions)]
        if op.max_depth is not None:
            found = list(dict.fromkeys(ns[: op.max_depth] for ns in found))
        return found[op.offset : op.offset + op.limit]

    # -- keys and items -------------------------------------------------------------

    def _active(self, user_id: str) -> Iterator[MemoryUnit]:
        return self.memora.iter_memories(user_id, MemoryStatus.ACTIVE)

    def _resolve(self, user_id: str, key: str) -> MemoryUnit | None:
        """The user's active memory under ``key``: the key it was put under, or for a
        memory written another way (the agent, the CLI) its id."""
        check_identifier(key, "store key", MAX_MEMORY_ID_CHARS)
        # LangMem hands ids back as UUIDs: a memory id (32 hex digits) comes back dashed.
        memory_id = key.replace("-", "") if UUID_FORM.fullmatch(key) else key
        unit = self.memora.get(user_id, memory_id)
        if unit is not None and unit.status is MemoryStatus.ACTIVE and _key(unit) == unit.id:
            return unit
        # A key a caller chose is kept in the memory's metadata.
        found = self.memora.store.list(user_id, MemoryStatus.ACTIVE, metadata=(STORE_KEY, key))
        return found[-1] if found else None

    def _item(self, user_id: str, unit: MemoryUnit, score: float | None = None) -> SearchItem:
        namespace = self.namespace_for(user_id)
        return SearchItem(namespace=namespace, key=_key(unit), score=score, **_fields(unit))


def _fields(unit: MemoryUnit) -> dict[str, Any]:
    """An item's value and dates, read from a memory."""
    return {
        "value": {"content": unit.content, "memory_type": unit.memory_type.value},
        "created_at": unit.created_at,
        "updated_at": unit.updated_at,
    }


def _key(unit: MemoryUnit) -> str:
    return str(unit.metadata.get(STORE_KEY) or unit.id)


def _score(hit: RetrievedMemory) -> float:
    return round(float(hit.score), 6)


def _text_of(value: Any) -> tuple[str, MemoryType]:
    """The memory text and type a store value holds.

    Raises:
        InvalidInput: The value is not ``{"content": str}`` with an optional memory type.
    """
    if not isinstance(value, dict) or not isinstance(value.get("content"), str):
        raise InvalidInput('a MemoraStore value is {"content": "<text>"}')
    extra = sorted(set(value) - VALUE_FIELDS)
    if extra:
        raise InvalidInput(
            f"a MemoraStore value holds text only; put {', '.join(extra[:5])} in the content"
        )
    kind = value.get("memory_type", MemoryType.SEMANTIC.value)
    if kind not in {t.value for t in MemoryType}:
        raise InvalidInput("memory_type is 'semantic' or 'episodic'")
    return value["content"], MemoryType(kind)


def _fits_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))


_OPERATORS = {
    "$eq": lambda have, want: have == want,
    "$ne": lambda have, want: have != want,
    "$gt": lambda have, want: have is not None and have > want,
    "$gte": lambda have, want: have is not None and have >= want,
    "$lt": lambda have, want: have is not None and have < want,
    "$lte": lambda have, want: have is not None and have <= want,
}


def _matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """Whether a value passes a LangGraph filter: equality, or ``{"$op": operand}``."""
    for field, want in (conditions or {}).items():
        have = value.get(field)
        if isinstance(want, dict) and want and all(k.startswith("$") for k in want):
            for operator, operand in want.items():
                if operator not in _OPERATORS:
                    raise InvalidInput(f"unsupported filter operator {operator}")
                try:
                    passed = _OPERATORS[operator](have, operand)
                except TypeError:
                    passed = False  # values of kinds that do not compare
                if not passed:
                    return False
        elif have != want:
            return False
    return True
