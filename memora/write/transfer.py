"""Importing exported memories: each line checked like an ``add``, ids kept apart between users."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from memora.audit import AuditLog
from memora.judgement import Judgement
from memora.limits import MAX_IMPORT_LINE_CHARS
from memora.models import MemoryCandidate, MemoryStatus, MemoryUnit
from memora.storage.store import is_memory_id, is_random_id, new_memory_id
from memora.validation import (
    InvalidInput,
    check_text,
    has_surrogates,
    validate_memory_content,
    validate_memory_id,
    validate_thread_id,
)
from memora.write.policy import MemoryClassifier, apply_memory_policy, is_sensitive


@dataclass
class ImportReport:
    """What an import did: memories stored, lines skipped as present, lines refused."""

    imported: int = 0
    skipped: int = 0
    """Memories the user already had (same id, or the same active text)."""
    rejected: builtins.list[tuple[int, str]] = field(default_factory=builtins.list)
    """``(line number, reason)`` of each refused line; the reason never quotes the line."""
    unlinked: int = 0
    """Supersession links dropped: each named neither a memory of the file nor one of the
    user's that links back, and a forget follows links (a forged one would delete a memory
    the file never replaced; a dangling one points at nothing)."""


def parse_import_line(
    user_id: str,
    line: str,
    number: int,
    report: ImportReport,
    audit: AuditLog,
    classifier: MemoryClassifier | None,
    judge: Judgement | None = None,
) -> MemoryUnit | None:
    """One line as this user's memory, or None with the refusal added to ``report``."""

    def refuse(reason: str) -> None:
        report.rejected.append((number, reason))
        audit.record(user_id, "write", "rejected", reason=reason, source="import")

    try:
        check_text(line, "line", MAX_IMPORT_LINE_CHARS)
        unit = MemoryUnit.model_validate_json(line)
        validate_memory_id(unit.id)
        validate_memory_content(unit.content)
        if unit.thread_id is not None:
            validate_thread_id(unit.thread_id)
        if has_surrogates(json.dumps(unit.model_dump(mode="json"), ensure_ascii=False)):
            raise InvalidInput("a field is not valid UTF-8 text")
        _check_ids_and_side_fields(unit)
    except InvalidInput as error:
        refuse(str(error))
        return None
    except ValueError as error:
        refuse(describe_bad_line(error))
        return None
    candidate = MemoryCandidate(
        content=unit.content,
        memory_type=unit.memory_type,
        user_message=unit.content,
        said_at=unit.created_at,
        reason="explicit_request",
        scope=unit.scope,
        thread_id=unit.thread_id,
    )
    _, rejected = apply_memory_policy([candidate], classifier, judge)
    if rejected:
        refuse(rejected[0].reason.value)
        return None
    return unit.model_copy(update={"user_id": user_id})


REVIEW_TARGETS = "review_targets"
"""The metadata key the write path keeps ids of the memories a new one may conflict with."""


def _check_ids_and_side_fields(unit: MemoryUnit) -> None:
    """Refuse ids Memora did not issue and secrets kept beside the content.

    The policy reads only the content; ``kind`` and ``metadata`` are stored as given,
    so the same detectors run over them. Ids reach the model, so each must have the
    form Memora gives them and so cannot carry words.

    Raises:
        InvalidInput: Naming the field, never quoting it.
    """
    metadata = dict(unit.metadata)
    targets = metadata.pop(REVIEW_TARGETS, [])
    ids = [("id", unit.id), ("supersedes", unit.supersedes), ("superseded_by", unit.superseded_by)]
    if not isinstance(targets, builtins.list):
        raise InvalidInput(f"metadata.{REVIEW_TARGETS} is not a list of Memora memory ids")
    ids += [(f"metadata.{REVIEW_TARGETS}", target) for target in targets]
    for name, value in ids:
        if value is not None and not (isinstance(value, str) and is_memory_id(value)):
            raise InvalidInput(f"{name} is not a Memora memory id (32 hex digits)")
    # Checked apart from the detectors: a 32-hex id looks like a high-entropy key to them.
    if is_sensitive(unit.kind) or is_sensitive(unit.source.actor):
        raise InvalidInput("sensitive_data (in kind or source)")
    threads = [t for t in (unit.source.thread_id, unit.thread_id) if t and not is_random_id(t)]
    if any(is_sensitive(thread) for thread in threads):
        raise InvalidInput("sensitive_data (in a thread id)")
    if any(is_sensitive(text) for text in _texts_of(metadata)):
        raise InvalidInput("sensitive_data (in metadata)")


def _texts_of(value: Any, path: str = "") -> Iterator[str]:
    """Every string in a JSON value, alone and after its key path ("wifi password: ...")."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _texts_of(item, f"{path} {key}".strip())
    elif isinstance(value, builtins.list):
        for item in value:
            yield from _texts_of(item, path)
    elif value is not None:
        text = str(value)
        yield text
        if path:
            words = " ".join(path.replace("_", " ").replace("-", " ").split())
            yield f"{words}: {text}"


def describe_bad_line(error: ValueError) -> str:
    """Why a line is not a memory, naming fields but never quoting values."""
    if isinstance(error, ValidationError):
        problems = error.errors()
        if any(item["type"] == "json_invalid" for item in problems):
            return "not valid JSON"
        fields = sorted({".".join(str(p) for p in item["loc"]) or "line" for item in problems})
        return "not a memory (bad fields: " + ", ".join(f[:40] for f in fields[:5]) + ")"
    return "not a memory"


def not_held(
    units: builtins.list[MemoryUnit], existing: builtins.list[MemoryUnit], report: ImportReport
) -> builtins.list[MemoryUnit]:
    """The imported units the user does not hold yet: an id already present is skipped, as is
    an active memory whose text the user (or an earlier line) already holds as an active one;
    each skip is counted in ``report``."""
    present = {unit.id for unit in existing}
    active_texts = {unit.content for unit in existing if unit.status is MemoryStatus.ACTIVE}
    fresh: builtins.list[MemoryUnit] = []
    for unit in units:
        duplicate_text = unit.status is MemoryStatus.ACTIVE and unit.content in active_texts
        if unit.id in present or duplicate_text:
            report.skipped += 1
            continue
        present.add(unit.id)
        if unit.status is MemoryStatus.ACTIVE:
            active_texts.add(unit.content)
        fresh.append(unit)
    return fresh


def backed_links(
    units: builtins.list[MemoryUnit], stored: dict[str, MemoryUnit]
) -> tuple[builtins.list[MemoryUnit], int]:
    """``units`` with each supersession link kept only where it names another unit of the
    import, or a memory the user holds whose own link names the unit back; and how many
    links were dropped."""
    in_file = {unit.id for unit in units}
    dropped = 0
    backed = []
    for unit in units:
        links: dict[str, None] = {}
        for field_name, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes")):
            target = getattr(unit, field_name)
            held = stored.get(target) if target else None
            if target and target not in in_file and getattr(held, back, None) != unit.id:
                links[field_name] = None
                dropped += 1
        backed.append(unit.model_copy(update=links) if links else unit)
    return backed, dropped


def renumber(units: builtins.list[MemoryUnit], taken: set[str]) -> builtins.list[MemoryUnit]:
    """Give each unit whose id is taken a new id, and point the file's links at it."""
    if not taken:
        return units
    new_ids = {unit.id: new_memory_id() for unit in units if unit.id in taken}

    def relink(memory_id: str | None) -> str | None:
        return new_ids.get(memory_id, memory_id) if memory_id is not None else None

    renumbered = []
    for unit in units:
        metadata = dict(unit.metadata)
        targets = metadata.get(REVIEW_TARGETS)
        if isinstance(targets, builtins.list):
            metadata[REVIEW_TARGETS] = [new_ids.get(t, t) for t in targets]
        renumbered.append(
            unit.model_copy(
                update={
                    "id": new_ids.get(unit.id, unit.id),
                    "supersedes": relink(unit.supersedes),
                    "superseded_by": relink(unit.superseded_by),
                    "metadata": metadata,
                }
            )
        )
    return renumbered
